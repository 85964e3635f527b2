"""Equality delete files are read once per scan (``scan.shared_deletes``), by ``to_arrow`` and by
the streaming reader, with exactly the rows each task read alone gives.

File reads are counted with a FileIO that records every location it resolves for pyarrow (every
read of a data, delete or Puffin file goes through ``filesystem_and_path``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import IcefloeError
from icefloe.io.fileio import FileIO
from icefloe.scan import table_scan
from icefloe.scan.delete_readers import drop_equality_deleted, read_equality_delete_keys
from icefloe.scan.reader import read_each_task, read_task, read_tasks
from icefloe.scan.shared_deletes import SharedDeletes
from icefloe.scan.tasks import DeleteFileRef, FileScanTask
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.txn.equality_deletes import write_equality_delete_files

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))
FILES = 5
ROWS = 6
KEYS = [3, 9, 15, 27]  # one row of four of the five files
KEY_ORDER = [("__icefloe_eq_v0", "ascending")]  # the kept keys' id column


class CountingIO(FileIO):
    """A FileIO counting how often each location is opened, optionally failing the first ``fail``
    opens of one location."""

    def __init__(self, fail_location: str | None = None, fail: int = 0) -> None:
        super().__init__()
        self.opened: Counter[str] = Counter()
        self._fail_location = fail_location
        self._fail = fail

    def filesystem_and_path(self, location: str):  # type: ignore[no-untyped-def]
        self.opened[location] += 1
        if location == self._fail_location and self._fail > 0:
            self._fail -= 1
            raise OSError(f"injected read failure: {location}")
        return super().filesystem_and_path(location)


def _table(catalog: Catalog, fv: int, properties: dict[str, str] | None = None) -> Table:
    """FILES data files of ROWS rows (ids 0..29, tag ``t<id>``), then one global equality delete
    file of KEYS on ``id`` (the table is unpartitioned)."""
    props = {"format-version": str(fv), **(properties or {})}
    table = catalog.create_table("db.t", SCHEMA, properties=props)
    for f in range(FILES):
        table.append(_rows(range(f * ROWS, (f + 1) * ROWS)))
    table.delete_by_key(pa.table({"id": pa.array(KEYS, pa.int64())}), on="id")
    return table


def _rows(ids: range | list[int], tags: list[str] | None = None) -> pa.Table:
    tags = tags if tags is not None else [f"t{i}" for i in ids]
    return pa.table({"id": pa.array(list(ids), pa.int64()), "tag": tags})


def _delete_files(tasks: list[FileScanTask], content: FileContent) -> dict[str, DataFile]:
    return {
        d.delete_file.file_path: d.delete_file
        for t in tasks
        for d in t.deletes
        if d.delete_file.content == content
    }


def _pairs(table: pa.Table) -> list[tuple[int, str]]:
    table = table.sort_by("id")
    return list(zip(table["id"].to_pylist(), table["tag"].to_pylist(), strict=True))


def _alone(table: Table) -> pa.Table:
    scan = table.scan()
    request = scan.read_request()
    return pa.concat_tables([read_task(table.io, t, request) for t in scan.plan_files()])


@pytest.mark.parametrize("fv", [2, 3, 4])
@pytest.mark.parametrize("threads", [1, 8])
def test_an_equality_delete_file_is_read_once_for_all_its_tasks(
    catalog: Catalog, fv: int, threads: int
) -> None:
    table = _table(catalog, fv)
    scan = table.scan()
    tasks, request = scan.plan_files(), scan.read_request()
    (eq_path,) = _delete_files(tasks, FileContent.EQUALITY_DELETES)
    assert sum(eq_path in (d.delete_file.file_path for d in t.deletes) for t in tasks) == FILES
    io = CountingIO()
    shared = read_tasks(io, tasks, request, threads=threads)
    want = [(i, f"t{i}") for i in range(FILES * ROWS) if i not in KEYS]
    assert _pairs(shared) == want
    assert io.opened[eq_path] == 1
    assert sorted(io.opened.values()) == [1] * (FILES + 1)  # each data file once, the delete file once
    assert _pairs(_alone(table)) == want


def test_the_stream_reads_an_equality_delete_file_once(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    io = CountingIO()
    scan = dataclasses.replace(table.scan(), io=io)
    (eq_path,) = _delete_files(scan.plan_files(), FileContent.EQUALITY_DELETES)
    io.opened.clear()
    streamed = scan.to_arrow_batch_reader(batch_size=4).read_all()
    assert _pairs(streamed) == [(i, f"t{i}") for i in range(FILES * ROWS) if i not in KEYS]
    assert io.opened[eq_path] == 1


def test_a_spark_tasks_share_of_the_plan_reads_an_equality_delete_file_once(catalog: Catalog) -> None:
    """What a Spark task reads (``read_each_task`` over its own scan tasks, one after another)."""
    table = _table(catalog, 3)
    scan = table.scan()
    tasks, request = scan.plan_files(), scan.read_request()
    (eq_path,) = _delete_files(tasks, FileContent.EQUALITY_DELETES)
    io = CountingIO()
    mine, theirs = tasks[:3], tasks[3:]
    rows = pa.concat_tables([*read_each_task(io, mine, request), *read_each_task(io, theirs, request)])
    assert _pairs(rows) == [(i, f"t{i}") for i in range(FILES * ROWS) if i not in KEYS]
    assert io.opened[eq_path] == 2  # once per share
    assert sorted(io.opened.values()) == [1] * FILES + [2]


def test_the_stream_reads_deletes_task_by_task_past_its_bound(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shared file larger than the stream's bound is not kept: every task reads it, as before."""
    monkeypatch.setattr(table_scan, "STREAM_MAX_HELD_BYTES", 1)
    table = _table(catalog, 2)
    io = CountingIO()
    scan = dataclasses.replace(table.scan(), io=io)
    (eq_path,) = _delete_files(scan.plan_files(), FileContent.EQUALITY_DELETES)
    io.opened.clear()
    streamed = scan.to_arrow_batch_reader(prefetch=0).read_all()
    assert _pairs(streamed) == [(i, f"t{i}") for i in range(FILES * ROWS) if i not in KEYS]
    assert io.opened[eq_path] == FILES


