"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour, void.

Values use icefloe's internal representation (see ``icefloe.spec.conversions``): int days for
date, int micros for time/timestamp(tz), int nanos for *_ns, ``Decimal``, ``str``, ``bytes``,
``uuid.UUID``. Every transform maps ``None`` to ``None``. ``str(t)`` is the transform's JSON form.
Unknown transform names parse to ``UnknownTransform``, kept for round-trip but never applied.
"""

from __future__ import annotations

import base64
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

import mmh3

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.conversions import (
    MICROS_PER_DAY,
    NANOS_PER_DAY,
    NANOS_PER_MICRO,
    civil_from_days,
    decimal_to_unscaled,
    format_date,
    format_time,
    format_timestamp,
    int_to_min_bytes,
    unscaled_to_decimal,
)
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
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema

INT_MAX_VALUE = 2**31 - 1
MICROS_PER_HOUR = 3_600_000_000
_LONG_LIKE = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_NANO_TS = (TimestampNanoType, TimestamptzNanoType)
_MICRO_TS = (TimestampType, TimestamptzType)
_TIMESTAMPS = _MICRO_TS + _NANO_TS
_BUCKET_SOURCES = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
    *_TIMESTAMPS,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)

_Fn = Callable[[Any], Any]


def _hash_long(value: int) -> int:
    return int(mmh3.hash(struct.pack("<q", value), 0, signed=True))


def _hash_bytes(data: bytes) -> int:
    return int(mmh3.hash(data, 0, signed=True))


def _double_bits(value: float) -> int:
    if value != value:  # NaN: canonical bit pattern
        return 0x7FF8000000000000
    if value == 0.0:  # -0.0 hashes like 0.0
        value = 0.0
    return int(struct.unpack("<q", struct.pack("<d", value))[0])


def bucket_hash(source_type: IcebergType, value: Any) -> int:
    """Signed 32-bit murmur3_x86_32 (seed 0) of a value's spec hash input (spec Appendix B)."""
    if isinstance(source_type, _LONG_LIKE):
        return _hash_long(value)
    if isinstance(source_type, _NANO_TS):
        return _hash_long(value // NANOS_PER_MICRO)
    if isinstance(source_type, DecimalType):
        return _hash_bytes(int_to_min_bytes(decimal_to_unscaled(value, source_type.scale)))
    if isinstance(source_type, StringType):
        return _hash_bytes(value.encode("utf-8"))
    if isinstance(source_type, UUIDType):
        return _hash_bytes(value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes)
    if isinstance(source_type, FixedType | BinaryType):
        return _hash_bytes(bytes(value))
    if isinstance(source_type, BooleanType):
        return _hash_long(1 if value else 0)
    if isinstance(source_type, FloatType | DoubleType):
        return _hash_long(_double_bits(float(value)))
    raise Unsupported(f"no 32-bit hash is defined for type {source_type}")


class Transform:
    """Base of partition/sort transforms: a function from a source value to a partition value."""

    preserves_order: ClassVar[bool] = False

    def can_transform(self, source_type: IcebergType) -> bool:
        """Whether this transform accepts values of ``source_type``."""
        raise NotImplementedError

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The type of the transform's output for ``source_type``."""
        raise NotImplementedError

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """A function applying this transform to values of ``source_type`` (None maps to None)."""
        raise NotImplementedError

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        """Transform one value of ``source_type``."""
        if value is None:
            return None
        return self.transform_fn(source_type)(value)

    def satisfies_order_of(self, other: Transform) -> bool:
        """True when data ordered by this transform is also ordered by ``other``."""
        return self == other

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        """Human-readable partition value (as used in partition paths), ``"null"`` for None."""
        if value is None:
            return "null"
        return _human(self.result_type(source_type), value)

    def _check(self, source_type: IcebergType) -> None:
        if not self.can_transform(source_type):
            raise ValidationError(f"transform {self} cannot be applied to type {source_type}")


def _human(result_type: IcebergType, value: Any) -> str:
    if isinstance(result_type, DateType):
        return format_date(value)
    if isinstance(result_type, TimeType):
        return format_time(value)
    if isinstance(result_type, _TIMESTAMPS):
        nanos = isinstance(result_type, _NANO_TS)
        tz = isinstance(result_type, TimestamptzType | TimestamptzNanoType)
        text = format_timestamp(value, nanos=nanos, tz=False)
        return text + "Z" if tz else text
    if isinstance(result_type, FixedType | BinaryType):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(result_type, BooleanType):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class IdentityTransform(Transform):
    """The source value unchanged."""

    preserves_order: ClassVar[bool] = True

    def can_transform(self, source_type: IcebergType) -> bool:
        """Any primitive type."""
        return source_type.is_primitive

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The source type."""
        return source_type

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """The identity function."""
        self._check(source_type)
        return lambda v: v

    def satisfies_order_of(self, other: Transform) -> bool:
        """Identity ordering satisfies any order-preserving transform."""
        return other.preserves_order

    def __str__(self) -> str:
        return "identity"


@dataclass(frozen=True, slots=True)
class BucketTransform(Transform):
    """``(murmur3(v) & Integer.MAX_VALUE) % N``."""

    num_buckets: int

    def __post_init__(self) -> None:
        if self.num_buckets <= 0:
            raise ValidationError(f"bucket transform needs a positive bucket count, got {self.num_buckets}")

    def can_transform(self, source_type: IcebergType) -> bool:
        """int, long, decimal, date, time, timestamps, string, uuid, fixed, binary."""
        return isinstance(source_type, _BUCKET_SOURCES)

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """Always int."""
        return IntegerType()

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Bucket number of a value."""
        self._check(source_type)
        n = self.num_buckets
        if isinstance(source_type, _LONG_LIKE):
            return lambda v: None if v is None else (_hash_long(v) & INT_MAX_VALUE) % n
        return lambda v: None if v is None else (bucket_hash(source_type, v) & INT_MAX_VALUE) % n

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"


def wrap_int(value: int, bits: int) -> int:
    """``value`` wrapped to a two's complement integer of ``bits`` bits (Java's int/long overflow)."""
    half = 1 << (bits - 1)
    return ((value + half) % (1 << bits)) - half


def _java_rem(a: int, b: int) -> int:
    """Java's ``a % b``: the remainder takes the dividend's sign."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_truncate(value: int, width: int, bits: int) -> int:
    """Iceberg Java's ``value - (((value % W) + W) % W)`` evaluated in ``bits``-bit arithmetic.

    Equal to ``value - value mod W`` except where that leaves the type's range (``value`` within
    ``W`` of the minimum, e.g. ``truncate(10, Integer.MIN_VALUE)``): there Java's result wraps to
    a large positive number, and that is the partition value Java-written tables hold.
    """
    shifted = wrap_int(_java_rem(value, width) + width, bits)
    return wrap_int(value - _java_rem(shifted, width), bits)


@dataclass(frozen=True, slots=True)
class TruncateTransform(Transform):
    """Truncate numbers down to a multiple of W, strings to W code points, binary to W bytes.

    Integers are truncated with Iceberg Java's arithmetic (``java_truncate``), wrapping at the
    type's limits exactly as Java writers do, so both write the same partition values.
    """

    preserves_order: ClassVar[bool] = True
    width: int

    def __post_init__(self) -> None:
        if self.width <= 0:
            raise ValidationError(f"truncate transform needs a positive width, got {self.width}")

    def can_transform(self, source_type: IcebergType) -> bool:
        """int, long, decimal, string, binary."""
        return isinstance(source_type, _TRUNCATE_SOURCES)

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The source type."""
        return source_type

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Truncation of a value."""
        self._check(source_type)
        w = self.width
        if isinstance(source_type, IntegerType | LongType):
            bits = 32 if isinstance(source_type, IntegerType) else 64
            return lambda v: None if v is None else java_truncate(v, w, bits)
        if isinstance(source_type, DecimalType):
            scale = source_type.scale

            def trunc_decimal(v: Decimal | None) -> Decimal | None:
                if v is None:
                    return None
                u = decimal_to_unscaled(v, scale)
                return unscaled_to_decimal(u - (u % w), scale)

            return trunc_decimal
        if isinstance(source_type, StringType):
            return lambda v: None if v is None else v[:w]
        return lambda v: None if v is None else bytes(v[:w])

    def satisfies_order_of(self, other: Transform) -> bool:
        """Same width (prefix widths differ in meaning between numbers and strings)."""
        return self == other

    def __str__(self) -> str:
        return f"truncate[{self.width}]"


def _to_days_fn(source_type: IcebergType) -> _Fn:
    if isinstance(source_type, DateType):
        return lambda v: v
    if isinstance(source_type, _NANO_TS):
        return lambda v: v // NANOS_PER_DAY
    return lambda v: v // MICROS_PER_DAY


def _years(days: int) -> int:
    return civil_from_days(days)[0] - 1970


def _months(days: int) -> int:
    y, m, _ = civil_from_days(days)
    return (y - 1970) * 12 + m - 1


class _TimeTransform(Transform):
    """Shared behaviour of year/month/day/hour."""

    preserves_order: ClassVar[bool] = True
    granularity: ClassVar[int] = 0  # hour=1, day=2, month=3, year=4

    def can_transform(self, source_type: IcebergType) -> bool:
        """date and all timestamp types."""
        return isinstance(source_type, (DateType, *_TIMESTAMPS))

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """int ordinal since 1970."""
        return IntegerType()

    def satisfies_order_of(self, other: Transform) -> bool:
        """A finer time transform satisfies the order of a coarser one."""
        if isinstance(other, _TimeTransform):
            return self.granularity <= other.granularity
        return self == other

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        """``2017``, ``2017-11``, ``2017-11-16`` or ``2017-11-16-22``."""
        if value is None:
            return "null"
        return self._human(value)

    def _human(self, value: int) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class YearTransform(_TimeTransform):
    """Years since 1970."""

    granularity: ClassVar[int] = 4

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Year ordinal of a date or timestamp."""
        self._check(source_type)
        days = _to_days_fn(source_type)
        return lambda v: None if v is None else _years(days(v))

    def _human(self, value: int) -> str:
        return f"{1970 + value:04d}"

    def __str__(self) -> str:
        return "year"


