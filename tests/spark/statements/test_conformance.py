"""A script in the spirit of Iceberg's Spark documentation (DDL, writes, queries, procedures), run
on v2, v3 and v4 tables with the expected table contents and metadata-table rows after every step.

Statements Spark itself can run on a Parquet table (CREATE, INSERT INTO / OVERWRITE static and
dynamic, SELECT) run on both, and the two tables must hold the same rows; DELETE / UPDATE / MERGE
(which Spark cannot run on Parquet) are checked against the documented result, and the Parquet
table is then brought to the same rows so the cross-check continues.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import sql

BOTH, ICEFLOE = "both", "icefloe"


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


# (who runs it, statement with {t} for the table, expected rows of `SELECT *` afterwards)
STEPS: list[tuple[str, str, list[tuple[Any, ...]]]] = [
    (
        BOTH,
        "INSERT INTO {t} VALUES (1, 12.5, 'books'), (2, 7.0, 'books'), (3, 59.99, 'games')",
        [(1, 12.5, "books"), (2, 7.0, "books"), (3, 59.99, "games")],
    ),
    (
        BOTH,
        "INSERT INTO {t} SELECT id + 10, amount * 2, category FROM {t} WHERE category = 'books'",
        [
            (1, 12.5, "books"),
            (2, 7.0, "books"),
            (3, 59.99, "games"),
            (11, 25.0, "books"),
            (12, 14.0, "books"),
        ],
    ),
    (
        BOTH,
        "INSERT OVERWRITE {t} PARTITION (category = 'games') VALUES (4, 20.0)",
        [(1, 12.5, "books"), (2, 7.0, "books"), (4, 20.0, "games"), (11, 25.0, "books"), (12, 14.0, "books")],
    ),
    (
        "dynamic",
        "INSERT OVERWRITE {t} VALUES (5, 9.99, 'music'), (11, 1.0, 'books')",
        [(4, 20.0, "games"), (5, 9.99, "music"), (11, 1.0, "books")],
    ),
    (ICEFLOE, "DELETE FROM {t} WHERE amount < 5", [(4, 20.0, "games"), (5, 9.99, "music")]),
    (
        ICEFLOE,
        "UPDATE {t} SET amount = round(amount + 1, 2) WHERE category = 'music'",
        [(4, 20.0, "games"), (5, 10.99, "music")],
    ),
    (
        ICEFLOE,
        """MERGE INTO {t} AS target
           USING (SELECT * FROM VALUES (4, 25.0, 'games', 'u'), (5, 0.0, 'music', 'd'), (6, 3.0, 'books', 'i')
                  AS src(id, amount, category, op)) AS source
           ON target.id = source.id
           WHEN MATCHED AND source.op = 'd' THEN DELETE
           WHEN MATCHED THEN UPDATE SET amount = source.amount
           WHEN NOT MATCHED THEN INSERT (id, amount, category)
                                 VALUES (source.id, source.amount, source.category)""",
        [(4, 25.0, "games"), (6, 3.0, "books")],
    ),
    (BOTH, "INSERT INTO {t} SELECT id * 100, amount, category FROM {t}", None),  # type: ignore[list-item]
]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_documentation_script(
    spark: Any, catalog: Catalog, table_name: str, version: int, tmp_path: Path
) -> None:
    t = f"icefloe.{table_name}"
    parquet = f"parquet_{table_name.split('.')[1]}"
    mode = "merge-on-read" if version < 4 else "copy-on-write"
    sql(
        spark,
        f"""CREATE TABLE {t} (id BIGINT, amount DOUBLE, category STRING) USING iceberg
            PARTITIONED BY (category)
            TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}',
                           'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')""",
    )
    spark.sql(
        f"CREATE TABLE {parquet} (id BIGINT, amount DOUBLE, category STRING) USING parquet "
        f"PARTITIONED BY (category) LOCATION '{tmp_path}/parquet'"
    )
    operations: list[str] = []
    try:
        for who, statement, expected in STEPS:
            if who == "dynamic":
                spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
            try:
                sql(spark, statement.format(t=t))
                if who != ICEFLOE:
                    spark.sql(statement.format(t=parquet))
            finally:
                spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
            got = rows(sql(spark, f"SELECT * FROM {t}"))
            if expected is not None:
                assert got == sorted(expected), statement
            if who == ICEFLOE:  # bring the Parquet table to the same rows
                spark.createDataFrame(got, "id long, amount double, category string").write.insertInto(
                    parquet, overwrite=True
                )
            assert got == rows(spark.sql(f"SELECT * FROM {parquet}")), statement
            latest = sql(
                spark, f"SELECT operation FROM {t}.snapshots ORDER BY committed_at DESC, snapshot_id LIMIT 1"
            )
            operations.append(latest.collect()[0][0])
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {parquet}")
    # one snapshot per statement, each with the operation Iceberg gives it
    assert rows(sql(spark, f"SELECT count(*) FROM {t}.snapshots")) == [(len(STEPS),)]
    assert operations == [
        "append",
        "append",
        "overwrite",
        "overwrite",
        "delete",
        "overwrite",
        "overwrite",
        "append",
    ]
    history = sql(spark, f"SELECT snapshot_id FROM {t}.history ORDER BY made_current_at").collect()
    first = history[0][0]
    assert rows(sql(spark, f"SELECT * FROM {t} VERSION AS OF {first}")) == sorted(STEPS[0][2])
    assert rows(sql(spark, f"SELECT count(*) FROM {t}.history WHERE is_current_ancestor")) == [(len(STEPS),)]
    # merge-on-read (v2 position deletes, v3 deletion vectors) leaves delete files; copy-on-write none
    deletes = rows(sql(spark, f"SELECT count(*) FROM {t}.delete_files"))[0][0]
    assert (deletes > 0) == (mode == "merge-on-read")
    live = rows(sql(spark, f"SELECT count(*) FROM {t}"))[0][0]
    assert live == 4