def test_what_is_kept_never_passes_the_bound(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    tasks = table.scan().plan_files()
    (eq_file,) = _delete_files(tasks, FileContent.EQUALITY_DELETES).values()
    unbounded = SharedDeletes(table.io, tasks)
    keys = unbounded.equality_keys(eq_file, SCHEMA)
    assert keys.num_rows == len(KEYS)
    assert unbounded.holds(eq_file) and unbounded.held_bytes == keys.nbytes
    bounded = SharedDeletes(table.io, tasks, max_held_bytes=keys.nbytes - 1)
    assert bounded.equality_keys(eq_file, SCHEMA).equals(keys)
    assert not bounded.holds(eq_file) and bounded.held_bytes == 0
    for _ in range(FILES - 1):
        assert unbounded.equality_keys(eq_file, SCHEMA).equals(keys)
    assert not unbounded.holds(eq_file) and unbounded.held_bytes == 0  # released by its last task


def test_a_failed_read_is_not_kept_and_the_next_task_reads_again(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    tasks = table.scan().plan_files()
    (eq_file,) = _delete_files(tasks, FileContent.EQUALITY_DELETES).values()
    io = CountingIO(fail_location=eq_file.file_path, fail=1)
    shared = SharedDeletes(io, tasks)
    with pytest.raises((OSError, IcefloeError)):
        shared.equality_keys(eq_file, SCHEMA)
    assert not shared.holds(eq_file)
    want = read_equality_delete_keys(table.io, eq_file, SCHEMA).sort_by(KEY_ORDER)
    for task in range(1, FILES):
        assert shared.equality_keys(eq_file, SCHEMA).sort_by(KEY_ORDER).equals(want)
        assert shared.holds(eq_file) == (task < FILES - 1)
    assert io.opened[eq_file.file_path] == 2  # the failed read, then one for the other four tasks


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_different_equality_ids_on_one_file_keep_their_own_keys(catalog: Catalog, fv: int) -> None:
    """One delete file of (id, tag) rows, named by tasks with ids (1,) and with (1, 2): each
    projection is read once and applied only to the tasks that name it."""
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": str(fv)})
    for f in range(FILES):
        table.append(_rows(range(f * ROWS, (f + 1) * ROWS)))
    keys = pa.table({"id": pa.array([3, 9, 15, 27], pa.int64()), "tag": ["t3", "x", "t15", "x"]})
    (both,) = write_equality_delete_files(table.io, table.metadata, keys, [1, 2])
    by_id = dataclasses.replace(both, equality_ids=(1,))
    tasks = sorted(table.scan().plan_files(), key=lambda t: t.data_sequence_number)  # append order
    planned = [
        dataclasses.replace(t, deletes=(DeleteFileRef(by_id if i < 2 else both, 99),))
        for i, t in enumerate(tasks)
    ]
    io = CountingIO()
    rows = read_tasks(io, planned, table.scan().read_request(), threads=4)
    # files 0 and 1 lose ids 3 and 9 by id alone; files 2 to 4 lose 15 (id and tag match), not 27
    assert _pairs(rows) == [(i, f"t{i}") for i in range(FILES * ROWS) if i not in (3, 9, 15)]
    assert io.opened[both.file_path] == 2


@pytest.mark.parametrize(
    ("fv", "properties"),
    [(2, {"write.delete.granularity": "partition"}), (3, {}), (4, {})],
)
def test_position_equality_and_dv_deletes_shared_keep_the_sequence_number_rules(
    catalog: Catalog, fv: int, properties: dict[str, str]
) -> None:
    """Equality deletes apply only to older data files (not to a later append, nor to the rows
    their own upsert adds); position deletes and DVs to the files they name, committed before."""
    table = _table(catalog, fv, properties)  # ids 3, 9, 15, 27 deleted by key
    model = {i: f"t{i}" for i in range(FILES * ROWS) if i not in KEYS}
    table.append(_rows([3, 9, 30, 31], ["late3", "late9", "late30", "late31"]))  # newer: kept
    model.update({3: "late3", 9: "late9", 30: "late30", 31: "late31"})
    table.delete("id in (1, 20, 31)", mode="merge-on-read")  # position deletes or DVs
    for gone in (1, 20, 31):
        del model[gone]
    upsert = _rows([0, 12, 30], ["new0", "new12", "new30"])
    table.upsert_with_equality_deletes(upsert, on="id")  # deletes older rows, keeps its own
    model.update({0: "new0", 12: "new12", 30: "new30"})

    scan = table.scan()
    tasks, request = scan.plan_files(), scan.read_request()
    equality = _delete_files(tasks, FileContent.EQUALITY_DELETES)
    positional = _delete_files(tasks, FileContent.POSITION_DELETES)
    assert len(equality) == 2 and positional
    io = CountingIO()
    rows = read_tasks(io, tasks, request, threads=8)
    assert _pairs(rows) == sorted(model.items())
    assert _pairs(_alone(table)) == sorted(model.items())
    uses = Counter(d.delete_file.file_path for t in tasks for d in t.deletes)
    for path in (*equality, *positional):
        assert io.opened[path] == 1, (path, uses[path])


@pytest.mark.parametrize(
    "extra_keys",
    [0, 4],  # 2 keys for 5 rows: hashed keys probed by rows; 6 keys: hashed rows probed by keys
)
def test_either_join_side_drops_exactly_the_equal_rows_null_equal_to_null(
    catalog: Catalog, extra_keys: int
) -> None:
    schema = Schema(NestedField(1, "id", LongType(), False), NestedField(2, "cat", StringType(), False))
    table = catalog.create_table("db.t", schema, properties={"format-version": "2"})
    rows = pa.table({"id": pa.array([None, None, 1, 1, 2], pa.int64()), "cat": [None, "a", None, "a", "b"]})
    more = list(range(3, 3 + extra_keys))
    keys = pa.table(
        {"id": pa.array([None, 1, *more], pa.int64()), "cat": ["a", None, *(f"x{i}" for i in more)]}
    )
    (delete_file,) = write_equality_delete_files(table.io, table.metadata, keys, [1, 2])
    kept_keys = read_equality_delete_keys(table.io, delete_file, table.schema())
    assert kept_keys.num_rows == 2 + extra_keys
    kept = drop_equality_deleted(rows, kept_keys, delete_file, table.schema())
    assert kept.to_pylist() == [{"id": None, "cat": None}, {"id": 1, "cat": "a"}, {"id": 2, "cat": "b"}]
