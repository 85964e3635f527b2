"""What the layers below ``table/`` need of a table: its current state and where it commits.

``table.Table`` satisfies :class:`TableHandle`; maintenance and the write-only DML verbs are typed
against the protocol so they sit below the ``table`` layer that offers them as methods.
"""

from __future__ import annotations

from typing import Any, Protocol

from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.transaction import Action, CommitTarget, Transaction


class TableCommitTarget(CommitTarget, Protocol):
    """Where a user-facing table commits: a transaction's target plus what the table asks of it."""

    def load_current(self) -> tuple[TableMetadata, str | None]:
        """The table's current metadata, confirmed by the catalog now; unlike ``load_for_commit``
        never a state remembered from a moment ago (which only a commit may start from, because
        its compare-and-swap rejects a stale base)."""
        ...

    def ensure_writable(self) -> None:
        """Raise (before any file is written) when the table may not be changed."""
        ...

    def committed_metadata(self, location: str, proposed: TableMetadata) -> TableMetadata:
        """The metadata stored at ``location`` by the last swap: ``proposed``, or the catalog
        service's own version of it (a REST catalog writes the metadata file itself)."""
        ...

    def other_table_roots(self) -> tuple[str, ...]:
        """Locations of the other tables where this one commits (maintenance never touches them)."""
        ...


class TableHandle(CommitTarget, Protocol):
    """A table's metadata, its location in the catalog and its commit target."""

    metadata: TableMetadata

    @property
    def metadata_location(self) -> str:
        """Location of the current metadata file."""
        ...

    @property
    def name(self) -> str:
        """Dotted identifier, for messages."""
        ...

    def other_table_roots(self) -> tuple[str, ...]:
        """Locations of the other tables where this one commits (maintenance never touches them)."""
        ...

    def refresh(self) -> Any:
        """Reload the metadata from where the table commits."""
        ...


def commit_action(table: TableHandle, action: Action) -> TableMetadata:
    """Commit one action as its own transaction (the table's state follows the swap)."""
    return Transaction(table).add(action).commit()
