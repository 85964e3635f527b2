"""Bugs the DML fuzzer (``test_dml_fuzz``) found, each as its smallest reproduction with exact rows."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import sql


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in sql(spark, f"SELECT * FROM {table}").collect())


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize(
    ("clauses", "counts", "want"),
    [
        (
            "WHEN NOT MATCHED THEN INSERT *",
            (1, 0, 0, 1),
            [(1, "a", 10), (2, "b", 20), (3, "c", 30)],
        ),
        ("WHEN NOT MATCHED BY SOURCE THEN DELETE", (1, 0, 1, 0), [(1, "a", 10)]),
    ],
)
def test_merge_without_matched_clauses_keeps_a_row_two_source_rows_match_once(
    spark: Any,
    catalog: Catalog,
    table_name: str,
    version: int,
    mode: str,
    clauses: str,
    counts: tuple[int, ...],
    want: list[tuple[Any, ...]],
) -> None:
    """Without WHEN MATCHED clauses Spark's one-source-row rule does not apply: a target row that
    several source rows match is simply left as it is. It was written once per matching source row
    whenever the target rows went through the join (copy-on-write, NOT MATCHED BY SOURCE)."""
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id INT, grp STRING, v INT) USING iceberg TBLPROPERTIES "
        f"('format-version' = '{version}', 'write.merge.mode' = '{mode}')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20)")
    spark.createDataFrame(
        [(1, "x", 0), (1, "y", 0), (3, "c", 30)], "id int, grp string, v int"
    ).createOrReplaceTempView("twice_matching")
    merged = sql(spark, f"MERGE INTO {t} AS t USING twice_matching AS s ON t.id = s.id {clauses}")
    assert [tuple(r) for r in merged.collect()] == [counts]
    assert _rows(spark, t) == want
