"""The user-facing Table: a catalog identifier bound to its current metadata.

Reads go through ``scan()``; writes (``append``, ``overwrite``, ``delete``, property changes)
each commit one transaction, or several at once inside ``with table.transaction() as tx:``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from icefloe.catalog.table_writes import TableTransaction
from icefloe.expressions.ast import Expression
from icefloe.expressions.parser import to_expression
from icefloe.formats.metadata_file import new_metadata_with_log
from icefloe.scan import metadata_tables
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
        branch: str = MAIN_BRANCH,
        snapshot_properties: dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> None:
        """Delete the rows matching ``delete_filter`` (files rewritten copy-on-write where needed)."""
        with self.transaction() as tx:
            tx.delete(
                delete_filter,
                branch=branch,
                snapshot_properties=snapshot_properties,
                case_sensitive=case_sensitive,
            )

    def set_properties(self, **properties: Any) -> None:
        """Set table properties (values are stored as strings)."""
        with self.transaction() as tx:
            tx.set_properties({k: str(v) for k, v in properties.items()})

    def remove_properties(self, *keys: str) -> None:
        """Remove table properties."""
        with self.transaction() as tx:
            tx.remove_properties(list(keys))

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
        fresh = self.catalog.load_table(self.identifier)
        return fresh.metadata, fresh.metadata_location

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Compare-and-swap through the catalog, then remember the new state."""
        if base_location is not None:
            new_metadata = new_metadata_with_log(new_metadata, base_location, base_metadata)
        location = self.catalog.commit_table(
            self.identifier, base_location, new_metadata, base_metadata=base_metadata
        )
        self.metadata, self.metadata_location = new_metadata, location
        return location

    def __repr__(self) -> str:
        snap = self.current_snapshot()
        return (
            f"Table({self.name}, format v{self.format_version}, "
            f"snapshot={snap.snapshot_id if snap else None})"
        )
