"""The SQL examples of Iceberg's Spark documentation (``spark-getting-started``, ``spark-ddl``,
``spark-queries``, ``spark-writes``, and ``spark-procedures`` for the procedures
no other test file covers), in this project's names and data, on v2, v3 and v4 tables.

Each step runs one documented statement and checks the table afterwards: its columns and rows (and
where the page shows them, the statement's result). Expected rows are the documented semantics
worked out by hand on the small data, or Spark's own answer: the writes Spark can run on a Parquet
table (INSERT, INSERT OVERWRITE static and dynamic) run there too and the rows must agree, and the
DELETE / UPDATE conditions are evaluated by Spark over a temporary view of the rows before.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import icefloe
from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql

Row = tuple[Any, ...]
VERSIONS = [2, 3, 4]


def rows(df: Any) -> list[Row]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def ts(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def contents(spark: Any, table: str) -> tuple[list[str], list[Row]]:
    frame = sql(spark, f"SELECT * FROM {table}")
    return frame.columns, rows(frame)


def properties(version: int, **extra: str) -> str:
    pairs = {"format-version": str(version), **extra}
    return "TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in pairs.items()) + ")"


@pytest.fixture
def views(spark: Any) -> Iterator[list[str]]:
    """Temporary views a test makes, dropped afterwards."""
    made: list[str] = []
    yield made
    for name in made:
        spark.catalog.dropTempView(name)


# ------------------------------------------------------------------------------------------ getting started


@pytest.mark.parametrize("version", VERSIONS)
def test_getting_started(spark: Any, table_name: str, version: int, views: list[str]) -> None:
    t = f"icefloe.{table_name}"
    spark.createDataFrame([(10, "d"), (11, "ee")], "id long, data string").createOrReplaceTempView(
        "gs_source"
    )
    spark.createDataFrame([(1, "x"), (2, "x"), (4, "z")], "id long, data string").createOrReplaceTempView(
        "gs_updates"
    )
    views += ["gs_source", "gs_updates"]
    sql(spark, f"CREATE TABLE {t} (id bigint, data string) USING iceberg {properties(version)}")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    sql(spark, f"INSERT INTO {t} SELECT id, data FROM gs_source WHERE length(data) = 1")
    assert contents(spark, t) == (["id", "data"], [(1, "a"), (2, "b"), (3, "c"), (10, "d")])
    out = sql(
        spark,
        f"""MERGE INTO {t} t USING (SELECT * FROM gs_updates) u ON t.id = u.id
            WHEN MATCHED THEN UPDATE SET t.data = u.data
            WHEN NOT MATCHED THEN INSERT *""",
    )
    assert rows(out) == [(3, 2, 0, 1)]
    assert contents(spark, t)[1] == [(1, "x"), (2, "x"), (3, "c"), (4, "z"), (10, "d")]
    counted = sql(spark, f"SELECT count(1) as count, data FROM {t} GROUP BY data")
    assert rows(counted) == [(1, "c"), (1, "d"), (1, "z"), (2, "x")]
    snapshots = sql(spark, f"SELECT operation FROM {t}.snapshots ORDER BY committed_at")
    assert [r[0] for r in snapshots.collect()] == ["append", "append", "overwrite"]


# ------------------------------------------------------------------------------------------ DDL


@pytest.mark.parametrize("version", VERSIONS)
def test_ddl_page(spark: Any, catalog: Catalog, table_name: str, version: int) -> None:
    t = f"icefloe.{table_name}"
    day1, day2 = ts("2024-03-01 10:00:00"), ts("2024-03-02 11:30:00")
    sql(
        spark,
        f"""CREATE TABLE {t} (
              id bigint NOT NULL COMMENT 'unique id',
              data string,
              category string,
              ts timestamp)
            USING iceberg
            PARTITIONED BY (bucket(16, id), days(ts), category) {properties(version)}""",
    )
    sql(
        spark,
        f"INSERT INTO {t} VALUES (1, 'a', 'x', TIMESTAMP '{day1}'), (2, 'bb', 'y', TIMESTAMP '{day2}')",
    )
    base = [(1, "a", "x", day1), (2, "bb", "y", day2)]
    assert contents(spark, t) == (["id", "data", "category", "ts"], base)

    steps: list[tuple[str, list[str], list[Row]]] = [
        (
            "ALTER TABLE {t} ADD COLUMNS (new_column string comment 'new_column docs')",
            ["id", "data", "category", "ts", "new_column"],
            [(*r, None) for r in base],
        ),
        (
            "ALTER TABLE {t} ADD COLUMN point struct<x: double, y: double>",
            ["id", "data", "category", "ts", "new_column", "point"],
            [(*r, None, None) for r in base],
        ),
        (
            "ALTER TABLE {t} ADD COLUMN point.z double",
            ["id", "data", "category", "ts", "new_column", "point"],
            [(*r, None, None) for r in base],
        ),
        (
            "INSERT INTO {t} VALUES (3, 'c', 'x', TIMESTAMP '" + str(day1) + "', 'n', "
            "named_struct('x', 1.0D, 'y', 2.0D, 'z', 3.0D))",
            ["id", "data", "category", "ts", "new_column", "point"],
            [*[(*r, None, None) for r in base], (3, "c", "x", day1, "n", (1.0, 2.0, 3.0))],
        ),
        (
            "ALTER TABLE {t} ADD COLUMN other_column int AFTER id",
            ["id", "other_column", "data", "category", "ts", "new_column", "point"],
            [
                (1, None, "a", "x", day1, None, None),
                (2, None, "bb", "y", day2, None, None),
                (3, None, "c", "x", day1, "n", (1.0, 2.0, 3.0)),
            ],
        ),
        (
            "ALTER TABLE {t} RENAME COLUMN data TO payload",
            ["id", "other_column", "payload", "category", "ts", "new_column", "point"],
            [
                (1, None, "a", "x", day1, None, None),
                (2, None, "bb", "y", day2, None, None),
                (3, None, "c", "x", day1, "n", (1.0, 2.0, 3.0)),
            ],
        ),
        (
            "ALTER TABLE {t} RENAME COLUMN point.x TO px",
            ["id", "other_column", "payload", "category", "ts", "new_column", "point"],
            [
                (1, None, "a", "x", day1, None, None),
                (2, None, "bb", "y", day2, None, None),
                (3, None, "c", "x", day1, "n", (1.0, 2.0, 3.0)),
            ],
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN other_column TYPE bigint COMMENT 'widened'",
            ["id", "other_column", "payload", "category", "ts", "new_column", "point"],
            [
                (1, None, "a", "x", day1, None, None),
                (2, None, "bb", "y", day2, None, None),
                (3, None, "c", "x", day1, "n", (1.0, 2.0, 3.0)),
            ],
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN category FIRST",
            ["category", "id", "other_column", "payload", "ts", "new_column", "point"],
            [
                ("x", 1, None, "a", day1, None, None),
                ("x", 3, None, "c", day1, "n", (1.0, 2.0, 3.0)),
                ("y", 2, None, "bb", day2, None, None),
            ],
        ),
        (
            "ALTER TABLE {t} ALTER COLUMN new_column AFTER id",
            ["category", "id", "new_column", "other_column", "payload", "ts", "point"],
            [
                ("x", 1, None, None, "a", day1, None),
                ("x", 3, "n", None, "c", day1, (1.0, 2.0, 3.0)),
                ("y", 2, None, None, "bb", day2, None),
            ],
        ),
        (
            "ALTER TABLE {t} DROP COLUMN point.z",
            ["category", "id", "new_column", "other_column", "payload", "ts", "point"],
            [
                ("x", 1, None, None, "a", day1, None),
                ("x", 3, "n", None, "c", day1, (1.0, 2.0)),
                ("y", 2, None, None, "bb", day2, None),
            ],
        ),
        (
            "ALTER TABLE {t} DROP COLUMN other_column",
            ["category", "id", "new_column", "payload", "ts", "point"],
            [
                ("x", 1, None, "a", day1, None),
                ("x", 3, "n", "c", day1, (1.0, 2.0)),
                ("y", 2, None, "bb", day2, None),
            ],
        ),
    ]
    for statement, columns, expected in steps:
        sql(spark, statement.format(t=t))
        assert contents(spark, t) == (columns, expected), statement
    point = catalog.load_table(table_name).schema().find_field("point")
    assert [f.name for f in point.field_type.fields] == ["px", "y"]  # type: ignore[attr-defined]

    # identifier fields need a required column: SET before DROP NOT NULL, as the page orders them
    sql(spark, f"ALTER TABLE {t} SET IDENTIFIER FIELDS id")
    schema = catalog.load_table(table_name).schema()
    assert [schema.find_field(i).name for i in schema.identifier_field_ids] == ["id"]
    sql(spark, f"ALTER TABLE {t} DROP IDENTIFIER FIELDS id")
    sql(spark, f"ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL")
    sql(spark, f"INSERT INTO {t} (category, id, payload) VALUES ('z', NULL, 'nil')")
    assert (None, "nil") in [(r[1], r[3]) for r in contents(spark, t)[1]]

    # partition evolution: old files keep their spec, new ones take the new spec; rows are unchanged
    evolution = [
        "ALTER TABLE {t} ADD PARTITION FIELD truncate(4, payload)",
        "ALTER TABLE {t} DROP PARTITION FIELD bucket(16, id)",
        "ALTER TABLE {t} DROP PARTITION FIELD truncate(4, payload)",
        "ALTER TABLE {t} ADD PARTITION FIELD bucket(8, id) AS shard",
        "ALTER TABLE {t} REPLACE PARTITION FIELD ts_day WITH hour(ts) AS hour_of_ts",
        "ALTER TABLE {t} DROP PARTITION FIELD shard",
    ]
    before = contents(spark, t)
    for statement in evolution:
        sql(spark, statement.format(t=t))
        assert contents(spark, t) == before, statement
    spec = catalog.load_table(table_name).spec()
    assert [(f.name, str(f.transform)) for f in spec.fields] == [
        ("category", "identity"),
        ("hour_of_ts", "hour"),
    ]
    # a second time transform of ts is redundant, and refused as Iceberg refuses it
    with pytest.raises(ValidationError, match="redundant"):
        sql(spark, f"ALTER TABLE {t} ADD PARTITION FIELD year(ts)")
    sql(spark, f"INSERT INTO {t} (category, id, ts) VALUES ('x', 4, TIMESTAMP '{day2}')")
    assert rows(sql(spark, f"SELECT id FROM {t} WHERE ts = TIMESTAMP '{day2}'")) == [(2,), (4,)]
    assert rows(sql(spark, f"SELECT spec_id, count(*) FROM {t}.files GROUP BY spec_id"))[-1][1] == 1

    # write order and distribution change no rows
    for statement in (
        "ALTER TABLE {t} WRITE ORDERED BY category ASC NULLS LAST, id DESC NULLS FIRST",
        "ALTER TABLE {t} WRITE LOCALLY ORDERED BY category, id",
        "ALTER TABLE {t} WRITE UNORDERED",
        "ALTER TABLE {t} WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY category, id",
    ):
        sql(spark, statement.format(t=t))
    assert catalog.load_table(table_name).properties["write.distribution-mode"] == "hash"

    # properties
    sql(spark, f"ALTER TABLE {t} SET TBLPROPERTIES ('read.split.target-size'='268435456')")
    shown: dict[str, str] = dict(rows(sql(spark, f"SHOW TBLPROPERTIES {t}")))
    assert shown["read.split.target-size"] == "268435456"
    sql(spark, f"ALTER TABLE {t} UNSET TBLPROPERTIES ('read.split.target-size')")
    assert "read.split.target-size" not in dict(rows(sql(spark, f"SHOW TBLPROPERTIES {t}")))


@pytest.mark.parametrize("version", VERSIONS)
def test_ddl_page_branches_and_tags(spark: Any, catalog: Catalog, table_name: str, version: int) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id bigint) USING iceberg {properties(version)}")
    sql(spark, f"INSERT INTO {t} VALUES (1)")
    sql(spark, f"INSERT INTO {t} VALUES (2)")
    first, second = (s.snapshot_id for s in catalog.load_table(table_name).snapshots())
    day_ms = 24 * 3600 * 1000
    steps: list[tuple[str, list[Row]]] = [
        (
            "ALTER TABLE {t} CREATE BRANCH `audit-branch`",
            [("audit-branch", "BRANCH", second, None, None, None)],
        ),
        ("ALTER TABLE {t} CREATE BRANCH IF NOT EXISTS `audit-branch`", []),
        (
            "ALTER TABLE {t} CREATE OR REPLACE BRANCH `audit-branch`",
            [("audit-branch", "BRANCH", second, None, None, None)],
        ),
        (
            f"ALTER TABLE {{t}} CREATE BRANCH `b2` AS OF VERSION {first} RETAIN 30 DAYS "
            "WITH SNAPSHOT RETENTION 3 SNAPSHOTS 2 DAYS",
            [("b2", "BRANCH", first, 30 * day_ms, 3, 2 * day_ms)],
        ),
        (
            "ALTER TABLE {t} CREATE TAG `historical-tag`",
            [("historical-tag", "TAG", second, None, None, None)],
        ),
        ("ALTER TABLE {t} CREATE TAG IF NOT EXISTS `historical-tag`", []),
        (
            f"ALTER TABLE {{t}} CREATE TAG `t2` AS OF VERSION {first} RETAIN 365 DAYS",
            [("t2", "TAG", first, 365 * day_ms, None, None)],
        ),
        (
            f"ALTER TABLE {{t}} REPLACE BRANCH `audit-branch` AS OF VERSION {first} RETAIN 60 DAYS",
            [("audit-branch", "BRANCH", first, 60 * day_ms, None, None)],
        ),
        (
            f"ALTER TABLE {{t}} REPLACE TAG `historical-tag` AS OF VERSION {first} RETAIN 60 DAYS",
            [("historical-tag", "TAG", first, 60 * day_ms, None, None)],
        ),
    ]
    for statement, changed in steps:
        sql(spark, statement.format(t=t))
        refs = {r[0]: r for r in rows(sql(spark, f"SELECT * FROM {t}.refs"))}
        for row in changed:
            assert refs[row[0]] == row, statement
    assert rows(sql(spark, f"SELECT * FROM {t}.`branch_audit-branch`")) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM {t}.`tag_historical-tag`")) == [(1,)]
    sql(spark, f"ALTER TABLE {t} DROP BRANCH `audit-branch`")
    sql(spark, f"ALTER TABLE {t} DROP TAG `historical-tag`")
    assert [r[0] for r in rows(sql(spark, f"SELECT name FROM {t}.refs"))] == ["b2", "main", "t2"]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1,), (2,)]


@pytest.mark.parametrize("version", VERSIONS)
def test_ddl_page_create_replace_as_select_rename_drop(
    spark: Any, catalog: Catalog, table_name: str, version: int, views: list[str]
) -> None:
    t = f"icefloe.{table_name}"
    spark.createDataFrame(
        [(1, "a", "p1"), (2, "b", "p2")], "id long, data string, part string"
    ).createOrReplaceTempView("ddl_source")
    views.append("ddl_source")
    sql(
        spark,
        f"CREATE TABLE {t} USING iceberg PARTITIONED BY (part) {properties(version, key='value')} "
        "AS SELECT * FROM ddl_source",
    )
    assert contents(spark, t) == (["id", "data", "part"], [(1, "a", "p1"), (2, "b", "p2")])
    assert catalog.load_table(table_name).properties["key"] == "value"
    sql(
        spark,
        f"REPLACE TABLE {t} USING iceberg {properties(version)} "
        "AS SELECT id, data FROM ddl_source WHERE id = 2",
    )
    assert contents(spark, t) == (["id", "data"], [(2, "b")])
    sql(
        spark,
        f"CREATE OR REPLACE TABLE {t} USING iceberg {properties(version)} "
        "AS SELECT id * 10 AS id FROM ddl_source",
    )
    assert contents(spark, t) == (["id"], [(10,), (20,)])
    assert len(catalog.load_table(table_name).snapshots()) == 3  # the history is kept
    renamed = f"{table_name}_renamed"
    sql(spark, f"ALTER TABLE {t} RENAME TO icefloe.{renamed}")
    assert contents(spark, f"icefloe.{renamed}") == (["id"], [(10,), (20,)])
    assert not catalog.table_exists(table_name)
    sql(spark, f"DROP TABLE icefloe.{renamed} PURGE")
    assert not catalog.table_exists(renamed)


# ------------------------------------------------------------------------------------------ queries


@pytest.mark.parametrize("version", VERSIONS)
def test_queries_page_time_travel_schemas(
    spark: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    """A snapshot id, a timestamp and a tag read with the snapshot's schema; a branch with the table's."""
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, status STRING) USING iceberg {properties(version)}")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'NEW'), (2, 'PAID')")
    s1 = catalog.load_table(table_name).snapshots()[0]
    sql(spark, f"ALTER TABLE {t} ADD COLUMN total DOUBLE")
    sql(spark, f"INSERT INTO {t} VALUES (3, 'PAID', 100.0)")
    old = (["id", "status"], [(1, "NEW"), (2, "PAID")])
    assert contents(spark, f"{t} VERSION AS OF {s1.snapshot_id}") == old
    assert contents(spark, f"{t} FOR SYSTEM_VERSION AS OF {s1.snapshot_id}") == old
    at = dt.datetime.fromtimestamp(s1.timestamp_ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert contents(spark, f"{t} TIMESTAMP AS OF '{at}'") == old
    assert contents(spark, f"{t} FOR SYSTEM_TIME AS OF '{at}'") == old
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH audit_branch AS OF VERSION {s1.snapshot_id}")
    sql(spark, f"ALTER TABLE {t} CREATE TAG first_load AS OF VERSION {s1.snapshot_id}")
    with_total = (["id", "status", "total"], [(1, "NEW", None), (2, "PAID", None)])
    assert contents(spark, f"{t} VERSION AS OF 'audit_branch'") == with_total
    assert contents(spark, f"{t}.`branch_audit_branch`") == with_total
    assert contents(spark, f"{t} VERSION AS OF 'first_load'") == old
    assert contents(spark, f"{t}.`tag_first_load`") == old
    assert contents(spark, t) == (
        ["id", "status", "total"],
        [(1, "NEW", None), (2, "PAID", None), (3, "PAID", 100.0)],
    )
    joined = sql(
        spark,
        f"""select h.made_current_at, s.operation, h.snapshot_id, h.is_current_ancestor,
                   s.summary['spark.app.id']
            from {t}.history h join {t}.snapshots s on h.snapshot_id = s.snapshot_id
            order by made_current_at""",
    )
    app = spark.sparkContext.applicationId
    assert [(r[1], r[3], r[4]) for r in joined.collect()] == [("append", True, app), ("append", True, app)]


@pytest.mark.parametrize("version", VERSIONS)
def test_queries_page_position_deletes_and_changes(spark: Any, table_name: str, version: int) -> None:
    """``SELECT * FROM t.position_deletes`` lists each deleted position of a merge-on-read delete;
    ``SELECT * FROM t.changes`` each row inserted and deleted, commit by commit."""
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE {t} (id bigint, data string) USING iceberg
            {properties(version, **{"write.delete.mode": "merge-on-read"})}""",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a')")
    sql(spark, f"DELETE FROM {t} WHERE id = 1")
    data_file = rows(sql(spark, f"SELECT file_path FROM {t}.data_files"))[0][0]
    deleted = sql(spark, f"SELECT file_path, pos, row, spec_id FROM {t}.position_deletes")
    assert rows(deleted) == [(data_file, 0, None, 0)]
    snapshots = [
        r[0] for r in sql(spark, f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at").collect()
    ]
    assert contents(spark, f"{t}.changes") == (
        ["id", "data", "_change_type", "_change_ordinal", "_commit_snapshot_id"],
        [(1, "a", "DELETE", 1, snapshots[1]), (1, "a", "INSERT", 0, snapshots[0])],
    )


# ------------------------------------------------------------------------------------------ writes


@pytest.mark.parametrize("version", VERSIONS)
def test_writes_page_merge_clauses(spark: Any, table_name: str, version: int, views: list[str]) -> None:
    t = f"icefloe.{table_name}"
    mode = "merge-on-read" if version != 4 else "copy-on-write"
    sql(
        spark,
        f"CREATE TABLE {t} (id bigint, count int, status string) USING iceberg "
        f"{properties(version, **{'write.merge.mode': mode})}",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 5, 'ok'), (2, NULL, 'ok'), (3, 7, 'ok'), (9, 1, 'ok')")
    threshold = ts("2020-06-01 00:00:00")
    spark.createDataFrame(
        [
            (1, "delete", ts("2020-01-01 00:00:00")),
            (2, "increment", ts("2020-01-01 00:00:00")),
            (3, "increment", ts("2020-01-01 00:00:00")),
            (5, "x", ts("2021-01-01 00:00:00")),
            (6, "x", ts("2019-01-01 00:00:00")),
        ],
        "id long, op string, event_time timestamp",
    ).createOrReplaceTempView("merge_changes")
    views.append("merge_changes")
    out = sql(
        spark,
        f"""MERGE INTO {t} t USING (SELECT * FROM merge_changes) s ON t.id = s.id
            WHEN MATCHED AND s.op = 'delete' THEN DELETE
            WHEN MATCHED AND t.count IS NULL AND s.op = 'increment' THEN UPDATE SET t.count = 0
            WHEN MATCHED AND s.op = 'increment' THEN UPDATE SET t.count = t.count + 1
            WHEN NOT MATCHED AND s.event_time > TIMESTAMP '{threshold}' THEN
                INSERT (id, count) VALUES (s.id, 1)
            WHEN NOT MATCHED BY SOURCE THEN UPDATE SET status = 'invalid'""",
    )
    # 1 deleted; 2 (count NULL -> 0) and 3 (7 -> 8) updated; 5 inserted, 6 too old; 9 not in the source
    assert rows(out) == [(5, 3, 1, 1)]
    assert contents(spark, t)[1] == [(2, 0, "ok"), (3, 8, "ok"), (5, 1, None), (9, 1, "invalid")]


@pytest.mark.parametrize("version", VERSIONS)
def test_writes_page_insert_overwrite(spark: Any, table_name: str, version: int, tmp_path: Path) -> None:
    """Dynamic and static INSERT OVERWRITE of the page's logs table. Dynamic replaces only the
    (level, hour) partitions the query writes, as the page explains; static replaces the whole
    ``level = 'INFO'`` partition and is cross-checked on a Parquet table partitioned by level."""
    t = f"icefloe.{table_name}"
    parquet = f"docs_logs_{table_name.split('.')[1]}"
    columns = "uuid string, level string, ts timestamp, message string"
    sql(
        spark,
        f"""CREATE TABLE {t} (uuid string NOT NULL, level string NOT NULL, ts timestamp NOT NULL,
            message string) USING iceberg PARTITIONED BY (level, hours(ts)) {properties(version)}""",
    )
    sql(
        spark,
        f"""INSERT INTO {t} VALUES ('a', 'INFO', TIMESTAMP '2020-07-01 01:00:00', 'm1'),
            ('a', 'INFO', TIMESTAMP '2020-07-01 01:00:00', 'm1'),
            ('b', 'WARN', TIMESTAMP '2020-07-01 02:00:00', 'm2'),
            ('c', 'INFO', TIMESTAMP '2020-07-02 02:00:00', 'm3'),
            ('d', 'INFO', TIMESTAMP '2020-07-02 05:00:00', 'm4')""",
    )
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        sql(
            spark,
            f"""INSERT OVERWRITE {t}
                SELECT uuid, first(level), first(ts), first(message) FROM {t}
                WHERE cast(ts as date) = '2020-07-01' GROUP BY uuid""",
        )
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    # the duplicate a is gone; c and d (July 2nd) are in partitions the query did not write
    assert contents(spark, t)[1] == [
        ("a", "INFO", ts("2020-07-01 01:00:00"), "m1"),
        ("b", "WARN", ts("2020-07-01 02:00:00"), "m2"),
        ("c", "INFO", ts("2020-07-02 02:00:00"), "m3"),
        ("d", "INFO", ts("2020-07-02 05:00:00"), "m4"),
    ]
    spark.sql(
        f"CREATE TABLE {parquet} ({columns}) USING parquet PARTITIONED BY (level) LOCATION '{tmp_path}/logs'"
    )
    try:
        before = sql(spark, f"SELECT uuid, ts, message, level FROM {t}")
        before.write.insertInto(parquet)
        # Spark cannot overwrite a Parquet table it reads from: its statement reads a copy
        spark.createDataFrame(before.collect(), before.schema).createOrReplaceTempView("docs_logs_before")
        static = """INSERT OVERWRITE {t} PARTITION (level = 'INFO')
                    SELECT uuid, first(ts), first(message) FROM {source} WHERE level = 'INFO' AND uuid < 'd'
                    GROUP BY uuid"""
        sql(spark, static.format(t=t, source=t))
        spark.sql(static.format(t=parquet, source="docs_logs_before"))
        expected = rows(spark.sql(f"SELECT uuid, level, ts, message FROM {parquet}"))
        assert contents(spark, t)[1] == expected
        assert [r[0] for r in expected] == ["a", "b", "c"]  # d left the INFO partition
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {parquet}")
        spark.catalog.dropTempView("docs_logs_before")


@pytest.mark.parametrize("version", VERSIONS)
def test_writes_page_delete_and_update(spark: Any, table_name: str, version: int, views: list[str]) -> None:
    """The page's DELETE and UPDATE examples (range, scalar subquery over another table, EXISTS);
    each expected result is Spark's evaluation of the same condition over the rows before."""
    events, good = f"icefloe.{table_name}", f"icefloe.{table_name}_good"
    orders, returned = f"icefloe.{table_name}_orders", f"icefloe.{table_name}_returned"
    mode = "merge-on-read" if version < 4 else "copy-on-write"
    modes = {"write.delete.mode": mode, "write.update.mode": mode}
    sql(
        spark,
        f"CREATE TABLE {events} (id int, session_time int, ignored boolean, ts timestamp, "
        f"c1 string, c2 string) USING iceberg {properties(version, **modes)}",
    )
    sql(spark, f"CREATE TABLE {good} (session_time int) USING iceberg {properties(version)}")
    sql(
        spark,
        f"""INSERT INTO {events} VALUES (1, 5, false, TIMESTAMP '2020-05-02 00:00:00', 'a', 'b'),
            (2, 50, false, TIMESTAMP '2020-07-02 00:00:00', 'a', 'b'),
            (3, 500, false, TIMESTAMP '2020-05-12 00:00:00', 'a', 'b'),
            (4, 8, false, TIMESTAMP '2020-04-30 00:00:00', 'a', 'b')""",
    )
    sql(spark, f"INSERT INTO {good} VALUES (10), (20)")
    spark.createDataFrame([(10,), (20,)], "session_time int").createOrReplaceTempView("docs_good")
    views.append("docs_good")

    def expect_delete(condition: str) -> list[Row]:
        sql(spark, f"SELECT * FROM {events}").createOrReplaceTempView("docs_before")
        views.append("docs_before")
        return rows(spark.sql(f"SELECT * FROM docs_before WHERE NOT coalesce(({condition}), false)"))

    def expect_update(sets: dict[str, str], condition: str) -> list[Row]:
        sql(spark, f"SELECT * FROM {events}").createOrReplaceTempView("docs_before")
        views.append("docs_before")
        cols = spark.table("docs_before").columns
        picked = [
            f"CASE WHEN coalesce(({condition}), false) THEN {sets[c]} ELSE {c} END AS {c}" if c in sets else c
            for c in cols
        ]
        return rows(spark.sql(f"SELECT {', '.join(picked)} FROM docs_before"))

    cond = "ts >= '2020-05-01 00:00:00' and ts < '2020-05-10 00:00:00'"
    expected = expect_delete(cond)
    assert rows(sql(spark, f"DELETE FROM {events} WHERE {cond}")) == [(1,)]
    assert contents(spark, events)[1] == expected and len(expected) == 3
    cond = "ts >= '2020-05-01 00:00:00' and ts < '2020-06-01 00:00:00'"
    expected = expect_update({"c1": "'update_c1'", "c2": "'update_c2'"}, cond)
    assert rows(sql(spark, f"UPDATE {events} SET c1 = 'update_c1', c2 = 'update_c2' WHERE {cond}")) == [(1,)]
    assert contents(spark, events)[1] == expected
    cond = "session_time < (SELECT min(session_time) FROM {good})"
    expected = expect_update({"session_time": "0", "ignored": "true"}, cond.format(good="docs_good"))
    assert rows(
        sql(spark, f"UPDATE {events} SET session_time = 0, ignored = true WHERE {cond.format(good=good)}")
    ) == [(1,)]
    assert contents(spark, events)[1] == expected
    expected = expect_delete(cond.format(good="docs_good"))
    assert rows(sql(spark, f"DELETE FROM {events} WHERE {cond.format(good=good)}")) == [(1,)]
    assert contents(spark, events)[1] == expected
    assert [r[0] for r in expected] == [2, 3]

    sql(
        spark,
        f"CREATE TABLE {orders} (oid int, order_status string) USING iceberg {properties(version, **modes)}",
    )
    sql(spark, f"CREATE TABLE {returned} (oid int) USING iceberg {properties(version)}")
    sql(spark, f"INSERT INTO {orders} VALUES (1, 'new'), (2, 'new'), (3, 'new')")
    sql(spark, f"INSERT INTO {returned} VALUES (2), (3), (7)")
    exists = f"EXISTS (SELECT oid FROM {returned} WHERE t1.oid = oid)"
    assert rows(sql(spark, f"UPDATE {orders} AS t1 SET order_status = 'returned' WHERE {exists}")) == [(2,)]
    assert contents(spark, orders)[1] == [(1, "new"), (2, "returned"), (3, "returned")]
    assert rows(sql(spark, f"DELETE FROM {orders} AS t1 WHERE {exists}")) == [(2,)]
    assert contents(spark, orders)[1] == [(1, "new")]


@pytest.mark.parametrize("version", VERSIONS)
def test_writes_page_branch_writes(spark: Any, table_name: str, version: int) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id bigint, val string) USING iceberg {properties(version)}")
    sql(spark, f"INSERT INTO {t} VALUES (0, 'z')")
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH audit")
    sql(spark, f"INSERT INTO {t}.branch_audit VALUES (1, 'a'), (2, 'b')")
    sql(
        spark,
        f"""MERGE INTO {t}.branch_audit t USING (SELECT 1L AS id, 'm' AS val) s ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET *""",
    )
    assert contents(spark, f"{t}.branch_audit")[1] == [(0, "z"), (1, "m"), (2, "b")]
    sql(spark, f"UPDATE {t}.branch_audit AS t1 SET val = 'c'")
    sql(spark, f"DELETE FROM {t}.branch_audit WHERE id = 2")
    assert contents(spark, f"{t}.branch_audit")[1] == [(0, "c"), (1, "c")]
    assert contents(spark, t)[1] == [(0, "z")]  # main is untouched


