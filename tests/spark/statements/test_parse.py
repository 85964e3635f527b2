"""Statement splitting, positions of syntax errors, token reading and predicate conversion (no Spark)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlglot import exp

from icefloe.expressions.ast import (
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotNull,
    Or,
    StartsWith,
)
from icefloe.spark.statements.errors import SqlSyntaxError
from icefloe.spark.statements.parse import TokenCursor, parse_statement, split_statements
from icefloe.spark.statements.predicates import NotPushable, conjuncts, to_filter


def test_split_keeps_text_and_positions() -> None:
    script = "SELECT 1;\n  CALL icefloe.system.f('a;b');\n\nSELECT * FROM t WHERE ;"
    stmts = split_statements(script)
    assert [s.text for s in stmts] == ["SELECT 1", "CALL icefloe.system.f('a;b')", "SELECT * FROM t WHERE"]
    assert [(s.line, s.column) for s in stmts] == [(1, 1), (2, 3), (4, 1)]
    assert stmts[0].error is None and stmts[1].tree is not None
    err = stmts[2].error
    assert isinstance(err, SqlSyntaxError) and err.line == 4 and "line 4, column" in str(err)


def test_time_travel_forms_and_replace_table_are_normalised() -> None:
    tree = parse_statement("SELECT * FROM icefloe.db.t FOR SYSTEM_VERSION AS OF 42").tree
    assert tree is not None
    version = tree.find(exp.Table).args["version"]  # type: ignore[union-attr]
    assert str(version.this) == "VERSION" and version.expression.this == "42"
    create = parse_statement("REPLACE TABLE icefloe.db.t USING iceberg AS SELECT 1 AS x").tree
    assert isinstance(create, exp.Create) and create.args.get("replace")


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM from.t",
        "SELECT * FROM lateral.t",
        "SELECT * FROM describe.t",
        "INSERT INTO from.t VALUES (1)",
        "SELECT * FROM icefloe.inner.t",
        "DELETE FROM icefloe.db.values WHERE a = 1",
    ],
)
def test_a_keyword_next_to_a_dot_is_a_part_of_the_name(text: str) -> None:
    """sqlglot reads ``FROM from.t`` as the subquery ``(FROM t)`` and ``FROM lateral.t`` as a
    LATERAL view: the table named must be the one read, with every part."""
    tree = parse_statement(text).tree
    assert tree is not None
    named = text.split(" FROM " if " FROM " in text else " INTO ")[1].split()[0]
    assert [".".join(p.name for p in t.parts) for t in tree.find_all(exp.Table)] == [named]


def test_a_keyword_read_as_a_keyword_keeps_its_meaning() -> None:
    tree = parse_statement("SELECT a FROM t WHERE a > .5 OR.5 < a").tree
    assert tree is not None and [t.name for t in tree.find_all(exp.Table)] == ["t"]
    assert parse_statement("SELECT 'from.t' AS s FROM t").tree is not None
    assert parse_statement("SELECT * FROM t WHERE").error is not None


def test_token_cursor_reads_extension_statements() -> None:
    cursor = TokenCursor("ALTER TABLE icefloe.db.t ADD PARTITION FIELD bucket(16, id) AS shard")
    assert cursor.accept("ALTER", "TABLE")
    assert cursor.dotted() == ["icefloe", "db", "t"]
    assert cursor.accept("add", "partition", "field")
    assert cursor.until("AS") == "bucket(16, id)"
    assert cursor.accept("AS") and cursor.identifier() == "shard" and cursor.at_end()
    shown = TokenCursor("SHOW TBLPROPERTIES icefloe.db.t ('k')")  # SHOW swallows the rest in sqlglot
    assert shown.accept("SHOW", "TBLPROPERTIES") and shown.dotted() == ["icefloe", "db", "t"]
    with pytest.raises(SqlSyntaxError, match="column 6: expected CREATE BRANCH"):
        TokenCursor("CREATE BRUNCH b").expect("CREATE", "BRANCH")


def _where(text: str) -> exp.Expr:
    tree = parse_statement(f"SELECT * FROM t WHERE {text}").tree
    assert tree is not None
    return tree.args["where"].this


def _name(col: exp.Column) -> str:
    if col.table not in ("", "t"):
        raise NotPushable
    return str(col.name)


def test_predicates_convert_exactly_or_not_at_all() -> None:
    assert to_filter(_where("id >= 5"), _name) == GreaterThanOrEqual("id", 5)
    assert to_filter(_where("5 > id"), _name) == LessThan("id", 5)
    assert to_filter(_where("t.s LIKE 'ab%'"), _name) == StartsWith("s", "ab")
    assert to_filter(_where("x IN (1, 2) OR y IS NULL"), _name) == Or(In("x", [1, 2]), IsNull("y"))
    assert to_filter(_where("y IS NOT NULL"), _name) == NotNull("y")
    assert to_filter(_where("d BETWEEN DATE '2024-01-01' AND '2024-02-01'"), _name) == And(
        GreaterThanOrEqual("d", "2024-01-01"), LessThanOrEqual("d", "2024-02-01")
    )
    assert to_filter(_where("price = 1.50"), _name) == EqualTo("price", Decimal("1.50"))
    for text in ("upper(s) = 'A'", "s LIKE '%a'", "other.x = 1", "x = y", "x IN (SELECT 1)"):
        with pytest.raises(NotPushable):
            to_filter(_where(text), _name)
    assert len(conjuncts(_where("a = 1 AND (b = 2 AND c = 3)"))) == 3
