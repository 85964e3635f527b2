"""Spark SQL forms sqlglot reads differently or not at all, run as Spark runs them: ``INSERT ...
BY NAME``, the query ``TABLE t``, FROM-first queries, ``LATERAL`` subqueries and views,
``IDENTIFIER(<expression>)``; multi-insert is refused naming the construct, writing nothing."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def snapshots(catalog: Catalog, ident: str) -> int:
    return len(catalog.load_table(ident).snapshots())


def create(spark: Any, table: str, version: int) -> str:
    """``icefloe.<table>`` with a required id, an optional name and an optional amount."""
    t = f"icefloe.{table}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT NOT NULL, name STRING, amount INT) USING iceberg "
        f"PARTITIONED BY (name) TBLPROPERTIES ('format-version' = '{version}')",
    )
    return t


@pytest.mark.parametrize("version", [2, 3, 4])
def test_insert_by_name_matches_columns_by_name(
    spark: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    t = create(spark, table_name, version)
    assert rows(sql(spark, f"INSERT INTO {t} BY NAME SELECT 7 AS AMOUNT, 'x' AS name, 1 AS id")) == [(1, 1)]
    # a missing optional column is null, as Spark fills it for a v2 table
    assert rows(sql(spark, f"INSERT INTO TABLE {t} BY NAME SELECT 'y' AS name, 2 AS id")) == [(1, 1)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "x", 7), (2, "y", None)]
    assert rows(sql(spark, f"INSERT OVERWRITE {t} BY NAME SELECT 5 AS amount, 3 AS id")) == [(1, 1)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(3, None, 5)]
    assert snapshots(catalog, table_name) == 3


def test_insert_by_name_refuses_what_spark_refuses(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = create(spark, table_name, 2)
    with pytest.raises(ValidationError, match="no column 'nope'"):
        sql(spark, f"INSERT INTO {t} BY NAME SELECT 1 AS id, 2 AS nope")
    with pytest.raises(ValidationError, match="required column"):
        sql(spark, f"INSERT INTO {t} BY NAME SELECT 'a' AS name")
    with pytest.raises(ValidationError, match="twice"):
        sql(spark, f"INSERT INTO {t} BY NAME SELECT 1 AS id, 2 AS ID")
    with pytest.raises(Exception, match="PARSE_SYNTAX_ERROR"):  # Spark's grammar has no list with BY NAME
        sql(spark, f"INSERT INTO {t} (id) BY NAME SELECT 1 AS id")
    assert snapshots(catalog, table_name) == 0


@pytest.mark.parametrize("version", [2, 4])
def test_table_queries_and_from_first(spark: Any, catalog: Catalog, table_name: str, version: int) -> None:
    source = create(spark, table_name + "_src", version)
    target = create(spark, table_name, version)
    sql(spark, f"INSERT INTO {source} VALUES (1, 'a', 10), (2, 'b', 20)")
    assert rows(sql(spark, f"TABLE {source}")) == [(1, "a", 10), (2, "b", 20)]
    assert rows(sql(spark, f"TABLE {source} UNION ALL TABLE {source}")).count((1, "a", 10)) == 2
    assert rows(sql(spark, f"SELECT id FROM (TABLE {source}) UNION ALL (SELECT 9)")) == [(1,), (2,), (9,)]
    assert rows(sql(spark, f"WITH c AS (TABLE {source}) SELECT max(id) FROM c")) == [(2,)]
    assert rows(sql(spark, f"INSERT INTO {target} TABLE {source}")) == [(2, 2)]
    assert rows(sql(spark, f"FROM {target} SELECT id, amount WHERE id > 1")) == [(2, 20)]
    assert rows(sql(spark, f"FROM {target} t SELECT t.name ORDER BY t.name")) == [("a",), ("b",)]
    assert snapshots(catalog, table_name) == 1


def test_multi_insert_is_refused_writing_nothing(spark: Any, catalog: Catalog, table_name: str) -> None:
    a = create(spark, table_name + "_a", 2)
    b = create(spark, table_name + "_b", 2)
    statement = f"FROM (SELECT 1 AS id) s INSERT INTO {a} SELECT id, 'x', 1 INSERT INTO {b} SELECT id, 'y', 2"
    with pytest.raises(UnsupportedStatement, match="multi-insert"):
        sql(spark, statement)
    assert snapshots(catalog, table_name + "_a") == snapshots(catalog, table_name + "_b") == 0


@pytest.mark.parametrize("version", [2, 3])
def test_lateral_subquery_and_lateral_view(spark: Any, table_name: str, version: int) -> None:
    t = create(spark, table_name, version)
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 30)")
    lateral = (
        f"SELECT o.id, l.total FROM {t} o, "
        f"LATERAL (SELECT sum(i.amount) AS total FROM {t} i WHERE i.id <= o.id) l"
    )
    assert rows(sql(spark, lateral)) == [(1, 10), (2, 30), (3, 60)]
    exploded = f"SELECT id, e FROM {t} LATERAL VIEW explode(array(amount, -amount)) x AS e WHERE id = 2"
    assert rows(sql(spark, exploded)) == [(2, -20), (2, 20)]


def test_identifier_with_an_expression_names_the_icefloe_table(spark: Any, table_name: str) -> None:
    t = create(spark, table_name, 2)
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10)")
    namespace, short = table_name.split(".")
    # a table of that name in Spark's own current namespace: passed to Spark, the name would read it
    spark.sql(f"CREATE TABLE spark_catalog.default.{short} USING parquet AS SELECT 99L AS id")
    try:
        sql(spark, f"USE icefloe.{namespace}")
        assert rows(sql(spark, f"SELECT id FROM IDENTIFIER('{short[:3]}' || '{short[3:]}')")) == [(1,)]
        named = f"IDENTIFIER(concat('icefloe.{namespace}.', '{short}'))"
        assert rows(sql(spark, f"SELECT id FROM {named}")) == [(1,)]
    finally:
        sql(spark, "USE spark_catalog")
        spark.sql(f"DROP TABLE spark_catalog.default.{short}")


def test_table_query_of_a_one_part_name(spark: Any, table_name: str) -> None:
    # sqlglot parses ``TABLE t UNION ...`` without an error, as the column TABLE aliased t
    t = create(spark, table_name, 2)
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10)")
    namespace, short = table_name.split(".")
    try:
        sql(spark, f"USE icefloe.{namespace}")
        assert rows(sql(spark, f"TABLE {short} UNION ALL TABLE {short}")) == [(1, "a", 10), (1, "a", 10)]
        assert rows(sql(spark, f"WITH c AS (TABLE {short} UNION SELECT 2, 'b', 20) SELECT id FROM c")) == [
            (1,),
            (2,),
        ]
    finally:
        sql(spark, "USE spark_catalog")
