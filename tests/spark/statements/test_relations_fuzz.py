"""Differential fuzzing: icefloe's SQL front-end names the tables Spark's parser names.

Generated statements (SELECT with joins, subqueries, CTEs that shadow tables, set operations,
LATERAL VIEW, table functions, VALUES, time travel, table options ``WITH (...)``, ``TABLE t``,
FROM-first queries, INSERT [BY NAME], DELETE, UPDATE, MERGE, each maybe after a WITH; names that are
keywords, back-quoted names with dots and spaces, comments and strings holding SQL, hints, mixed
case) go to both parsers (``relation_names``). Whenever both accept a statement, the tables it
writes and reads must be the same; when Spark refuses one, icefloe must not run it as another
statement. icefloe may refuse what Spark accepts (it then runs nothing); those refusals are
listed exactly in ``test_keyword_names`` and in the regression tests here, not in the fuzz.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from icefloe.spark import sql
from icefloe.spark.statements import SqlSyntaxError
from tests.spark.statements.relation_names import Unparsed, icefloe_relations, spark_relations
from tests.spark.statements.test_keyword_names import WORDS

PLAIN = ["t", "s", "orders", "Items", "db", "x"]
KEYWORDS = WORDS

# ------------------------------------------------------------------------------------------ names


def _cased(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word, word.upper(), word.capitalize()])


# a third keywords: enough to meet them everywhere, few enough that most statements parse on both sides
WORD = st.one_of(st.sampled_from(PLAIN), st.sampled_from(PLAIN), st.sampled_from(KEYWORDS)).flatmap(_cased)
QUOTED = st.one_of(
    WORD,
    st.sampled_from(["a.b", "a b", "from t", "x`y", "select * from s", "t; drop"]),
).map(lambda w: "`" + w.replace("`", "``") + "`")
PART = st.one_of(WORD, WORD, QUOTED)
TABLE_NAME = st.lists(PART, min_size=1, max_size=3).map(".".join)
ALIAS = st.one_of(st.sampled_from(["a", "b", "src", "tgt"]), st.sampled_from(["a", "b"]), WORD, QUOTED)
COMMENT = st.sampled_from(["", " /* FROM x JOIN y */", " -- FROM z\n"])
TIME_TRAVEL = st.sampled_from(
    [
        "",
        "",
        " VERSION AS OF 1",
        " FOR SYSTEM_VERSION AS OF 'b1'",
        " TIMESTAMP AS OF '2024-01-01 00:00:00'",
        " FOR SYSTEM_TIME AS OF '2024-01-01'",
    ]
)
# Spark's table options go after the name and its time travel, before the alias
OPTIONS = st.sampled_from(["", "", "", " WITH ('split-size' = '1024')", " WITH (`snapshot-id` = 1, k 'v')"])
STRING = st.sampled_from(["1", "'FROM t JOIN s'", "'; DELETE FROM t'", "c", "upper('x')"])


@st.composite
def aliased(draw: st.DrawFn, body: str) -> str:
    """``body`` with no alias, ``body a`` or ``body AS a``."""
    form = draw(st.sampled_from(["", " ", " AS "]))
    return body if not form else f"{body}{form}{draw(ALIAS)}"


@st.composite
def relation(draw: st.DrawFn, depth: int) -> str:
    """One item of a FROM clause."""
    kinds = ["table", "table", "table", "function", "values"] + (["subquery", "lateral"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "table":
        if draw(st.integers(0, 9)) == 9:  # Spark takes LATERAL before a table (sqlglot does not)
            return "LATERAL " + draw(aliased(draw(TABLE_NAME)))
        return draw(aliased(draw(TABLE_NAME) + draw(TIME_TRAVEL) + draw(OPTIONS)))
    if kind == "lateral":
        return draw(aliased(f"LATERAL ({draw(select(depth - 1))})"))
    if kind == "function":
        return draw(aliased(draw(st.sampled_from(["range(3)", "explode(array(1, 2))", "range(0, 4, 2)"]))))
    if kind == "values":
        return "VALUES (1, 2), (3, 4) AS v(c, d)"
    return draw(aliased(f"({draw(query(depth - 1))})"))


@st.composite
def condition(draw: st.DrawFn, depth: int) -> str:
    """A WHERE / ON condition, maybe with a subquery."""
    kinds = ["c = 1", "c IS NOT NULL"] + (["in", "exists", "scalar"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "in":
        return f"c IN (SELECT c FROM {draw(relation(depth - 1))})"
    if kind == "exists":
        return f"EXISTS (SELECT 1 FROM {draw(relation(depth - 1))})"
    if kind == "scalar":
        return f"c > (SELECT max(c) FROM {draw(relation(depth - 1))})"
    return kind


@st.composite
def select(draw: st.DrawFn, depth: int) -> str:
    """SELECT [hint] columns FROM relation [JOIN ...] [LATERAL VIEW] [WHERE]."""
    hint = draw(st.sampled_from(["", "/*+ BROADCAST(t) */ ", "/*+ REPARTITION(2) */ "]))
    text = f"SELECT {hint}{draw(STRING)}, *{draw(COMMENT)} FROM {draw(relation(depth))}"
    for _ in range(draw(st.integers(0, 2))):
        join = draw(st.sampled_from(["JOIN", "LEFT JOIN", "CROSS JOIN", ",", "FULL OUTER JOIN"]))
        on = "" if join in ("CROSS JOIN", ",") else f" ON {draw(condition(0))}"
        text += f" {join} {draw(relation(depth))}{on}"
    if draw(st.booleans()):
        text += f" LATERAL VIEW explode(array(1)) {draw(st.sampled_from(['e', 'ex']))} AS y"
    if draw(st.booleans()):
        text += f" WHERE {draw(condition(depth))}"
    return text


@st.composite
def primary(draw: st.DrawFn, depth: int) -> str:
    """A select, mostly; sometimes Spark's ``TABLE t`` or a FROM-first ``FROM t SELECT ...``."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return f"TABLE {draw(TABLE_NAME)}"
    if kind == 1:
        where = f" WHERE {draw(condition(depth))}" if draw(st.booleans()) else ""
        return f"FROM {draw(relation(depth))} SELECT {draw(STRING)}, *{where}"
    return draw(select(depth))