@dataclass(frozen=True, slots=True)
class MonthTransform(_TimeTransform):
    """Months since 1970-01."""

    granularity: ClassVar[int] = 3

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Month ordinal of a date or timestamp."""
        self._check(source_type)
        days = _to_days_fn(source_type)
        return lambda v: None if v is None else _months(days(v))

    def _human(self, value: int) -> str:
        y, m = divmod(value, 12)
        return f"{1970 + y:04d}-{m + 1:02d}"

    def __str__(self) -> str:
        return "month"


@dataclass(frozen=True, slots=True)
class DayTransform(_TimeTransform):
    """Days since 1970-01-01 (result type date)."""

    granularity: ClassVar[int] = 2

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """date."""
        return DateType()

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Day ordinal of a date or timestamp."""
        self._check(source_type)
        days = _to_days_fn(source_type)
        return lambda v: None if v is None else days(v)

    def _human(self, value: int) -> str:
        return format_date(value)

    def __str__(self) -> str:
        return "day"


@dataclass(frozen=True, slots=True)
class HourTransform(_TimeTransform):
    """Hours since 1970-01-01 00:00."""

    granularity: ClassVar[int] = 1

    def can_transform(self, source_type: IcebergType) -> bool:
        """Timestamp types only."""
        return isinstance(source_type, _TIMESTAMPS)

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Hour ordinal of a timestamp."""
        self._check(source_type)
        per_hour = MICROS_PER_HOUR * (NANOS_PER_MICRO if isinstance(source_type, _NANO_TS) else 1)
        # Java casts the long hour count to int: beyond ~245,000 years from 1970 it wraps.
        return lambda v: None if v is None else wrap_int(v // per_hour, 32)

    def _human(self, value: int) -> str:
        days, hour = divmod(value, 24)
        return f"{format_date(days)}-{hour:02d}"

    def __str__(self) -> str:
        return "hour"


@dataclass(frozen=True, slots=True)
class VoidTransform(Transform):
    """Always null; used to drop a partition field in v1 tables."""

    def can_transform(self, source_type: IcebergType) -> bool:
        """Any type."""
        return True

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """The source type."""
        return source_type

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Always None."""
        return lambda v: None

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        """Always None."""
        return None

    def to_human_string(self, source_type: IcebergType, value: Any) -> str:
        """Always ``"null"``."""
        return "null"

    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True, slots=True)
