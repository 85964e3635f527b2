"""Avro and ORC data files and Avro/ORC position-delete files through the Spark paths: ``read_table``
(Parquet files on Spark's reader, the others through icefloe's), the data source, and a row-level
delete on them (issue 13, item 7)."""

from __future__ import annotations

from icefloe.catalog.base import Catalog
from icefloe.spark import delete_rows, merge_into, plan_read, read_table, update_rows
from icefloe.spark.views import create_view
from tests.scan.test_foreign_formats import DELETED, expected, foreign_table, normalized


def test_read_table_and_data_source_read_every_format(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    table, _ = foreign_table(catalog, table_name)
    plan = plan_read(table)
    assert {t.data_file.file_format for t in plan.native} <= {"parquet"}  # Spark's reader: Parquet only
    assert {"avro", "orc"} <= {t.data_file.file_format for t in plan.python}
    want = expected(set(range(70)) - DELETED)
    assert normalized(read_table(spark, table_name).toArrow()) == want
    filtered = read_table(spark, table_name, filter="qty < 4", columns=["id", "qty"]).toArrow()
    assert normalized(filtered) == [{"id": r["id"], "qty": r["qty"]} for r in want if r["qty"] < 4]
    create_view(spark, "foreign_view", table_name)
    ids = [r[0] for r in spark.sql("SELECT id FROM foreign_view WHERE id < 40 ORDER BY id").collect()]
    assert ids == [i for i in range(40) if i not in DELETED]


def test_row_level_delete_on_avro_and_orc_files(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    foreign_table(catalog, table_name)
    result = delete_rows(spark, table_name, "id >= 25 and id < 35", mode="merge-on-read")
    gone = set(range(25, 35)) - DELETED
    assert result.deleted_rows == len(gone)
    assert normalized(read_table(spark, table_name).toArrow()) == expected(set(range(70)) - DELETED - gone)
    result = delete_rows(spark, table_name, "id < 5", mode="copy-on-write")  # rewrites the Avro file
    assert result.deleted_rows == len(set(range(5)) - DELETED)
    left = set(range(70)) - DELETED - gone - set(range(5))
    assert normalized(catalog.load_table(table_name).scan().to_arrow()) == expected(left)


def test_update_and_merge_on_avro_and_orc_files(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    foreign_table(catalog, table_name)
    live = set(range(70)) - DELETED
    updated = {i for i in live if 25 <= i < 35}  # rows of the Avro and the ORC file
    result = update_rows(spark, table_name, {"qty": "100"}, "id >= 25 and id < 35", mode="merge-on-read")
    assert result.updated_rows == len(updated)
    source = spark.createDataFrame([(5, 200), (45, 200), (500, 200)], "id BIGINT, qty INT")
    result = merge_into(
        source, table_name, "id", when_not_matched_insert={"id": "source.id"}, mode="copy-on-write"
    )
    assert (result.updated_rows, result.inserted_rows) == (2, 1)
    got = {
        r["id"]: r["qty"]
        for r in catalog.load_table(table_name).scan(columns=("id", "qty")).to_arrow().to_pylist()
    }
    want = {r["id"]: r["qty"] for r in expected(live)}
    want.update(dict.fromkeys(updated, 100))
    want.update({5: 200, 45: 200, 500: None})
    assert got == want
    full = normalized(read_table(spark, table_name).toArrow())
    assert [r for r in full if r["id"] not in (5, 45, 500) and r["id"] not in updated] == [
        r for r in expected(live) if r["id"] not in (5, 45) and r["id"] not in updated
    ]