@st.composite
def query(draw: st.DrawFn, depth: int = 2) -> str:
    """[WITH ...] primary [UNION / EXCEPT / INTERSECT primary]."""
    text = draw(primary(depth))
    if draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(["UNION", "UNION ALL", "EXCEPT", "INTERSECT"]))
        text += f" {op} {draw(primary(depth))}"
    return draw(with_clause(depth)) + text


@st.composite
def with_clause(draw: st.DrawFn, depth: int) -> str:
    """Nothing, or ``WITH`` one or two CTEs named like the tables (so that they shadow them)."""
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return ""
    names = draw(st.lists(st.one_of(st.sampled_from(PLAIN), WORD, QUOTED), min_size=1, max_size=2))
    ctes = [f"{name} AS ({draw(select(depth - 1))})" for name in names]
    return "WITH " + ", ".join(ctes) + " "


@st.composite
def dml(draw: st.DrawFn) -> str:
    """INSERT INTO / OVERWRITE, DELETE, UPDATE or MERGE, maybe after a WITH."""
    target = draw(TABLE_NAME) + draw(OPTIONS)
    kind = draw(st.sampled_from(["insert", "overwrite", "delete", "update", "merge"]))
    if kind in ("insert", "overwrite"):
        verb = "INSERT INTO" if kind == "insert" else "INSERT OVERWRITE"
        table = draw(st.sampled_from(["", "TABLE "]))
        by_name = draw(st.sampled_from(["", "", "BY NAME "]))
        source = draw(st.one_of(query(1), st.just("VALUES (1, 2)"), TABLE_NAME.map(lambda n: f"TABLE {n}")))
        text = f"{verb} {table}{target} {by_name}{source}"
    elif kind == "delete":
        text = f"DELETE FROM {draw(aliased(target))}"
        if draw(st.booleans()):
            text += f" WHERE {draw(condition(1))}"
    elif kind == "update":
        text = f"UPDATE {draw(aliased(target))} SET c = {draw(STRING)}"
        if draw(st.booleans()):
            text += f" WHERE {draw(condition(1))}"
    else:
        source = draw(st.one_of(TABLE_NAME, query(1).map(lambda q: f"({q})")))
        text = (
            f"MERGE INTO {target} AS tgt USING {source} AS src ON tgt.c = src.c "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    with_ = draw(with_clause(1)) if draw(st.integers(0, 3)) == 3 else ""
    return with_ + text


STATEMENT = st.one_of(query(), query(), dml())


# ------------------------------------------------------------------------------------------ the property


def check_agrees(spark: Any, text: str) -> str:
    """Assert icefloe names Spark's relations, or refuses; the outcome's kind (for the coverage count)."""
    try:
        expected = spark_relations(spark, text)
    except Unparsed:
        _assert_not_run(spark, text)
        return "spark refuses"
    try:
        got = icefloe_relations(text)
    except Unparsed:
        return "icefloe refuses"
    assert got.normalised() == expected.normalised(), text
    return "agree"


def _assert_not_run(spark: Any, text: str) -> None:
    """A statement Spark refuses is refused by icefloe's ``sql`` as well, having run nothing."""
    from pyspark.errors import ParseException

    with pytest.raises((ParseException, SqlSyntaxError)):
        sql(spark, text)


FOUND = [
    # what the fuzzer found (shrunk), each once a wrong read or a wrong refusal check
    "SELECT 1, * FROM t UNION SELECT 1, * /*+ BROADCAST(q) */ FROM t",  # a hint out of place
    "WITH t AS (SELECT 1, * FROM t), s AS (SELECT 1, * FROM from a) SELECT 1, * FROM t",  # `* AS from`
    "SELECT * FROM t, fetch",  # sqlglot: ``FROM t LIMIT 1``
    "SELECT * FROM t, tablesample",
    "SELECT * FROM select WHERE c = 1",  # sqlglot: the subquery ``(SELECT WHERE c = 1)``
    "WITH t AS (SELECT * FROM t) SELECT * FROM t",  # the CTE body reads the table
    "SELECT * FROM (WITH t AS (SELECT 1) SELECT * FROM t) JOIN t",  # the outer ``t`` is the table
    "WITH recursive AS (SELECT 1 AS a) SELECT * FROM recursive",  # a CTE named AS; ``recursive``: table
    "SELECT /*+ BROADCAST(x) */ * FROM t",  # a hint argument is no read
    "SELECT * FROM IDENTIFIER('a.b') AS x",
    "INSERT INTO IDENTIFIER('db.t') SELECT 1",  # sqlglot: table IDENTIFIER, column list ('db.t')
    "SELECT * FROM t VERSION AS OF 1",  # Spark's time travel node holds its relation
    "SELECT 1, * FROM lateral a",  # Spark: the table ``a``; sqlglot: a lateral expression
    "WITH c AS (SELECT 1) INSERT INTO db.t SELECT * FROM c",
    "WITH c AS (SELECT 1 AS c) MERGE INTO t USING c ON t.c = c.c WHEN MATCHED THEN DELETE",
    "WITH s AS (SELECT 1 AS c) DELETE FROM t WHERE c IN (SELECT c FROM s JOIN s2 ON true)",
    "SELECT * FROM t WITH ('split-size' = '1') AS a JOIN s VERSION AS OF 1 WITH (k 'v') ON true",
    "INSERT INTO t WITH ('snapshot-property.k' = 'v') BY NAME TABLE s",
    "WITH c AS (TABLE t) FROM c SELECT * UNION TABLE s",
]


@pytest.mark.parametrize("text", FOUND)
def test_found_examples(spark: Any, text: str) -> None:
    check_agrees(spark, text)


OUTCOMES: dict[str, int] = {}


@seed(20)
@settings(
    max_examples=250,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=STATEMENT)
def test_icefloe_names_the_relations_spark_names(spark: Any, text: str) -> None:
    outcome = check_agrees(spark, text)
    OUTCOMES[outcome] = OUTCOMES.get(outcome, 0) + 1


def test_the_fuzz_mostly_compares(spark: Any) -> None:
    """The generated statements are mostly ones both parsers accept (else the fuzz tests little)."""
    if not OUTCOMES:
        test_icefloe_names_the_relations_spark_names(spark)
    assert OUTCOMES.get("agree", 0) > sum(OUTCOMES.values()) // 2, OUTCOMES
