"""Keywords as parts of dotted names (``icefloe.inner.t``, ``icefloe.db.values``): icefloe reads the
same words as names that Spark's own parser accepts, found by asking Spark (the shared session,
default keyword mode) about every keyword of sqlglot's Spark tokenizer, then run end to end."""

from __future__ import annotations

from typing import Any

import pytest
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from icefloe.catalog.base import Catalog
from icefloe.spark import sql
from icefloe.spark.statements.parse import parse_statement

WORDS = sorted(
    {w for k in Spark.Tokenizer.KEYWORDS for w in k.lower().split() if w.replace("_", "a").isalnum()}
)
"""Every word of a keyword of sqlglot's Spark tokenizer (``group`` of ``GROUP BY`` too): the
candidates for trouble."""

FORMS = {
    # form: (statement, the dotted name it must name); {c} is the catalog, {k} the keyword
    "create namespace": ("CREATE NAMESPACE {c}.{k}", "{c}.{k}"),
    "drop namespace": ("DROP NAMESPACE IF EXISTS {c}.{k}", "{c}.{k}"),
    "namespace part": ("SELECT * FROM {c}.{k}.t", "{c}.{k}.t"),
    "leading part": ("SELECT * FROM {k}.t", "{k}.t"),
    "select": ("SELECT * FROM {c}.db.{k}", "{c}.db.{k}"),
    "create table": ("CREATE TABLE {c}.db.{k} (a INT) USING iceberg", "{c}.db.{k}"),
    "insert": ("INSERT INTO {c}.db.{k} VALUES (1)", "{c}.db.{k}"),
    "delete": ("DELETE FROM {c}.db.{k} WHERE a = 1", "{c}.db.{k}"),
    "update": ("UPDATE {c}.db.{k} SET a = 1", "{c}.db.{k}"),
    "merge": ("MERGE INTO {c}.db.{k} t USING {c}.db.s ON t.a = s.a WHEN MATCHED THEN DELETE", "{c}.db.{k}"),
    "drop table": ("DROP TABLE IF EXISTS {c}.db.{k}", "{c}.db.{k}"),
}


def _spark_accepts(spark: Any, text: str) -> bool:
    from pyspark.errors import ParseException

    try:
        spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Exception as exc:  # py4j hands the JVM's ParseException over as itself or wrapped
        if isinstance(exc, ParseException) or "ParseException" in str(exc):
            return False
        raise
    return True


def _icefloe_reads(text: str, name: str) -> bool:
    stmt = parse_statement(text)
    if stmt.tree is None:
        return False
    tables = [".".join(p.name for p in t.parts) for t in stmt.tree.find_all(exp.Table)]
    return name in tables


def test_icefloe_reads_as_names_exactly_the_keywords_spark_accepts(spark: Any) -> None:
    spark_rejects: dict[str, list[str]] = {}
    icefloe_differs: dict[str, list[str]] = {}
    for word in WORDS:
        for form, (template, name) in FORMS.items():
            on_spark = _spark_accepts(spark, template.format(c="spark_catalog", k=word))
            if not on_spark:
                spark_rejects.setdefault(form, []).append(word)
            if (
                _icefloe_reads(template.format(c="icefloe", k=word), name.format(c="icefloe", k=word))
                != on_spark
            ):
                icefloe_differs.setdefault(form, []).append(word)
    assert len(WORDS) > 200 and {"inner", "left", "order", "group", "values", "range", "table"} <= set(WORDS)
    assert spark_rejects == {}  # in its default mode Spark reserves no keyword in a dotted name
    assert icefloe_differs == {}


def test_keyword_names_end_to_end(spark: Any, catalog: Catalog) -> None:
    sql(spark, "CREATE NAMESPACE icefloe.inner")
    sql(spark, "CREATE NAMESPACE icefloe.inner.values")
    assert catalog.namespace_exists(("inner", "values"))
    sql(spark, "CREATE TABLE icefloe.inner.values.order (id INT, `group` STRING) USING iceberg")
    sql(spark, "CREATE TABLE icefloe.inner.left (id INT, `group` STRING) USING iceberg")
    sql(spark, "INSERT INTO icefloe.inner.values.order VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    sql(
        spark,
        "INSERT INTO icefloe.inner.left SELECT id, `group` FROM icefloe.inner.values.order WHERE id < 3",
    )
    sql(spark, "UPDATE icefloe.inner.values.order SET `group` = 'z' WHERE id = 2")
    sql(spark, "DELETE FROM icefloe.inner.values.order WHERE id = 3")
    sql(
        spark,
        "MERGE INTO icefloe.inner.left t USING icefloe.inner.values.order s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.`group` = s.`group`",
    )
    got = sql(
        spark,
        "SELECT o.id, o.`group`, l.`group` FROM icefloe.inner.values.order o "
        "JOIN icefloe.inner.left l ON o.id = l.id",
    ).collect()
    assert sorted(tuple(r) for r in got) == [(1, "a", "a"), (2, "z", "z")]
    with pytest.raises(Exception, match="SCHEMA_NOT_EMPTY"):
        sql(spark, "DROP NAMESPACE icefloe.inner")
    sql(spark, "DROP TABLE icefloe.inner.values.order")
    assert not catalog.table_exists(("inner", "values", "order"))
    sql(spark, "DROP NAMESPACE icefloe.inner CASCADE")
    assert not catalog.namespace_exists(("inner",))


