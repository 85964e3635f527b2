"""Statements the differential fuzzer (``test_relations_fuzz``) found reading or writing another
table than Spark would, run end to end after ``USE icefloe.<ns>``: there a one-part name means an
icefloe table, and a name icefloe leaves to Spark is read from Spark's own catalog instead."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.errors import ParseException

from icefloe.catalog.sql import SqlCatalog
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement
from tests.spark.helpers import drop_namespace_with_contents


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


TABLES = {"t": [1, 2, 3], "c": [7], "fetch": [10, 20], "select": [5]}


@pytest.fixture
def ns(spark: Any, catalog: SqlCatalog) -> Iterator[str]:
    """A namespace of the test's own, current (``USE icefloe.<ns>``), holding ``TABLES``."""
    name = f"rel_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(name)
    for table, ids in TABLES.items():
        sql(spark, f"CREATE TABLE icefloe.{name}.`{table}` (id INT) USING iceberg")
        sql(spark, f"INSERT INTO icefloe.{name}.`{table}` VALUES " + ", ".join(f"({i})" for i in ids))
    sql(spark, f"USE icefloe.{name}")
    try:
        yield name
    finally:
        sql(spark, "USE spark_catalog")
        drop_namespace_with_contents(catalog, name)


def test_a_cte_body_reads_the_table_its_cte_shadows(spark: Any, ns: str) -> None:
    # a CTE is not in scope in its own body: the inner ``t`` is the table
    got = sql(spark, "WITH t AS (SELECT id + 100 AS id FROM t) SELECT id FROM t")
    assert rows(got) == [(101,), (102,), (103,)]


def test_a_cte_of_a_subquery_does_not_shadow_the_table_outside_it(spark: Any, ns: str) -> None:
    got = sql(
        spark,
        "SELECT (SELECT count(*) FROM (WITH t AS (SELECT 1 AS id) SELECT id FROM t)) AS inner_rows, "
        "(SELECT count(*) FROM t) AS table_rows",
    )
    assert rows(got) == [(1, 3)]


def test_a_later_cte_sees_an_earlier_one_not_the_table(spark: Any, ns: str) -> None:
    got = sql(spark, "WITH c AS (SELECT 42 AS id), d AS (SELECT id FROM c) SELECT id FROM d")
    assert rows(got) == [(42,)]


def test_insert_after_with_reads_the_cte_not_the_table_of_its_name(spark: Any, ns: str) -> None:
    sql(spark, "WITH c AS (SELECT 4 AS id) INSERT INTO t SELECT id FROM c")
    assert rows(sql(spark, "SELECT id FROM t")) == [(1,), (2,), (3,), (4,)]
    sql(
        spark,
        "WITH c AS (SELECT 5 AS id) INSERT INTO t WITH d AS (SELECT id + 1 AS id FROM c) SELECT id FROM d",
    )
    assert rows(sql(spark, "SELECT id FROM t")) == [(1,), (2,), (3,), (4,), (6,)]


@pytest.mark.parametrize(
    ("statement", "left"),
    [
        ("WITH c AS (SELECT 1 AS id) DELETE FROM t WHERE id IN (SELECT id FROM c)", [2, 3]),
        ("WITH c AS (SELECT 1 AS id) UPDATE t SET id = 0 WHERE id IN (SELECT id FROM c)", [0, 2, 3]),
        ("WITH c AS (SELECT 9 AS v) UPDATE t SET id = (SELECT v FROM c) WHERE id = 3", [1, 2, 9]),
        ("WITH c AS (SELECT 1 AS id) DELETE FROM t WHERE EXISTS (SELECT 1 FROM c WHERE c.id = t.id)", [2, 3]),
        ("WITH c AS (SELECT 1 AS id) MERGE INTO t USING c ON t.id = c.id WHEN MATCHED THEN DELETE", [2, 3]),
        (
            "WITH c AS (SELECT 2 AS id), d AS (SELECT id + 2 AS id FROM c) MERGE INTO t USING d AS s "
            "ON t.id = s.id WHEN NOT MATCHED THEN INSERT *",
            [1, 2, 3, 4],
        ),
        (
            "WITH c AS (SELECT 3 AS id) MERGE INTO t USING (WITH d AS (SELECT id FROM c) SELECT id FROM d) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.id = 30",
            [1, 2, 30],
        ),
    ],
)
def test_with_before_delete_update_merge_reads_the_cte(
    spark: Any, ns: str, statement: str, left: list[int]
) -> None:
    # run piecewise, the WHERE's or the source's ``c`` would be the table ``c`` (id 7), not the CTE
    sql(spark, statement)
    assert rows(sql(spark, "SELECT id FROM t")) == [(i,) for i in left]
    assert rows(sql(spark, "SELECT id FROM c")) == [(7,)]


def test_a_comma_join_with_a_keyword_named_table_is_kept(spark: Any, ns: str) -> None:
    # sqlglot read ``FROM t, fetch`` as ``FROM t LIMIT 1``
    assert rows(sql(spark, "SELECT count(*) FROM t, fetch")) == [(6,)]


