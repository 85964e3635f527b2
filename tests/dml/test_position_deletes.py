"""Writing row-level deletes and changed rows: the primitives delete / update / merge (and Spark) use.

Byte layouts are checked with pyarrow.parquet and PyIceberg's Puffin reader; what the tables
read afterwards is checked through icefloe, PyIceberg and DuckDB.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
from pyiceberg.table.puffin import PuffinFile

from icefloe.catalog.base import Catalog
from icefloe.dml.position_deletes import RowDeletes, write_row_deletes
from icefloe.dml.row_io import read_for_change, write_changed_rows, write_survivors
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import TableUpdate, UpgradeFormatVersion
from icefloe.table.table import Table
from icefloe.txn.producers import RowDelta
from icefloe.txn.transaction import AttemptContext
from tests.support.interop import read_with_duckdb, read_with_pyiceberg

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))


def _table(catalog: Catalog, fv: int, properties: dict[str, str] | None = None) -> Table:
    """Two data files: ids 0..9 (first append) and 10..19 (second append)."""
    props = {"format-version": str(fv), **(properties or {})}
    t = catalog.create_table("db.t", SCHEMA, properties=props)
    t.append(pa.table({"id": pa.array(range(0, 10), pa.int64()), "tag": [f"a{i}" for i in range(10)]}))
    t.append(pa.table({"id": pa.array(range(10, 20), pa.int64()), "tag": [f"b{i}" for i in range(10)]}))
    return t


def _tasks(table: Table) -> list[FileScanTask]:
    """Plan tasks ordered by the file's first id (file 0 holds ids 0..9, file 1 ids 10..19)."""
    tasks = table.scan().plan_files()

    def first_id(task: FileScanTask) -> int:
        lower = task.data_file.lower_bounds or {}
        return int.from_bytes(lower[1], "little", signed=True)

    return sorted(tasks, key=first_id)


def _commit(table: Table, deletes: RowDeletes) -> None:
    base = table.current_snapshot()
    with table.transaction() as tx:
        tx.add_action(
            RowDelta(
                base_snapshot_id=base.snapshot_id if base else None,
                added_deletes=deletes.added_deletes,
                removed_deletes=deletes.removed_entries(),
                added_dvs=deletes.added_dvs,
                owned_files=deletes.written_files,
            )
        )


def _ids(table: Table) -> list[int]:
    return sorted(table.to_arrow()["id"].to_pylist())


def _field_ids(schema: pa.Schema) -> dict[str, int]:
    return {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema}


class _Upgrade:
    """A transaction action raising the format version (the test's own, independent of Table)."""

    def __init__(self, version: int) -> None:
        self.version = version

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        return [UpgradeFormatVersion(self.version)]

    def committed_files(self) -> list[str]:
        return []


# ---------------------------------------------------------------- v2 position delete files


def test_v2_position_delete_file_layout_and_readers(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    first, second = _tasks(table)
    deletes = write_row_deletes(table.io, table.metadata, [(first, [7, 1, 3]), (second, np.array([2]))])
    assert deletes.deleted_rows == 4
    assert len(deletes.added_deletes) == 2  # write.delete.granularity=file: one file per data file
    by_target = {f.referenced_data_file: f for f in deletes.added_deletes}
    f0 = by_target[first.file_path]
    assert f0.content == FileContent.POSITION_DELETES and f0.file_format == "parquet"
    assert f0.record_count == 3
    written = pq.read_table(local_path(f0.file_path))
    assert written.column_names == ["file_path", "pos"]
    assert _field_ids(written.schema) == {"file_path": 2147483546, "pos": 2147483545}
    assert written["pos"].to_pylist() == [1, 3, 7]
    assert written["file_path"].to_pylist() == [first.file_path] * 3
    _commit(table, deletes)
    want = sorted(set(range(20)) - {1, 3, 7, 12})
    assert _ids(table) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want


def test_v2_partition_granularity_writes_one_sorted_file(catalog: Catalog) -> None:
    table = _table(catalog, 2, {"write.delete.granularity": "partition"})
    first, second = _tasks(table)
    deletes = write_row_deletes(table.io, table.metadata, [(second, [9, 0]), (first, [5])])
    assert len(deletes.added_deletes) == 1
    f = deletes.added_deletes[0]
    assert f.referenced_data_file is None  # covers two data files
    written = pq.read_table(local_path(f.file_path))
    pairs = list(zip(written["file_path"].to_pylist(), written["pos"].to_pylist(), strict=True))
    assert pairs == sorted(pairs) and len(pairs) == 3
    assert set(pairs) == {(first.file_path, 5), (second.file_path, 0), (second.file_path, 9)}
    _commit(table, deletes)
    want = sorted(set(range(20)) - {5, 10, 19})
    assert _ids(table) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want


def test_v2_already_deleted_positions_are_not_counted_again(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    _commit(table, write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [1, 2])]))
    again = write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [2, 3])])
    assert again.deleted_rows == 1
    assert pq.read_table(local_path(again.added_deletes[0].file_path))["pos"].to_pylist() == [3]
    nothing = write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [1, 2])])
    assert nothing.is_empty and nothing.deleted_rows == 0 and nothing.written_files == []


