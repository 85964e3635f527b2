"""The user-facing Table: a catalog identifier bound to its current metadata.

Reads go through ``scan()``; writes (``append``, ``overwrite``, row-level ``delete`` / ``update`` /
``merge`` / ``upsert``, property changes) each commit one transaction, or several at once inside
``with table.transaction() as tx:``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog import equality_upsert
from icefloe.catalog.equality_upsert import UpsertResult
from icefloe.catalog.table_writes import TableTransaction
from icefloe.expressions.ast import Expression
from icefloe.expressions.parser import to_expression
from icefloe.formats.metadata_file import new_metadata_with_log
from icefloe.scan import metadata_tables
from icefloe.scan.row_level import RowLevelResult
from icefloe.scan.table_scan import TableScan
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MAIN_BRANCH, Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.partition_evolution import UpdateSpec
from icefloe.txn.refs import ManageSnapshots
from icefloe.txn.schema_evolution import UpdateSchema
from icefloe.txn.transaction import Action

if TYPE_CHECKING:
    from icefloe.catalog.base import Catalog
    from icefloe.io.fileio import FileIO


class Table:
    """An Iceberg table loaded from a catalog."""

    def __init__(
        self,
        identifier: tuple[str, ...],
        metadata: TableMetadata,
        metadata_location: str,
        io: FileIO,
        catalog: Catalog,
    ) -> None:
        self.identifier = identifier
        self.metadata = metadata
        self.metadata_location = metadata_location
        self.io = io
        self.catalog = catalog

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
        """Reload the latest metadata from the catalog."""
        fresh = self.catalog.load_table(self.identifier)
        self.metadata, self.metadata_location = fresh.metadata, fresh.metadata_location
        return self

    # ---- reads ----------------------------------------------------------------------------
    def scan(
        self,
        row_filter: Expression | str | None = None,
        selected_fields: tuple[str, ...] | list[str] = ("*",),
        snapshot_id: int | None = None,
        ref: str | None = None,
        as_of_timestamp: int | datetime | None = None,
        case_sensitive: bool = True,
        limit: int | None = None,
    ) -> TableScan:
        """Describe a read; call ``to_arrow()`` or ``plan_files()`` on the result."""
        as_of_ms = as_of_timestamp
        if isinstance(as_of_timestamp, datetime):
            as_of_ms = int(as_of_timestamp.timestamp() * 1000)
        return TableScan(
            io=self.io,
            metadata=self.metadata,
            row_filter=to_expression(row_filter),
            selected_fields=tuple(selected_fields),
            snapshot_id=snapshot_id,
            ref=ref,
            as_of_timestamp_ms=as_of_ms if isinstance(as_of_ms, int) else None,
            case_sensitive=case_sensitive,
            limit=limit,
        )

    def to_arrow(self) -> pa.Table:
        """The whole current table as Arrow."""
        return self.scan().to_arrow()

    # ---- writes ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[TableTransaction]:
        """Group several changes into one atomic commit (committed when the block exits cleanly)."""
        self.catalog.ensure_writable(self)
        tx = TableTransaction(self)
        try:
            yield tx
        except BaseException:
            tx.abort()
            raise
        tx.commit()

    def append(
        self, df: pa.Table, branch: str = MAIN_BRANCH, snapshot_properties: dict[str, str] | None = None
    ) -> None:
        """Append rows (one new snapshot)."""
        with self.transaction() as tx:
            tx.append(df, branch=branch, snapshot_properties=snapshot_properties)

    def overwrite(
        self,
        df: pa.Table,
        overwrite_filter: Expression | str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
    ) -> None:
        """Replace the rows matching ``overwrite_filter`` (default: all rows) with ``df``, in one snapshot."""
        with self.transaction() as tx:
            tx.overwrite(df, overwrite_filter, branch=branch, snapshot_properties=snapshot_properties)

    def delete(
        self,
        delete_filter: Expression | str,
        mode: str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> RowLevelResult:
        """Delete the rows matching ``delete_filter`` (no snapshot when nothing matches).

        ``mode``: ``copy-on-write`` (rewrite the touched files) or ``merge-on-read`` (write
        position deletes / deletion vectors); None uses the table property ``write.delete.mode``.
        """
        with self.transaction() as tx:
            result = tx.delete(
                delete_filter,
                mode=mode,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )
        return result

    def update(
        self,
        set: Mapping[str, Any],
        update_filter: Expression | str | None = None,
        mode: str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> RowLevelResult:
        """``UPDATE table SET ... WHERE update_filter`` (default: every row).

        ``set`` maps column names to literals or ``pyarrow.compute`` expressions over the row's
        current values, e.g. ``{"price": pc.field("price") * 2, "note": "sale"}``.
        ``mode``: None uses ``write.update.mode``.
        """
        with self.transaction() as tx:
            result = tx.update(
                set,
                update_filter,
                mode=mode,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )
        return result

    def merge(
        self,
        source: pa.Table,
        on: list[str] | str,
        when_matched_update: bool | Mapping[str, Any] = True,
        when_matched_delete: bool | pc.Expression = False,
        when_not_matched_insert: bool = True,
        when_not_matched_by_source_delete: bool | pc.Expression = False,
        mode: str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> RowLevelResult:
        """``MERGE INTO table USING source ON on``: update or delete matched rows, insert the others.

        ``when_matched_update``: True copies every source column, or a dict of column values
        (literals or expressions; ``pc.field("x")`` is the target's ``x``, ``pc.field("source.x")``
        the source's); ``when_matched_delete``: True or a condition over the matched pair;
        ``when_not_matched_insert``: insert source rows without a match;
        ``when_not_matched_by_source_delete``: True or a condition over target rows without a match.
        A target row matched by several source rows raises ``ValidationError``.
        ``mode``: None uses ``write.merge.mode``.
        """
        with self.transaction() as tx:
            result = tx.merge(
                source,
                on,
                when_matched_update=when_matched_update,
                when_matched_delete=when_matched_delete,
                when_not_matched_insert=when_not_matched_insert,
                when_not_matched_by_source_delete=when_not_matched_by_source_delete,
                mode=mode,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )
        return result

    def upsert(
        self,
        df: pa.Table,
        on: list[str] | str,
        mode: str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
    ) -> RowLevelResult:
        """Replace the rows whose ``on`` key appears in ``df`` by ``df``'s rows and insert the rest."""
        with self.transaction() as tx:
            result = tx.upsert(df, on, mode=mode, branch=branch, snapshot_properties=snapshot_properties)
        return result

    def upsert_with_equality_deletes(
        self,
        df: pa.Table,
        on: list[str] | str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
    ) -> UpsertResult:
        """Upsert by key without reading the table: one snapshot of ``df``'s rows plus equality deletes.

        The write costs the size of ``df`` whatever the table's size (CDC streams); readers pay
        instead, joining every older data file against the keys until the deletes are compacted
        away (``rewrite_data_files``). ``on``: key columns, default the identifier fields. Unlike
        :meth:`upsert`, upserted rows get new row ids (v3+): the old version is deleted, not moved.
        """
        return equality_upsert.upsert_with_equality_deletes(
            self, df, on, branch=branch, snapshot_properties=snapshot_properties
        )

    def delete_by_key(
        self,
        keys: pa.Table,
        on: list[str] | str | None = None,
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
    ) -> UpsertResult:
        """Delete every row whose key equals a row of ``keys``, as equality deletes (no table read)."""
        return equality_upsert.delete_by_key(
            self, keys, on, branch=branch, snapshot_properties=snapshot_properties
        )

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

    # ---- commit target ---------------------------------------------------------------------
    def load_for_commit(self) -> tuple[TableMetadata, str | None]:
        """Fresh metadata from the catalog (a commit attempt starts here)."""
        return self.catalog.load_for_commit(self)

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Compare-and-swap through the catalog, then remember the new state."""
        if base_location is not None:
            new_metadata = new_metadata_with_log(new_metadata, base_location, base_metadata)
        location = self.catalog.commit_table(
            self.identifier, base_location, new_metadata, base_metadata=base_metadata
        )
        self.metadata = self.catalog.committed_metadata(location, new_metadata)
        self.metadata_location = location
        return location

    def __repr__(self) -> str:
        snap = self.current_snapshot()
        return (
            f"Table({self.name}, format v{self.format_version}, "
            f"snapshot={snap.snapshot_id if snap else None})"
        )
