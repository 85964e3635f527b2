"""``table.inspect`` (metadata tables as Arrow) and ``table.maintenance`` (expiry, orphans, compaction)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import pyarrow as pa

from icefloe.expressions.ast import Expression
from icefloe.maintenance.expire_snapshots import ExpireResult, expire_snapshots
from icefloe.maintenance.remove_orphan_files import OrphanResult, remove_orphan_files
from icefloe.maintenance.rewrite_data_files import RewriteResult, rewrite_data_files
from icefloe.scan.metadata_tables import metadata_table
from icefloe.txn.commit_options import CommitOptions
from icefloe.txn.handle import TableHandle


class InspectTable:
    """The metadata tables of one table, each as a ``pyarrow.Table``.

    ``snapshot_id`` (where a table has one) reads it as of that snapshot instead of the current one.
    """

    def __init__(self, table: TableHandle) -> None:
        self._table = table

    def table(self, name: str, snapshot_id: int | None = None) -> pa.Table:
        """A metadata table by its name (``"snapshots"``, ``"files"``, ``"partitions"`` ...)."""
        return metadata_table(self._table.io, self._table.metadata, name, snapshot_id)

    def snapshots(self) -> pa.Table:
        """One row per snapshot, oldest first."""
        return self.table("snapshots")

    def history(self) -> pa.Table:
        """When each snapshot became the main branch's head."""
        return self.table("history")

    def refs(self) -> pa.Table:
        """Branches and tags with their retention settings."""
        return self.table("refs")

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        """The manifests of a snapshot, with file counts and partition summaries."""
        return self.table("manifests", snapshot_id)

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        """Live data and delete files."""
        return self.table("files", snapshot_id)

    def data_files(self, snapshot_id: int | None = None) -> pa.Table:
        """Live data files."""
        return self.table("data_files", snapshot_id)

    def delete_files(self, snapshot_id: int | None = None) -> pa.Table:
        """Live delete files (position, equality, deletion vectors)."""
        return self.table("delete_files", snapshot_id)

    def entries(self, snapshot_id: int | None = None) -> pa.Table:
        """Every manifest entry of a snapshot, deleted ones included."""
        return self.table("entries", snapshot_id)

    def all_entries(self) -> pa.Table:
        """The entries of every snapshot still in the metadata."""
        return self.table("all_entries")

    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        """Per partition: record and file counts, sizes, delete counts, last update."""
        return self.table("partitions", snapshot_id)


class TableMaintenance:
    """Maintenance of one table; each call commits (or, for orphans, deletes) on its own."""

    def __init__(self, table: TableHandle) -> None:
        self._table = table

    def expire_snapshots(
        self,
        *,
        older_than: datetime | int | None = None,
        retain_last: int | None = None,
        snapshot_ids: Iterable[int] = (),
        delete_files: bool = True,
    ) -> ExpireResult:
        """Expire old snapshots, then delete the files no retained snapshot reads."""
        return expire_snapshots(
            self._table,
            older_than=older_than,
            retain_last=retain_last,
            snapshot_ids=snapshot_ids,
            delete_files=delete_files,
        )

    def remove_orphan_files(
        self, *, older_than: datetime | int | None = None, location: str | None = None, dry_run: bool = False
    ) -> OrphanResult:
        """Delete files under the table location that nothing references (older than 3 days by default)."""
        return remove_orphan_files(self._table, older_than=older_than, location=location, dry_run=dry_run)

    def rewrite_data_files(
        self,
        filter: Expression | str | None = None,
        target_file_size: int | None = None,
        *,
        min_input_files: int = 2,
        rewrite_all: bool = False,
        options: CommitOptions | None = None,
        case_sensitive: bool = True,
    ) -> RewriteResult:
        """Compact small files and apply deletes (row lineage kept)."""
        return rewrite_data_files(
            self._table,
            filter,
            target_file_size,
            min_input_files=min_input_files,
            rewrite_all=rewrite_all,
            options=options,
            case_sensitive=case_sensitive,
        )
