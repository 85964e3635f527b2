"""TableTransaction: queue writes against a table and commit them as one metadata swap.

Data files are written when a change is queued (once), and the queued actions are re-applied on
every commit attempt, so a retry after a concurrent commit never rewrites data.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from icefloe.expressions.ast import Expression
from icefloe.expressions.parser import to_expression
from icefloe.scan.cow import plan_copy_on_write
from icefloe.spec.snapshots import MAIN_BRANCH, Operation
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import RemoveProperties, SetProperties, TableUpdate
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
from icefloe.txn.producers import AppendFiles, OverwriteFiles, branch_head
from icefloe.txn.transaction import Action, AttemptContext, Transaction

if TYPE_CHECKING:
    from icefloe.catalog.table import Table


@dataclass
class PropertyChange:
    """Set and remove table properties."""

    updates: dict[str, str] = field(default_factory=dict)
    removals: list[str] = field(default_factory=list)

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Property updates never conflict; they are re-applied on the fresh metadata."""
        out: list[TableUpdate] = []
        if self.updates:
            out.append(SetProperties(dict(self.updates)))
        if self.removals:
            out.append(RemoveProperties(tuple(self.removals)))
        return out

    def committed_files(self) -> list[str]:
        """No files."""
        return []


class TableTransaction:
    """Changes queued against one table, committed together by ``commit()``."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._txn = Transaction(table)
        self._committed = False

    @property
    def table(self) -> Table:
        """The table being changed."""
        return self._table

    def _merge_enabled(self) -> bool:
        return self._table.metadata.properties.get("commit.manifest-merge.enabled", "true").lower() == "true"

    def append(
        self, df: pa.Table, branch: str = MAIN_BRANCH, snapshot_properties: dict[str, str] | None = None
    ) -> TableTransaction:
        """Queue an append of ``df`` (written to data files now, committed later)."""
        md = self._table.metadata
        prepared = prepare_arrow_table(md, df)
        files = write_data_files(self._table.io, md, prepared)
        self._txn.add(
            AppendFiles(
                branch=branch,
                snapshot_properties=dict(snapshot_properties or {}),
                owned_files=[f.file_path for f in files],
                merge_manifests=self._merge_enabled(),
                files=files,
            )
        )
        return self

    def overwrite(
        self,
        df: pa.Table,
        overwrite_filter: Expression | str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> TableTransaction:
        """Queue: remove rows matching the filter and add ``df``, as one snapshot."""
        md = self._table.metadata
        prepared = prepare_arrow_table(md, df)
        row_filter = to_expression(overwrite_filter)
        base = branch_head(md, branch)
        plan = plan_copy_on_write(self._table.io, md, base, row_filter, case_sensitive)
        files = write_data_files(self._table.io, md, prepared)
        added = plan.added + files
        self._txn.add(
            OverwriteFiles(
                branch=branch,
                snapshot_properties=dict(snapshot_properties or {}),
                owned_files=[f.file_path for f in added],
                operation=Operation.OVERWRITE if plan.removed else Operation.APPEND,
                merge_manifests=self._merge_enabled(),
                removed=plan.removed,
                added=added,
                base_snapshot_id=base.snapshot_id if base else None,
                conflict_filter=row_filter if plan.removed else None,
            )
        )
        return self

    def delete(
        self,
        delete_filter: Expression | str,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> TableTransaction:
        """Queue removal of the rows matching the filter (no snapshot if nothing matches)."""
        md = self._table.metadata
        row_filter = to_expression(delete_filter)
        base = branch_head(md, branch)
        plan = plan_copy_on_write(self._table.io, md, base, row_filter, case_sensitive)
        if not plan.removed:
            return self
        self._txn.add(
            OverwriteFiles(
                branch=branch,
                snapshot_properties=dict(snapshot_properties or {}),
                owned_files=[f.file_path for f in plan.added],
                operation=Operation.OVERWRITE if plan.rewrites_files else Operation.DELETE,
                merge_manifests=self._merge_enabled(),
                removed=plan.removed,
                added=plan.added,
                base_snapshot_id=base.snapshot_id if base else None,
                conflict_filter=row_filter,
            )
        )
        return self

    def set_properties(self, properties: dict[str, str]) -> TableTransaction:
        """Queue property updates."""
        self._txn.add(PropertyChange(updates=dict(properties)))
        return self

    def remove_properties(self, keys: list[str]) -> TableTransaction:
        """Queue property removals."""
        self._txn.add(PropertyChange(removals=list(keys)))
        return self

    def add_action(self, action: Action) -> TableTransaction:
        """Queue a custom action (used by maintenance operations)."""
        self._txn.add(action)
        return self

    def abort(self) -> None:
        """Drop everything queued and delete the data files written for it."""
        self._committed = True
        for action in self._txn.actions:
            for path in action.committed_files():
                with contextlib.suppress(Exception):  # best effort; an orphan file is harmless
                    self._table.io.delete(path)

    def commit(self) -> None:
        """Commit everything queued as one metadata swap (no-op when nothing is queued)."""
        if self._committed:
            return
        self._committed = True
        if not self._txn.actions:
            return
        self._txn.commit()
