"""Planned reads reused between statements: a repeated query does not plan again, while a new
snapshot, a schema change, another pushed filter or another time travel always plans afresh."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import sql
from icefloe.spark.statements import read_cache
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import parse_statement
from icefloe.spark.statements.query import rewrite_reads
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def planned(spark: Any, text: str) -> read_cache.PlannedRead:
    """The planned read of the one icefloe table ``text`` reads."""
    ctx = SqlContext.for_session(spark)
    stmt = parse_statement(text)
    assert stmt.tree is not None
    rewritten = rewrite_reads(ctx, stmt.tree)
    rewritten.drop(ctx)
    (read,) = rewritten.reads
    return read


@pytest.fixture
def events(catalog: Catalog, table_name: str) -> str:
    """Two appends, one file per category per append, partitioned by category."""
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "category", StringType(), False))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "category"))
    t = catalog.create_table(table_name, schema, spec, properties={"format-version": "2"})
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "category": ["a", "b"]}))
    t.append(pa.table({"id": pa.array([3, 4], pa.int64()), "category": ["a", "b"]}))
    return table_name


def test_a_repeated_query_reuses_its_planned_read(spark: Any, events: str) -> None:
    text = f"SELECT id FROM icefloe.{events} WHERE category = 'a'"
    first = planned(spark, text)
    assert planned(spark, text) is first
    assert len(first.plan.files) == 2
    assert rows(sql(spark, text)) == [(1,), (3,)]
    # the view statements name lives in Spark's global temporary database, not among the user's views
    assert first.name not in {t.name for t in spark.catalog.listTables()}


def test_a_new_snapshot_plans_afresh(spark: Any, catalog: Catalog, events: str) -> None:
    text = f"SELECT id FROM icefloe.{events} WHERE category = 'a'"
    before = planned(spark, text)
    assert rows(sql(spark, text)) == [(1,), (3,)]
    sql(spark, f"INSERT INTO icefloe.{events} VALUES (5, 'a'), (6, 'b')")
    after = planned(spark, text)
    assert after is not before and len(after.plan.files) == 3
    assert rows(sql(spark, text)) == [(1,), (3,), (5,)]
    sql(spark, f"DELETE FROM icefloe.{events} WHERE id = 3")
    assert rows(sql(spark, text)) == [(1,), (5,)]
    # the cached read of the older snapshot is still right for a time-travel query
    second = catalog.load_table(events).metadata.snapshots[1].snapshot_id
    old = f"SELECT id FROM icefloe.{events} VERSION AS OF {second} WHERE category = 'a'"
    assert rows(sql(spark, old)) == [(1,), (3,)]


def test_another_filter_or_ref_plans_afresh(spark: Any, catalog: Catalog, events: str) -> None:
    on_a = planned(spark, f"SELECT id FROM icefloe.{events} WHERE category = 'a'")
    on_b = planned(spark, f"SELECT id FROM icefloe.{events} WHERE category = 'b'")
    assert on_b is not on_a and {f for f in on_a.plan.files}.isdisjoint(on_b.plan.files)
    assert rows(sql(spark, f"SELECT id FROM icefloe.{events} WHERE category = 'b'")) == [(2,), (4,)]
    assert rows(sql(spark, f"SELECT id FROM icefloe.{events} WHERE id >= 3")) == [(3,), (4,)]
    assert rows(sql(spark, f"SELECT id FROM icefloe.{events} WHERE id >= 3.5")) == [(4,)]
    table = catalog.load_table(events)
    first = table.metadata.snapshots[0].snapshot_id
    table.manage_snapshots().create_branch("early", first).commit()
    assert rows(sql(spark, f"SELECT id FROM icefloe.{events}.branch_early WHERE category = 'a'")) == [(1,)]
    assert rows(sql(spark, f"SELECT id FROM icefloe.{events} WHERE category = 'a'")) == [(1,), (3,)]


def test_a_schema_change_without_a_snapshot_plans_afresh(spark: Any, events: str) -> None:
    text = f"SELECT * FROM icefloe.{events} WHERE category = 'a'"
    assert rows(sql(spark, text)) == [(1, "a"), (3, "a")]
    sql(spark, f"ALTER TABLE icefloe.{events} ADD COLUMN note STRING")
    assert rows(sql(spark, text)) == [(1, "a", None), (3, "a", None)]
    sql(spark, f"ALTER TABLE icefloe.{events} RENAME COLUMN id TO key")
    assert rows(sql(spark, f"SELECT key FROM icefloe.{events} WHERE category = 'a'")) == [(1,), (3,)]


def test_evicted_reads_drop_their_view(spark: Any, events: str) -> None:
    first = planned(spark, f"SELECT id FROM icefloe.{events} WHERE id = 0")
    for i in range(1, read_cache.CAPACITY + 1):
        planned(spark, f"SELECT id FROM icefloe.{events} WHERE id = {i}")
    database = first.database
    assert first.name not in {t.name for t in spark.catalog.listTables(database)}
    assert planned(spark, f"SELECT id FROM icefloe.{events} WHERE id = 0") is not first


def test_a_read_held_by_a_statement_outlives_its_eviction(spark: Any, events: str) -> None:
    ctx = SqlContext.for_session(spark)
    stmt = parse_statement(f"SELECT id FROM icefloe.{events} WHERE id = 100")
    assert stmt.tree is not None
    held = rewrite_reads(ctx, stmt.tree)  # not yet analysed: the statement holds its read
    (read,) = held.reads
    for i in range(1, read_cache.CAPACITY + 1):
        planned(spark, f"SELECT id FROM icefloe.{events} WHERE id = {100 + i}")
    views = {t.name for t in spark.catalog.listTables(read.database)}
    assert read.name in views  # evicted, yet still there for the statement naming it
    assert rows(spark.sql(held.tree.sql(dialect="spark"))) == []
    held.drop(ctx)
    held.drop(ctx)  # releasing twice is harmless
    assert read.name not in {t.name for t in spark.catalog.listTables(read.database)}


def test_threads_sharing_a_session_read_their_own_rows(spark: Any, events: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def count(i: int) -> tuple[int, list[tuple[Any, ...]]]:
        text = f"SELECT id FROM icefloe.{events} WHERE category = '{'ab'[i % 2]}' AND id <= {i}"
        return i, rows(sql(spark, text))

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(count, range(1, read_cache.CAPACITY + 9)))
    expected = {"a": [1, 3], "b": [2, 4]}
    for i, got in results:
        assert got == [(v,) for v in expected["ab"[i % 2]] if v <= i], i
    assert read_cache.held() == 0  # every statement released what it held
