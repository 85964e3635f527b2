"""DELETE and UPDATE whose WHERE holds subqueries: ``EXISTS`` / ``NOT EXISTS``, correlated ``IN``,
correlated scalar subqueries (reading icefloe tables too) and ``NOT IN`` with nulls. Each statement's
rows are checked exactly and cross-checked against Spark evaluating the same condition over a
Parquet copy of the table as it was before the statement."""

from __future__ import annotations

from decimal import Decimal
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


class Oracle:
    """Spark's answer on a Parquet copy of the table (Spark has no DELETE/UPDATE for Parquet views)."""

    def __init__(self, spark: Any, tmp_path: Path, table: str) -> None:
        self.spark, self.tmp_path, self.table = spark, tmp_path, table
        self.copies = 0

    def _copy(self) -> str:
        self.copies += 1
        name = f"subquery_copy_{self.copies}"
        path = str(self.tmp_path / name)
        sql(self.spark, f"SELECT * FROM {self.table}").write.parquet(path)
        self.spark.read.parquet(path).createOrReplaceTempView(name)
        return name

    def after_delete(self, alias: str, condition: str) -> list[Row]:
        copy = self._copy()
        return rows(
            self.spark.sql(f"SELECT * FROM {copy} AS {alias} WHERE NOT coalesce(({condition}), false)")
        )

    def after_update(self, alias: str, column: str, value: str, condition: str) -> list[Row]:
        copy = self._copy()
        value = value.format(copy=copy)  # a subquery may read the table as it was
        columns = self.spark.table(copy).columns
        picked = [
            f"CASE WHEN coalesce(({condition}), false) THEN CAST(({value}) AS INT) ELSE {c} END AS {c}"
            if c == column
            else c
            for c in columns
        ]
        return rows(self.spark.sql(f"SELECT {', '.join(picked)} FROM {copy} AS {alias}"))


