"""``write_table`` sends inputs Spark estimates as small through Arrow, larger ones natively.

The two routes must be interchangeable: the same rows, partition values, metrics and snapshot
summary, one snapshot, and nothing left behind when the write fails. The route a write took is
``StagedFiles.route``; these tests read it from ``stage_dataframe`` and compare what each route
commits for the same input, forced through the session conf.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from typing import Any

import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import create_table, write_table
from icefloe.spark.runtime import session_conf
from icefloe.spark.write import commit_staged, stage_dataframe
from icefloe.spark.write_route import (
    ARROW,
    DEFAULT_SMALL_INPUT_BYTES,
    NATIVE,
    SMALL_INPUT_BYTES_CONF,
    SMALL_INPUT_BYTES_PROPERTY,
    choose_route,
    estimated_input_bytes,
    untrusted_nodes,
)
from icefloe.table.table import Table
from icefloe.tree.locations import LocationProvider
from tests.spark.helpers import df_rows, icefloe_rows

DDL = "id BIGINT NOT NULL, name STRING, ts TIMESTAMP, d DATE, amount DECIMAL(10,2), v DOUBLE"
ALWAYS_ARROW = str(2**62)
SIZE_DEPENDENT_SUMMARY = {"added-files-size", "total-files-size"}


def _rows(spark: Any, n: int) -> Any:
    """Rows over 3 years, 2 days and 24 hours, with nulls, NaNs and names sharing prefixes."""
    base = dt.datetime(2023, 12, 31, 12, tzinfo=dt.UTC)
    return spark.range(0, n, 1, 2).select(
        F.col("id"),
        F.when(F.col("id") % 9 == 0, F.lit(None))
        .otherwise(F.concat(F.lit("name-"), (F.col("id") % 17).cast("string")))
        .alias("name"),
        (F.lit(base) + F.make_interval(hours=(F.col("id") * 5) % 48 - 9000 * (F.col("id") % 3))).alias("ts"),
        F.date_add(F.lit(dt.date(2024, 2, 27)), (F.col("id") % 5).cast("int")).alias("d"),
        (F.col("id") / 3).cast("decimal(10,2)").alias("amount"),
        F.when(F.col("id") % 7 == 0, F.lit(float("nan")))
        .when(F.col("id") % 10 == 0, F.lit(None))
        .otherwise(F.col("id") * 0.25)
        .alias("v"),
    )


def _route_of(spark: Any, df: Any, table: Table, conf: dict[str, str] | None = None) -> str:
    """The route ``write_table`` takes for ``df`` (the staged files are discarded, not committed)."""
    with session_conf(spark, conf or {}):
        staged = stage_dataframe(df, table)
    staged.discard()
    return staged.route


def _write(spark: Any, df: Any, table_name: str, catalog: Catalog, threshold: str) -> tuple[Table, str]:
    """Stage and commit ``df`` with the route forced by ``threshold``; the table and the route."""
    table = catalog.load_table(table_name)
    with session_conf(spark, {SMALL_INPUT_BYTES_CONF: threshold}):
        staged = stage_dataframe(df, table)
    commit_staged(table, staged, "append")
    return catalog.load_table(table_name), staged.route


def _files_on_disk(table: Table) -> list[str]:
    root = local_path(LocationProvider(table.metadata).data_location)
    assert root is not None
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)


def _file_facts(table: Table) -> list[tuple[Any, ...]]:
    """Per data file, everything but its name and size: partition, counts and metrics."""
    facts = []
    for task in table.scan().plan_files():
        f = task.data_file
        facts.append(
            (
                f.partition,
                f.spec_id,
                f.file_format,
                f.record_count,
                dict(f.value_counts or {}),
                dict(f.null_value_counts or {}),
                dict(f.nan_value_counts or {}),
                dict(f.lower_bounds or {}),
                dict(f.upper_bounds or {}),
                f.sort_order_id,
            )
        )
    return sorted(facts, key=repr)


def _nan_free(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with NaN spelled "NaN" (NaN never equals NaN, so rows holding one never compare equal)."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows]


def _summary(table: Table) -> dict[str, str]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return {k: v for k, v in snapshot.summary.items() if k not in SIZE_DEPENDENT_SUMMARY}


@pytest.fixture
def small_table(spark: Any, catalog: Catalog, table_name: str) -> Table:
    create_table(spark, table_name, DDL, partitioned_by=["bucket(4, id)"])
    return catalog.load_table(table_name)


def test_a_small_estimate_takes_the_arrow_route(spark: Any, small_table: Table) -> None:
    df = _rows(spark, 1_000)
    size = estimated_input_bytes(df)
    assert size is not None and 0 < size < DEFAULT_SMALL_INPUT_BYTES
    assert _route_of(spark, df, small_table) == ARROW


def test_a_large_or_unknown_estimate_stays_native(spark: Any, small_table: Table) -> None:
    # Spark knows a range's size without running it: 2**32 rows of one BIGINT and more
    huge = _rows(spark, 2**32)
    assert estimated_input_bytes(huge) is not None
    assert estimated_input_bytes(huge) >= DEFAULT_SMALL_INPUT_BYTES  # type: ignore[operator]
    assert choose_route(huge, small_table.metadata.properties) == NATIVE
    # rows from a Python RDD: Spark has no estimate, so the route is the one that scales
    rdd = spark.sparkContext.parallelize([(1, "a")], 1)
    unknown = spark.createDataFrame(rdd, "id BIGINT NOT NULL, name STRING")
    assert estimated_input_bytes(unknown) is None
    assert _route_of(spark, unknown, small_table) == NATIVE


ROW_MULTIPLYING_INPUTS = {
    # a plan Spark estimates as tiny that makes many rows: (input, the nodes that keep it native)
    "explode over one row": (
        lambda spark: spark.range(1).select(F.explode(F.sequence(F.lit(1), F.lit(10_000_000))).alias("id")),
        ["Generate"],
    ),
    "cross join with a small side": (lambda spark: spark.range(1000).crossJoin(spark.range(3)), ["Join"]),
    "rollup": (lambda spark: spark.range(1000).rollup((F.col("id") % 3).alias("k")).count(), ["Expand"]),
}


@pytest.mark.parametrize("case", sorted(ROW_MULTIPLYING_INPUTS))
def test_an_operator_that_multiplies_rows_keeps_the_native_route(
    spark: Any, small_table: Table, case: str
) -> None:
    make, nodes = ROW_MULTIPLYING_INPUTS[case]
    df = make(spark)
    size = estimated_input_bytes(df)
    assert size is not None and size < DEFAULT_SMALL_INPUT_BYTES  # the estimate alone would say Arrow
    assert untrusted_nodes(df) == nodes
    assert choose_route(df, small_table.metadata.properties) == NATIVE


def test_a_compressed_file_scan_keeps_the_native_route(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Any
) -> None:
    # 200,000 rows of two repetitive columns are a few kB of Parquet: Spark's estimate of the scan
    source = str(tmp_path / "repetitive")
    spark.range(0, 200_000, 1, 1).select(
        (F.col("id") % 3).alias("id"), F.lit("same").alias("name")
    ).write.parquet(source)
    df = spark.read.parquet(source)
    size = estimated_input_bytes(df)
    assert size is not None and size < 100_000  # 2 bytes a row
    assert untrusted_nodes(df) == ["LogicalRelation"]
    create_table(spark, table_name, "id BIGINT NOT NULL, name STRING", partitioned_by=["id"])
    table = catalog.load_table(table_name)
    assert _route_of(spark, df, table) == NATIVE
    write_table(df, table_name)
    counts = (
        catalog.load_table(table_name).scan().to_arrow().group_by(["id", "name"]).aggregate([("id", "count")])
    )
    assert sorted(counts.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "name": "same", "id_count": 66_667},
        {"id": 1, "name": "same", "id_count": 66_667},
        {"id": 2, "name": "same", "id_count": 66_666},
    ]


def test_a_cached_input_keeps_the_native_route(spark: Any, small_table: Table) -> None:
    df = _rows(spark, 1_000).cache()
    try:
        assert df.count() == 1_000  # filled: its estimate is now the compressed column buffers'
        assert untrusted_nodes(df) == ["InMemoryRelation"]
        assert choose_route(df, small_table.metadata.properties) == NATIVE
    finally:
        df.unpersist()


def test_inputs_whose_rows_spark_counts_take_the_arrow_route(spark: Any, small_table: Table) -> None:
    # VALUES rows (as INSERT ... VALUES has them) are a LocalRelation; createDataFrame's are an RDD
    values = ", ".join(f"({i}L, 'n{i}')" for i in range(20))
    local = spark.sql(f"SELECT * FROM VALUES {values} AS t(id, name)")
    ranged = _rows(spark, 500)
    squared = F.udf(lambda v: v * v, "bigint")
    bounded = {
        "local rows": local,
        "a range, filtered and re-projected": ranged.where(F.col("id") % 2 == 0).select("id", "name"),
        "a union": ranged.select("id", "name").union(local),
        "an aggregate": ranged.groupBy("name").agg(F.max("id").alias("id")),
        "a scalar Python UDF": ranged.select(squared("id").alias("id"), "name"),
        "a literal row": spark.sql("SELECT 7L AS id, 'seven' AS name"),
    }
    for case, df in bounded.items():
        assert untrusted_nodes(df) == [], case
        assert choose_route(df, small_table.metadata.properties) == ARROW, case


def test_an_explode_is_written_natively_with_every_row(spark: Any, catalog: Catalog, table_name: str) -> None:
    create_table(spark, table_name, "id BIGINT NOT NULL, name STRING")
    df = spark.range(1).select(
        F.explode(F.sequence(F.lit(1).cast("bigint"), F.lit(50_000).cast("bigint"))).alias("id"),
        F.lit("e").alias("name"),
    )
    table = catalog.load_table(table_name)
    assert _route_of(spark, df, table) == NATIVE
    write_table(df, table_name)
    got = catalog.load_table(table_name).scan().to_arrow().sort_by("id")
    assert got.column("id").to_pylist() == list(range(1, 50_001))
    assert set(got.column("name").to_pylist()) == {"e"}


def test_the_threshold_comes_from_the_conf_then_the_table_property(
    spark: Any, catalog: Catalog, small_table: Table, table_name: str
) -> None:
    df = _rows(spark, 1_000)
    small_table.set_properties(**{SMALL_INPUT_BYTES_PROPERTY: "0"})
    table = catalog.load_table(table_name)
    assert _route_of(spark, df, table) == NATIVE
    assert _route_of(spark, df, table, {SMALL_INPUT_BYTES_CONF: ALWAYS_ARROW}) == ARROW
    table.set_properties(**{SMALL_INPUT_BYTES_PROPERTY: ALWAYS_ARROW})
    table = catalog.load_table(table_name)
    assert _route_of(spark, df, table) == ARROW
    assert _route_of(spark, df, table, {SMALL_INPUT_BYTES_CONF: "0"}) == NATIVE
    with pytest.raises(ValidationError, match=SMALL_INPUT_BYTES_PROPERTY):
        table.set_properties(**{SMALL_INPUT_BYTES_PROPERTY: "-1"})
    with pytest.raises(ValidationError, match=SMALL_INPUT_BYTES_CONF):
        _route_of(spark, df, table, {SMALL_INPUT_BYTES_CONF: "lots"})


@pytest.mark.parametrize(
    "partitioned_by",
    [
        [],
        ["name"],
        ["bucket(8, id)"],
        ["truncate(6, name)"],
        ["truncate(10, amount)"],
        ["years(ts)"],
        ["months(d)"],
        ["days(ts)", "bucket(3, name)"],
        ["hours(ts)"],
        ["d", "truncate(2, id)"],
    ],
    ids=repr,
)
def test_both_routes_commit_the_same_table(
    spark: Any, catalog: Catalog, table_name: str, partitioned_by: list[str]
) -> None:
    df = _rows(spark, 600)
    tables = {}
    for route, threshold in ((NATIVE, "0"), (ARROW, ALWAYS_ARROW)):
        name = f"{table_name}_{route}"
        create_table(spark, name, DDL, partitioned_by=partitioned_by)
        table, taken = _write(spark, df, name, catalog, threshold)
        assert taken == route
        tables[route] = table
    native, arrow = tables[NATIVE], tables[ARROW]
    assert _nan_free(icefloe_rows(arrow)) == _nan_free(icefloe_rows(native)) == _nan_free(df_rows(df))
    assert len(arrow.snapshots()) == len(native.snapshots()) == 1
    if partitioned_by:
        # clustered either way: one file per partition, with the same metrics
        assert _file_facts(arrow) == _file_facts(native)
        assert _summary(arrow) == _summary(native)
    else:
        # unclustered, the native route writes a file per input task (2), the one Arrow task one
        assert [f[3] for f in _file_facts(native)] == [300, 300]
        assert [f[3] for f in _file_facts(arrow)] == [600]
        assert _summary(arrow)["added-records"] == _summary(native)["added-records"] == "600"
    # only the committed files are left in the table's data directory
    for table in (native, arrow):
        assert _files_on_disk(table) == sorted(local_path(t.file_path) for t in table.scan().plan_files())


def test_a_failing_small_write_commits_nothing_and_leaves_nothing(
    spark: Any, catalog: Catalog, small_table: Table, table_name: str
) -> None:
    write_table(_rows(spark, 50), table_name)
    before = catalog.load_table(table_name)
    files = _files_on_disk(before)
    bad = _rows(spark, 50).withColumn("id", F.when(F.col("id") == 7, F.lit(None)).otherwise(F.col("id")))
    assert _route_of(spark, _rows(spark, 50), before) == ARROW
    with pytest.raises(ValidationError, match="column 'id' is required"):
        write_table(bad, table_name)
    after = catalog.load_table(table_name)
    assert after.current_snapshot() == before.current_snapshot()
    assert _files_on_disk(after) == files
