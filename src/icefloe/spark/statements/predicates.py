"""SQL predicates (sqlglot trees) as icefloe filter expressions, for pushing into icefloe planning.

Only what converts exactly is pushed: comparisons of a column with a literal, ``IN`` lists,
``IS [NOT] NULL``, ``BETWEEN``, ``LIKE 'prefix%'``, and ``AND`` / ``OR`` / ``NOT`` of those. Spark
still evaluates the whole WHERE clause, so a pushed predicate only prunes.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp

from icefloe.expressions.ast import (
    And,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotNull,
    Or,
    StartsWith,
)


class NotPushable(Exception):
    """The predicate has no exact icefloe form."""


_COMPARE: dict[type[exp.Expr], tuple[type[Any], type[Any]]] = {
    exp.EQ: (EqualTo, EqualTo),
    exp.NEQ: (NotEqualTo, NotEqualTo),
    exp.GT: (GreaterThan, LessThan),
    exp.GTE: (GreaterThanOrEqual, LessThanOrEqual),
    exp.LT: (LessThan, GreaterThan),
    exp.LTE: (LessThanOrEqual, GreaterThanOrEqual),
}


def conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    """The AND-ed parts of a condition."""
    if node is None:
        return []
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def to_filter(node: exp.Expr, column: Callable[[exp.Column], str]) -> Expression:
    """The icefloe expression for ``node``; ``column`` maps a column reference to a table column
    name (raising NotPushable when it is not one of the table's columns)."""
    if isinstance(node, exp.Paren):
        return to_filter(node.this, column)
    if isinstance(node, exp.And):
        return And(to_filter(node.left, column), to_filter(node.right, column))
    if isinstance(node, exp.Or):
        return Or(to_filter(node.left, column), to_filter(node.right, column))
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return NotNull(_column(inner.this, column))
        return Not(to_filter(inner, column))
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return IsNull(_column(node.this, column))
    pair = _COMPARE.get(type(node))
    if pair is not None:
        left, right = node.this, node.args.get("expression")
        if isinstance(left, exp.Column) and right is not None:
            return pair[0](_column(left, column), literal(right))
        if isinstance(right, exp.Column) and left is not None:
            return pair[1](_column(right, column), literal(left))
        raise NotPushable
    if isinstance(node, exp.In):
        if node.args.get("query") or not node.expressions:
            raise NotPushable
        return In(_column(node.this, column), [literal(v) for v in node.expressions])
    if isinstance(node, exp.Between):
        name = _column(node.this, column)
        return And(
            GreaterThanOrEqual(name, literal(node.args["low"])),
            LessThanOrEqual(name, literal(node.args["high"])),
        )
    if isinstance(node, exp.Like):
        pattern = literal(node.expression)
        if (
            isinstance(pattern, str)
            and pattern.endswith("%")
            and not any(c in pattern[:-1] for c in "%_\\")
            and node.args.get("escape") is None
        ):
            return StartsWith(_column(node.this, column), pattern[:-1])
    raise NotPushable


def _column(node: exp.Expr, column: Callable[[exp.Column], str]) -> str:
    if not isinstance(node, exp.Column):
        raise NotPushable
    return column(node)


def literal(node: exp.Expr) -> Any:
    """The Python value of a SQL literal (strings stay strings: binding converts them to dates,
    timestamps, decimals)."""
    if isinstance(node, exp.Paren):
        return literal(node.this)
    if isinstance(node, exp.Neg):
        value = literal(node.this)
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
            return -value
        raise NotPushable
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            pass
        if any(c in text.lower() for c in "ed"):
            raise NotPushable  # 1e3 (double) or 1.5D: leave to Spark
        return Decimal(text) if not text.lower().endswith("f") else float(text[:-1])
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        target = node.to.this
        if target in (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ):
            return node.this.this
    raise NotPushable
