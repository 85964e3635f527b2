"""MERGE INTO with a general ON condition: an equality plus a non-equality (``t.id = s.id AND
t.day > s.day``) and no equality at all (``t.id BETWEEN s.lo AND s.hi``), with every clause kind.
Table contents are checked exactly and cross-checked against Spark computing the same MERGE with
joins over Parquet copies of the table and the source; a target row matched twice fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement

Row = tuple[Any, ...]


def rows(df: Any) -> list[Row]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def parquet_copy(spark: Any, tmp_path: Path, table: str, name: str) -> None:
    """A Parquet copy of the icefloe table's rows, as the temporary view ``name``."""
    path = str(tmp_path / name)
    sql(spark, f"SELECT * FROM {table}").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView(name)


@pytest.mark.parametrize(("version", "mode"), [(2, "merge-on-read"), (3, "copy-on-write")])
def test_merge_on_general_conditions(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path, version: int, mode: str
) -> None:
    t = f"icefloe.{table_name}"
    props = f"'format-version' = '{version}', 'write.merge.mode' = '{mode}'"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, day INT, v STRING) USING iceberg TBLPROPERTIES ({props})")
    sql(spark, f"INSERT INTO {t} VALUES (1, 1, 'a'), (1, 5, 'b'), (2, 3, 'c'), (3, 7, 'd'), (4, 2, 'e')")
    spark.createDataFrame(
        [(1, 2, "x"), (2, 4, "y"), (3, 1, "z"), (5, 0, "w")], "id long, day int, v string"
    ).createOrReplaceTempView("merge_cond_days")
    parquet_copy(spark, tmp_path, t, "merge_cond_before")
    on = "t.id = s.id AND t.day > s.day"
    expected = rows(
        spark.sql(
            f"""SELECT t.id, t.day, coalesce(s.v, t.v) FROM merge_cond_before t
                LEFT JOIN merge_cond_days s ON {on}
                UNION ALL
                SELECT s.* FROM merge_cond_days s LEFT ANTI JOIN merge_cond_before t ON {on}"""
        )
    )
    counts = sql(
        spark,
        f"""MERGE INTO {t} t USING merge_cond_days s ON {on}
            WHEN MATCHED THEN UPDATE SET v = s.v
            WHEN NOT MATCHED THEN INSERT *""",
    )
    assert rows(counts) == [(4, 2, 0, 2)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [
        (1, 1, "a"),
        (1, 5, "x"),
        (2, 3, "c"),
        (2, 4, "y"),
        (3, 7, "z"),
        (4, 2, "e"),
        (5, 0, "w"),
    ]

    # no equality at all, conditional clauses, NOT MATCHED BY SOURCE
    ranges = f"{t}_ranges"
    sql(spark, f"CREATE TABLE {ranges} (id BIGINT, v INT) USING iceberg TBLPROPERTIES ({props})")
    sql(spark, f"INSERT INTO {ranges} SELECT id, CAST(id * 10 AS INT) FROM range(1, 11)")
    spark.createDataFrame(
        [(2, 3, "del"), (5, 5, "upd"), (20, 30, "new")], "lo long, hi long, op string"
    ).createOrReplaceTempView("merge_cond_ranges")
    parquet_copy(spark, tmp_path, ranges, "merge_cond_ranges_before")
    on = "t.id BETWEEN s.lo AND s.hi"
    expected = rows(
        spark.sql(
            f"""SELECT t.id, CASE WHEN s.op IS NULL THEN t.v ELSE t.v + 1 END
                FROM merge_cond_ranges_before t LEFT JOIN merge_cond_ranges s ON {on}
                WHERE NOT coalesce(s.op = 'del', false) AND NOT (s.lo IS NULL AND t.id > 8)
                UNION ALL
                SELECT s.lo, -1 FROM merge_cond_ranges s LEFT ANTI JOIN merge_cond_ranges_before t ON {on}"""
        )
    )
    counts = sql(
        spark,
        f"""MERGE INTO {ranges} AS t USING merge_cond_ranges AS s ON {on}
            WHEN MATCHED AND s.op = 'del' THEN DELETE
            WHEN MATCHED THEN UPDATE SET v = t.v + 1
            WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.lo, -1)
            WHEN NOT MATCHED BY SOURCE AND t.id > 8 THEN DELETE""",
    )
    assert rows(counts) == [(6, 1, 4, 1)]
    assert rows(sql(spark, f"SELECT * FROM {ranges}")) == expected
    assert expected == [(1, 10), (4, 40), (5, 51), (6, 60), (7, 70), (8, 80), (20, -1)]


def test_a_target_row_matched_twice_or_a_subquery_in_on_writes_nothing(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, v INT) USING iceberg")
    sql(spark, f"INSERT INTO {t} VALUES (1, 10), (3, 30), (6, 60)")
    spark.createDataFrame([(1, 5), (3, 4)], "lo long, hi long").createOrReplaceTempView("merge_cond_overlap")
    before = catalog.load_table(table_name).metadata_location
    with pytest.raises(ValidationError, match="several source rows match the same target row"):
        sql(
            spark,
            f"""MERGE INTO {t} t USING merge_cond_overlap s ON t.id BETWEEN s.lo AND s.hi
                WHEN MATCHED THEN UPDATE SET v = 0""",
        )
    with pytest.raises(UnsupportedStatement, match="subquery in MERGE"):
        sql(
            spark,
            f"""MERGE INTO {t} t USING merge_cond_overlap s
                ON t.id = s.lo AND t.v IN (SELECT hi FROM merge_cond_overlap)
                WHEN MATCHED THEN DELETE""",
        )
    # subqueries in WHEN conditions and actions are refused as Iceberg on Spark refuses them
    # (TestMerge.testMergeWithSubqueriesInConditions)
    for when in (
        "WHEN MATCHED AND t.v < (SELECT max(hi) FROM merge_cond_overlap) THEN UPDATE SET v = 0",
        "WHEN MATCHED AND t.id NOT IN (SELECT hi FROM merge_cond_overlap) THEN DELETE",
        "WHEN NOT MATCHED AND s.lo IN (SELECT hi FROM merge_cond_overlap) THEN INSERT (id, v) VALUES (1, 1)",
        "WHEN NOT MATCHED BY SOURCE AND EXISTS (SELECT 1 FROM merge_cond_overlap) THEN DELETE",
        "WHEN MATCHED THEN UPDATE SET v = (SELECT max(hi) FROM merge_cond_overlap)",
    ):
        with pytest.raises(UnsupportedStatement, match="subqueries are not allowed in MERGE conditions"):
            sql(spark, f"MERGE INTO {t} t USING merge_cond_overlap s ON t.id = s.lo {when}")
    assert catalog.load_table(table_name).metadata_location == before
    # the same overlap without a MATCHED clause is fine: each source row inserts or not
    sql(
        spark,
        f"""MERGE INTO {t} t USING merge_cond_overlap s ON t.id BETWEEN s.lo AND s.hi
            WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.lo, -1)""",
    )
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, 10), (3, 30), (6, 60)]
