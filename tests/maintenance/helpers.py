"""Helpers for row-level and compaction tests: tables with deletes, lineage snapshots of their rows."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from icefloe.catalog.base import Catalog
from icefloe.dml.position_deletes import write_row_deletes
from icefloe.dml.row_io import read_for_change
from icefloe.spec.content import FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries
from icefloe.txn.producers import RowDelta

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "val", LongType(), False),
)
BY_CAT = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
LINEAGE = ("_row_id", "_last_updated_sequence_number")


def batch(start: int, n: int) -> pa.Table:
    """Rows ``id`` start..start+n-1, ``cat`` cycling a/b/c, ``val`` = 10 * id."""
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": pa.array(["abc"[i % 3] for i in ids]),
            "val": pa.array([10 * i for i in ids], pa.int64()),
        }
    )


def make_table(
    catalog: Catalog, name: str, fv: int, batches: int = 3, rows: int = 30, partitioned: bool = True
) -> Table:
    """A table with ``batches`` appends of ``rows`` rows each (one file per partition per append)."""
    table = catalog.create_table(
        name,
        SCHEMA,
        partition_spec=BY_CAT if partitioned else None,
        properties={"format-version": str(fv)},
    )
    for k in range(batches):
        table.append(batch(k * rows, rows))
    return table


def delete_ids(table: Table, ids: set[int]) -> None:
    """Delete rows by position (v2 position deletes, v3 DVs, v4 colocated DVs) in one RowDelta."""
    md = table.metadata
    targets = []
    for task in table.scan().plan_files():
        rows = read_for_change(table.io, md, task)
        hit = [p for i, p in zip(rows["id"].to_pylist(), rows["_pos"].to_pylist(), strict=True) if i in ids]
        if hit:
            targets.append((task, hit))
    deletes = write_row_deletes(table.io, md, targets)
    base = table.current_snapshot()
    with table.transaction() as tx:
        tx.add_action(
            RowDelta(
                added_deletes=deletes.added_deletes,
                removed_deletes=deletes.removed_entries(),
                added_dvs=deletes.added_dvs,
                base_snapshot_id=base.snapshot_id if base else None,
            )
        )


def rows_by_id(table: Table, lineage: bool | None = None) -> dict[int, dict[str, Any]]:
    """Every row of the current snapshot by id (with the lineage columns on v3+)."""
    table.refresh()
    with_lineage = table.format_version >= 3 if lineage is None else lineage
    columns = ("id", "cat", "val", *(LINEAGE if with_lineage else ()))
    got = table.scan(columns=columns).to_arrow().to_pylist()
    out = {r["id"]: r for r in got}
    assert len(out) == len(got), "duplicate ids"
    return out


def data_paths(table: Table) -> set[str]:
    """Paths of the live data files of the current snapshot."""
    table.refresh()
    return {t.file_path for t in table.scan().plan_files()}


def delete_file_count(table: Table) -> int:
    """Live delete files of the current snapshot (v4 colocated DVs included)."""
    table.refresh()
    snap = table.current_snapshot()
    if snap is None:
        return 0
    n = 0
    for e in live_entries(table.io, table.metadata, snap):
        if e.data_file.content != FileContent.DATA or e.data_file.deletion_vector is not None:
            n += 1
    return n
