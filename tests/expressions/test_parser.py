"""The SQL-like filter parser: every construct, literal kinds and error positions."""

from __future__ import annotations

from decimal import Decimal

import pytest

from icefloe.errors import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    col,
    parse,
    to_expression,
)

CASES: list[tuple[str, Expression]] = [
    ("id > 5 and category = 'a'", And(GreaterThan("id", 5), EqualTo("category", "a"))),
    ("ID >= 5 AND Category == 'a'", And(GreaterThanOrEqual("ID", 5), EqualTo("Category", "a"))),
    ("a = 1 or b = 2 and c = 3", Or(EqualTo("a", 1), And(EqualTo("b", 2), EqualTo("c", 3)))),
    ("(a = 1 or b = 2) and c = 3", And(Or(EqualTo("a", 1), EqualTo("b", 2)), EqualTo("c", 3))),
    ("not a = 1 and b = 2", And(Not(EqualTo("a", 1)), EqualTo("b", 2))),
    ("not (a = 1 and b = 2)", Not(And(EqualTo("a", 1), EqualTo("b", 2)))),
    ("x != 1", NotEqualTo("x", 1)),
    ("x <> 1", NotEqualTo("x", 1)),
    ("x < -1", LessThan("x", -1)),
    ("x <= +2", LessThanOrEqual("x", 2)),
    ("5 < x", GreaterThan("x", 5)),
    ("'a' = x", EqualTo("x", "a")),
    ("x in (1, 2, 3)", In("x", [1, 2, 3])),
    ("x not in ('a', 'b')", NotIn("x", ["a", "b"])),
    ("x is null", IsNull("x")),
    ("x IS NOT NULL", NotNull("x")),
    ("x is nan", IsNaN("x")),
    ("x is not nan", NotNaN("x")),
    ("s like 'abc%'", StartsWith("s", "abc")),
    ("s not like 'abc%'", NotStartsWith("s", "abc")),
    ("s like 'abc'", EqualTo("s", "abc")),
    ("s like 'a\\%b%%'", StartsWith("s", "a%b")),
    ("s like 'a\\_b%'", StartsWith("s", "a_b")),
    ("x between 1 and 5", And(GreaterThanOrEqual("x", 1), LessThanOrEqual("x", 5))),
    ("x not between 1 and 5", Or(LessThan("x", 1), GreaterThan("x", 5))),
    ("a.b.c = 1", EqualTo("a.b.c", 1)),
    ("`my col`.`x.y` = 1", EqualTo("my col.x.y", 1)),
    ('"Weird ""name""" = 1', EqualTo('Weird "name"', 1)),
    ("`in` = 1", EqualTo("in", 1)),
    ("flag = true", EqualTo("flag", True)),
    ("flag = FALSE", EqualTo("flag", False)),
    ("true", AlwaysTrue()),
    ("false or x = 1", EqualTo("x", 1)),
    ("b = X'00ff'", EqualTo("b", b"\x00\xff")),
    ("s = 'it''s'", EqualTo("s", "it's")),
    ("s = ''", EqualTo("s", "")),
    ("s = 'ünï'", EqualTo("s", "ünï")),
    ("  x=1  ", EqualTo("x", 1)),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_parse(text: str, expected: Expression) -> None:
    assert parse(text) == expected


def test_number_literals_keep_their_kind() -> None:
    def value(text: str) -> object:
        expr = parse(f"x = {text}")
        assert isinstance(expr, EqualTo)
        return expr.value

    assert value("12") == 12 and isinstance(value("12"), int)
    assert value("12.50") == Decimal("12.50") and str(value("12.50")) == "12.50"
    assert str(value("0.1")) == "0.1" and isinstance(value("0.1"), Decimal)
    assert value(".5") == Decimal("0.5")
    assert value("-3.25") == Decimal("-3.25")
    assert value("1e3") == 1000.0 and isinstance(value("1e3"), float)
    assert value("1.5E-2") == 0.015 and isinstance(value("1.5E-2"), float)
    assert value("123456789012345678901234567890") == 123456789012345678901234567890


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("x = null", "NULL"),
        ("x != null", "IS NOT NULL"),
        ("x in (1, null)", "NULL"),
        ("x = ", "expected a literal"),
        ("x", "comparison operator"),
        ("x = 1 y = 2", "position 6"),
        ("(x = 1", "expected ')'"),
        ("x in ()", "literal"),
        ("x in 1", "'('"),
        ("x = 'abc", "unclosed quote"),
        ("x = 1 and", "end of the text"),
        ("x like 'a_c%'", "only prefix patterns"),
        ("x like '%abc'", "only prefix patterns"),
        ("x like 'a%c'", "only prefix patterns"),
        ("x like 5", "pattern"),
        ("x is 5", "NULL or NAN"),
        ("x not = 5", "IN, LIKE or BETWEEN"),
        ("x between 1", "AND"),
        ("null = x", "position 0"),
        ("x = #", "unexpected character '#'"),
        ("b = X'0g'", "hexadecimal"),
        ("x = nan", "literal"),
        ("and = 1", "column name"),
        ("1 + 2", "comparison operator"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse(text)
    assert message in str(info.value)
    assert "cannot parse filter" in str(info.value)


def test_error_names_position() -> None:
    with pytest.raises(ValidationError, match=r"found 'oops' at position 12 \(near 'oops'\)"):
        parse("x = 1 and y oops")


def test_to_expression() -> None:
    assert to_expression(None) == AlwaysTrue()
    assert to_expression("  ") == AlwaysTrue()
    assert to_expression("x = 1") == EqualTo("x", 1)
    e = col("x") > 2
    assert to_expression(e) is e
    assert to_expression("false") == AlwaysFalse()
    with pytest.raises(ValidationError):
        to_expression(5)  # type: ignore[arg-type]
