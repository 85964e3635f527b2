"""Bind unbound expressions to a schema: resolve names to field ids, convert literals to the field type.

Binding also simplifies what the schema alone decides: ``IS NULL`` on a never-null column is
AlwaysFalse, ``x < 3000000000`` on an int column is ``x IS NOT NULL``, ``x = 1.5`` on an int column is
AlwaysFalse, ``x < 1.5`` becomes ``x <= 1``, ``IN`` with one value becomes ``=``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.errors import ValidationError
from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    LiteralPredicate,
    Not,
    Op,
    Or,
    SetPredicate,
    UnboundPredicate,
)
from icefloe.expressions.bound import BoundPredicate, BoundReference
from icefloe.expressions.literals import Converted, convert_literal
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DoubleType,
    FloatType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)

__all__ = ["bind", "bind_predicate", "bind_reference", "make_bound_predicate", "referenced_field_ids"]


def bind(schema: Schema, expr: Expression, case_sensitive: bool = True) -> Expression:
    """The bound form of ``expr`` over ``schema``; ValidationError names unknown columns and bad values."""
    if isinstance(expr, And):
        return And(bind(schema, expr.left, case_sensitive), bind(schema, expr.right, case_sensitive))
    if isinstance(expr, Or):
        return Or(bind(schema, expr.left, case_sensitive), bind(schema, expr.right, case_sensitive))
    if isinstance(expr, Not):
        return Not(bind(schema, expr.child, case_sensitive))
    if isinstance(expr, UnboundPredicate):
        return bind_predicate(schema, expr, case_sensitive)
    if isinstance(expr, AlwaysTrue | AlwaysFalse | BoundPredicate):
        return expr
    raise ValidationError(f"cannot bind {expr!r}: not a filter expression")


def bind_reference(schema: Schema, name: str, case_sensitive: bool = True) -> BoundReference:
    """Resolve a dotted column name to a bound reference (fields inside lists and maps are refused)."""
    try:
        field = schema.find_field(name, case_sensitive)
    except ValidationError:
        raise ValidationError(f"cannot filter on {name!r}: the table has no such column") from None
    located = _locate(schema.fields, field.field_id, (), (), True)
    if located is None:
        raise ValidationError(
            f"cannot filter on {name!r}: fields inside lists and maps cannot be used in filters"
        )
    path, positions, required = located
    return BoundReference(field.field_id, ".".join(path), field.field_type, required, path, positions)


def _locate(
    fields: tuple[NestedField, ...],
    field_id: int,
    path: tuple[str, ...],
    positions: tuple[int, ...],
    required: bool,
) -> tuple[tuple[str, ...], tuple[int, ...], bool] | None:
    for pos, f in enumerate(fields):
        here = (*path, f.name), (*positions, pos), required and f.required
        if f.field_id == field_id:
            return here
        if isinstance(f.field_type, StructType):
            found = _locate(f.field_type.fields, field_id, *here)
            if found is not None:
                return found
    return None


def bind_predicate(schema: Schema, pred: UnboundPredicate, case_sensitive: bool = True) -> Expression:
    """Bind one predicate (the result may be simplified to AlwaysTrue, AlwaysFalse or another op)."""
    ref = bind_reference(schema, pred.term.name, case_sensitive)
    if isinstance(pred, LiteralPredicate):
        return make_bound_predicate(pred.op, ref, pred.value)
    if isinstance(pred, SetPredicate):
        return make_bound_predicate(pred.op, ref, pred.values)
    return make_bound_predicate(pred.op, ref)


def make_bound_predicate(op: Op, ref: BoundReference, operand: Any = None) -> Expression:
    """A bound predicate with its literal converted to the column type, simplified where possible."""
    ftype = ref.field_type
    if op.is_unary:
        return _bind_unary(op, ref)
    if isinstance(ftype, UnknownType):
        return AlwaysFalse()  # the column holds only nulls; no comparison is true
    if not ftype.is_primitive:
        raise ValidationError(f"cannot compare column {ref.name!r} of type {ftype} with a value")
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        if not isinstance(ftype, StringType):
            raise ValidationError(f"cannot use LIKE / starts_with on column {ref.name!r} of type {ftype}")
        if not isinstance(operand, str):
            raise ValidationError(f"a prefix for column {ref.name!r} must be a string, got {operand!r}")
        return BoundPredicate(op, ref, operand)
    if op.is_set:
        return _bind_set(op, ref, operand)
    return _bind_comparison(op, ref, _convert(ref, operand))


def _bind_unary(op: Op, ref: BoundReference) -> Expression:
    ftype = ref.field_type
    if op in (Op.IS_NAN, Op.NOT_NAN):
        if isinstance(ftype, UnknownType):
            return AlwaysFalse() if op is Op.IS_NAN else AlwaysTrue()
        if not isinstance(ftype, FloatType | DoubleType):
            raise ValidationError(
                f"IS NAN / IS NOT NAN needs a float or double column, but {ref.name!r} is {ftype}"
            )
        return BoundPredicate(op, ref)
    if ref.required:
        return AlwaysFalse() if op is Op.IS_NULL else AlwaysTrue()
    if isinstance(ftype, UnknownType):
        return AlwaysTrue() if op is Op.IS_NULL else AlwaysFalse()
    return BoundPredicate(op, ref)


def _convert(ref: BoundReference, value: Any) -> Converted:
    try:
        return convert_literal(ref.field_type, value)
    except ValidationError as exc:
        raise ValidationError(f"filter on column {ref.name!r} ({ref.field_type}): {exc}") from None


def _bind_comparison(op: Op, ref: BoundReference, c: Converted) -> Expression:
    if c.exact:
        return BoundPredicate(op, ref, c.value)
    # the literal lies strictly between two representable values (or outside the type's range)
    if op is Op.EQ:
        return AlwaysFalse()
    if op is Op.NOT_EQ:
        return _bind_unary(Op.NOT_NULL, ref)
    if op in (Op.LT, Op.LT_EQ):
        if c.low is None:
            return AlwaysFalse()
        if c.high is None:
            return _bind_unary(Op.NOT_NULL, ref)
        return BoundPredicate(Op.LT_EQ, ref, c.low)
    # GT, GT_EQ
    if c.high is None:
        return AlwaysFalse()
    if c.low is None:
        return _bind_unary(Op.NOT_NULL, ref)
    return BoundPredicate(Op.GT_EQ, ref, c.high)


def _bind_set(op: Op, ref: BoundReference, values: Iterable[Any]) -> Expression:
    kept = set()
    for v in values:
        c = _convert(ref, v)
        if c.exact:
            kept.add(c.value)  # inexact values cannot equal any stored value
    if not kept:
        return AlwaysFalse() if op is Op.IN else _bind_unary(Op.NOT_NULL, ref)
    if len(kept) == 1:
        return BoundPredicate(Op.EQ if op is Op.IN else Op.NOT_EQ, ref, next(iter(kept)))
    return BoundPredicate(op, ref, None, frozenset(kept))


def referenced_field_ids(expr: Expression) -> set[int]:
    """Field ids used by the predicates of a bound expression."""
    if isinstance(expr, BoundPredicate):
        return {expr.ref.field_id}
    if isinstance(expr, And | Or):
        return referenced_field_ids(expr.left) | referenced_field_ids(expr.right)
    if isinstance(expr, Not):
        return referenced_field_ids(expr.child)
    return set()
