"""Value bounds: decoding serialised lower/upper bounds and testing predicates against them."""

from __future__ import annotations

import math
from typing import Any

from icefloe.errors import IcefloeError
from icefloe.expressions.ast import Op
from icefloe.expressions.bound import BoundPredicate
from icefloe.expressions.float_order import is_floating, ordered
from icefloe.spec.conversions import from_bytes
from icefloe.spec.types import IcebergType

__all__ = ["bounds_may_match", "decode_bound"]


def decode_bound(type_: IcebergType, data: bytes | None) -> Any:
    """A serialised bound as a value, or None when absent, undecodable or NaN (all mean unknown)."""
    if data is None:
        return None
    try:
        value = from_bytes(type_, data)
    except IcefloeError:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def bounds_may_match(pred: BoundPredicate, lower: Any, upper: Any) -> bool:
    """Whether non-null values within [lower, upper] may satisfy a comparison / set / prefix predicate.

    A None bound is unknown. Bounds may be truncated (strings, binary) as long as they still bound.
    """
    op, v = pred.op, pred.literal
    if is_floating(pred.ref.field_type):
        # -0.0 < 0.0 (expressions.float_order); a NaN bound (old writers) bounds nothing
        if any(isinstance(b, float) and math.isnan(b) for b in (lower, upper)):
            return True
        lower, upper = ordered(lower), ordered(upper)
        if op in (Op.IN, Op.NOT_IN):
            pred = BoundPredicate(op, pred.ref, None, frozenset(map(ordered, pred.literals or ())))
        v = ordered(v)
    if op is Op.LT:
        return lower is None or lower < v
    if op is Op.LT_EQ:
        return lower is None or lower <= v
    if op is Op.GT:
        return upper is None or upper > v
    if op is Op.GT_EQ:
        return upper is None or upper >= v
    if op is Op.EQ:
        return (lower is None or lower <= v) and (upper is None or v <= upper)
    if op is Op.IN:
        return any(
            (lower is None or lower <= x) and (upper is None or x <= upper) for x in pred.literals or ()
        )
    if op is Op.STARTS_WITH:
        k = len(v)
        if lower is not None and lower[:k] > v:
            return False
        return upper is None or upper[:k] >= v
    if op is Op.NOT_STARTS_WITH:
        # every value lies between the bounds; if both start with the prefix, so does every value
        return lower is None or upper is None or not (lower.startswith(v) and upper.startswith(v))
    return True