# ---------------------------------------------------------------- v3 deletion vectors


def _live_dvs(table: Table) -> list[dict[str, Any]]:
    rows = table.metadata_table("delete_files").to_pylist()
    return [r for r in rows if r["file_format"].lower() == "puffin"]


def test_v3_dvs_share_one_puffin_file_and_pyiceberg_reads_the_blobs(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    first, second = _tasks(table)
    deletes = write_row_deletes(table.io, table.metadata, [(first, [0, 9]), (second, range(3, 6))])
    assert len({f.file_path for f in deletes.added_deletes}) == 1  # one Puffin file
    assert len({f.content_offset for f in deletes.added_deletes}) == 2
    assert deletes.written_files == [deletes.added_deletes[0].file_path]
    puffin = PuffinFile(Path(local_path(deletes.written_files[0])).read_bytes())
    got = {
        dv.referenced_data_file: sorted(dv.to_vector().to_pylist())
        for dv in deletion_vectors_from_puffin_file(puffin)
    }
    assert got == {first.file_path: [0, 9], second.file_path: [3, 4, 5]}
    _commit(table, deletes)
    want = sorted(set(range(20)) - {0, 9, 13, 14, 15})
    assert _ids(table) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want


def test_v3_second_delete_merges_into_one_dv(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    _commit(table, write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [1, 2])]))
    old = _live_dvs(table)
    assert len(old) == 1
    second = write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [2, 4, 6])])
    assert second.deleted_rows == 2  # position 2 was deleted already
    assert [f.content_key for f in second.removed_deletes] == [
        (old[0]["file_path"], old[0]["content_offset"])
    ]
    _commit(table, second)
    live = _live_dvs(table)
    first_path = _tasks(table)[0].file_path
    assert len(live) == 1 and live[0]["referenced_data_file"] == first_path
    assert live[0]["record_count"] == 4  # the union {1, 2, 4, 6}
    assert live[0]["file_path"] != old[0]["file_path"]
    entries = table.metadata_table("entries").to_pylist()
    old_rows = [e for e in entries if e["data_file"]["file_path"] == old[0]["file_path"]]
    assert [e["status"] for e in old_rows] == [2]  # DELETED in the new snapshot
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["added-dvs"] == "1" and summary["removed-dvs"] == "1"
    want = sorted(set(range(20)) - {1, 2, 4, 6})
    assert _ids(table) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want