@pytest.mark.parametrize(("version", "mode"), [(2, "merge-on-read"), (3, "copy-on-write")])
def test_subqueries_in_delete_and_update(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path, version: int, mode: str
) -> None:
    t = f"icefloe.{table_name}"
    limits = f"icefloe.{table_name}_limits"
    sql(
        spark,
        f"""CREATE TABLE {t} (id BIGINT NOT NULL, category STRING, amount INT) USING iceberg
            PARTITIONED BY (category)
            TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}',
                           'write.update.mode' = '{mode}')""",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 30), (4, 'b', NULL)")
    sql(spark, f"INSERT INTO {t} VALUES (5, 'c', 50), (6, 'c', 60)")
    sql(spark, f"CREATE TABLE {limits} (category STRING, cap INT) USING iceberg")
    sql(spark, f"INSERT INTO {limits} VALUES ('a', 15), ('b', 100)")
    sql(spark, f"SELECT * FROM {limits}").createOrReplaceTempView("subquery_limits")
    spark.createDataFrame(
        [(1, 5), (1, 100), (3, 30), (5, None), (None, 7)], "cust_id long, amount int"
    ).createOrReplaceTempView("subquery_orders")
    oracle = Oracle(spark, tmp_path, t)
    before = len(catalog.load_table(table_name).snapshots())

    # EXISTS, correlated by the table's own name
    cond = "EXISTS (SELECT 1 FROM subquery_orders o WHERE o.cust_id = {a}.id AND o.amount > 50)"
    expected = oracle.after_delete("t", cond.format(a="t"))
    short = table_name.split(".")[-1]
    assert rows(sql(spark, f"DELETE FROM {t} WHERE {cond.format(a=short)}")) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(2, "a", 20), (3, "b", 30), (4, "b", None), (5, "c", 50), (6, "c", 60)]

    # NOT EXISTS by an alias, with a pushable conjunct; an order with a null amount still exists
    cond = "NOT EXISTS (SELECT 1 FROM subquery_orders o WHERE o.cust_id = x.id) AND x.category = 'c'"
    expected = oracle.after_delete("x", cond)
    assert rows(sql(spark, f"DELETE FROM {t} AS x WHERE {cond}")) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(2, "a", 20), (3, "b", 30), (4, "b", None), (5, "c", 50)]

    # UPDATE with a correlated IN (the subquery's bare amount is its own column)
    cond = "id IN (SELECT o.cust_id FROM subquery_orders o WHERE o.amount = t.amount)"
    expected = oracle.after_update("t", "amount", "-1", cond)
    assert rows(sql(spark, f"UPDATE {t} AS t SET amount = -1 WHERE {cond}")) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(2, "a", 20), (3, "b", -1), (4, "b", None), (5, "c", 50)]

    # UPDATE with a correlated scalar subquery over another icefloe table
    cond = "amount > (SELECT l.cap FROM {limits} l WHERE l.category = u.category)"
    expected = oracle.after_update("u", "amount", "amount * 10", cond.format(limits="subquery_limits"))
    assert rows(sql(spark, f"UPDATE {t} u SET amount = amount * 10 WHERE {cond.format(limits=limits)}")) == [
        (1,)
    ]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(2, "a", 200), (3, "b", -1), (4, "b", None), (5, "c", 50)]

    # uncorrelated NOT IN: a null among the values makes it match nothing, as in Spark
    cond = "id NOT IN (SELECT cust_id FROM subquery_orders)"
    assert oracle.after_delete("t", cond) == rows(sql(spark, f"SELECT * FROM {t}"))
    assert rows(sql(spark, f"DELETE FROM {t} WHERE {cond}")) == [(0,)]
    cond = "id NOT IN (SELECT cust_id FROM subquery_orders WHERE cust_id IS NOT NULL) OR amount IS NULL"
    expected = oracle.after_delete("t", cond)
    assert rows(sql(spark, f"DELETE FROM {t} WHERE {cond}")) == [(2,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(3, "b", -1), (5, "c", 50)]
    # one snapshot per statement that changed rows (the NOT IN matching nothing wrote none)
    assert len(catalog.load_table(table_name).snapshots()) == before + 5
    # the temporary views of the statements are gone
    assert not [v.name for v in spark.catalog.listTables() if v.name.startswith("__icefloe")]


def test_unrunnable_subqueries_fail_and_write_nothing(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, amount INT) USING iceberg")
    sql(spark, f"INSERT INTO {t} VALUES (1, 10), (2, 20)")
    spark.createDataFrame([(1, 5)], "cust_id long, amount int").createOrReplaceTempView("subquery_few")
    before = catalog.load_table(table_name).metadata_location
    with pytest.raises(UnsupportedStatement, match="correlated subqueries are not supported there"):
        correlated = "SELECT max(f.amount) FROM subquery_few f WHERE f.cust_id = u.id"
        sql(spark, f"UPDATE {t} u SET amount = ({correlated})")
    with pytest.raises(UnsupportedStatement, match="only scalar subqueries"):
        sql(spark, f"UPDATE {t} SET amount = CASE WHEN id IN (SELECT cust_id FROM subquery_few) THEN 0 END")
    with pytest.raises(ValidationError, match="more than one row"):
        sql(spark, f"UPDATE {t} SET amount = (SELECT amount FROM {t})")
    with pytest.raises(ValidationError, match="nope"):
        sql(spark, f"DELETE FROM {t} WHERE EXISTS (SELECT 1 FROM subquery_few f WHERE f.nope = {t}.id)")
    with pytest.raises(ValidationError, match="nope"):
        correlated = "SELECT f.nope FROM subquery_few f WHERE f.amount < amount"
        sql(spark, f"UPDATE {t} SET amount = 0 WHERE id IN ({correlated})")
    assert catalog.load_table(table_name).metadata_location == before
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, 10), (2, 20)]


@pytest.mark.parametrize(("version", "mode"), [(2, "merge-on-read"), (4, "copy-on-write")])
def test_scalar_subqueries_in_update_set(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path, version: int, mode: str
) -> None:
    """``SET c = (SELECT ...)`` takes the subquery's value as of before the statement (Iceberg's
    ``testUpdateWithSelfSubquery``); Spark computes the expected rows over a Parquet copy."""
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE {t} (id INT, dep STRING, amount DECIMAL(10, 2)) USING iceberg
            TBLPROPERTIES ('format-version' = '{version}', 'write.update.mode' = '{mode}')""",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'hr', 1.50), (2, 'y', 2.25), (3, 'hr', NULL)")
    spark.createDataFrame([(10, "a"), (20, "b")], "value int, tag string").createOrReplaceTempView(
        "set_subquery_values"
    )
    oracle = Oracle(spark, tmp_path, t)
    # a self-referencing scalar subquery, evaluated once before the update
    expected = oracle.after_update("t", "id", "(SELECT id - 2 FROM {copy} WHERE id = 1)", "true")
    assert rows(sql(spark, f"UPDATE {t} SET id = (SELECT id - 2 FROM {t} WHERE id = 1)")) == [(3,)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    assert expected == [(-1, "hr", None), (-1, "hr", Decimal("1.50")), (-1, "y", Decimal("2.25"))]
    # inside an expression, over another view, typed as the column; no row gives NULL
    sql(
        spark,
        f"""UPDATE {t} AS t SET amount = amount + (SELECT max(value) FROM set_subquery_values),
            dep = (SELECT tag FROM set_subquery_values WHERE value > 100) WHERE t.dep = 'hr'""",
    )
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [
        (-1, None, None),
        (-1, None, Decimal("21.50")),
        (-1, "y", Decimal("2.25")),
    ]
