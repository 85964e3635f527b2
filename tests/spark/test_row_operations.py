"""delete_rows, update_rows, merge_into from PySpark: contents, one snapshot, lineage, interop, bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import types as T

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import delete_rows, merge_into, update_rows
from icefloe.spark.executor_jobs import JobStaging, run_chunks
from icefloe.spark.row_operations import delete_where
from icefloe.table.table import Table
from icefloe.tree.locations import LocationProvider
from tests.maintenance.helpers import delete_file_count, make_table, rows_by_id
from tests.support.interop import read_with_pyiceberg

MODES = ["copy-on-write", "merge-on-read"]
CASES = [(fv, mode) for fv in (2, 3, 4) for mode in MODES]
Rows = dict[int, dict[str, Any]]


def _table(catalog: Catalog, name: str, fv: int, mode: str) -> Table:
    table = make_table(catalog, name, fv)  # ids 0..89 in 9 files (3 appends x cat a/b/c), val = 10 * id
    table.set_properties(**{"write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode})
    return table


def _all_files(table: Table) -> set[str]:
    root = Path(local_path(table.metadata.location))
    return {str(p) for p in root.rglob("*") if p.is_file()}


def _values(rows: Rows) -> dict[int, tuple[str, int]]:
    return {i: (r["cat"], r["val"]) for i, r in rows.items()}


def _check_common(table: Table, before_snapshots: int, want: dict[int, tuple[str, int]], mode: str) -> Rows:
    """One new snapshot, exact contents, PyIceberg agrees (v2/v3), delete files only for merge-on-read."""
    table.refresh()
    assert len(table.snapshots()) == before_snapshots + 1
    after = rows_by_id(table)
    assert _values(after) == want
    if table.format_version < 4:
        other = read_with_pyiceberg(table.metadata_location).to_pylist()
        assert {r["id"]: (r["cat"], r["val"]) for r in other} == want
    if mode == "copy-on-write":
        assert delete_file_count(table) == 0
    else:
        assert delete_file_count(table) > 0
    return after


def _new_seq(table: Table) -> int:
    snap = table.current_snapshot()
    assert snap is not None
    return snap.sequence_number


@pytest.mark.parametrize(("fv", "mode"), CASES)
def test_delete_rows(spark, catalog: Catalog, table_name: str, fv: int, mode: str) -> None:
    table = _table(catalog, table_name, fv, mode)
    before = rows_by_id(table)
    n = len(table.snapshots())
    condition = "id < 7 or (id >= 40 and id < 44) or val = 850"
    gone = {i for i in before if i < 7 or 40 <= i < 44 or 10 * i == 850}

    result = delete_rows(spark, table_name, condition)

    assert result.deleted_rows == len(gone) and result.mode == mode
    want = {i: v for i, v in _values(before).items() if i not in gone}
    after = _check_common(table, n, want, mode)
    assert table.current_snapshot().operation in ("delete", "overwrite")  # type: ignore[union-attr]
    if fv >= 3:  # surviving rows keep both lineage values, whether copied or not
        assert after == {i: r for i, r in before.items() if i not in gone}


@pytest.mark.parametrize("mode", MODES)
def test_delete_whole_partition_is_metadata_only(spark, catalog: Catalog, table_name: str, mode: str) -> None:
    table = _table(catalog, table_name, 3, mode)
    before = rows_by_id(table)
    files = _all_files(table)
    result = delete_rows(spark, table_name, "cat = 'c'")
    assert result.deleted_rows == 30 and result.files_written == []
    table.refresh()
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    assert rows_by_id(table) == {i: r for i, r in before.items() if r["cat"] != "c"}
    new_files = _all_files(table) - files
    assert all("/metadata/" in p for p in new_files)  # no data or delete file written


def test_delete_matching_nothing_commits_nothing(spark, catalog: Catalog, table_name: str) -> None:
    table = _table(catalog, table_name, 3, "merge-on-read")
    n = len(table.snapshots())
    result = delete_rows(spark, table_name, "id > 1000")
    assert result.deleted_rows == 0 and result.snapshot_id is None
    assert len(table.refresh().snapshots()) == n


@pytest.mark.parametrize(("fv", "mode"), CASES)
def test_update_rows(spark, catalog: Catalog, table_name: str, fv: int, mode: str) -> None:
    table = _table(catalog, table_name, fv, mode)
    before = rows_by_id(table)
    n = len(table.snapshots())
    hit = {i for i in before if 20 <= i < 50}

    result = update_rows(
        spark, table_name, {"val": "val * 2 + 1", "cat": "'z'"}, condition="id >= 20 and id < 50"
    )

    assert result.updated_rows == len(hit) and result.deleted_rows == 0 and result.inserted_rows == 0
    want = {i: (("z", 2 * v + 1) if i in hit else (c, v)) for i, (c, v) in _values(before).items()}
    after = _check_common(table, n, want, mode)
    if fv >= 3:
        seq = _new_seq(table)
        for i, row in after.items():
            assert row["_row_id"] == before[i]["_row_id"], i  # moved or not, the id stays
            expected_seq = seq if i in hit else before[i]["_last_updated_sequence_number"]
            assert row["_last_updated_sequence_number"] == expected_seq, i


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_copy_on_write_after_merge_on_read_retires_the_deletes(
    spark, catalog: Catalog, table_name: str, fv: int
) -> None:
    table = _table(catalog, table_name, fv, "merge-on-read")
    delete_rows(spark, table_name, "id = 0 or id = 3 or id = 60")  # deletes in two cat=a files
    assert delete_file_count(table) > 0
    before = rows_by_id(table)
    n = len(table.snapshots())
    result = update_rows(spark, table_name, {"val": "-1"}, "id = 6 or id = 63", mode="copy-on-write")
    assert result.updated_rows == 2 and result.mode == "copy-on-write"
    want = {i: ((c, -1) if i in (6, 63) else (c, v)) for i, (c, v) in _values(before).items()}
    after = _check_common(table, n, want, "copy-on-write")  # the rewritten files' deletes are gone
    assert sorted(after) == sorted(set(range(90)) - {0, 3, 60})


def _source(spark, rows: list[tuple[int, str, int]]):  # type: ignore[no-untyped-def]
    schema = T.StructType(
        [
            T.StructField("id", T.LongType(), True),
            T.StructField("cat", T.StringType(), True),
            T.StructField("val", T.LongType(), True),
        ]
    )
    return spark.createDataFrame(rows, schema)


@pytest.mark.parametrize(("fv", "mode"), CASES)
def test_merge_into(spark, catalog: Catalog, table_name: str, fv: int, mode: str) -> None:
    table = _table(catalog, table_name, fv, mode)
    before = rows_by_id(table)
    next_row_id = table.metadata.next_row_id or 0
    n = len(table.snapshots())
    source = _source(
        spark,
        [
            (5, "c", 1005),  # matched: update (5 is in cat c)
            (6, "z", 1006),  # matched: update, moves to a new partition
            (7, "b", -1),  # matched: deleted by the matched-delete condition
            (85, "b", 1085),  # matched (would be deleted by source, but it is matched): update
            (200, "a", 2000),  # not matched: insert
            (201, "b", 2010),  # not matched: insert
        ],
    )

    result = merge_into(
        source,
        table_name,
        on="id",
        when_matched_delete="source.val < 0",
        when_not_matched_by_source_delete="target.id >= 80",
    )

    updated = {5: ("c", 1005), 6: ("z", 1006), 85: ("b", 1085)}
    deleted = {7} | {i for i in range(80, 90) if i != 85}
    inserted = {200: ("a", 2000), 201: ("b", 2010)}
    assert (result.updated_rows, result.deleted_rows, result.inserted_rows) == (3, len(deleted), 2)
    want = {i: updated.get(i, v) for i, v in _values(before).items() if i not in deleted}
    want.update(inserted)
    after = _check_common(table, n, want, mode)
    if fv >= 3:
        seq = _new_seq(table)
        for i, row in after.items():
            if i in inserted:
                assert row["_row_id"] >= next_row_id and row["_last_updated_sequence_number"] == seq
            elif i in updated:
                assert row["_row_id"] == before[i]["_row_id"] and row["_last_updated_sequence_number"] == seq
            else:
                assert row == before[i], i
        new_ids = [after[i]["_row_id"] for i in inserted]
        assert len(set(new_ids)) == 2


def test_merge_upsert_defaults_on_empty_table(spark, catalog: Catalog, table_name: str) -> None:
    table = make_table(catalog, table_name, 3, batches=0)
    result = merge_into(_source(spark, [(1, "a", 10), (2, "b", 20)]), table_name, on=["id"])
    assert result.inserted_rows == 2
    assert _values(rows_by_id(table)) == {1: ("a", 10), 2: ("b", 20)}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda spark, name: update_rows(spark, name, {"nope": "1"}, "true"), "nope"),
        (lambda spark, name: update_rows(spark, name, {"val": "'abc'"}, "id = 3"), "val"),
        (lambda spark, name: update_rows(spark, name, {"val": "missing_col + 1"}, "true"), "missing_col"),
        (lambda spark, name: update_rows(spark, name, {"id": "cast(null as bigint)"}, "id = 3"), "'id'"),
        (lambda spark, name: delete_rows(spark, name, "nope = 1"), "nope"),
        (lambda spark, name: delete_rows(spark, name, "  "), "to delete every row"),
        (lambda spark, name: update_rows(spark, name, {"val": "1"}), "to update every row"),
        (lambda spark, name: delete_where(spark, name, " "), "the Spark condition is empty"),
        (
            lambda spark, name: update_rows(spark, name, {"val": "1"}, True, spark_condition="\n"),
            "the Spark condition is empty",
        ),
        (lambda spark, name: delete_where(spark, name, "id ="), "delete: .*SYNTAX_ERROR"),
        (
            lambda spark, name: merge_into(_source(spark, [(3, "a", 1), (3, "a", 2)]), name, on="id"),
            "several source rows",
        ),
        (lambda spark, name: merge_into(_source(spark, [(3, "a", 1)]), name, on="nope"), "nope"),
        # a null key matches nothing, so the row is inserted: but id is a required column
        (lambda spark, name: merge_into(_source(spark, [(None, "a", 1)]), name, on="id"), "'id'"),
        (
            lambda spark, name: merge_into(
                _source(spark, [(3, "a", 1)]), name, on="id", when_matched_update={"val": "source.cat"}
            ),
            "val",
        ),
    ],
    ids=[
        "unknown-set-column",
        "incompatible-type",
        "unknown-reference",
        "required-null",
        "bad-delete",
        "blank-delete-filter",
        "missing-update-filter",
        "blank-spark-delete-condition",
        "blank-spark-update-condition",
        "unparsable-spark-condition",
        "duplicate-source-keys",
        "unknown-key",
        "null-key-insert",
        "merge-incompatible-type",
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_bad_input_changes_nothing(
    spark, catalog: Catalog, table_name: str, mode: str, call: Any, message: str
) -> None:
    table = _table(catalog, table_name, 3, mode)
    location = table.metadata_location
    files = _all_files(table)
    with pytest.raises(ValidationError, match=message):
        call(spark, table_name)
    assert table.refresh().metadata_location == location
    assert _all_files(table) == files
    data = Path(local_path(LocationProvider(table.metadata).data_location))
    assert not list(data.glob("spark-*/**/*.parquet"))


def test_files_of_failed_task_attempts_are_cleaned_up(spark, catalog: Catalog, table_name: str) -> None:
    table = make_table(catalog, table_name, 3, batches=1)
    staging = JobStaging.create(table.io, table.metadata)
    md, props = staging.metadata, dict(table.io.properties)

    def work(chunk):  # type: ignore[no-untyped-def]
        from pyspark import TaskContext

        from icefloe.spark.runtime import executor_io
        from icefloe.tree.locations import LocationProvider

        attempt = TaskContext.get().attemptNumber()  # type: ignore[union-attr]
        path = LocationProvider(md).new_data_file_path(file_name=f"attempt{attempt}-{chunk[0]}.bin")
        executor_io(props, md.location).new_output(path).write_bytes(b"x")
        if attempt == 0:
            raise RuntimeError("the first attempt of every task fails after writing")
        yield path

    written = run_chunks(spark, [[1], [2]], work)
    assert sorted(Path(p).name for p in written) == ["attempt1-1.bin", "attempt1-2.bin"]
    assert len(table.io.list_prefix(staging.location)) == 4  # two failed attempts left a file each
    staging.tidy(set(written))
    assert sorted(table.io.list_prefix(staging.location)) == sorted(written)
    staging.discard()
    assert table.io.list_prefix(staging.location) == []


def test_target_rows_are_never_broadcast_into_a_join(spark, catalog: Catalog, table_name: str) -> None:
    """Spark sizes the Python-read target by its task list; a planned broadcast of it would run the
    driver out of memory on a big table (seen with a 4M-row MERGE), so joins must shuffle it."""
    from icefloe.scan.planner import plan_files
    from icefloe.spark.row_frames import target_frame

    table = _table(catalog, table_name, 3, "merge-on-read")
    table.delete("id < 5")  # a DV: such files can only be read through the Python route
    tasks = plan_files(table.io, table.metadata, table.current_snapshot())
    target = target_frame(spark, table.metadata, dict(table.io.properties), tasks)
    keys = spark.range(0, 1000).withColumnRenamed("id", "k")
    semi, inner = keys.join(target, keys.k == target.id, "left_semi"), target.join(keys, target.id == keys.k)
    for joined in (semi, inner):
        plan = joined._jdf.queryExecution().executedPlan().toString()
        assert "SortMergeJoin" in plan and "BroadcastHashJoin" not in plan
    assert semi.count() == 85 and inner.count() == 85
