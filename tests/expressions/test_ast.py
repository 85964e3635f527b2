"""Unbound expression AST: construction, simplification, negation, text, value equality."""

from __future__ import annotations

import pickle
from decimal import Decimal

import pytest

from icefloe.errors import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
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
    Op,
    Or,
    Reference,
    StartsWith,
    col,
    make_predicate,
    parse,
    rewrite_not,
)


def test_col_builder_operators() -> None:
    assert (col("x") > 5) == GreaterThan("x", 5)
    assert (col("x") >= 5) == GreaterThanOrEqual("x", 5)
    assert (col("x") < 5) == LessThan(Reference("x"), 5)
    assert (col("x") <= 5) == LessThanOrEqual("x", 5)
    assert (col("x") == "a") == EqualTo("x", "a")
    assert (col("x") != "a") == NotEqualTo("x", "a")
    assert (col("x") > 5) == GreaterThan("x", 5)
    assert col("x").isin([1, 2]) == In("x", {2, 1})
    assert col("x").notin((1, 2)) == NotIn("x", [1, 2])
    assert col("x").is_null() == IsNull("x")
    assert col("x").not_null() == NotNull("x")
    assert col("x").is_nan() == IsNaN("x")
    assert col("x").not_nan() == NotNaN("x")
    assert col("x").starts_with("ab") == StartsWith("x", "ab")
    assert col("x").not_starts_with("ab") == NotStartsWith("x", "ab")
    assert col("x").between(1, 3) == And(GreaterThanOrEqual("x", 1), LessThanOrEqual("x", 3))


def test_combinators() -> None:
    a, b = col("a") == 1, col("b") == 2
    assert (a & b) == And(a, b)
    assert (a | b) == Or(a, b)
    assert ~a == Not(a)
    assert And(a, b, a) == And(And(a, b), a)


def test_value_equality_and_hash() -> None:
    assert EqualTo("x", 1) == EqualTo("x", 1)
    assert EqualTo("x", 1) != NotEqualTo("x", 1)
    assert EqualTo("x", 1) != EqualTo("y", 1)
    assert len({EqualTo("x", 1), EqualTo("x", 1), In("x", [1, 2]), In("x", [2, 1])}) == 2
    assert And(EqualTo("x", 1), IsNull("y")) == And(EqualTo("x", 1), IsNull("y"))
    assert hash(Or(IsNull("y"), IsNull("z"))) == hash(Or(IsNull("y"), IsNull("z")))


def test_simplification() -> None:
    x = col("x") > 1
    assert And(AlwaysTrue(), x) == x
    assert And(x, AlwaysTrue()) == x
    assert And(AlwaysFalse(), x) == AlwaysFalse()
    assert Or(AlwaysTrue(), x) == AlwaysTrue()
    assert Or(x, AlwaysFalse()) == x
    assert Not(AlwaysTrue()) == AlwaysFalse()
    assert Not(AlwaysFalse()) == AlwaysTrue()
    assert Not(Not(x)) == x


def test_negation() -> None:
    assert (col("x") < 1).negate() == GreaterThanOrEqual("x", 1)
    assert (col("x") <= 1).negate() == GreaterThan("x", 1)
    assert (col("x") == 1).negate() == NotEqualTo("x", 1)
    assert col("x").isin([1, 2]).negate() == NotIn("x", [1, 2])
    assert IsNull("x").negate() == NotNull("x")
    assert IsNaN("x").negate() == NotNaN("x")
    assert StartsWith("x", "a").negate() == NotStartsWith("x", "a")
    expr = Not(And(col("a") == 1, Or(col("b") < 2, Not(IsNull("c")))))
    assert rewrite_not(expr) == Or(NotEqualTo("a", 1), And(GreaterThanOrEqual("b", 2), IsNull("c")))


def test_op_properties() -> None:
    assert Op.LT.negated is Op.GT_EQ
    assert Op.GT_EQ.negated is Op.LT
    assert Op.LT.flipped is Op.GT
    assert Op.EQ.flipped is Op.EQ
    assert all(op.negated.negated is op for op in Op)
    assert make_predicate(Op.IN, "x", [1]) == In("x", [1])
    assert make_predicate(Op.IS_NULL, "x") == IsNull("x")


def test_str_is_sql_like_and_parses_back() -> None:
    expr = ((col("id") > 5) & (col("category") == "it's")) | ~col("x.y").isin([2, 1])
    assert str(expr) == "id > 5 AND category = 'it''s' OR NOT (x.y IN (1, 2))"
    assert str(And(Or(IsNull("a"), NotNaN("b")), col("s").starts_with("a%_b"))) == (
        "(a IS NULL OR b IS NOT NAN) AND s LIKE 'a\\%\\_b%'"
    )
    assert str(col("weird col") == Decimal("1.50")) == "`weird col` = 1.50"
    assert str(col("in") == b"\x01\xff") == "`in` = X'01FF'"
    assert str(col("d").not_starts_with("x")) == "d NOT LIKE 'x%'"
    assert str(AlwaysTrue()) == "true"
    for e in [
        expr,
        And(Or(IsNull("a"), NotNaN("b")), col("s").starts_with("a%_b\\")),
        col("weird col") == Decimal("1.50"),
        NotIn("`q`", ["a", "b"]),
        col("and") == True,  # noqa: E712
    ]:
        assert parse(str(e)) == e


def test_invalid_construction() -> None:
    with pytest.raises(ValidationError, match="IS NULL"):
        _ = col("x") == None  # noqa: E711
    with pytest.raises(ValidationError, match="NaN"):
        _ = col("x") < float("nan")
    with pytest.raises(ValidationError, match="collection"):
        col("x").isin("abc")
    with pytest.raises(ValidationError, match="string"):
        col("x").starts_with(5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="expected a literal"):
        _ = col("x") == col("y")
    with pytest.raises(ValidationError):
        Reference("")


def test_truth_value_is_refused() -> None:
    with pytest.raises(TypeError, match="&"):
        bool(col("x") > 1)
    with pytest.raises(TypeError):
        _ = (col("x") > 1) and (col("y") > 2)


def test_immutable_and_picklable() -> None:
    expr = And(col("a") == 1, Not(col("b").isin([1, 2])))
    with pytest.raises(AttributeError):
        expr.left = IsNull("z")  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        (col("a") == 1).value = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(expr)) == expr
