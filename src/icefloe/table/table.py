"""The user-facing Table: an identifier bound to its current metadata and where it commits.

A table holds a commit target (``txn.transaction.CommitTarget``), not a catalog: a catalog gives
its tables a target that swaps the catalog's metadata pointer, and a table opened from a metadata
file alone (``table.static``) gets a read-only one.

Reads go through ``scan()``; writes (``append``, ``overwrite``, row-level ``delete`` / ``update`` /
``merge`` / ``upsert``, property changes) each commit one transaction, or several at once inside
``with table.transaction() as tx:``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, overload

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.deprecation import forwards_keywords, renamed, warn_deprecated
from icefloe.dml import upsert as equality_upsert
from icefloe.dml.change_builder import RowLevelResult
from icefloe.dml.merge_clauses import MergeSpec, spec_from_flags
from icefloe.dml.upsert import UpsertResult
from icefloe.expressions.ast import Expression
from icefloe.expressions.parser import to_expression
from icefloe.formats.metadata.files import new_metadata_with_log
from icefloe.io.durability import durability_barrier
from icefloe.scan import metadata_tables
from icefloe.scan.changelog import ChangelogScan
from icefloe.scan.table_scan import TableScan
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.table.inspect import InspectTable, TableMaintenance
from icefloe.table.merge_builder import MergeBuilder
from icefloe.table.table_transaction import TableTransaction
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions, resolve_options
from icefloe.txn.handle import TableCommitTarget
from icefloe.txn.partition_evolution import UpdateSpec
from icefloe.txn.refs import ManageSnapshots
from icefloe.txn.schema_evolution import UpdateSchema
from icefloe.txn.transaction import Action

if TYPE_CHECKING:
    from icefloe.io.fileio import FileIO

P = ParamSpec("P")
R = TypeVar("R")


def _in_one_snapshot(
    queue: Callable[Concatenate[TableTransaction, P], R], doc: str
) -> Callable[Concatenate[Table, P], R]:
    """``Table.<verb>``: the ``TableTransaction`` method of that name, committed at once.

    One signature serves both objects (deprecated keyword names included), so they cannot drift.
    """

    @functools.wraps(queue)
    @forwards_keywords
    def commit_at_once(table: Table, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with table.transaction() as tx:
            result = queue(tx, *args, **kwargs)
        return result

    commit_at_once.__qualname__ = f"Table.{queue.__name__}"
    commit_at_once.__doc__ = doc
    return commit_at_once


def _without_result(method: Callable[Concatenate[Table, P], object]) -> Callable[Concatenate[Table, P], None]:
    """``method`` returning None (a committed ``TableTransaction`` is no result for the caller)."""

    @functools.wraps(method)
    @forwards_keywords
    def run(table: Table, /, *args: P.args, **kwargs: P.kwargs) -> None:
        method(table, *args, **kwargs)

    return run


class Table:
    """An Iceberg table: its identifier, current metadata, file IO and commit target."""

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        commit_target: TableCommitTarget,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.commit_target = commit_target

    # ---- identity and state -------------------------------------------------------------
    @property
    def name(self) -> str:
        """Dotted identifier."""
        return ".".join(self.identifier)

    @property
    def format_version(self) -> int:
        """The table's format version."""
        return self.metadata.format_version

    @property
    def properties(self) -> dict[str, str]:
        """Table properties."""
        return dict(self.metadata.properties)

    def location(self) -> str:
        """The table's base location."""
        return self.metadata.location

    def schema(self) -> Schema:
        """The current schema."""
        return self.metadata.schema()

    def schemas(self) -> dict[int, Schema]:
        """All schemas by id."""
        return {s.schema_id: s for s in self.metadata.schemas}

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self.metadata.spec()

    def specs(self) -> dict[int, PartitionSpec]:
        """All partition specs by id."""
        return self.metadata.specs_by_id()

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        return self.metadata.sort_order()

    def current_snapshot(self) -> Snapshot | None:
        """The head of main."""
        return self.metadata.current_snapshot()

    def snapshots(self) -> list[Snapshot]:
        """All snapshots still in the metadata, oldest first."""
        return list(self.metadata.snapshots)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        """A snapshot by id."""
        return self.metadata.snapshot_by_id(snapshot_id)

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        """The snapshot of a branch or tag."""
        return self.metadata.snapshot_for_ref(name)

    def history(self) -> list[SnapshotLogEntry]:
        """When main's current snapshot changed (the snapshot log)."""
        return list(self.metadata.snapshot_log)

    def refs(self) -> dict[str, SnapshotRef]:
        """Branches and tags."""
        return dict(self.metadata.refs)

    def refresh(self) -> Table:
        """Reload the latest metadata from where the table commits."""
        metadata, location = self.commit_target.load_current()
        if location is not None:
            self.metadata, self.metadata_location = metadata, location
        return self

    # ---- reads ----------------------------------------------------------------------------
    def scan(
        self,
        filter: Expression | str | bool | None = None,
        columns: Sequence[str] | None = None,
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of_timestamp: int | datetime | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
        *,
        start_snapshot_id: int | None = None,
        start_ref: str | None = None,
        start_timestamp: int | datetime | None = None,
        row_filter: Expression | str | None = None,
        selected_fields: Sequence[str] | None = None,
    ) -> TableScan:
        """Describe a read; call ``to_arrow()``, ``to_arrow_batch_reader()`` or ``plan_files()`` on it.

        ``filter``: rows to keep (expression or text such as ``"id > 5 and kind = 'a'"``);
        ``columns``: the columns to return (default all). ``snapshot_id`` / ``ref`` (branch or tag)
        / ``as_of_timestamp`` (ms or datetime) choose the snapshot read (default: the current one).
        Naming a start (``start_snapshot_id`` / ``start_ref`` / ``start_timestamp``, exclusive)
        makes it an incremental scan of the rows appended after the start up to that snapshot
        (inclusive); ``.changelog()`` on it gives the changes instead. ``row_filter=`` and
        ``selected_fields=`` are the deprecated names of ``filter=`` and ``columns=``.
        """
        chosen_filter = renamed(filter, row_filter, "filter", "row_filter")
        chosen_columns = renamed(columns, selected_fields, "columns", "selected_fields", default=("*",))
        as_of_ms = _millis(as_of_timestamp)
        return TableScan(
            io=self.io,
            metadata=self.metadata,
            row_filter=to_expression(chosen_filter),
            selected_fields=tuple(chosen_columns),
            snapshot_id=snapshot_id,
            ref=ref,
            as_of_timestamp_ms=as_of_ms,
            case_sensitive=case_sensitive,
            limit=limit,
            metadata_location=self.metadata_location,
            start_snapshot_id=start_snapshot_id,
            start_ref=start_ref,
            start_timestamp_ms=_millis(start_timestamp),
        )

    def changelog(
        self,
        start_snapshot_id: int | None = None,
        end_snapshot_id: int | None = None,
        *,
        start_ref: str | None = None,
        end_ref: str | None = None,
        start_timestamp: int | datetime | None = None,
        end_timestamp: int | datetime | None = None,
        filter: Expression | str | None = None,
        columns: Sequence[str] | None = None,
        compute_updates: bool | None = None,
        identifier_columns: list[str] | tuple[str, ...] | None = None,
        net_changes: bool = False,
    ) -> ChangelogScan:
        """The rows inserted, deleted and updated after the start (exclusive) up to the end (inclusive).

        No start: the whole history of the end snapshot (default: the current one). Rows carry
        ``_change_type`` (INSERT, DELETE, UPDATE_BEFORE, UPDATE_AFTER), ``_change_ordinal`` and
        ``_commit_snapshot_id``; see :mod:`icefloe.scan.changelog` for how updates are recognised.
        """
        scan = self.scan(
            filter=filter,
            columns=columns,
            snapshot_id=end_snapshot_id,
            ref=end_ref,
            as_of_timestamp=end_timestamp,
            start_snapshot_id=start_snapshot_id,
            start_ref=start_ref,
            start_timestamp=start_timestamp,
        )
        return scan.changelog(
            compute_updates=compute_updates, identifier_columns=identifier_columns, net_changes=net_changes
        )

    def to_arrow(self) -> pa.Table:
        """The whole current table as Arrow."""
        return self.scan().to_arrow()

    @property
    def inspect(self) -> InspectTable:
        """Metadata tables: ``table.inspect.snapshots()``, ``.files()``, ``.partitions()`` ..."""
        return InspectTable(self)

    @property
    def maintenance(self) -> TableMaintenance:
        """Maintenance: ``table.maintenance.expire_snapshots()``, ``.rewrite_data_files()`` ..."""
        return TableMaintenance(self)

    # ---- writes ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[TableTransaction]:
        """Group several changes into one atomic commit (committed when the block exits cleanly)."""
        self.commit_target.ensure_writable()
        with durability_barrier():  # data files written here are synced with the commit's files
            tx = TableTransaction(self)
            try:
                yield tx
            except BaseException:
                tx.abort()
                raise
            tx.commit()

    append = _without_result(_in_one_snapshot(TableTransaction.append, "Append rows (one new snapshot)."))
    overwrite = _without_result(
        _in_one_snapshot(
            TableTransaction.overwrite,
            "Replace the rows matching ``filter`` (default: all rows) with ``df``, in one snapshot.",
        )
    )
    delete = _in_one_snapshot(
        TableTransaction.delete,
        """Delete the rows matching ``filter`` (no snapshot when nothing matches).

        ``mode``: ``copy-on-write`` (rewrite the touched files) or ``merge-on-read`` (write
        position deletes / deletion vectors); None uses the table property ``write.delete.mode``.
        """,
    )
    update = _in_one_snapshot(
        TableTransaction.update,
        """``UPDATE table SET ... WHERE filter`` (default: every row).

        ``set`` maps column names to literals or ``pyarrow.compute`` expressions over the row's
        current values, e.g. ``{"price": pc.field("price") * 2, "note": "sale"}``.
        ``mode``: None uses ``write.update.mode``.
        """,
    )

    @overload
    def merge(
        self,
        source: pa.Table,
        on: Sequence[str] | str,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
    ) -> MergeBuilder: ...

    @overload
    def merge(
        self,
        source: pa.Table,
        on: Sequence[str] | str,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
        *,
        when_matched_update: bool | Mapping[str, Any] = True,
        when_matched_delete: bool | pc.Expression = False,
        when_not_matched_insert: bool = True,
        when_not_matched_by_source_delete: bool | pc.Expression = False,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> RowLevelResult: ...

    def merge(
        self,
        source: pa.Table,
        on: Sequence[str] | str,
        mode: str | None = None,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
        **legacy: Any,
    ) -> MergeBuilder | RowLevelResult:
        """``MERGE INTO table USING source ON on``: returns a builder of ordered clauses.

        ``table.merge(src, on="id").when_matched_update().when_not_matched_insert().execute()``;
        see :class:`~icefloe.table.merge_builder.MergeBuilder`. Expressions: the target row's
        ``x`` is ``pc.field("x")``, the source row's ``pc.field("source.x")``. A target row matched
        by several source rows raises ``ValidationError``. ``mode``: None uses ``write.merge.mode``.
        The keyword form of earlier releases (``when_matched_update=...`` etc.) still runs the
        merge at once, with a ``DeprecationWarning``.
        """
        if legacy:
            return self._legacy_merge(source, on, mode, options, case_sensitive, legacy)
        opts = options or DEFAULT_OPTIONS

        def run(spec: MergeSpec) -> RowLevelResult:
            with self.transaction() as tx:
                result = tx.queue_merge(source, spec, mode, opts, case_sensitive)
            return result

        return MergeBuilder(on, run)

    def _legacy_merge(
        self,
        source: pa.Table,
        on: Sequence[str] | str,
        mode: str | None,
        options: CommitOptions | None,
        case_sensitive: bool,
        legacy: dict[str, Any],
    ) -> RowLevelResult:
        flags = (
            "when_matched_update",
            "when_matched_delete",
            "when_not_matched_insert",
            "when_not_matched_by_source_delete",
        )
        unknown = set(legacy) - {*flags, "branch", "snapshot_properties"}
        if unknown:
            raise TypeError(f"merge() got unexpected keyword arguments {sorted(unknown)}")
        warn_deprecated(
            "merge(..., when_matched_update=...) is deprecated: use "
            "table.merge(source, on=...).when_matched_update(...)....execute()",
            stacklevel=3,
        )
        opts = resolve_options(options, legacy.get("branch"), legacy.get("snapshot_properties"), stacklevel=4)
        spec = spec_from_flags(
            on,
            legacy.get("when_matched_update", True),
            legacy.get("when_matched_delete", False),
            legacy.get("when_not_matched_insert", True),
            legacy.get("when_not_matched_by_source_delete", False),
        )
        with self.transaction() as tx:
            result = tx.queue_merge(source, spec, mode, opts, case_sensitive)
        return result

    upsert = _in_one_snapshot(
        TableTransaction.upsert,
        "Replace the rows whose ``on`` key appears in ``df`` by ``df``'s rows and insert the rest.",
    )

    def upsert_with_equality_deletes(
        self,
        df: pa.Table,
        on: Sequence[str] | str | None = None,
        options: CommitOptions | None = None,
        *,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> UpsertResult:
        """Upsert by key without reading the table: one snapshot of ``df``'s rows plus equality deletes.

        The write costs the size of ``df`` whatever the table's size (CDC streams); readers pay
        instead, joining every older data file against the keys until the deletes are compacted
        away (``rewrite_data_files``). ``on``: key columns, default the identifier fields. Unlike
        :meth:`upsert`, upserted rows get new row ids (v3+): the old version is deleted, not moved.
        """
        opts = resolve_options(options, branch, snapshot_properties)
        return equality_upsert.upsert_with_equality_deletes(self, df, on, opts)

    def delete_by_key(
        self,
        keys: pa.Table,
        on: Sequence[str] | str | None = None,
        options: CommitOptions | None = None,
        *,
        branch: str | None = None,
        snapshot_properties: dict[str, str] | None = None,
    ) -> UpsertResult:
        """Delete every row whose key equals a row of ``keys``, as equality deletes (no table read)."""
        opts = resolve_options(options, branch, snapshot_properties)
        return equality_upsert.delete_by_key(self, keys, on, opts)

    def set_properties(self, **properties: Any) -> None:
        """Set table properties (values are stored as strings)."""
        with self.transaction() as tx:
            tx.set_properties({k: str(v) for k, v in properties.items()})

    def remove_properties(self, *keys: str) -> None:
        """Remove table properties."""
        with self.transaction() as tx:
            tx.remove_properties(list(keys))

    def upgrade_format_version(self, format_version: int) -> None:
        """Raise the table's format version (1 to 4; metadata only, see ``txn.format_upgrade``).

        Checked against the table's latest metadata: nothing is committed when the table already
        has that version; a lower or unknown version is refused (ValidationError / Unsupported)
        and the table is left as it was.
        """
        from icefloe.txn.format_upgrade import UpgradeFormat, checked_format_version

        self.refresh()
        version = checked_format_version(self.name, self.format_version, format_version)
        if version == self.format_version:
            return
        with self.transaction() as tx:
            tx.add_action(UpgradeFormat(self.name, version))

    # ---- evolution and refs ----------------------------------------------------------------
    def _commit_action(self, action: Action) -> None:
        with self.transaction() as tx:
            tx.add_action(action)

    def update_schema(
        self, allow_incompatible_changes: bool = False, case_sensitive: bool = True
    ) -> UpdateSchema:
        """Schema changes, committed by ``commit()`` or when the ``with`` block exits cleanly."""
        return UpdateSchema(
            self.metadata,
            allow_incompatible_changes=allow_incompatible_changes,
            case_sensitive=case_sensitive,
            on_commit=self._commit_action,
        )

    def update_spec(self, case_sensitive: bool = True) -> UpdateSpec:
        """Partition spec evolution, committed like ``update_schema``."""
        return UpdateSpec(self.metadata, case_sensitive=case_sensitive, on_commit=self._commit_action)

    def manage_snapshots(self) -> ManageSnapshots:
        """Branches, tags, rollback; committed like ``update_schema``."""
        return ManageSnapshots(self.metadata, on_commit=self._commit_action)

    def metadata_table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """A metadata table as Arrow: snapshots, history, manifests, files, entries, partitions, refs."""
        return metadata_tables.metadata_table(self.io, self.metadata, name, snapshot_id)

    def other_table_roots(self) -> tuple[str, ...]:
        """Roots of the other tables where this table commits (none known for a static table)."""
        return self.commit_target.other_table_roots()

    # ---- commit target ---------------------------------------------------------------------
    def load_for_commit(self) -> tuple[TableMetadata, str | None]:
        """Fresh metadata from the commit target (a commit attempt starts here)."""
        return self.commit_target.load_for_commit()

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Compare-and-swap through the commit target, then remember the new state."""
        if base_location is not None:
            new_metadata = new_metadata_with_log(new_metadata, base_location, base_metadata)
        location = self.commit_target.swap_metadata(base_location, base_metadata, new_metadata)
        self.metadata = self.commit_target.committed_metadata(location, new_metadata)
        self.metadata_location = location
        return location

    def __repr__(self) -> str:
        snap = self.current_snapshot()
        return (
            f"Table({self.name}, format v{self.format_version}, "
            f"snapshot={snap.snapshot_id if snap else None})"
        )


def _millis(value: int | datetime | None) -> int | None:
    """Milliseconds since the epoch of a timestamp given as ms or as a datetime."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return value
