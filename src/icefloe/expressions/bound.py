"""Bound expressions: predicates resolved to a field id and type, literals in internal form.

``And``/``Or``/``Not``/``AlwaysTrue``/``AlwaysFalse`` are shared with unbound expressions; the leaves
of a bound expression are :class:`BoundPredicate`. Values follow the internal representation of
``icefloe.spec.conversions`` (date = int days, timestamps = int micros or nanos, Decimal, UUID ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.expressions.ast import (
    AlwaysTrue,
    And,
    Expression,
    Not,
    Op,
    Or,
    Reference,
    UnboundPredicate,
    make_predicate,
    quote_name,
)
from icefloe.expressions.float_order import comparable_floats, float_in, is_floating, total_order_key
from icefloe.spec.conversions import to_json_value
from icefloe.spec.types import (
    DateType,
    IcebergType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

_TEMPORAL = (DateType, TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A column resolved against a schema: field id, type and where to find it in a row.

    ``path`` holds the field names from the top level down (for Arrow ``pc.field(*path)``);
    ``positions`` the matching struct positions (for rows given as nested tuples).
    ``required`` is True when the value can never be null (the field and all its parents are required).
    """

    field_id: int
    name: str
    field_type: IcebergType
    required: bool
    path: tuple[str, ...]
    positions: tuple[int, ...]

    def eval(self, row: Sequence[Any]) -> Any:
        """The referenced value in a row given as (nested) tuples in schema order."""
        value: Any = row
        for pos in self.positions:
            if value is None:
                return None
            value = value[pos]
        return value

    def __str__(self) -> str:
        return quote_name(self.name)


@dataclass(frozen=True, slots=True)
class BoundPredicate(Expression):
    """A predicate on a bound column; ``literal`` for comparisons, ``literals`` for IN / NOT IN."""

    op: Op
    ref: BoundReference
    literal: Any = None
    literals: frozenset[Any] | None = None

    def negate(self) -> Expression:
        """The predicate with the negated operation."""
        return BoundPredicate(self.op.negated, self.ref, self.literal, self.literals)

    def test(self, value: Any) -> bool:
        """Whether a value satisfies the predicate (SQL semantics: comparisons with NULL are false)."""
        op = self.op
        if op is Op.IS_NULL:
            return value is None
        if op is Op.NOT_NULL:
            return value is not None
        if op is Op.IS_NAN:
            return isinstance(value, float) and math.isnan(value)
        if op is Op.NOT_NAN:
            return not (isinstance(value, float) and math.isnan(value))
        if value is None:
            return False
        if isinstance(value, float) and is_floating(self.ref.field_type):
            return self._test_float(value)
        lit = self.literal
        if op is Op.EQ:
            return bool(value == lit)
        if op is Op.NOT_EQ:
            return bool(value != lit)
        if op is Op.LT:
            return bool(value < lit)
        if op is Op.LT_EQ:
            return bool(value <= lit)
        if op is Op.GT:
            return bool(value > lit)
        if op is Op.GT_EQ:
            return bool(value >= lit)
        if op is Op.IN:
            return value in (self.literals or ())
        if op is Op.NOT_IN:
            return value not in (self.literals or ())
        if op is Op.STARTS_WITH:
            return str(value).startswith(lit)
        return not str(value).startswith(lit)  # NOT_STARTS_WITH

    def _test_float(self, value: float) -> bool:
        """Float semantics of ``expressions.float_order``: NaN unordered, ``-0.0 < 0.0``."""
        op = self.op
        if math.isnan(value):
            return op in (Op.NOT_EQ, Op.NOT_IN)
        if op is Op.IN:
            return float_in(value, self.literals or ())
        if op is Op.NOT_IN:
            return not float_in(value, self.literals or ())
        lit = self.literal
        if not comparable_floats(lit):
            return op is Op.NOT_EQ
        key, other = total_order_key(value), total_order_key(lit)
        return {
            Op.EQ: key == other,
            Op.NOT_EQ: key != other,
            Op.LT: key < other,
            Op.LT_EQ: key <= other,
            Op.GT: key > other,
            Op.GT_EQ: key >= other,
        }.get(op, False)

    def to_unbound(self) -> UnboundPredicate:
        """The same predicate by column name; temporal literals become ISO text, others stay as is."""
        ref = Reference(self.ref.name)
        if self.op.is_unary:
            return make_predicate(self.op, ref)
        if self.op.is_set:
            values = [display_value(self.ref.field_type, v) for v in self.literals or ()]
            return make_predicate(self.op, ref, values)
        return make_predicate(self.op, ref, display_value(self.ref.field_type, self.literal))

    def __str__(self) -> str:
        return str(self.to_unbound())

    def __repr__(self) -> str:
        operand = f", {self.literal!r}" if self.literals is None and not self.op.is_unary else ""
        if self.literals is not None:
            operand = f", {sorted(self.literals, key=repr)!r}"
        return f"BoundPredicate({self.op.name}, {self.ref.name!r} #{self.ref.field_id}{operand})"


def display_value(field_type: IcebergType, value: Any) -> Any:
    """A literal as users write it: ISO text for dates, times and timestamps; other values unchanged."""
    if isinstance(field_type, _TEMPORAL) and isinstance(value, int):
        return to_json_value(field_type, value)
    return value


def unbind(expr: Expression) -> Expression:
    """The unbound form of a bound expression (predicates by column name)."""
    if isinstance(expr, BoundPredicate):
        return expr.to_unbound()
    if isinstance(expr, And):
        return And(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Or):
        return Or(unbind(expr.left), unbind(expr.right))
    if isinstance(expr, Not):
        return Not(unbind(expr.child))
    return expr


def evaluate(expr: Expression, row: Sequence[Any]) -> bool:
    """Whether a row (tuples in schema order) satisfies a bound expression, with SQL semantics."""
    if isinstance(expr, BoundPredicate):
        return expr.test(expr.ref.eval(row))
    if isinstance(expr, And):
        return evaluate(expr.left, row) and evaluate(expr.right, row)
    if isinstance(expr, Or):
        return evaluate(expr.left, row) or evaluate(expr.right, row)
    if isinstance(expr, Not):
        return evaluate(expr.child.negate(), row)
    if isinstance(expr, UnboundPredicate):
        raise TypeError(f"cannot evaluate unbound predicate {expr}; bind it first")
    return isinstance(expr, AlwaysTrue)


def is_bound(expr: Expression) -> bool:
    """True when no leaf of the expression is an unbound predicate."""
    if isinstance(expr, And | Or):
        return is_bound(expr.left) and is_bound(expr.right)
    if isinstance(expr, Not):
        return is_bound(expr.child)
    return not isinstance(expr, UnboundPredicate)


__all__ = [
    "BoundPredicate",
    "BoundReference",
    "display_value",
    "evaluate",
    "is_bound",
    "unbind",
]