def test_iceberg_functions(spark: Any, table_name: str) -> None:
    """The functions of Iceberg's Spark queries page give the table's partition values."""
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id bigint, name string, ts timestamp_ntz) USING iceberg")
    sql(spark, f"INSERT INTO {t} VALUES (34, 'iceberg', TIMESTAMP_NTZ '2017-11-16 22:31:08')")
    assert rows(sql(spark, "SELECT system.iceberg_version() AS version")) == [(icefloe.__version__,)]
    # spec Appendix B: hash(34) = 2017239379, hash('iceberg') = 1210000089
    assert rows(sql(spark, f"SELECT system.bucket(16, id), icefloe.system.bucket(16, name) FROM {t}")) == [
        (2017239379 % 16, 1210000089 % 16)
    ]
    assert rows(sql(spark, f"SELECT system.truncate(3, name), system.truncate(10, id) FROM {t}")) == [
        ("ice", 30)
    ]
    assert rows(
        sql(spark, f"SELECT system.years(ts), system.months(ts), system.days(ts), system.hours(ts) FROM {t}")
    ) == [(47, 574, dt.date(2017, 11, 16), 17486 * 24 + 22)]
    # Spark's own system namespace is left alone
    assert rows(sql(spark, "SELECT system.builtin.abs(-2)")) == [(2,)]


