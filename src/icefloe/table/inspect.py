"""``table.inspect`` (metadata tables as Arrow) and ``table.maintenance`` (expiry, orphans, compaction,
copies to another location)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import pyarrow as pa

from icefloe.deprecation import forwards_keywords
from icefloe.maintenance import expire_snapshots as expiry
from icefloe.maintenance import remove_orphan_files as orphans
from icefloe.maintenance import rewrite_data_files as compaction
from icefloe.maintenance import rewrite_table_path as copying
from icefloe.scan.metadata_tables import metadata_table
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


P = ParamSpec("P")
R = TypeVar("R")


def _on_the_table(
    operation: Callable[Concatenate[TableHandle, P], R],
) -> Callable[Concatenate[TableMaintenance, P], R]:
    """``table.maintenance.<operation>(...)``: ``maintenance.<operation>(table, ...)``, one signature."""

    @functools.wraps(operation)
    @forwards_keywords
    def on_the_table(maintenance: TableMaintenance, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return operation(maintenance.table, *args, **kwargs)

    on_the_table.__qualname__ = f"TableMaintenance.{operation.__name__}"
    return on_the_table


class TableMaintenance:
    """Maintenance of one table; each call commits (or, for orphans, deletes) on its own."""

    def __init__(self, table: TableHandle) -> None:
        self.table = table

    expire_snapshots = _on_the_table(expiry.expire_snapshots)
    remove_orphan_files = _on_the_table(orphans.remove_orphan_files)
    rewrite_data_files = _on_the_table(compaction.rewrite_data_files)
    rewrite_table_path = _on_the_table(copying.rewrite_table_path)
