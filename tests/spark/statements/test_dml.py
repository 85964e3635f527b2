"""DML through icefloe.spark.sql: INSERT (VALUES / SELECT / column list / OVERWRITE static and
dynamic), DELETE, UPDATE, MERGE with every clause, subqueries, branch writes, counts, one snapshot
per statement, and nothing written by a failing statement. v2, v3 (deletion vectors) and v4."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def snapshots(catalog: Catalog, ident: str) -> int:
    return len(catalog.load_table(ident).snapshots())


@pytest.mark.parametrize(
    ("version", "mode"), [(2, "merge-on-read"), (3, "merge-on-read"), (4, "copy-on-write")]
)
def test_dml_script(spark: Any, catalog: Catalog, table_name: str, version: int, mode: str) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE {t} (id BIGINT NOT NULL, category STRING, amount INT) USING iceberg
            PARTITIONED BY (category)
            TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}',
                           'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')""",
    )
    assert rows(sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 30)")) == [(3, 3)]
    assert rows(sql(spark, f"INSERT INTO {t} (category, id) VALUES ('c', 4)")) == [(1, 1)]
    spark.createDataFrame(
        [(5, "b", 50), (6, "c", 60)], "id long, category string, amount int"
    ).createOrReplaceTempView("dml_staging")
    sql(spark, f"INSERT INTO {t} SELECT * FROM dml_staging WHERE id > 4")
    assert snapshots(catalog, table_name) == 3
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [
        (1, "a", 10),
        (2, "a", 20),
        (3, "b", 30),
        (4, "c", None),
        (5, "b", 50),
        (6, "c", 60),
    ]
    # DELETE: an icefloe filter, a Spark-only condition, an IN subquery
    assert rows(sql(spark, f"DELETE FROM {t} WHERE id = 1")) == [(1,)]
    assert rows(sql(spark, f"DELETE FROM {t} AS x WHERE x.amount IS NULL OR length(x.category) > 5")) == [
        (1,)
    ]
    assert rows(sql(spark, f"DELETE FROM {t} WHERE id IN (SELECT id - 1 FROM dml_staging WHERE id = 6)")) == [
        (1,)
    ]
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(2,), (3,), (6,)]
    # UPDATE
    assert rows(
        sql(spark, f"UPDATE {t} SET amount = amount + 1, category = upper(category) WHERE id <= 3")
    ) == [(2,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(2, "A", 21), (3, "B", 31), (6, "c", 60)]
    assert snapshots(catalog, table_name) == 7
    # MERGE with ordered conditional clauses, SET *, INSERT *, NOT MATCHED BY SOURCE
    spark.createDataFrame(
        [
            (2, "A", 0, "delete"),
            (3, "B", 300, "update"),
            (6, "c", 600, "bump"),
            (7, "d", 70, "new"),
            (8, "d", 80, "skip"),
        ],
        "id long, category string, amount int, op string",
    ).createOrReplaceTempView("dml_changes")
    sql(spark, f"INSERT INTO {t} VALUES (9, 'z', -1)")
    merged = sql(
        spark,
        f"""MERGE INTO {t} AS tgt
            USING (SELECT * FROM dml_changes) AS src
            ON tgt.id = src.id
            WHEN MATCHED AND src.op = 'delete' THEN DELETE
            WHEN MATCHED AND src.op = 'bump' THEN UPDATE SET amount = tgt.amount + 1
            WHEN MATCHED THEN UPDATE SET *
            WHEN NOT MATCHED AND src.op = 'skip' THEN INSERT (id, category) VALUES (src.id, 'skipped')
            WHEN NOT MATCHED THEN INSERT *
            WHEN NOT MATCHED BY SOURCE AND tgt.amount < 0 THEN UPDATE SET amount = 0""",
    )
    assert merged.columns == [
        "num_affected_rows",
        "num_updated_rows",
        "num_deleted_rows",
        "num_inserted_rows",
    ]
    assert rows(merged) == [(6, 3, 1, 2)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [
        (3, "B", 300, None)[:3],
        (6, "c", 61),
        (7, "d", 70),
        (8, "skipped", None),
        (9, "z", 0),
    ]
    assert snapshots(catalog, table_name) == 9
    # INSERT OVERWRITE: static partition, then dynamic
    sql(spark, f"INSERT OVERWRITE {t} PARTITION (category = 'd') SELECT 70, 7")
    assert rows(sql(spark, f"SELECT * FROM {t} WHERE category = 'd'")) == [(70, "d", 7)]
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        sql(spark, f"INSERT OVERWRITE {t} VALUES (100, 'c', 1), (101, 'new', 2)")
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [
        (3, "B", 300),
        (8, "skipped", None),
        (9, "z", 0),
        (70, "d", 7),
        (100, "c", 1),
        (101, "new", 2),
    ]
    sql(spark, f"INSERT OVERWRITE {t} SELECT 1, 'only', 1")
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "only", 1)]
    # cross-check: the same MERGE through Spark on a plain temp view of the same rows is not possible
    # (Spark has no MERGE for views); the expected rows above follow Spark's documented semantics.


def test_branch_writes_and_failures(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, s STRING) USING iceberg TBLPROPERTIES ('format-version' = '3')")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y')")
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH dev")
    sql(spark, f"INSERT INTO {t}.branch_dev VALUES (3, 'z')")
    sql(spark, f"DELETE FROM {t}.branch_dev WHERE id = 1")
    sql(spark, f"UPDATE {t}.branch_dev SET s = 'w' WHERE id = 2")
    assert rows(sql(spark, f"SELECT * FROM {t}.branch_dev")) == [(2, "w"), (3, "z")]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "x"), (2, "y")]
    before = catalog.load_table(table_name).metadata_location
    with pytest.raises(ValidationError):
        sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 'too many')")
    with pytest.raises(ValidationError):
        sql(spark, f"UPDATE {t} SET nope = 1")
    with pytest.raises(ValidationError, match=r"DIVIDE_BY_ZERO"):
        sql(spark, f"UPDATE {t} SET id = id DIV 0")
    assert catalog.load_table(table_name).metadata_location == before
