"""What the layers below ``table/`` need of a table: its current state and where it commits.

``table.Table`` satisfies :class:`TableHandle`; maintenance and the write-only DML verbs are typed
against the protocol so they sit below the ``table`` layer that offers them as methods.
"""

from __future__ import annotations

from typing import Any, Protocol

from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.transaction import Action, CommitTarget, Transaction


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

    def refresh(self) -> Any:
        """Reload the metadata from where the table commits."""
        ...


def commit_action(table: TableHandle, action: Action) -> TableMetadata:
    """Commit one action as its own transaction (the table's state follows the swap)."""
    return Transaction(table).add(action).commit()