# ------------------------------------------------------------------------------------------ procedures


@pytest.mark.parametrize("version", VERSIONS)
def test_procedures_page_add_files_migrate_and_zorder(
    spark: Any, catalog: Catalog, table_name: str, version: int, tmp_path: Path
) -> None:
    name = table_name.split(".")[-1]
    t = f"icefloe.{table_name}"
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.db")
    # add_files from a partitioned session-catalog table, one partition; then from a path
    src = f"spark_catalog.db.{name}_src"
    spark.createDataFrame(
        [(1, "a", "A"), (2, "b", "B"), (3, "c", "A")], "id int, data string, part string"
    ).write.partitionBy("part").option("path", str(tmp_path / "src")).format("parquet").saveAsTable(src)
    sql(
        spark,
        f"CREATE TABLE {t} (id int, data string, part string) USING iceberg PARTITIONED BY (part) "
        + properties(version),
    )
    out = sql(
        spark,
        f"CALL icefloe.system.add_files(table => '{table_name}', source_table => 'db.{name}_src', "
        "partition_filter => map('part', 'A'))",
    )
    assert out.columns == ["added_files_count", "changed_partition_count"] and rows(out)[0][1] == 1
    assert contents(spark, t) == (["id", "data", "part"], [(1, "a", "A"), (3, "c", "A")])
    spark.createDataFrame([(4, "d")], "id int, data string").coalesce(1).write.parquet(str(tmp_path / "flat"))
    plain = f"{t}_plain"
    sql(spark, f"CREATE TABLE {plain} (id int, data string) USING iceberg " + properties(version))
    out = sql(
        spark,
        f"CALL icefloe.system.add_files(table => '{table_name}_plain', "
        f"source_table => '`parquet`.`{tmp_path / 'flat'}`')",
    )
    assert rows(out) == [(1, 1)] and contents(spark, plain) == (["id", "data"], [(4, "d")])
    # migrate, with properties; the original stays as <name>_BACKUP_
    out = sql(
        spark, f"CALL icefloe.system.migrate('{src}', map('foo', 'bar', 'format-version', '{version}'))"
    )
    assert out.columns == ["migrated_files_count"] and rows(out)[0][0] >= 2
    migrated = catalog.load_table(f"db.{name}_src")
    assert migrated.properties["foo"] == "bar" and migrated.metadata.format_version == version
    assert contents(spark, f"icefloe.db.{name}_src")[1] == [(1, "a", "A"), (2, "b", "B"), (3, "c", "A")]
    assert rows(spark.table(f"{src}_BACKUP_")) == [(1, "a", "A"), (2, "b", "B"), (3, "c", "A")]
    spark.sql(f"DROP TABLE {src}_BACKUP_")
    # rewrite_data_files with a z-order
    sql(spark, f"INSERT INTO {t} VALUES (5, 'e', 'A'), (0, 'z', 'A')")
    ((files,),) = rows(sql(spark, f"SELECT count(*) FROM {t}.data_files"))
    out = sql(
        spark,
        f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', strategy => 'sort', "
        "sort_order => 'zorder(id, data)')",
    )
    assert rows(out)[0][:2] == (files, 1)
    assert contents(spark, t)[1] == [(0, "z", "A"), (1, "a", "A"), (3, "c", "A"), (5, "e", "A")]
    # statistics: the table's theta sketches (all columns, or some) and its partition statistics
    (path,) = rows(sql(spark, f"CALL icefloe.system.compute_table_stats('{table_name}')"))[0]
    snapshot_id = catalog.load_table(table_name).current_snapshot().snapshot_id
    out = sql(
        spark,
        f"CALL icefloe.system.compute_table_stats(table => '{table_name}', snapshot_id => {snapshot_id}, "
        "columns => array('id', 'data'))",
    )
    (entry,) = catalog.load_table(table_name).metadata.statistics  # the snapshot's entry, replaced
    assert entry["statistics-path"] == rows(out)[0][0] != path
    assert [(b["fields"], b["properties"]["ndv"]) for b in entry["blob-metadata"]] == [([1], "4"), ([2], "4")]
    out = sql(
        spark,
        f"CALL icefloe.system.compute_partition_stats(table => '{table_name}', snapshot_id => {snapshot_id})",
    )
    assert out.columns == ["partition_statistics_file"]
    (registered,) = catalog.load_table(table_name).metadata.partition_statistics
    assert registered["statistics-path"] == rows(out)[0][0]


