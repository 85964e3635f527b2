"""Where a writer's transform arithmetic wraps: the source values whose partition value overflowed.

Iceberg Java computes ``truncate(W, v) = v - (((v % W) + W) % W)`` in int (or long) arithmetic and
``hour(ts)`` as a long cast to int. Both wrap at the type's limits: ``truncate(10,
Integer.MIN_VALUE)`` is ``2147483646``, and the hour of a timestamp ~245,000 years from 1970
wraps around. icefloe's transforms compute the same values (``spec.transforms``), so tables
written by either hold them, and partition pruning must not assume the order-preserving
arithmetic that breaks there. A ``WrapZones`` tells ``expressions.projection``:

- ``source_min`` / ``source_max``: the source type's range (literal steps past them match no row);
- ``low_end``: source values ``<= low_end`` wrapped; their partition values lie in ``low_wrapped``;
- ``high_start``: source values ``>= high_start`` wrapped into ``high_wrapped``;
- ``unsafe``: the arithmetic can wrap anywhere (a truncate width above a quarter of the type's
  range): only equality can be projected (the writer's function applied to the literal).
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.spec.transforms import (
    HourTransform,
    Transform,
    TruncateTransform,
    java_truncate,
    wrap_int,
)
from icefloe.spec.types import (
    DateType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
MICROS_PER_HOUR = 3_600_000_000
NANOS_PER_HOUR = 3_600_000_000_000

_INT_LIKE = (IntegerType, DateType)
_LONG_LIKE = (LongType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


@dataclass(frozen=True)
class WrapZones:
    """The wrapped regions of one transform on one source type (see the module doc)."""

    source_min: int
    source_max: int
    low_end: int | None = None
    low_wrapped: tuple[int, int] | None = None
    high_start: int | None = None
    high_wrapped: tuple[int, int] | None = None
    unsafe: bool = False

    def in_zone(self, value: int) -> bool:
        """Whether a source value's partition value wrapped."""
        return (self.low_end is not None and value <= self.low_end) or (
            self.high_start is not None and value >= self.high_start
        )

    def out_of_range(self, value: int) -> bool:
        """Whether a (stepped) literal lies outside the source type."""
        return value < self.source_min or value > self.source_max


def source_range(source_type: IcebergType) -> tuple[int, int] | None:
    """The integer range of an int-represented source type (int, date, long, timestamps)."""
    if isinstance(source_type, _INT_LIKE):
        return INT_MIN, INT_MAX
    if isinstance(source_type, _LONG_LIKE):
        return LONG_MIN, LONG_MAX
    return None


def wrap_zones(transform: Transform, source_type: IcebergType) -> WrapZones | None:
    """The wrap zones of ``transform`` on ``source_type``; None for a non-integer source."""
    bounds = source_range(source_type)
    if bounds is None:
        return None
    lo, hi = bounds
    if isinstance(transform, TruncateTransform) and isinstance(source_type, IntegerType | LongType):
        bits = 32 if isinstance(source_type, IntegerType) else 64
        width = transform.width
        if width > 2 ** (bits - 2):  # (v % W) + W itself can overflow
            return WrapZones(lo, hi, unsafe=True)
        remainder = lo % width
        if remainder == 0:
            return WrapZones(lo, hi)
        wrapped = java_truncate(lo, width, bits)
        return WrapZones(lo, hi, low_end=lo - remainder + width - 1, low_wrapped=(wrapped, wrapped))
    if isinstance(transform, HourTransform) and isinstance(source_type, _LONG_LIKE):
        nanos = isinstance(source_type, TimestampNanoType | TimestamptzNanoType)
        per_hour = NANOS_PER_HOUR if nanos else MICROS_PER_HOUR
        if lo // per_hour >= INT_MIN:
            return WrapZones(lo, hi)
        return WrapZones(
            lo,
            hi,
            low_end=INT_MIN * per_hour - 1,
            low_wrapped=(wrap_int(lo // per_hour, 32), INT_MAX),
            high_start=(INT_MAX + 1) * per_hour,
            high_wrapped=(INT_MIN, wrap_int(hi // per_hour, 32)),
        )
    return WrapZones(lo, hi)
