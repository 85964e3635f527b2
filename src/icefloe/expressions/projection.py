"""Project row filters onto partition values (format/spec.md "Scan Planning").

An *inclusive* projection is true for every partition that may hold a matching row; a *strict*
projection is true only for partitions whose rows all match. Both are expressions over the
partition field names of a spec, unbound, ready to bind against :func:`partition_schema`.

Per transform (``p`` = partition value, ``t`` = the transform, ``v`` = the literal):

- identity: the same predicate on ``p`` (inclusive and strict).
- bucket: inclusive only for ``=`` and ``IN`` (``p = t(v)``); strict only for ``!=`` and ``NOT IN``.
- truncate of numbers, year/month/day/hour (order preserving): inclusive ``x < v`` gives
  ``p <= t(v-1)``, ``x <= v`` gives ``p <= t(v)``, ``x > v`` gives ``p >= t(v+1)``, ``x >= v`` gives
  ``p >= t(v)``, ``=``/``IN`` map through ``t``; strict ``x < v`` gives ``p < t(v)``, ``x <= v`` gives
  ``p < t(v+1)``, ``x > v`` gives ``p > t(v)``, ``x >= v`` gives ``p > t(v-1)``, ``!=``/``NOT IN`` map
  through ``t``. ``v-1`` is one unit of the source type (day, micro/nanosecond, decimal digit).
- truncate of strings and binary: inclusive ``<``/``<=`` give ``p <= t(v)`` and ``>``/``>=`` give
  ``p >= t(v)``; strict ``<``/``<=`` give ``p < t(v)`` and ``>``/``>=`` give ``p > t(v)``; prefix
  tests compare the prefix with the width.
- void and unknown transforms: true (inclusive), false (strict).
- at the edges of the source type (``expressions.wrap_zones``): a step past the type's minimum or
  maximum matches no row; where the writer's arithmetic wraps (``truncate`` near the int/long
  minimum, ``hour`` near the long limits), inclusive range projections also keep the wrapped
  partition values, strict ones exclude them, and a literal inside a wrapped zone projects to
  nothing narrower than true (inclusive) / false (strict). Pruning never drops a matching row.

``IS NULL`` / ``IS NOT NULL`` carry over unchanged for every transform except void (a transform
maps null to null and only null to null). A predicate on a column without a partition field
projects to AlwaysTrue (inclusive) / AlwaysFalse (strict); several partition fields on one
column are combined with AND (inclusive) or OR (strict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from functools import reduce
from typing import Any

from icefloe.errors import IcefloeError
from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Not,
    Op,
    Or,
    make_predicate,
    rewrite_not,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate, display_value
from icefloe.expressions.wrap_zones import WrapZones, wrap_zones
from icefloe.spec.conversions import decimal_to_unscaled, unscaled_to_decimal
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icefloe.spec.types import BinaryType, DecimalType, IcebergType, NestedField, StringType, UnknownType

__all__ = [
    "inclusive_projection",
    "partition_schema",
    "project_inclusive",
    "project_strict",
    "strict_projection",
]

_ORDERED = (TruncateTransform, YearTransform, MonthTransform, DayTransform, HourTransform)


def partition_schema(spec: PartitionSpec, schema: Schema) -> Schema:
    """The partition tuple of ``spec`` as a flat schema (names = partition field names, all optional).

    Fields whose type cannot be derived (source column dropped) get type ``unknown``. A truncated
    decimal gets one more digit of precision: truncating the most negative ``decimal(P, S)``
    value needs it (Java writes that value), and a projected literal must be able to name it.
    """
    fields = []
    for pf in spec.fields:
        try:
            rtype = pf.transform.result_type(schema.find_type(pf.source_id))
        except IcefloeError:
            rtype = UnknownType()
        if isinstance(pf.transform, TruncateTransform) and isinstance(rtype, DecimalType):
            rtype = DecimalType(min(38, rtype.precision + 1), rtype.scale)
        fields.append(NestedField(pf.field_id, pf.name, rtype, False))
    return Schema(*fields)


def _is_single_source(pf: PartitionField) -> bool:
    return pf.source_ids is None or len(pf.source_ids) <= 1


def _pred(op: Op, name: str, rtype: IcebergType, value: Any = None) -> Expression:
    if op.is_unary:
        return make_predicate(op, name)
    if op.is_set:
        return make_predicate(op, name, [display_value(rtype, v) for v in value])
    return make_predicate(op, name, display_value(rtype, value))


def _set_pred(op: Op, name: str, rtype: IcebergType, values: Iterable[Any]) -> Expression:
    distinct = set(values)
    if len(distinct) == 1:
        return _pred(Op.EQ if op is Op.IN else Op.NOT_EQ, name, rtype, next(iter(distinct)))
    return _pred(op, name, rtype, distinct)


def _step(source_type: IcebergType, value: Any, delta: int) -> Any:
    """The representable value ``delta`` steps away (ints, days, micros/nanos, decimal units)."""
    if isinstance(source_type, DecimalType):
        scale = source_type.scale  # in unscaled integers: Decimal arithmetic rounds to 28 digits
        return unscaled_to_decimal(decimal_to_unscaled(value, scale) + delta, scale)
    return value + delta


def _usable(pf: PartitionField, source_type: IcebergType) -> bool:
    t = pf.transform
    known = isinstance(t, (IdentityTransform, BucketTransform, *_ORDERED))
    return known and _is_single_source(pf) and t.can_transform(source_type)


def project_inclusive(
    pf: PartitionField, source_type: IcebergType, pred: BoundPredicate
) -> Expression | None:
    """A predicate on the partition field true for every partition that may hold a matching row.

    None means the partition field cannot narrow the predicate (equivalent to AlwaysTrue).
    """
    if not _usable(pf, source_type):
        return None
    t, name, op = pf.transform, pf.name, pred.op
    rtype = t.result_type(source_type)
    if op in (Op.IS_NULL, Op.NOT_NULL):
        return _pred(op, name, rtype)
    if isinstance(t, IdentityTransform):
        return _pred(op, name, rtype, pred.literals if op.is_set else pred.literal)
    if op in (Op.IS_NAN, Op.NOT_NAN):
        return None
    fn = t.transform_fn(source_type)
    if isinstance(t, BucketTransform):
        if op is Op.EQ:
            return _pred(Op.EQ, name, rtype, fn(pred.literal))
        if op is Op.IN:
            return _set_pred(Op.IN, name, rtype, map(fn, pred.literals or ()))
        return None
    if isinstance(source_type, StringType | BinaryType):
        return _truncate_array_inclusive(name, rtype, t.width, fn, pred)  # type: ignore[attr-defined]
    if _beyond_decimal_38(source_type, fn, pred):
        return None
    edge = _edge_inclusive(t, source_type, name, rtype, fn, pred)
    if edge is not _NOT_AT_EDGE:
        return edge
    v = pred.literal
    if op is Op.LT:
        return _pred(Op.LT_EQ, name, rtype, fn(_step(source_type, v, -1)))
    if op is Op.LT_EQ:
        return _pred(Op.LT_EQ, name, rtype, fn(v))
    if op is Op.GT:
        return _pred(Op.GT_EQ, name, rtype, fn(_step(source_type, v, 1)))
    if op is Op.GT_EQ:
        return _pred(Op.GT_EQ, name, rtype, fn(v))
    if op is Op.EQ:
        return _pred(Op.EQ, name, rtype, fn(v))
    if op is Op.IN:
        return _set_pred(Op.IN, name, rtype, map(fn, pred.literals or ()))
    return None


def _truncate_array_inclusive(
    name: str, rtype: IcebergType, width: int, fn: Callable[[Any], Any], pred: BoundPredicate
) -> Expression | None:
    op, v = pred.op, pred.literal
    if op in (Op.LT, Op.LT_EQ):
        return _pred(Op.LT_EQ, name, rtype, fn(v))
    if op in (Op.GT, Op.GT_EQ):
        return _pred(Op.GT_EQ, name, rtype, fn(v))
    if op is Op.EQ:
        return _pred(Op.EQ, name, rtype, fn(v))
    if op is Op.IN:
        return _set_pred(Op.IN, name, rtype, map(fn, pred.literals or ()))
    if op is Op.STARTS_WITH:
        if len(v) < width:
            return _pred(Op.STARTS_WITH, name, rtype, v)
        return _pred(Op.EQ, name, rtype, fn(v))
    if op is Op.NOT_STARTS_WITH:
        if len(v) < width:
            return _pred(Op.NOT_STARTS_WITH, name, rtype, v)
        if len(v) == width:
            return _pred(Op.NOT_EQ, name, rtype, v)
    return None


def project_strict(pf: PartitionField, source_type: IcebergType, pred: BoundPredicate) -> Expression | None:
    """A predicate on the partition field true only for partitions whose rows all match.

    None means the partition field cannot prove the predicate (equivalent to AlwaysFalse).
    """
    if not _usable(pf, source_type):
        return None
    t, name, op = pf.transform, pf.name, pred.op
    rtype = t.result_type(source_type)
    if op in (Op.IS_NULL, Op.NOT_NULL):
        return _pred(op, name, rtype)
    if isinstance(t, IdentityTransform):
        return _pred(op, name, rtype, pred.literals if op.is_set else pred.literal)
    if op in (Op.IS_NAN, Op.NOT_NAN):
        return None
    fn = t.transform_fn(source_type)
    if _beyond_decimal_38(source_type, fn, pred):
        return None
    if op is Op.NOT_IN:
        return _set_pred(Op.NOT_IN, name, rtype, map(fn, pred.literals or ()))
    if op is Op.NOT_EQ:
        return _pred(Op.NOT_EQ, name, rtype, fn(pred.literal))
    if isinstance(t, BucketTransform):
        return None
    v = pred.literal
    if not isinstance(source_type, StringType | BinaryType):
        edge = _edge_strict(t, source_type, name, rtype, fn, pred)
        if edge is not _NOT_AT_EDGE:
            return edge
    if isinstance(source_type, StringType | BinaryType):
        width = t.width  # type: ignore[attr-defined]
        if op in (Op.LT, Op.LT_EQ):
            return _pred(Op.LT, name, rtype, fn(v))
        if op in (Op.GT, Op.GT_EQ):
            return _pred(Op.GT, name, rtype, fn(v))
        if op is Op.EQ and len(v) < width:
            return _pred(Op.EQ, name, rtype, v)  # a value shorter than the width is kept whole
        if op is Op.IN and all(len(x) < width for x in pred.literals or ()):
            return _set_pred(Op.IN, name, rtype, pred.literals or ())
        if op is Op.STARTS_WITH and len(v) <= width:
            return _pred(Op.STARTS_WITH, name, rtype, v)
        if op is Op.NOT_STARTS_WITH:
            return _pred(Op.NOT_STARTS_WITH, name, rtype, fn(v))
        return None
    if op is Op.LT:
        return _pred(Op.LT, name, rtype, fn(v))
    if op is Op.LT_EQ:
        return _pred(Op.LT, name, rtype, fn(_step(source_type, v, 1)))
    if op is Op.GT:
        return _pred(Op.GT, name, rtype, fn(v))
    if op is Op.GT_EQ:
        return _pred(Op.GT, name, rtype, fn(_step(source_type, v, -1)))
    return None


# ---------------------------------------------------------------------------------------------
# the edges of the source type and wrapped transform arithmetic

_NOT_AT_EDGE: Any = object()  # "no edge case: project as usual"
_RANGE_OPS = (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ)


def _decimal_range(source_type: DecimalType) -> tuple[Decimal, Decimal]:
    top = unscaled_to_decimal(10**source_type.precision - 1, source_type.scale)
    return -top, top


def _beyond_decimal_38(source_type: IcebergType, fn: Callable[[Any], Any], pred: BoundPredicate) -> bool:
    """Whether the projection would need a partition value no ``decimal(38, S)`` literal can name.

    Truncating the most negative ``decimal(38, S)`` values gives ``-10^38`` (scaled), as Java
    writes it; ``partition_schema`` widens a truncated decimal by one digit, which 38 cannot take.
    Projecting a literal next to such a value would drop its partition, so such literals (within
    one width of the type's minimum) do not narrow the partition (None: no pruning).
    """
    if not isinstance(source_type, DecimalType) or source_type.precision < 38:
        return False
    lowest = unscaled_to_decimal(-(10**38 - 1), source_type.scale)
    values = list(pred.literals or ()) if pred.op.is_set else [pred.literal]
    candidates = [s for v in values for s in (_step(source_type, v, -1), v, _step(source_type, v, 1))]
    return any(fn(c) < lowest for c in candidates)


def _stepped(op: Op, v: Any, source_type: IcebergType) -> Any:
    """The literal whose transform bounds the projection (``v-1`` for ``<``, ``v+1`` for ``>``)."""
    if op is Op.LT:
        return _step(source_type, v, -1)
    if op is Op.GT:
        return _step(source_type, v, 1)
    return v


def _in_range(value: Any, source_type: IcebergType, zones: WrapZones | None) -> bool:
    if zones is not None:
        return not zones.out_of_range(value)
    if isinstance(source_type, DecimalType):
        lo, hi = _decimal_range(source_type)
        return lo <= value <= hi
    return True


def _wrapped_pred(op: Op, name: str, rtype: IcebergType, span: tuple[int, int]) -> Expression:
    """``p`` inside (``op`` IN-like) or outside (NOT) a span of wrapped partition values."""
    low, high = span
    if low == high:
        return _pred(Op.EQ if op is Op.IN else Op.NOT_EQ, name, rtype, low)
    inside = And(_pred(Op.GT_EQ, name, rtype, low), _pred(Op.LT_EQ, name, rtype, high))
    outside = Or(_pred(Op.LT, name, rtype, low), _pred(Op.GT, name, rtype, high))
    return inside if op is Op.IN else outside


def _edge_inclusive(
    t: Any,
    source_type: IcebergType,
    name: str,
    rtype: IcebergType,
    fn: Callable[[Any], Any],
    pred: BoundPredicate,
) -> Any:
    """The inclusive projection where the type's edges or wrapped arithmetic matter."""
    op = pred.op
    zones = wrap_zones(t, source_type)
    if zones is not None and zones.unsafe:
        return _NOT_AT_EDGE if op in (Op.EQ, Op.IN) else None
    if op not in _RANGE_OPS:
        return _NOT_AT_EDGE
    bound = _stepped(op, pred.literal, source_type)
    if not _in_range(bound, source_type, zones):
        return AlwaysFalse()  # x < MIN or x > MAX: no row matches
    if zones is None or (zones.low_end is None and zones.high_start is None):
        return _NOT_AT_EDGE
    if zones.in_zone(bound):
        return None  # a wrapped literal orders nothing
    base = _ordered_inclusive(op, name, rtype, fn(bound))
    wrapped = zones.low_wrapped if op in (Op.LT, Op.LT_EQ) else zones.high_wrapped
    return base if wrapped is None else Or(base, _wrapped_pred(Op.IN, name, rtype, wrapped))


def _ordered_inclusive(op: Op, name: str, rtype: IcebergType, value: Any) -> Expression:
    return _pred(Op.LT_EQ if op in (Op.LT, Op.LT_EQ) else Op.GT_EQ, name, rtype, value)


def _edge_strict(
    t: Any,
    source_type: IcebergType,
    name: str,
    rtype: IcebergType,
    fn: Callable[[Any], Any],
    pred: BoundPredicate,
) -> Any:
    """The strict projection where the type's edges or wrapped arithmetic matter."""
    op = pred.op
    zones = wrap_zones(t, source_type)
    if zones is not None and zones.unsafe:
        return _NOT_AT_EDGE if op in (Op.NOT_EQ, Op.NOT_IN) else None
    if op not in _RANGE_OPS:
        return _NOT_AT_EDGE
    # strict x <= v uses t(v+1), x >= v uses t(v-1)
    delta = {Op.LT: 0, Op.LT_EQ: 1, Op.GT: 0, Op.GT_EQ: -1}[op]
    bound = _step(source_type, pred.literal, delta) if delta else pred.literal
    if not _in_range(bound, source_type, zones):
        return None  # cannot prove anything from a literal at the type's edge
    if zones is None or (zones.low_end is None and zones.high_start is None):
        return _NOT_AT_EDGE
    if zones.in_zone(bound):
        return None
    strict_op = Op.LT if op in (Op.LT, Op.LT_EQ) else Op.GT
    base = _pred(strict_op, name, rtype, fn(bound))
    # x < v: rows that wrapped from the top are large, whatever their partition value says
    wrapped = zones.high_wrapped if strict_op is Op.LT else zones.low_wrapped
    return base if wrapped is None else And(base, _wrapped_pred(Op.NOT_IN, name, rtype, wrapped))


class _Projection:
    """Callable turning a row filter into a partition filter for one spec."""

    def __init__(self, schema: Schema, spec: PartitionSpec, case_sensitive: bool, strict: bool) -> None:
        self.schema = schema
        self.spec = spec
        self.case_sensitive = case_sensitive
        self.strict = strict
        self.by_source: dict[int, list[PartitionField]] = {}
        for pf in spec.fields:
            self.by_source.setdefault(pf.source_id, []).append(pf)

    def __call__(self, row_filter: Expression) -> Expression:
        bound = rewrite_not(bind(self.schema, row_filter, self.case_sensitive))
        return self._visit(bound)

    def _visit(self, expr: Expression) -> Expression:
        if isinstance(expr, And):
            return And(self._visit(expr.left), self._visit(expr.right))
        if isinstance(expr, Or):
            return Or(self._visit(expr.left), self._visit(expr.right))
        if isinstance(expr, Not):  # not reached after rewrite_not; kept for safety
            return self._visit(expr.child.negate())
        if isinstance(expr, BoundPredicate):
            return self._project(expr)
        return expr

    def _project(self, pred: BoundPredicate) -> Expression:
        project = project_strict if self.strict else project_inclusive
        parts = [
            p
            for pf in self.by_source.get(pred.ref.field_id, ())
            if (p := project(pf, pred.ref.field_type, pred)) is not None
        ]
        if not parts:
            return AlwaysFalse() if self.strict else AlwaysTrue()
        return reduce(Or, parts) if self.strict else reduce(And, parts)


def inclusive_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[Expression], Expression]:
    """A function mapping a row filter to a partition filter that keeps every partition with a match."""
    return _Projection(schema, spec, case_sensitive, strict=False)


def strict_projection(
    schema: Schema, spec: PartitionSpec, case_sensitive: bool = True
) -> Callable[[Expression], Expression]:
    """A function mapping a row filter to a partition filter that keeps only all-matching partitions."""
    return _Projection(schema, spec, case_sensitive, strict=True)
