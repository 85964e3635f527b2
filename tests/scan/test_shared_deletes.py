"""A scan reads a delete file its tasks share once (``scan.shared_deletes``), with the same rows.

Every table here has deletes that apply to several data files; the rows a whole-scan read gives
(deletes shared between tasks) are compared with exact expected rows and with each task read on
its own (nothing shared, as Spark executors and streaming reads do). Request counts on an object
store are in ``tests/catalog/test_s3_tables.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.scan.delete_readers import read_position_delete_positions, read_position_deletes_by_file
from icefloe.scan.reader import read_task, read_tasks
from icefloe.scan.shared_deletes import SharedDeletes
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))
FILES = 5
ROWS = 6
DELETED = {1, 6, 7, 14, 17, 20, 24, 29}  # rows of every file, some files several


def _table(catalog: Catalog, fv: int, properties: dict[str, str] | None = None) -> Table:
    props = {"format-version": str(fv), **(properties or {})}
    table = catalog.create_table("db.t", SCHEMA, properties=props)
    for f in range(FILES):
        ids = range(f * ROWS, (f + 1) * ROWS)
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"t{i}" for i in ids]}))
    table.delete(f"id in ({', '.join(map(str, sorted(DELETED)))})", mode="merge-on-read")
    return table


def _read_both_ways(table: Table, threads: int = 8) -> tuple[pa.Table, pa.Table]:
    """(the scan read whole, deletes shared; every task read alone), rows sorted by id."""
    scan = table.scan()
    tasks, request = scan.plan_files(), scan.read_request()
    shared = read_tasks(table.io, tasks, request, threads=threads)
    alone = pa.concat_tables([read_task(table.io, t, request) for t in tasks])
    return shared.sort_by("id"), alone.sort_by("id")


@pytest.mark.parametrize(
    ("fv", "properties"),
    [
        (2, {"write.delete.granularity": "partition"}),  # one position delete file for all files
        (2, {}),  # a position delete file per data file: nothing to share
        (3, {}),  # deletion vectors, one Puffin file
        (4, {}),
    ],
)
@pytest.mark.parametrize("threads", [1, 8])
def test_shared_deletes_give_the_rows_each_task_gives_alone(
    catalog: Catalog, fv: int, properties: dict[str, str], threads: int
) -> None:
    table = _table(catalog, fv, properties)
    shared, alone = _read_both_ways(table, threads)
    want = sorted(set(range(FILES * ROWS)) - DELETED)
    assert shared["id"].to_pylist() == want
    assert shared["tag"].to_pylist() == [f"t{i}" for i in want]
    assert shared.equals(alone)


def test_equality_and_position_deletes_together(catalog: Catalog) -> None:
    table = _table(catalog, 2, {"write.delete.granularity": "partition"})
    upserted = pa.table({"id": pa.array([0, 12, 28], pa.int64()), "tag": ["new0", "new12", "new28"]})
    table.upsert_with_equality_deletes(upserted, on="id")
    tasks = table.scan().plan_files()
    kinds = {d.delete_file.content for t in tasks for d in t.deletes}
    assert kinds == {FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES}
    shared, alone = _read_both_ways(table)
    want = sorted(set(range(FILES * ROWS)) - DELETED)
    new = {0: "new0", 12: "new12", 28: "new28"}
    assert list(zip(shared["id"].to_pylist(), shared["tag"].to_pylist(), strict=True)) == [
        (i, new.get(i, f"t{i}")) for i in want
    ]
    assert shared.equals(alone)


def test_a_position_delete_file_grouped_by_data_file_matches_reading_it_per_file(catalog: Catalog) -> None:
    table = _table(catalog, 2, {"write.delete.granularity": "partition"})
    tasks = table.scan().plan_files()
    (delete_file,) = {d.delete_file.file_path: d.delete_file for t in tasks for d in t.deletes}.values()
    by_file = read_position_deletes_by_file(table.io, delete_file)
    data_paths = [normalize_location(t.file_path) for t in tasks]
    assert sorted(by_file) == sorted(data_paths)  # every file has a deleted row
    for path in data_paths:
        alone = read_position_delete_positions(table.io, delete_file, path)
        assert by_file[path].dtype == np.int64
        assert by_file[path].tolist() == alone.tolist()
    assert sum(len(p) for p in by_file.values()) == len(DELETED)


def test_what_the_scan_shares_is_released_when_its_last_task_took_it(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    tasks = table.scan().plan_files()
    shared = SharedDeletes(table.io, tasks)
    dvs = [(t, d.delete_file) for t in tasks for d in t.deletes]
    assert len(dvs) == FILES and len({f.file_path for _, f in dvs}) == 1  # one Puffin file
    for i, (_, dv) in enumerate(dvs):
        assert shared.dv_positions(dv).size == dv.record_count
        assert shared.holds(dv) == (i < len(dvs) - 1)


def test_grouping_reads_every_row_group_and_joins_spellings_of_one_location(tmp_path: Path) -> None:
    """Row groups come back as chunks; ``/x`` and ``file:///x`` are one data file; a null path
    deletes nothing; positions keep their order in the file."""
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    rows = pa.table(
        {
            "file_path": [f"file://{a}", str(b), None, str(a), f"file://{b}", str(a), f"file://{a}"],
            "pos": pa.array([4, 0, 9, 1, 2, 7, 3], pa.int64()),
        }
    )
    location = tmp_path / "deletes.parquet"
    pq.write_table(rows, location, row_group_size=2)
    delete_file = DataFile(
        file_path=str(location),
        file_format="parquet",
        record_count=rows.num_rows,
        file_size_in_bytes=location.stat().st_size,
        content=FileContent.POSITION_DELETES,
    )
    io = FileIO()
    by_file = read_position_deletes_by_file(io, delete_file)
    assert {k: v.tolist() for k, v in by_file.items()} == {f"file://{a}": [4, 1, 7, 3], f"file://{b}": [0, 2]}
    for path, positions in by_file.items():
        assert read_position_delete_positions(io, delete_file, path).tolist() == positions.tolist()
