"""How icefloe compares float and double values: Iceberg Java's rules, NaN aside.

- ``-0.0`` and ``0.0`` are different values ordered as Java's ``Double.compare`` orders them
  (``-0.0 < 0.0``), in filters on rows, on partition values and on column bounds alike, as
  Iceberg Java's expression evaluator (``Comparators.forType``) does: ``x = 0.0`` does not match
  ``-0.0``, ``x < 0.0`` does, ``x >= 0.0`` does not. (Writers widen zero bounds, lower ``-0.0``
  / upper ``0.0``, so files written by other engines are never wrongly skipped.)
- NaN is not ordered: it satisfies no ``=``, ``<``, ``<=``, ``>``, ``>=`` or ``IN`` and
  satisfies ``!=`` and ``NOT IN`` (IEEE 754, and what Iceberg's metrics evaluators assume: NaN
  never counts in lower/upper bounds and a file of only NaN values matches no comparison). Test
  for it with ``is_nan`` / ``IS NAN``; a NaN literal in a comparison is refused at binding.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from icefloe.spec.types import DoubleType, FloatType, IcebergType


def is_floating(type_: IcebergType) -> bool:
    """Float or double."""
    return isinstance(type_, FloatType | DoubleType)


def total_order_key(value: float) -> int:
    """An integer ordered as Java's ``Double.compare`` orders doubles (``-0.0 < 0.0``)."""
    (bits,) = struct.unpack(">q", struct.pack(">d", value))
    return bits if bits >= 0 else bits ^ 0x7FFFFFFFFFFFFFFF


def ordered(value: Any) -> Any:
    """``value`` as a comparison key: non-NaN floats by total order, anything else as is."""
    if isinstance(value, float) and not math.isnan(value):
        return total_order_key(value)
    return value


def comparable_floats(*values: Any) -> bool:
    """Whether all values are non-NaN floats (compared by total order)."""
    return all(isinstance(v, float) and not math.isnan(v) for v in values)


def float_in(value: float, literals: Any) -> bool:
    """``value IN literals`` with ``-0.0`` and ``0.0`` kept apart."""
    key = total_order_key(value)
    return any(comparable_floats(x) and total_order_key(x) == key for x in literals)