class UnknownTransform(Transform):
    """A transform this implementation does not know; kept verbatim, never applied."""

    text: str

    def can_transform(self, source_type: IcebergType) -> bool:
        """Never."""
        return False

    def result_type(self, source_type: IcebergType) -> IcebergType:
        """string (readers ignore these partition fields)."""
        return StringType()

    def transform_fn(self, source_type: IcebergType) -> _Fn:
        """Raises Unsupported."""
        raise Unsupported(f"cannot apply unknown transform {self.text!r}")

    def apply(self, source_type: IcebergType, value: Any) -> Any:
        """Raises Unsupported."""
        raise Unsupported(f"cannot apply unknown transform {self.text!r}")

    def __str__(self) -> str:
        return self.text


_PARAM = re.compile(r"(bucket|truncate)\[\s*(\d+)\s*\]")
_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}


def parse_transform(text: str) -> Transform:
    """Parse a transform's JSON form (``"bucket[16]"``, ``"day"``); unknown names give UnknownTransform."""
    key = text.strip().lower()
    if key in _SIMPLE:
        return _SIMPLE[key]
    if m := _PARAM.fullmatch(key):
        n = int(m.group(2))
        if n > 0:
            return BucketTransform(n) if m.group(1) == "bucket" else TruncateTransform(n)
    return UnknownTransform(text)


def check_transform_source(schema: Schema, source_id: int, transform: Transform, what: str) -> None:
    """Raise ValidationError unless ``source_id`` is a column of ``schema`` the transform accepts.

    Unknown and void transforms accept any existing column.
    """
    try:
        source = schema.find_field(source_id)
    except ValidationError:
        raise ValidationError(
            f"{what} references column id {source_id}, which is not in the schema"
        ) from None
    if isinstance(transform, UnknownTransform | VoidTransform):
        return
    if not transform.can_transform(source.field_type):
        raise ValidationError(
            f"{what}: transform {transform} cannot be applied to column "
            f"{schema.find_column_name(source_id)!r} of type {source.field_type}"
        )
