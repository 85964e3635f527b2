"""v4 column updates from Spark: ``update_rows``, ``merge_into``, SQL UPDATE and MERGE write column
files on executors, and every Spark read merges them.

Each statement also runs on a copy-on-write twin; both tables must then read the same rows, in
Spark and in icefloe's Arrow reader.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import merge_into, read_table, sql, update_rows
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "price", DoubleType(), False),
    NestedField(3, "tag", StringType(), False),
)
COLUMNS = {
    "format-version": "4",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
    "write.v4.column-updates.enabled": "true",
}


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "price": [float(i) for i in ids], "tag": [f"t{i}" for i in ids]}
    )


@pytest.fixture
def pair(catalog: Catalog, table_name: str) -> tuple[str, str]:
    twin = f"{table_name}_twin"
    for name, props in ((table_name, COLUMNS), (twin, {"format-version": "4"})):
        t = catalog.create_table(name, SCHEMA, properties=props)
        t.append(_rows(0, 50))
        t.append(_rows(50, 50))
    return table_name, twin


def _spark_rows(spark: Any, name: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in read_table(spark, name).select("id", "price", "tag").collect())


def _arrow_rows(table: Table) -> list[tuple[Any, ...]]:
    rows = table.scan(columns=("id", "price", "tag")).to_arrow().to_pylist()
    return sorted((r["id"], r["price"], r["tag"]) for r in rows)


def _column_files(table: Table) -> dict[str, Any]:
    snap = table.current_snapshot()
    assert snap is not None
    return {
        e.data_file.file_path: e.data_file.column_files
        for e in live_entries(table.io, table.metadata, snap)
        if e.data_file.column_files
    }


def _same(spark: Any, catalog: Catalog, name: str, twin: str) -> list[tuple[Any, ...]]:
    table, other = catalog.load_table(name), catalog.load_table(twin)
    got = _spark_rows(spark, name)
    assert got == _spark_rows(spark, twin) == _arrow_rows(table) == _arrow_rows(other)
    return got


def test_update_rows_and_merge_into_write_column_files(spark, catalog: Catalog, pair) -> None:  # type: ignore[no-untyped-def]
    name, twin = pair
    for target in (name, twin):
        result = update_rows(spark, target, {"price": "price * 10"}, True, spark_condition="id % 10 = 3")
        assert result.updated_rows == 10
    rows = _same(spark, catalog, name, twin)
    assert [r for r in rows if r[0] == 13] == [(13, 130.0, "t13")]
    files = _column_files(catalog.load_table(name))
    assert len(files) == 2 and all(cf[0].field_ids == (2,) for cf in files.values())

    source = spark.createDataFrame([(13, "m13"), (14, "m14"), (200, "new")], "id long, tag string")
    for target in (name, twin):
        merge_into(
            source,
            target,
            on="id",
            when_matched_update={"tag": "source.tag"},
            when_matched_delete="target.id = 14",
            when_not_matched_insert={"id": "source.id", "tag": "source.tag", "price": "CAST(0 AS DOUBLE)"},
        )
    rows = _same(spark, catalog, name, twin)
    assert [r for r in rows if r[0] in (13, 14, 200)] == [(13, 130.0, "m13"), (200, 0.0, "new")]
    first = _column_files(catalog.load_table(name))
    assert sorted(cf.field_ids for files in first.values() for cf in files) == [(2,), (2,), (3,)]


def test_sql_update_and_merge_write_column_files(spark, catalog: Catalog, pair) -> None:  # type: ignore[no-untyped-def]
    name, twin = pair
    for target in (name, twin):
        sql(spark, f"UPDATE icefloe.{target} SET tag = upper(tag) WHERE id < 5")
        spark.createDataFrame([(1, 9.5), (60, 6.5)], "id long, p double").createOrReplaceTempView("src")
        sql(
            spark,
            f"MERGE INTO icefloe.{target} t USING src s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET t.price = s.p",
        )
    rows = _same(spark, catalog, name, twin)
    assert [r for r in rows if r[0] in (1, 60)] == [(1, 9.5, "T1"), (60, 6.5, "t60")]
    files = _column_files(catalog.load_table(name))
    assert sorted(cf.field_ids for fs in files.values() for cf in fs) == [(2,), (2,), (3,)]
    # a filtered Spark read and the data source see the updated values, the changelog the updates
    table = catalog.load_table(name)
    assert read_table(spark, name, filter="price = 6.5").select("id").collect()[0][0] == 60
    source = spark.read.format("icefloe").load(name).select("id", "price", "tag").collect()
    assert sorted(tuple(r) for r in source) == rows
    last = table.current_snapshot()
    assert last is not None and last.parent_snapshot_id is not None
    changes = table.changelog(last.parent_snapshot_id, identifier_columns=["id"]).to_arrow()
    assert sorted(
        zip(changes.column("_change_type").to_pylist(), changes.column("id").to_pylist(), strict=True)
    ) == [
        ("UPDATE_AFTER", 1),
        ("UPDATE_AFTER", 60),
        ("UPDATE_BEFORE", 1),
        ("UPDATE_BEFORE", 60),
    ]
    assert pc.sum(table.scan(columns=("price",)).to_arrow().column("price")).as_py() == sum(
        r[1] for r in rows
    )
