"""SELECT through icefloe.spark.sql: naming, pushdown (files read), time travel, metadata tables."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import NoSuchTable
from icefloe.spark import sql
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import parse_statement
from icefloe.spark.statements.query import rewrite_reads
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.fixture
def events(catalog: Catalog, table_name: str) -> str:
    """Three snapshots, one file per category per append (6 files), partitioned by category."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "category", StringType(), False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    t = catalog.create_table(table_name, schema, spec, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "category": ["a", "b", "c"]}))
    t.append(pa.table({"id": pa.array([4, 5, 6], pa.int64()), "category": ["a", "b", "c"]}))
    return table_name


def test_select_by_catalog_name_and_after_use(spark: Any, events: str) -> None:
    assert rows(sql(spark, f"SELECT id, category FROM icefloe.{events} WHERE id > 4")) == [
        (5, "b"),
        (6, "c"),
    ]
    try:
        sql(spark, "USE icefloe")
        assert rows(sql(spark, f"SELECT count(*) FROM {events}")) == [(6,)]
        sql(spark, "USE icefloe.db")
        short = events.split(".")[1]
        assert rows(sql(spark, f"SELECT max(id) AS m FROM {short} t WHERE t.category = 'a'")) == [(4,)]
    finally:
        sql(spark, "USE spark_catalog")
    # back on Spark's catalog: a Spark temp view and a statement without icefloe pass through
    spark.range(3).createOrReplaceTempView("plain_numbers")
    assert rows(sql(spark, "SELECT sum(id) FROM plain_numbers")) == [(3,)]


def test_predicates_prune_files(spark: Any, events: str) -> None:
    ctx = SqlContext.for_session(spark)
    stmt = parse_statement(f"SELECT * FROM icefloe.{events} e WHERE e.category = 'b' AND id >= 2")
    assert stmt.tree is not None
    rewritten = rewrite_reads(ctx, stmt.tree)
    try:
        (plan,) = rewritten.plans
        assert len(plan.files) == 2  # of 6: only category b
        assert rows(spark.sql(rewritten.tree.sql(dialect="spark"))) == [(2, "b"), (5, "b")]
    finally:
        rewritten.drop(ctx)
    # an OR across categories, an IN list, a join keeps the pushed side's filter only
    stmt = parse_statement(
        f"SELECT a.id FROM icefloe.{events} a JOIN icefloe.{events} b ON a.id = b.id "
        "WHERE a.category IN ('a', 'c') AND b.category = 'c'"
    )
    assert stmt.tree is not None
    rewritten = rewrite_reads(ctx, stmt.tree)
    try:
        assert sorted(len(p.files) for p in rewritten.plans) == [2, 4]
        assert rows(spark.sql(rewritten.tree.sql(dialect="spark"))) == [(3,), (6,)]
    finally:
        rewritten.drop(ctx)


def test_time_travel_and_refs(spark: Any, catalog: Catalog, events: str) -> None:
    table = catalog.load_table(events)
    first, second = (s.snapshot_id for s in table.snapshots())
    table.manage_snapshots().create_tag("v1", first).commit()
    table.manage_snapshots().create_branch("dev", first).commit()
    name = f"icefloe.{events}"
    assert rows(sql(spark, f"SELECT count(*) FROM {name} VERSION AS OF {first}")) == [(3,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name} FOR SYSTEM_VERSION AS OF {second}")) == [(6,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name} VERSION AS OF 'v1'")) == [(3,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.tag_v1")) == [(3,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.branch_dev")) == [(3,)]
    committed = table.snapshot_by_id(first).timestamp_ms
    import datetime as dt

    when = dt.datetime.fromtimestamp(committed / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert rows(sql(spark, f"SELECT count(*) FROM {name} TIMESTAMP AS OF '{when}'")) == [(3,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name} FOR SYSTEM_TIME AS OF '{when}'")) == [(3,)]


def test_metadata_tables(spark: Any, catalog: Catalog, events: str) -> None:
    table = catalog.load_table(events)
    first, second = (s.snapshot_id for s in table.snapshots())
    name = f"icefloe.{events}"
    assert rows(sql(spark, f"SELECT snapshot_id, parent_id, operation FROM {name}.snapshots")) == sorted(
        [(first, None, "append"), (second, first, "append")]
    )
    assert rows(sql(spark, f"SELECT snapshot_id, is_current_ancestor FROM {name}.history")) == sorted(
        [(first, True), (second, True)]
    )
    assert rows(sql(spark, f"SELECT count(*), sum(record_count) FROM {name}.files")) == [(6, 6)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.data_files WHERE partition.category = 'a'")) == [
        (2,)
    ]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.delete_files")) == [(0,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.files VERSION AS OF {first}")) == [(3,)]
    assert rows(sql(spark, f"SELECT partition.category, record_count FROM {name}.partitions")) == [
        ("a", 2),
        ("b", 2),
        ("c", 2),
    ]
    assert rows(sql(spark, f"SELECT status, count(*) FROM {name}.entries GROUP BY status")) == [(1, 6)]
    assert rows(sql(spark, f"SELECT name, type, snapshot_id FROM {name}.refs")) == [
        ("main", "BRANCH", second)
    ]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.all_data_files")) == [(6,)]
    assert rows(sql(spark, f"SELECT count(DISTINCT path) FROM {name}.all_manifests")) == [(2,)]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.manifests")) == [(2,)]
    log = rows(sql(spark, f"SELECT latest_snapshot_id FROM {name}.metadata_log_entries"))
    assert log == [(None,), *sorted([(first,), (second,)])]


def test_unknown_table_under_icefloe_name_is_an_error(spark: Any) -> None:
    with pytest.raises(NoSuchTable):
        sql(spark, "SELECT * FROM icefloe.db.no_such_table")
