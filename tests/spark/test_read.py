"""Reading icefloe tables through Spark: same rows as icefloe's Arrow reader, pruning, metadata columns."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, plan_read, read_table, write_table
from tests.spark.helpers import df_rows, sorted_rows

UTC = dt.UTC


def _data(spark, start: int, n: int):  # type: ignore[no-untyped-def]
    base = dt.datetime(2024, 3, 1, tzinfo=UTC)
    return spark.range(start, start + n, 1, 2).select(
        F.col("id"),
        (F.lit(base) + F.make_interval(days=(F.col("id") % 8).cast("int"))).alias("ts"),
        F.concat(F.lit("k"), (F.col("id") % 3).cast("string")).alias("k"),
        (F.col("id") * 1.5).alias("x"),
    )


@pytest.fixture
def daily(spark, catalog: Catalog, table_name: str):  # type: ignore[no-untyped-def]
    """A table partitioned by day with 8 days of data written in two appends."""
    create_table(
        spark,
        table_name,
        "id BIGINT, ts TIMESTAMP, k STRING, x DOUBLE",
        partitioned_by=["days(ts)"],
        properties={"format-version": "3"},
    )
    write_table(_data(spark, 0, 400), table_name)
    write_table(_data(spark, 400, 400), table_name)
    return catalog.load_table(table_name)


def test_read_matches_icefloe_arrow_reader(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = read_table(spark, table_name)
    assert df.columns == ["id", "ts", "k", "x"]
    assert df_rows(df) == sorted_rows(daily.scan().to_arrow())
    assert df_rows(df) == df_rows(_data(spark, 0, 800))


def test_projection_keeps_requested_order(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = read_table(spark, table_name, columns=["x", "id"])
    assert df.columns == ["x", "id"]
    assert df_rows(df) == sorted((i * 1.5, i) for i in range(800))


def test_filter_prunes_files_and_filters_rows(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    flt = "ts >= '2024-03-03T00:00:00+00:00' and ts < '2024-03-04T00:00:00+00:00' and id < 700"
    full = plan_read(daily)
    plan = plan_read(daily, row_filter=flt)
    assert 0 < len(plan.files) < len(full.files)  # other days' files are skipped by partition pruning
    assert plan.stats.files_selected == len(plan.files)
    df = read_table(spark, table_name, filter=flt)
    read = {r[0] for r in df.select(F.input_file_name()).distinct().collect()}
    assert len(read) <= len(plan.files) < len(full.files)
    want = [r for r in df_rows(_data(spark, 0, 800)) if r[1].day == 3 and r[0] < 700]
    assert df_rows(df) == want
    # metrics pruning: an id range outside every file of the second append skips it
    assert len(plan_read(daily, row_filter="id < 10").files) < len(full.files)


def test_filter_on_unprojected_column(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = read_table(spark, table_name, columns=["id"], filter="k = 'k1' and x > 900")
    assert df.columns == ["id"]
    assert df_rows(df) == [(i,) for i in range(800) if i % 3 == 1 and i * 1.5 > 900]


def test_time_travel_and_refs(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    first, second = daily.snapshots()
    assert read_table(spark, table_name, snapshot_id=first.snapshot_id).count() == 400
    assert read_table(spark, table_name, as_of_timestamp=first.timestamp_ms).count() == 400
    assert read_table(spark, table_name, as_of_timestamp=second.timestamp_ms).count() == 800
    assert read_table(spark, table_name, branch="main").count() == 800


def test_row_lineage_and_file_position_columns(spark, daily, table_name: str) -> None:  # type: ignore[no-untyped-def]
    cols = ["id", "_row_id", "_last_updated_sequence_number", "_file", "_pos"]
    df = read_table(spark, table_name, columns=cols)
    assert df.columns == cols
    want = sorted_rows(daily.scan(columns=tuple(cols)).to_arrow(), cols)
    got = df_rows(df, cols)
    assert got == want
    assert sorted(r[1] for r in got) == list(range(800))  # row ids inherited: first_row_id + position
    assert {r[2] for r in got} == {1, 2}


def test_empty_table_reads_as_empty_dataframe(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "a INT NOT NULL, b STRING")
    df = read_table(spark, table_name)
    assert df.count() == 0
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [("a", "int"), ("b", "string")]
    assert read_table(spark, table_name, columns=["b"]).columns == ["b"]


@pytest.mark.parametrize("fv", [2, 3])
def test_equality_and_position_deletes_shared_within_a_task_give_exact_rows(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, fv: int
) -> None:
    """One global equality delete file and one position delete file (v2) or Puffin file (v3) over
    every data file: each Spark task reads them once for its files (``read_each_task``), through
    ``read_table`` and through the data source, with exactly the rows they delete."""
    import pyarrow as pa

    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))
    props = {"format-version": str(fv), "write.delete.granularity": "partition"}
    table = catalog.create_table(table_name, schema, properties=props)
    for f in range(6):
        ids = list(range(f * 5, f * 5 + 5))
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"t{i}" for i in ids]}))
    table.delete_by_key(pa.table({"id": pa.array([2, 7, 13, 29], pa.int64())}), on="id")
    table.delete("id in (0, 11, 24)", mode="merge-on-read")
    want = [(i, f"t{i}") for i in range(30) if i not in (2, 7, 13, 29, 0, 11, 24)]
    assert df_rows(read_table(spark, table_name)) == want
    assert df_rows(spark.read.format("icefloe").load(table_name)) == want