def test_a_table_named_select(spark: Any, ns: str) -> None:
    # sqlglot read ``FROM select`` as the empty subquery ``(SELECT)``
    assert rows(sql(spark, "SELECT id FROM select")) == [(5,)]
    assert rows(sql(spark, "SELECT t.id FROM t JOIN select ON t.id < select.id WHERE t.id > 1")) == [
        (2,),
        (3,),
    ]
    sql(spark, "INSERT INTO select VALUES (6)")
    assert rows(sql(spark, "SELECT id FROM select")) == [(5,), (6,)]


def test_identifier_clause_names_the_icefloe_table(spark: Any, ns: str) -> None:
    assert rows(sql(spark, "SELECT id FROM IDENTIFIER('t') WHERE id > 1")) == [(2,), (3,)]
    assert rows(sql(spark, f"SELECT count(*) FROM IDENTIFIER('icefloe.{ns}.fetch')")) == [(2,)]
    # sqlglot read the target as a table named IDENTIFIER with the column list ('c')
    sql(spark, "INSERT INTO IDENTIFIER('c') VALUES (8)")
    sql(spark, "DELETE FROM IDENTIFIER('c') WHERE id = 7")
    assert rows(sql(spark, "SELECT id FROM c")) == [(8,)]


def test_a_hint_naming_a_table_is_not_a_read(spark: Any, ns: str) -> None:
    got = sql(spark, "SELECT /*+ BROADCAST(c) */ t.id FROM t JOIN c ON t.id < c.id WHERE t.id = 3")
    assert rows(got) == [(3,)]


def test_a_cte_shadows_a_view_of_its_name(spark: Any, ns: str) -> None:
    sql(spark, "CREATE VIEW v AS SELECT id FROM t")
    assert rows(sql(spark, "SELECT count(*) FROM v")) == [(3,)]
    assert rows(sql(spark, "WITH v AS (SELECT 9 AS id) SELECT id FROM v")) == [(9,)]


def test_statements_spark_refuses_run_nothing(spark: Any, ns: str) -> None:
    # sqlglot reads a hint out of place as a comment; Spark refuses the statement
    with pytest.raises(ParseException):
        sql(spark, "SELECT id /*+ BROADCAST(c) */ FROM t")
    with pytest.raises(ParseException):
        sql(spark, "INSERT INTO t SELECT id /*+ REPARTITION(2) */ FROM c")
    assert rows(sql(spark, "SELECT id FROM t")) == [(1,), (2,), (3,)]


def test_a_statement_icefloe_leaves_to_spark_may_not_name_an_icefloe_table(spark: Any, ns: str) -> None:
    # Spark would insert into and read its own ``t`` and ``c``
    with pytest.raises(UnsupportedStatement):
        sql(spark, "FROM c INSERT INTO t SELECT id")
    assert rows(sql(spark, "SELECT id FROM t")) == [(1,), (2,), (3,)]


def test_a_temporary_view_comes_before_a_table_of_its_name(spark: Any, ns: str) -> None:
    """Spark looks temporary views up before any catalog: after ``USE icefloe.<ns>`` a one-part
    name of a session's temporary view, and ``global_temp.<name>``, are Spark's views, not the
    icefloe tables of those names."""
    spark.createDataFrame([(100,), (200,)], "id INT").createOrReplaceTempView("t")
    try:
        assert rows(sql(spark, "SELECT id FROM t")) == [(100,), (200,)]
        assert rows(sql(spark, f"SELECT id FROM icefloe.{ns}.t")) == [(1,), (2,), (3,)]
        assert rows(sql(spark, f"SELECT a.id FROM t a JOIN icefloe.{ns}.t b ON a.id = b.id * 100")) == [
            (100,),
            (200,),
        ]
    finally:
        spark.catalog.dropTempView("t")
    assert rows(sql(spark, "SELECT id FROM t")) == [(1,), (2,), (3,)]
    sql(spark, "CREATE NAMESPACE IF NOT EXISTS icefloe.global_temp")
    sql(spark, "CREATE TABLE icefloe.global_temp.c (id INT) USING iceberg")
    try:
        sql(spark, "INSERT INTO icefloe.global_temp.c VALUES (9)")
        sql(spark, "USE icefloe")
        assert rows(sql(spark, "SELECT id FROM global_temp.c")) == [(9,)]
        spark.createDataFrame([(300,)], "id INT").createOrReplaceGlobalTempView("c")
        try:
            assert rows(sql(spark, "SELECT id FROM global_temp.c")) == [(300,)]
        finally:
            spark.catalog.dropGlobalTempView("c")
    finally:
        sql(spark, "DROP TABLE icefloe.global_temp.c")
        sql(spark, "DROP NAMESPACE icefloe.global_temp")
        sql(spark, f"USE icefloe.{ns}")
