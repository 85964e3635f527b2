"""TableTransaction: queue writes against a table and commit them as one metadata swap.

Data files are written when a change is queued (once), and the queued actions are re-applied on
every commit attempt, so a retry after a concurrent commit never rewrites data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.deprecation import renamed
from icefloe.dml.change_builder import RowLevelChange, RowLevelResult
from icefloe.dml.copy_on_write import plan_copy_on_write
from icefloe.dml.delete import plan_delete
from icefloe.dml.merge import plan_merge
from icefloe.dml.merge_clauses import MergeSpec, spec_from_flags
from icefloe.dml.update import plan_update
from icefloe.errors import ValidationError
from icefloe.expressions.ast import Expression
from icefloe.expressions.change_filters import change_filter
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import RemoveProperties, SetProperties, TableUpdate
from icefloe.table.merge_builder import MergeBuilder
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions, resolve_options
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
from icefloe.txn.handle import TableHandle
from icefloe.txn.producers import AppendFiles, OverwriteFiles, SnapshotProducer, branch_head
from icefloe.txn.transaction import Action, AttemptContext, Transaction


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

    def __init__(self, table: TableHandle) -> None:
        self._table = table
        self._txn = Transaction(table)
        self._committed = False
        self._written_branches: set[str] = set()  # branches a queued change writes to
        self._results: list[tuple[RowLevelResult, SnapshotProducer]] = []

    @property
    def table(self) -> TableHandle:
        """The table being changed."""
        return self._table

    def _merge_enabled(self) -> bool:
        return self._table.metadata.properties.get("commit.manifest-merge.enabled", "true").lower() == "true"

    def _reading_base(self, branch: str, verb: str) -> Snapshot | None:
        """The snapshot a reading change (overwrite, delete, update, merge) is computed from.

        It is the branch head as committed: a change queued earlier in this transaction on the same
        branch would not be seen, so that order is refused rather than silently mis-applied.
        """
        if branch in self._written_branches:
            raise ValidationError(
                f"cannot queue {verb} on branch {branch!r} after another change to it in the same "
                "transaction: it reads the table and would not see that change; commit the earlier "
                "change first, or queue the reading change first"
            )
        self._written_branches.add(branch)
        return branch_head(self._table.metadata, branch)

    def _queue_row_level(self, change: RowLevelChange, options: CommitOptions) -> RowLevelResult:
        result = change.result()
        producer = change.producer(self._table.metadata, options, self._merge_enabled())
        if producer is not None:
            self._txn.add(producer)
            self._results.append((result, producer))
        return result

    def append(
        self,
        df: pa.Table,
        options: CommitOptions | None = None,
        *,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> TableTransaction:
        """Queue an append of ``df`` (written to data files now, committed later)."""
        opts = resolve_options(options, branch, snapshot_properties)
        md = self._table.metadata
        prepared = prepare_arrow_table(md, df)
        files = write_data_files(self._table.io, md, prepared)
        self._written_branches.add(opts.branch)
        self._txn.add(
            AppendFiles(
                branch=opts.branch,
                snapshot_properties=opts.properties,
                owned_files=[f.file_path for f in files],
                merge_manifests=self._merge_enabled(),
                files=files,
            )
        )
        return self

    def overwrite(
        self,
        df: pa.Table,
        filter: Expression | str | bool | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
        *,
        overwrite_filter: Expression | str | None = None,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> TableTransaction:
        """Queue: remove rows matching ``filter`` (default: every row) and add ``df``, as one snapshot."""
        opts = resolve_options(options, branch, snapshot_properties)
        chosen = renamed(filter, overwrite_filter, "filter", "overwrite_filter")
        md = self._table.metadata
        prepared = prepare_arrow_table(md, df)
        row_filter = change_filter(chosen, "overwrite", none_means_all=True)
        base = self._reading_base(opts.branch, "an overwrite")
        plan = plan_copy_on_write(self._table.io, md, base, row_filter, case_sensitive)
        files = write_data_files(self._table.io, md, prepared)
        added = plan.added + files
        self._txn.add(
            OverwriteFiles(
                branch=opts.branch,
                snapshot_properties=opts.properties,
                owned_files=[f.file_path for f in added],
                operation=Operation.OVERWRITE if plan.removed else Operation.APPEND,
                merge_manifests=self._merge_enabled(),
                removed=plan.removed,
                added=added,
                base_snapshot_id=base.snapshot_id if base else None,
                # even when the base has no matching rows: a concurrent write of such rows is one
                # this overwrite should have replaced (serializable, like Java's validateNoConflictingData)
                conflict_filter=row_filter,
                case_sensitive=case_sensitive,
            )
        )
        return self

    def delete(
        self,
        filter: Expression | str | bool | None = None,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
        *,
        delete_filter: Expression | str | None = None,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> RowLevelResult:
        """Queue removal of the rows matching ``filter`` (nothing is queued when nothing matches).

        ``mode``: ``copy-on-write`` or ``merge-on-read``; None uses ``write.delete.mode``. An empty
        or missing filter is refused: pass True or ``"true"`` to delete every row.
        """
        opts = resolve_options(options, branch, snapshot_properties)
        chosen = renamed(filter, delete_filter, "filter", "delete_filter")
        row_filter = change_filter(chosen, "delete")
        md = self._table.metadata
        base = self._reading_base(opts.branch, "a delete")
        change = plan_delete(self._table.io, md, base, row_filter, mode, case_sensitive)
        return self._queue_row_level(change, opts)

    def update(
        self,
        set: Mapping[str, Any | pc.Expression],
        filter: Expression | str | bool | None = None,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
        *,
        update_filter: Expression | str | None = None,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> RowLevelResult:
        """Queue ``UPDATE SET column = value WHERE filter`` (True or ``"true"`` for every row).

        Values are literals or ``pyarrow.compute`` expressions over the row's current values.
        ``mode``: ``copy-on-write`` or ``merge-on-read``; None uses ``write.update.mode``.
        """
        opts = resolve_options(options, branch, snapshot_properties)
        row_filter = change_filter(renamed(filter, update_filter, "filter", "update_filter"), "update")
        md = self._table.metadata
        base = self._reading_base(opts.branch, "an update")
        change = plan_update(self._table.io, md, base, set, row_filter, mode, case_sensitive)
        return self._queue_row_level(change, opts)

    def merge(
        self,
        source: pa.Table,
        on: Sequence[str] | str,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
    ) -> MergeBuilder:
        """``MERGE INTO table USING source ON on``: add clauses, then ``execute()`` queues it.

        See :class:`~icefloe.table.merge_builder.MergeBuilder`; ``mode``: ``copy-on-write`` or
        ``merge-on-read``, None uses ``write.merge.mode``.
        """
        return MergeBuilder(
            on, lambda spec: self.queue_merge(source, spec, mode, options or DEFAULT_OPTIONS, case_sensitive)
        )

    def queue_merge(
        self,
        source: pa.Table,
        spec: MergeSpec,
        mode: str | None,
        options: CommitOptions,
        case_sensitive: bool,
    ) -> RowLevelResult:
        """Queue a MERGE described by ``spec`` (what ``merge(...).execute()`` calls)."""
        md = self._table.metadata
        base = self._reading_base(options.branch, "a merge")
        change = plan_merge(self._table.io, md, base, source, spec, mode, case_sensitive)
        return self._queue_row_level(change, options)

    def upsert(
        self,
        df: pa.Table,
        on: Sequence[str] | str,
        mode: str | None = None,
        options: CommitOptions | None = None,
        *,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> RowLevelResult:
        """Queue an upsert: rows whose key exists are replaced by ``df``'s, the others inserted."""
        opts = resolve_options(options, branch, snapshot_properties)
        return self.queue_merge(df, spec_from_flags(on), mode, opts, True)

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
        branch = getattr(action, "branch", None)
        if isinstance(branch, str):
            self._written_branches.add(branch)
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
        committed = self._txn.commit()
        self._fill_snapshot_ids(committed)

    def _fill_snapshot_ids(self, md: TableMetadata) -> None:
        """Tell each row-level result which snapshot it became (the transaction's are the last ones)."""
        producers = [a for a in self._txn.actions if isinstance(a, SnapshotProducer)]
        for result, producer in self._results:
            index = next(i for i, p in enumerate(producers) if p is producer)
            later = producers[index + 1 :]
            skip = sum(1 for p in later if p.branch == producer.branch)
            snap = branch_head(md, producer.branch)
            for _ in range(skip):
                snap = (
                    md.snapshot_by_id(snap.parent_snapshot_id) if snap and snap.parent_snapshot_id else None
                )
            result.snapshot_id = snap.snapshot_id if snap else None