def test_ddl_page_views(spark: Any, catalog: Catalog, table_name: str) -> None:
    """The view statements of Iceberg's DDL page on the icefloe catalog."""
    t = f"icefloe.{table_name}"
    view, renamed = f"{t}_view", f"{t}_renamed"
    sql(spark, f"CREATE TABLE {t} (id bigint, zip string) USING iceberg")
    sql(spark, f"INSERT INTO {t} VALUES (1, '10115'), (2, '80331')")
    sql(spark, f"CREATE VIEW {view} AS SELECT * FROM {t}")
    sql(spark, f"CREATE VIEW IF NOT EXISTS {view} AS SELECT id FROM {t}")  # exists: unchanged
    assert contents(spark, view) == (["id", "zip"], [(1, "10115"), (2, "80331")])
    sql(
        spark,
        f"""CREATE OR REPLACE VIEW {view} (ID COMMENT 'Unique ID', ZIP COMMENT 'Zipcode')
            COMMENT 'View Comment' TBLPROPERTIES ('key1' = 'val1', 'key2' = 'val2')
            AS SELECT id, zip FROM {t} WHERE id = 2""",
    )
    assert contents(spark, view) == (["ID", "ZIP"], [(2, "80331")])
    assert rows(sql(spark, f"DESCRIBE {view}")) == [
        ("ID", "bigint", "Unique ID"),
        ("ZIP", "string", "Zipcode"),
    ]
    sql(spark, f"ALTER VIEW {view} SET TBLPROPERTIES ('key1' = 'val1', 'key3' = 'val3')")
    sql(spark, f"ALTER VIEW {view} UNSET TBLPROPERTIES ('key1', 'key2')")
    assert "TBLPROPERTIES (\n  'key3' = 'val3')" in sql(spark, f"SHOW CREATE TABLE {view}").collect()[0][0]
    sql(spark, f"ALTER VIEW {view} RENAME TO {renamed}")
    namespace, name = renamed.split(".")[1:]
    assert (namespace, name, False) in rows(sql(spark, f"SHOW VIEWS IN icefloe.{namespace}"))
    sql(spark, f"DROP VIEW {renamed}")
    sql(spark, f"DROP VIEW IF EXISTS {renamed}")
    assert (namespace, name, False) not in rows(sql(spark, f"SHOW VIEWS IN icefloe.{namespace}"))
