"""Spark writes through icefloe: every mode round-trips, partitions are exact, failures leave no trace."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import create_table, read_table, write_table
from icefloe.spark.compat import map_in_arrow
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DecimalType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)
from icefloe.tree.locations import LocationProvider
from tests.spark.helpers import data_files, df_rows, icefloe_rows

UTC = dt.UTC
DDL = "id BIGINT NOT NULL, ts TIMESTAMP, name STRING, amount DECIMAL(10,2), tags STRUCT<a: INT, b: STRING>"


def _events(spark, start: int, n: int):  # type: ignore[no-untyped-def]
    base = dt.datetime(2024, 1, 1, tzinfo=UTC)
    return spark.range(start, start + n).select(
        F.col("id"),
        (F.lit(base) + F.make_interval(hours=(F.col("id") * 7) % 96)).alias("ts"),
        F.when(F.col("id") % 11 == 0, F.lit(None))
        .otherwise(F.concat(F.lit("n"), (F.col("id") % 13).cast("string")))
        .alias("name"),
        (F.col("id") / 7).cast("decimal(10,2)").alias("amount"),
        F.struct((F.col("id") % 5).cast("int").alias("a"), F.lit("x").alias("b")).alias("tags"),
    )


def _files_on_disk(table) -> list[str]:  # type: ignore[no-untyped-def]
    table.refresh()
    root = local_path(LocationProvider(table.metadata).data_location)
    assert root is not None
    out = []
    for dirpath, _, names in os.walk(root):
        out.extend(os.path.join(dirpath, n) for n in names)
    return sorted(out)


def _check_partitions(table) -> None:  # type: ignore[no-untyped-def]
    """Every data file's partition tuple is what icefloe's transforms give for each of its rows."""
    schema, spec = table.schema(), table.spec()
    for task in table.scan().plan_files():
        rows = pq.read_table(local_path(task.file_path)).to_pylist()
        for row in rows:
            values = []
            for pf in spec.fields:
                src = schema.find_field(pf.source_id)
                value = row[src.name]
                if isinstance(value, dt.datetime):
                    value = (value.replace(tzinfo=UTC) - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(
                        microseconds=1
                    )
                values.append(pf.transform.apply(src.field_type, value))
            assert tuple(values) == task.data_file.partition


@pytest.fixture
def events(spark, catalog: Catalog, table_name: str):  # type: ignore[no-untyped-def]
    """A partitioned table (day of ts, bucket of id, truncate of name)."""
    create_table(
        spark,
        table_name,
        DDL,
        partitioned_by=["days(ts)", "bucket(4, id)", "truncate(2, name)"],
        properties={"format-version": "2"},
    )
    return catalog.load_table(table_name)


def test_append_round_trips_and_partitions_are_exact(spark, events, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = _events(spark, 0, 300)
    snap = write_table(df, table_name)
    assert snap is not None and snap.summary["operation"] == "append"
    assert icefloe_rows(events) == df_rows(df)
    assert df_rows(read_table(spark, table_name)) == df_rows(df)
    _check_partitions(events)
    # only the committed data files are on disk (no _SUCCESS, .crc or _temporary left)
    assert _files_on_disk(events) == [local_path(p) for p in data_files(events)]
    # a second append adds a snapshot and keeps the first rows
    write_table(_events(spark, 300, 50), table_name)
    assert len(icefloe_rows(events)) == 350
    assert len(events.snapshots()) == 2


def test_overwrite_modes(spark, events, table_name: str) -> None:  # type: ignore[no-untyped-def]
    write_table(_events(spark, 0, 200), table_name)
    # static overwrite with a filter: rows with id < 100 replaced by new rows
    repl = _events(spark, 0, 100).withColumn("name", F.lit("replaced"))
    snap = write_table(repl, table_name, mode="overwrite", overwrite_filter="id < 100")
    assert snap is not None and snap.summary["operation"] == "overwrite"
    rows = icefloe_rows(events, ["id", "name"])
    assert len(rows) == 200
    assert all((name == "replaced") == (i < 100) for i, name in rows)
    # dynamic partition overwrite: only the partitions present in the new data are replaced
    events.refresh()
    partition_of = {}
    for task in events.scan().plan_files():
        for i in pq.read_table(local_path(task.file_path), columns=["id"]).column("id").to_pylist():
            partition_of[i] = task.data_file.partition
    before = {r[0]: r for r in icefloe_rows(events)}
    newer = _events(spark, 100, 5).withColumn("amount", F.lit(Decimal("-1.00")).cast("decimal(10,2)"))
    replaced = {partition_of[i] for i in range(100, 105)}
    snap = write_table(newer, table_name, mode="overwrite", partition_overwrite="dynamic")
    assert snap is not None and snap.summary["operation"] == "overwrite"
    after = {r[0]: r for r in icefloe_rows(events)}
    expected_ids = {i for i in before if partition_of[i] not in replaced} | set(range(100, 105))
    assert set(after) == expected_ids
    assert all(after[i][3] == Decimal("-1.00") for i in range(100, 105))
    assert all(after[i] == before[i] for i in expected_ids - set(range(100, 105)))
    # full static overwrite
    write_table(_events(spark, 1000, 10), table_name, mode="overwrite")
    assert [r[0] for r in icefloe_rows(events)] == list(range(1000, 1010))
    assert df_rows(read_table(spark, table_name)) == df_rows(_events(spark, 1000, 10))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda df: df.drop("id"), "required column 'id' is missing"),
        (lambda df: df.withColumn("id", F.col("id").cast("string")), "column 'id' has type string"),
        (lambda df: df.withColumn("extra", F.lit(1)), "column 'extra' is not in the table schema"),
        (lambda df: df.withColumn("amount", F.col("amount").cast("decimal(20,4)")), "column 'amount'"),
    ],
    ids=["missing-required", "wrong-type", "extra-column", "lossy-decimal"],
)
def test_bad_input_fails_before_writing(spark, events, table_name: str, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    write_table(_events(spark, 0, 20), table_name)
    files_before, snap_before = _files_on_disk(events), events.current_snapshot()
    with pytest.raises(ValidationError, match=message):
        write_table(mutate(_events(spark, 100, 20)), table_name)
    events.refresh()
    assert events.current_snapshot() == snap_before
    assert _files_on_disk(events) == files_before


def test_null_in_required_column_fails_the_job_and_changes_nothing(spark, events, table_name: str) -> None:  # type: ignore[no-untyped-def]
    write_table(_events(spark, 0, 20), table_name)
    files_before, snap_before = _files_on_disk(events), events.current_snapshot()
    bad = _events(spark, 100, 20).withColumn(
        "id", F.when(F.col("id") == 105, F.lit(None)).otherwise(F.col("id"))
    )
    with pytest.raises(ValidationError, match="column 'id' is required"):
        write_table(bad, table_name)
    events.refresh()
    assert events.current_snapshot() == snap_before
    assert _files_on_disk(events) == files_before


def test_task_killed_mid_write_leaves_no_duplicates_or_stray_files(  # type: ignore[no-untyped-def]
    spark, events, table_name: str, tmp_path
) -> None:
    source = _events(spark, 0, 400).repartition(4, "id")
    schema = source.schema
    marker = str(tmp_path / "failed-once")

    def flaky(batches):  # type: ignore[no-untyped-def]
        from pyspark import TaskContext

        ctx = TaskContext.get()
        for i, batch in enumerate(batches):
            yield batch
            if ctx.partitionId() == 0 and ctx.attemptNumber() == 0 and i >= 0:
                open(marker, "w").close()
                raise RuntimeError("injected failure on the first attempt")

    df = map_in_arrow(source, flaky, schema)
    write_table(df, table_name)
    assert os.path.exists(marker), "the first attempt of task 0 did not fail"
    rows = icefloe_rows(events)
    assert [r[0] for r in rows] == list(range(400))
    assert _files_on_disk(events) == [local_path(p) for p in data_files(events)]


def test_arrow_route_for_lists_maps_and_uuids(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    import uuid

    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "xs", ListType(3, IntegerType(), False)),
        NestedField(4, "m", MapType(5, StringType(), 6, DecimalType(5, 1), False)),
        NestedField(7, "u", UUIDType()),
        NestedField(8, "st", StructType(NestedField(9, "k", StringType()))),
    )
    from icefloe.spark.views import parse_partitioning

    table = catalog.create_table(
        table_name, schema, partition_spec=parse_partitioning(schema, ["bucket(2, id)"])
    )
    ids = [uuid.UUID(int=i * 7919) for i in range(6)]
    data = [(i, [i, i + 1], {"k": Decimal(f"{i}.5")}, str(ids[i]), (f"s{i}",)) for i in range(6)]
    df = spark.createDataFrame(
        data, "id BIGINT, xs ARRAY<INT>, m MAP<STRING, DECIMAL(5,1)>, u STRING, st STRUCT<k: STRING>"
    )
    write_table(df, table_name)
    table.refresh()
    got = table.scan().to_arrow()
    got_ids = [v if isinstance(v, uuid.UUID) else uuid.UUID(bytes=v) for v in got.column("u").to_pylist()]
    assert sorted(got_ids) == sorted(ids)
    assert sorted(got.column("xs").to_pylist()) == [[i, i + 1] for i in range(6)]
    assert df_rows(read_table(spark, table_name), ["id", "u"]) == [(i, str(ids[i])) for i in range(6)]
    assert _files_on_disk(table) == [local_path(p) for p in data_files(table)]


def test_bad_overwrite_filter_or_tag_target_fail_before_writing(spark, events, table_name: str) -> None:  # type: ignore[no-untyped-def]
    write_table(_events(spark, 0, 20), table_name)
    files_before, snap_before = _files_on_disk(events), events.current_snapshot()
    with pytest.raises(ValidationError, match="nope"):
        write_table(_events(spark, 0, 5), table_name, mode="overwrite", overwrite_filter="nope > 1")
    events.refresh()
    with events.transaction() as tx:
        from icefloe.spec.snapshots import RefType
        from icefloe.spec.updates import SetSnapshotRef

        class _Tag:
            def apply(self, ctx, current):  # type: ignore[no-untyped-def]
                return [SetSnapshotRef("v1", snap_before.snapshot_id, RefType.TAG)]

            def committed_files(self):  # type: ignore[no-untyped-def]
                return []

        tx.add_action(_Tag())
    with pytest.raises(ValidationError, match="tag"):
        write_table(_events(spark, 0, 5), table_name, branch="v1")
    events.refresh()
    assert events.current_snapshot() == snap_before
    assert _files_on_disk(events) == files_before


def test_write_to_branch(spark, events, table_name: str) -> None:  # type: ignore[no-untyped-def]
    write_table(_events(spark, 0, 10), table_name)
    snap = write_table(_events(spark, 10, 5), table_name, branch="audit")
    assert snap is not None
    events.refresh()
    assert events.metadata.refs["audit"].snapshot_id == snap.snapshot_id
    assert read_table(spark, table_name).count() == 10
    assert read_table(spark, table_name, branch="audit").count() == 15
