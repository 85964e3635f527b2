"""Filters as ``pyarrow.compute.Expression`` for ``Table.filter`` and ``pyarrow.dataset`` scans.

Semantics match the rest of icefloe: SQL three-valued logic (a comparison with NULL is NULL and a
NULL filter result drops the row; NOT IN and != never keep NULLs), ``IS NAN`` NULL for NULL and
``IS NOT NAN`` true for NULL. Columns are referenced by name path (``pc.field("a", "b")``), so the
Arrow data must use the schema's column names.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import ValidationError
from icefloe.expressions.arrow_types import literal_arrow_type
from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Op, Or, rewrite_not
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate, BoundReference, is_bound
from icefloe.expressions.float_order import is_floating
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    IcebergType,
    UUIDType,
)

__all__ = ["literal_arrow_type", "to_arrow_expression"]


def _arrow_value(type_: IcebergType, value: Any) -> Any:
    if isinstance(type_, UUIDType):
        return value.bytes
    return value


def _field(ref: BoundReference) -> pc.Expression:
    f = pc.field(*ref.path)
    if isinstance(ref.field_type, UUIDType):
        return f.cast(pa.binary(16))  # works for fixed_size_binary(16) and the arrow.uuid extension
    return f


def _scalar(ref: BoundReference, value: Any) -> pc.Expression:
    typ = literal_arrow_type(ref.field_type)
    return pc.scalar(pa.scalar(_arrow_value(ref.field_type, value), typ))


def _value_set(ref: BoundReference, values: frozenset[Any] | None) -> pa.Array:
    typ = literal_arrow_type(ref.field_type)
    return pa.array([_arrow_value(ref.field_type, v) for v in values or ()], typ)


def _signed_zero(ref: BoundReference, f: pc.Expression, negative: bool) -> pc.Expression:
    """``f`` is ``-0.0`` (``negative``) or ``0.0``: equal to zero, and 1/f is -inf or +inf."""
    one = pc.scalar(pa.scalar(1.0, literal_arrow_type(ref.field_type)))
    zero = pc.scalar(pa.scalar(0.0, literal_arrow_type(ref.field_type)))
    sign = pc.less(pc.divide(one, f), zero) if negative else pc.greater(pc.divide(one, f), zero)
    return pc.and_kleene(pc.equal(f, zero), sign)


def _float_zero_predicate(pred: BoundPredicate, f: pc.Expression) -> pc.Expression | None:
    """Comparisons of a float column with ``-0.0`` / ``0.0`` as ``expressions.float_order`` says."""
    op, ref = pred.op, pred.ref
    if op in (Op.IN, Op.NOT_IN):
        zeros = [v for v in pred.literals or () if isinstance(v, float) and v == 0.0]
        if not zeros:
            return None
        others = frozenset(v for v in pred.literals or () if v not in zeros)
        matched = pc.is_in(f, value_set=_value_set(ref, others))
        for z in zeros:
            matched = pc.or_kleene(matched, _signed_zero(ref, f, math.copysign(1.0, z) < 0))
        return matched if op is Op.IN else pc.and_kleene(pc.invert(matched), pc.is_valid(f))
    lit = pred.literal
    if not (isinstance(lit, float) and lit == 0.0):
        return None
    negative = math.copysign(1.0, lit) < 0
    zero = _scalar(ref, 0.0)
    this, other = _signed_zero(ref, f, negative), _signed_zero(ref, f, not negative)
    if op is Op.EQ:
        return this
    if op is Op.NOT_EQ:
        return pc.or_kleene(pc.not_equal(f, zero), other)
    if op is Op.LT:
        return pc.less(f, zero) if negative else pc.or_kleene(pc.less(f, zero), other)
    if op is Op.LT_EQ:
        return pc.or_kleene(pc.less(f, zero), this) if negative else pc.less_equal(f, zero)
    if op is Op.GT:
        return pc.or_kleene(pc.greater(f, zero), other) if negative else pc.greater(f, zero)
    if op is Op.GT_EQ:
        return pc.greater_equal(f, zero) if negative else pc.or_kleene(pc.greater(f, zero), this)
    return None


def _predicate(pred: BoundPredicate) -> pc.Expression:
    f = _field(pred.ref)
    op = pred.op
    if is_floating(pred.ref.field_type) and op in _ZERO_SENSITIVE:
        special = _float_zero_predicate(pred, f)
        if special is not None:
            return special
    if op is Op.IS_NULL:
        return pc.is_null(f)
    if op is Op.NOT_NULL:
        return pc.is_valid(f)
    if op is Op.IS_NAN:
        return pc.is_nan(f)
    if op is Op.NOT_NAN:
        return pc.or_kleene(pc.is_null(f), pc.invert(pc.is_nan(f)))
    if op is Op.IN:
        return pc.is_in(f, value_set=_value_set(pred.ref, pred.literals))
    if op is Op.NOT_IN:
        isin = pc.is_in(f, value_set=_value_set(pred.ref, pred.literals))
        return pc.and_kleene(pc.invert(isin), pc.is_valid(f))
    if op is Op.STARTS_WITH:
        return pc.starts_with(f, pattern=pred.literal)
    if op is Op.NOT_STARTS_WITH:
        return pc.invert(pc.starts_with(f, pattern=pred.literal))
    lit = _scalar(pred.ref, pred.literal)
    if op is Op.EQ:
        return pc.equal(f, lit)
    if op is Op.NOT_EQ:
        return pc.not_equal(f, lit)
    if op is Op.LT:
        return pc.less(f, lit)
    if op is Op.LT_EQ:
        return pc.less_equal(f, lit)
    if op is Op.GT:
        return pc.greater(f, lit)
    return pc.greater_equal(f, lit)


_ZERO_SENSITIVE = (Op.EQ, Op.NOT_EQ, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.IN, Op.NOT_IN)


def _convert(expr: Expression) -> pc.Expression:
    if isinstance(expr, BoundPredicate):
        return _predicate(expr)
    if isinstance(expr, And):
        return pc.and_kleene(_convert(expr.left), _convert(expr.right))
    if isinstance(expr, Or):
        return pc.or_kleene(_convert(expr.left), _convert(expr.right))
    if isinstance(expr, Not):
        return _convert(expr.child.negate())
    if isinstance(expr, AlwaysTrue):
        return pc.scalar(True)
    if isinstance(expr, AlwaysFalse):
        return pc.scalar(False)
    raise ValidationError(f"cannot convert {expr!r} to an Arrow expression")


def to_arrow_expression(
    expr: Expression, schema: Schema | None = None, case_sensitive: bool = True
) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` for a bound expression, or an unbound one with its schema."""
    if not is_bound(expr):
        if schema is None:
            raise ValidationError(f"filter {expr} is not bound: pass the table schema to convert it")
        expr = bind(schema, expr, case_sensitive)
    return _convert(rewrite_not(expr))
