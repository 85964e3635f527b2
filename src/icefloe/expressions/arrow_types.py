"""The Arrow type of each Iceberg primitive type: one table for the whole package.

Data files (``formats.arrow_schema``) and filter literals (``expressions.arrow``) both map Iceberg
primitives to Arrow; the table lives here, the lowest layer that may import pyarrow, so the two
cannot disagree. Literals differ in one place only: a ``float`` column's literals stay doubles.
"""

from __future__ import annotations

import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

__all__ = ["literal_arrow_type", "primitive_to_arrow"]

_PRIMITIVES: dict[type[PrimitiveType], pa.DataType] = {
    BooleanType: pa.bool_(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    DateType: pa.date32(),
    TimeType: pa.time64("us"),
    TimestampType: pa.timestamp("us"),
    TimestamptzType: pa.timestamp("us", tz="UTC"),
    TimestampNanoType: pa.timestamp("ns"),
    TimestamptzNanoType: pa.timestamp("ns", tz="UTC"),
    StringType: pa.string(),
    UUIDType: pa.binary(16),
    BinaryType: pa.binary(),
    UnknownType: pa.null(),
}


def primitive_to_arrow(t: PrimitiveType) -> pa.DataType:
    """The Arrow type of an Iceberg primitive type."""
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    try:
        return _PRIMITIVES[type(t)]
    except KeyError:
        raise ValidationError(f"no Arrow type for Iceberg type {t}") from None


def literal_arrow_type(type_: IcebergType) -> pa.DataType:
    """The Arrow type used for literals compared with a column of this Iceberg type.

    A column's own type, except that ``float`` literals stay doubles (so comparisons with float32
    values are exact) and ``unknown`` (always null) and nested types take no literal.
    """
    if isinstance(type_, FloatType):
        return pa.float64()
    if not isinstance(type_, PrimitiveType) or isinstance(type_, UnknownType):
        raise ValidationError(f"no Arrow literal type for Iceberg type {type_}")
    return primitive_to_arrow(type_)
