"""Literal conversion for binding: user values to the internal representation of a column's type.

Numbers, dates and timestamps are placed on the column's value grid: a literal that falls between
two representable values (``1.5`` for an int column, a timestamp with a time of day for a date
column, a value above the type's range) is reported as not exact, with its neighbours, so that
binding can rewrite ``x < 1.5`` as ``x <= 1`` instead of rejecting or silently rounding it.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

from icefloe.errors import ValidationError
from icefloe.spec.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    NANOS_PER_MICRO,
    parse_literal,
    parse_timestamp,
    shift_decimal_point,
    unscaled_to_decimal,
)
from icefloe.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampType,
    TimestamptzType,
)


@dataclass(frozen=True, slots=True)
class Converted:
    """A literal on the column's value grid.

    Exact literals have ``low == high == value``. Otherwise the literal lies strictly between the
    adjacent representable values ``low`` and ``high``; ``low`` is None when the literal is below
    every representable value and ``high`` is None when it is above every one.
    """

    low: Any
    high: Any
    exact: bool

    @property
    def value(self) -> Any:
        """The converted value of an exact literal."""
        return self.low


def _exact(value: Any) -> Converted:
    return Converted(value, value, True)


def _on_int_grid(d: Decimal, low: int, high: int) -> Converted:
    if d.is_infinite() or d > high:
        return Converted(high, None, False) if d > 0 else Converted(None, low, False)
    if d < low:
        return Converted(None, low, False)
    floor = int(d.to_integral_value(ROUND_FLOOR))
    if floor == d:
        return _exact(floor)
    return Converted(floor, int(d.to_integral_value(ROUND_CEILING)), False)


def _as_decimal(type_: IcebergType, value: Any) -> Decimal | None:
    """A number as an exact Decimal (None when the value is not a number of any kind)."""
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | Decimal):
            d = Decimal(value)
        elif isinstance(value, float):
            d = Decimal(repr(value)) if math.isfinite(value) else Decimal(value)
        elif isinstance(value, str):
            d = Decimal(value.strip())
        else:
            return None
    except InvalidOperation:
        return None
    if d.is_nan():
        raise ValidationError(f"cannot convert {value!r} to {type_}: NaN cannot be compared")
    return d


def _convert_integer(type_: IntegerType | LongType, value: Any) -> Converted:
    d = _as_decimal(type_, value)
    if d is None:
        return _exact(parse_literal(type_, value))  # raises the standard error
    low, high = (INT_MIN, INT_MAX) if isinstance(type_, IntegerType) else (LONG_MIN, LONG_MAX)
    return _on_int_grid(d, low, high)


def _convert_decimal(type_: DecimalType, value: Any) -> Converted:
    d = _as_decimal(type_, value)
    if d is None:
        return _exact(parse_literal(type_, value))
    limit = 10**type_.precision - 1
    grid = _on_int_grid(shift_decimal_point(d, type_.scale), -limit, limit)
    low = None if grid.low is None else unscaled_to_decimal(grid.low, type_.scale)
    high = None if grid.high is None else unscaled_to_decimal(grid.high, type_.scale)
    return Converted(low, high, grid.exact)


def _convert_date(type_: DateType, value: Any) -> Converted:
    try:
        return _exact(parse_literal(type_, value))
    except ValidationError:
        # a timestamp for a date column: compare against the day grid
        if isinstance(value, dt.datetime):
            micros = parse_literal(TimestamptzType() if value.tzinfo else TimestampType(), value)
        elif isinstance(value, str):
            try:
                micros = parse_timestamp(value)
            except ValidationError:
                micros = None
            if micros is None:
                raise
        else:
            raise
    days, rem = divmod(micros, MICROS_PER_DAY)
    return _exact(days) if rem == 0 else Converted(days, days + 1, False)


def _convert_timestamp_micros(type_: IcebergType, value: Any) -> Converted:
    try:
        return _exact(parse_literal(type_, value))
    except ValidationError:
        if not isinstance(value, str):
            raise
        try:
            nanos = parse_timestamp(value, nanos=True, tz=isinstance(type_, TimestamptzType))
        except ValidationError:
            nanos = None
        if nanos is None:
            raise
    micros, rem = divmod(nanos, NANOS_PER_MICRO)
    return _exact(micros) if rem == 0 else Converted(micros, micros + 1, False)


def convert_literal(type_: IcebergType, value: Any) -> Converted:
    """Place a user literal on the grid of a primitive column type; ValidationError when it cannot fit.

    Floating point literals are kept as Python floats (doubles) for float columns, so comparisons
    are exact for the stored single-precision values.
    """
    if isinstance(type_, IntegerType | LongType):
        return _convert_integer(type_, value)
    if isinstance(type_, DecimalType):
        return _convert_decimal(type_, value)
    if isinstance(type_, DateType):
        return _convert_date(type_, value)
    if isinstance(type_, TimestampType | TimestamptzType):
        return _convert_timestamp_micros(type_, value)
    if isinstance(type_, FloatType | DoubleType):
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
            return _exact(parse_literal(type_, value))
        try:
            out = float(value)
        except (ValueError, OverflowError):
            return _exact(parse_literal(type_, value))
        if math.isnan(out):
            raise ValidationError(f"cannot convert {value!r} to {type_}: NaN cannot be compared")
        return _exact(out)
    return _exact(parse_literal(type_, value))