def test_upgraded_v2_position_deletes_merge_into_the_dv(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    first, second = _tasks(table)
    # a file-scoped delete file for the first file, a partition-scoped one covering both
    _commit(table, write_row_deletes(table.io, table.metadata, [(first, [0])]))
    table.set_properties(**{"write.delete.granularity": "partition"})
    _commit(table, write_row_deletes(table.io, table.metadata, [(first, [1]), (second, [0])]))
    scoped = {
        r["file_path"]: r["referenced_data_file"] for r in table.metadata_table("delete_files").to_pylist()
    }
    with table.transaction() as tx:
        tx.add_action(_Upgrade(3))
    assert table.format_version == 3
    first = _tasks(table)[0]
    deletes = write_row_deletes(table.io, table.metadata, [(first, [5])])
    assert deletes.deleted_rows == 1
    (dv,) = deletes.added_deletes
    assert dv.file_format == "puffin" and dv.record_count == 3  # {0, 1} merged with {5}
    retired = {f.file_path for f in deletes.removed_deletes}
    assert retired == {p for p, ref in scoped.items() if ref == first.file_path}  # only the file-scoped one
    _commit(table, deletes)
    live = table.metadata_table("delete_files").to_pylist()
    assert sorted(r["file_format"].lower() for r in live) == ["parquet", "puffin"]
    want = sorted(set(range(20)) - {0, 1, 5, 10})
    assert _ids(table) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want


# ---------------------------------------------------------------- v4 colocated DVs


def test_v4_colocated_dvs_merge(catalog: Catalog) -> None:
    table = _table(catalog, 4)
    deletes = write_row_deletes(table.io, table.metadata, [(_tasks(table)[1], [0, 1])])
    assert deletes.added_deletes == [] and list(deletes.added_dvs) == [_tasks(table)[1].file_path]
    _commit(table, deletes)
    again = write_row_deletes(table.io, table.metadata, [(_tasks(table)[1], [1, 7])])
    assert again.deleted_rows == 1
    assert again.added_dvs[_tasks(table)[1].file_path].cardinality == 3
    _commit(table, again)
    task = _tasks(table)[1]
    assert task.data_file.deletion_vector is not None
    assert task.data_file.deletion_vector.cardinality == 3
    assert _ids(table) == sorted(set(range(20)) - {10, 11, 17})


# ---------------------------------------------------------------- bad input and combining


def test_positions_outside_the_file_and_v1_are_refused(catalog: Catalog, warehouse: Path) -> None:
    table = _table(catalog, 3)
    task = _tasks(table)[0]
    with pytest.raises(ValidationError, match=r"row position 10 is outside data file .*10 rows"):
        write_row_deletes(table.io, table.metadata, [(task, [2, 10])])
    with pytest.raises(ValidationError, match="row position -1"):
        write_row_deletes(table.io, table.metadata, [(task, [-1])])
    assert not list(warehouse.rglob("*.puffin"))
    v1 = catalog.create_table("db.v1", SCHEMA, properties={"format-version": "1"})
    v1.append(pa.table({"id": pa.array([1], pa.int64()), "tag": ["x"]}))
    with pytest.raises(ValidationError, match="format version 1"):
        write_row_deletes(v1.io, v1.metadata, [(v1.scan().plan_files()[0], [0])])


def test_row_deletes_merge_combines_and_refuses_two_dvs_for_one_file(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    first, second = _tasks(table)
    a = write_row_deletes(table.io, table.metadata, [(first, [1])])
    b = write_row_deletes(table.io, table.metadata, [(second, [2, 3])])
    both = a.merge(b)
    assert both.deleted_rows == 3 and len(both.added_deletes) == 2
    assert both.written_files == a.written_files + b.written_files
    with pytest.raises(ValidationError, match="two deletion vectors"):
        both.merge(write_row_deletes(table.io, table.metadata, [(first, [4])]))
    _commit(table, both)
    assert _ids(table) == sorted(set(range(20)) - {1, 12, 13})


def test_tasks_with_deletes_pickle(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    _commit(table, write_row_deletes(table.io, table.metadata, [(_tasks(table)[0], [3])]))
    task = _tasks(table)[0]
    assert task.deletes
    copy = pickle.loads(pickle.dumps(task))
    assert copy == task
    assert read_for_change(table.io, table.metadata, copy).num_rows == 9


# ---------------------------------------------------------------- reading and writing changed rows


def test_read_for_change_materialises_lineage(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    _commit(table, write_row_deletes(table.io, table.metadata, [(_tasks(table)[1], [0, 4])]))
    rows = read_for_change(table.io, table.metadata, _tasks(table)[1])
    assert rows.column_names == ["id", "tag", "_pos", "_row_id", "_last_updated_sequence_number"]
    got = rows.to_pylist()
    assert [r["_pos"] for r in got] == [1, 2, 3, 5, 6, 7, 8, 9]
    assert all(r["_row_id"] == r["id"] for r in got)  # second file: first_row_id 10, ids 10..19
    assert {r["_last_updated_sequence_number"] for r in got} == {2}
    v2 = catalog.create_table("db.v2", SCHEMA, properties={"format-version": "2"})
    v2.append(pa.table({"id": pa.array([1], pa.int64()), "tag": ["x"]}))
    assert read_for_change(v2.io, v2.metadata, v2.scan().plan_files()[0]).column_names == [
        "id",
        "tag",
        "_pos",
    ]


def test_written_rows_carry_lineage_columns_with_reserved_ids(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    task = _tasks(table)[0]
    rows = read_for_change(table.io, table.metadata, task).filter(pa.compute.field("id") < 3)
    rows = rows.set_column(4, "_last_updated_sequence_number", pa.array([None, 1, None], pa.int64()))
    (written,) = write_changed_rows(table.io, table.metadata, rows)
    file = pq.read_table(local_path(written.file_path))
    assert _field_ids(file.schema) == {
        "id": 1,
        "tag": 2,
        "_row_id": 2147483540,
        "_last_updated_sequence_number": 2147483539,
    }
    assert file["_row_id"].to_pylist() == [0, 1, 2]
    assert file["_last_updated_sequence_number"].to_pylist() == [None, 1, None]
    fresh = pa.table({"id": pa.array([50], pa.int64()), "tag": ["n"]})
    (plain,) = write_changed_rows(table.io, table.metadata, fresh)
    assert pq.read_table(local_path(plain.file_path)).column_names == ["id", "tag"]  # new rows: no lineage
    survivor = write_survivors(table.io, table.metadata, task, rows)
    assert survivor.spec_id == task.data_file.spec_id and survivor.partition == task.data_file.partition
    assert survivor.record_count == 3
    bad = rows.set_column(0, "id", pa.array([None, 1, 2], pa.int64()))
    with pytest.raises(ValidationError, match="id"):
        write_changed_rows(table.io, table.metadata, bad)