ONE_PART_FORMS = {
    # form: statement, {k} the keyword; where a relation is named, as opposed to an alias
    "from": "SELECT * FROM {k}",
    "from, where": "SELECT * FROM {k} WHERE a = 1",
    "join": "SELECT * FROM t JOIN {k} ON t.a = 1",
    "comma join": "SELECT * FROM t, {k}",
    "subquery": "SELECT * FROM t WHERE a IN (SELECT a FROM {k})",
    "insert values": "INSERT INTO {k} VALUES (1)",
    "insert select": "INSERT INTO {k} SELECT * FROM s",
    "insert overwrite table": "INSERT OVERWRITE TABLE {k} SELECT * FROM s",
    "delete": "DELETE FROM {k} WHERE a = 1",
    "update": "UPDATE {k} SET a = 1",
    "merge target": "MERGE INTO {k} USING s ON {k}.a = s.a WHEN MATCHED THEN DELETE",
    "merge source": "MERGE INTO t USING {k} ON t.a = {k}.a WHEN MATCHED THEN DELETE",
    "cte": "WITH {k} AS (SELECT 1 AS a) SELECT * FROM {k}",
}
ALIAS_FORMS = {"alias": "SELECT * FROM t {k}", "alias with as": "SELECT * FROM t AS {k}"}
ONE_PART_REFUSALS = {
    # sqlglot cannot read these as names; icefloe refuses the statement (Spark runs it)
    # ``SELECT * FROM where WHERE ...``: a clause keyword after the FROM of a select list is left
    # a keyword, as Spark reads ``SELECT * FROM from a`` as ``SELECT * AS from FROM a``
    "from, where": ["except", "from", "having", "intersect", "minus", "qualify", "union", "where"],
    "insert values": ["format"],
    "merge target": ["any"],
    "merge source": ["any"],
    "cte": ["recursive"],  # ``WITH RECURSIVE AS (...)``: Spark defines a recursive CTE named AS
}


def _outcomes(spark: Any, forms: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Per outcome and form, the words: ``differs`` (icefloe names other relations than Spark),
    ``refused`` (icefloe refuses what Spark accepts), ``spark refuses`` (icefloe reads what Spark
    refuses; ``sql`` then refuses it too, having asked Spark's parser first)."""
    from tests.spark.statements.relation_names import Unparsed, icefloe_relations, spark_relations

    found: dict[str, dict[str, list[str]]] = {"differs": {}, "refused": {}, "spark refuses": {}}
    for form, template in forms.items():
        for word in WORDS:
            text = template.format(k=word)
            try:
                expected = spark_relations(spark, text).normalised()
            except Unparsed:
                expected = None
            try:
                got = icefloe_relations(text).normalised()
            except Unparsed:
                got = None
            if got == expected:
                continue
            outcome = "refused" if got is None else "spark refuses" if expected is None else "differs"
            found[outcome].setdefault(form, []).append(word)
    return found


def test_one_part_keyword_names_name_the_relations_spark_names(spark: Any) -> None:
    """``FROM select``, ``FROM t, fetch``, ``INSERT INTO values``, ``WITH from AS (...)``: every
    keyword as a one-part name, in every place a relation is named, reads as Spark reads it."""
    found = _outcomes(spark, ONE_PART_FORMS)
    assert found["differs"] == {}
    assert found["spark refuses"] == {}
    assert found["refused"] == ONE_PART_REFUSALS


def test_keyword_aliases_never_change_the_relations(spark: Any) -> None:
    """icefloe refuses some keywords as aliases (``FROM t where``), but never reads other tables."""
    found = _outcomes(spark, ALIAS_FORMS)
    assert found["differs"] == {}
    assert found["spark refuses"] == {"alias with as": SPARK_REFUSED_ALIASES}
    assert 0 < len(found["refused"]["alias"]) < len(WORDS) // 4


SPARK_REFUSED_ALIASES = [
    "anti",
    "cross",
    "except",
    "full",
    "inner",
    "intersect",
    "join",
    "lateral",
    "left",
    "minus",
    "natural",
    "on",
    "right",
    "semi",
    "union",
    "using",
]
