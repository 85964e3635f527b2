"""Single-value conversions: binary and JSON serialisation (spec Appendix D) and user literals.

Internal value representation used everywhere in icefloe:

=====================  =====================================================
Iceberg type           Python value
=====================  =====================================================
boolean                ``bool``
int, long              ``int``
float, double          ``float``
decimal(P, S)          ``decimal.Decimal`` (with exponent ``-S``)
date                   ``int`` days since 1970-01-01
time                   ``int`` microseconds since midnight
timestamp(tz)          ``int`` microseconds since 1970-01-01T00:00:00 (UTC for tz)
timestamp(tz)_ns       ``int`` nanoseconds since 1970-01-01T00:00:00 (UTC for tz)
string                 ``str``
uuid                   ``uuid.UUID``
fixed(L), binary       ``bytes``
struct                 ``dict[int, Any]`` keyed by field id
list                   ``list``
map                    ``dict``
=====================  =====================================================
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from icefloe.errors import Unsupported, ValidationError
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
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
NANOS_PER_MICRO = 1_000
NANOS_PER_DAY = MICROS_PER_DAY * NANOS_PER_MICRO
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

_MICRO_TS = (TimestampType, TimestamptzType)
_NANO_TS = (TimestampNanoType, TimestamptzNanoType)
_TZ_TYPES = (TimestamptzType, TimestamptzNanoType)


# ---------------------------------------------------------------------------------------------
# calendar arithmetic (proleptic Gregorian, valid for any integer day count)


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian calendar date."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def date_to_days(value: dt.date) -> int:
    """Days since the epoch of a ``datetime.date``."""
    return days_from_civil(value.year, value.month, value.day)


def days_to_date(days: int) -> dt.date:
    """``datetime.date`` of a day count since the epoch (years 1..9999 only)."""
    return dt.date(*civil_from_days(days))


def time_to_micros(value: dt.time) -> int:
    """Microseconds since midnight of a ``datetime.time``."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * MICROS_PER_SECOND + value.microsecond


def micros_to_time(micros: int) -> dt.time:
    """``datetime.time`` of a microsecond-of-day count."""
    seconds, us = divmod(micros, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return dt.time(h, m, s, us)


def datetime_to_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch; aware datetimes are converted to UTC first."""
    if value.tzinfo is not None:
        offset = value.utcoffset() or dt.timedelta(0)
        value = value.replace(tzinfo=None) - offset
    days = date_to_days(value.date())
    return days * MICROS_PER_DAY + time_to_micros(value.time())


# ---------------------------------------------------------------------------------------------
# decimals


def decimal_to_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of a decimal at ``scale``; raises ValidationError when digits would be lost."""
    if not value.is_finite():
        raise ValidationError(f"{value!r} is not a finite decimal")
    # Exact integer arithmetic on the digit tuple: Decimal.scaleb rounds to the context
    # precision (28 digits), which would corrupt decimal(38, s) bounds.
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        unscaled = magnitude * 10**shift
    else:
        unscaled, remainder = divmod(magnitude, 10**-shift)
        if remainder:
            raise ValidationError(f"decimal {value} has more than {scale} fraction digits")
    return -unscaled if sign else unscaled


def shift_decimal_point(value: Decimal, places: int) -> Decimal:
    """``value * 10**places``, exactly: ``Decimal.scaleb`` and arithmetic round to 28 digits."""
    if not value.is_finite():
        return value
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    return Decimal((sign, digits, exponent + places))


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The decimal whose unscaled value at ``scale`` is ``unscaled`` (exponent ``-scale``)."""
    sign = 1 if unscaled < 0 else 0
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((sign, digits, -scale))


def int_to_min_bytes(value: int) -> bytes:
    """Minimum-length two's-complement big-endian bytes of an integer (Java ``BigInteger.toByteArray``)."""
    length = (value if value >= 0 else ~value).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


# ---------------------------------------------------------------------------------------------
# binary single-value serialisation


def to_bytes(type_: IcebergType, value: Any) -> bytes:
    """Binary single-value serialisation of an internal value (spec Appendix D)."""
    try:
        if isinstance(type_, BooleanType):
            return b"\x01" if value else b"\x00"
        if isinstance(type_, IntegerType | DateType):
            return struct.pack("<i", value)
        if isinstance(type_, (LongType, TimeType, *_MICRO_TS, *_NANO_TS)):
            return struct.pack("<q", value)
        if isinstance(type_, FloatType):
            return struct.pack("<f", value)
        if isinstance(type_, DoubleType):
            return struct.pack("<d", value)
        if isinstance(type_, StringType):
            return str(value).encode("utf-8")
        if isinstance(type_, UUIDType):
            return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes
        if isinstance(type_, FixedType | BinaryType):
            return bytes(value)
        if isinstance(type_, DecimalType):
            return int_to_min_bytes(decimal_to_unscaled(Decimal(value), type_.scale))
    except (struct.error, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"cannot serialise {value!r} as {type_}: {exc}") from exc
    raise Unsupported(f"binary single-value serialisation is not defined for type {type_}")


def from_bytes(type_: IcebergType, data: bytes) -> Any:
    """Decode a binary single value; infers the written type for promoted bounds (int→long etc.)."""
    try:
        if isinstance(type_, BooleanType):
            return len(data) > 0 and data[0] != 0
        if isinstance(type_, IntegerType | DateType):
            return struct.unpack("<i", data)[0]
        if isinstance(type_, LongType):
            return struct.unpack("<i" if len(data) == 4 else "<q", data)[0]
        if isinstance(type_, TimeType):
            return struct.unpack("<q", data)[0]
        if isinstance(type_, (*_MICRO_TS, *_NANO_TS)):
            if len(data) == 4:  # promoted from date
                days = struct.unpack("<i", data)[0]
                return days * (NANOS_PER_DAY if isinstance(type_, _NANO_TS) else MICROS_PER_DAY)
            return struct.unpack("<q", data)[0]
        if isinstance(type_, FloatType):
            return struct.unpack("<f", data)[0]
        if isinstance(type_, DoubleType):
            return struct.unpack("<f" if len(data) == 4 else "<d", data)[0]
        if isinstance(type_, StringType):
            return bytes(data).decode("utf-8")
        if isinstance(type_, UUIDType):
            return uuid.UUID(bytes=bytes(data))
        if isinstance(type_, FixedType | BinaryType):
            return bytes(data)
        if isinstance(type_, DecimalType):
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), type_.scale)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise ValidationError(f"cannot decode {bytes(data).hex()} as {type_}: {exc}") from exc
    raise Unsupported(f"binary single-value serialisation is not defined for type {type_}")


# ---------------------------------------------------------------------------------------------
# ISO-8601 text


def format_date(days: int) -> str:
    """ISO date text of a day count (``2017-11-16``)."""
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def format_time(micros: int) -> str:
    """ISO time text with microseconds (``22:31:08.123456``)."""
    seconds, us = divmod(micros, MICROS_PER_SECOND)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    return f"{h:02d}:{m:02d}:{s:02d}.{us:06d}"


def format_timestamp(value: int, nanos: bool = False, tz: bool = False) -> str:
    """ISO timestamp text with 6 (or 9 for nanos) fraction digits, ``+00:00`` when ``tz``."""
    unit_per_day = NANOS_PER_DAY if nanos else MICROS_PER_DAY
    unit_per_second = unit_per_day // 86_400
    days, rem = divmod(value, unit_per_day)
    seconds, frac = divmod(rem, unit_per_second)
    minutes, s = divmod(seconds, 60)
    h, m = divmod(minutes, 60)
    digits = 9 if nanos else 6
    text = f"{format_date(days)}T{h:02d}:{m:02d}:{s:02d}.{frac:0{digits}d}"
    return text + "+00:00" if tz else text


_DATE_RE = re.compile(r"([+-]?\d{4,})-(\d{2})-(\d{2})")
_TIME_RE = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?")
_TS_RE = re.compile(
    r"([+-]?\d{4,})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_date(text: str) -> int:
    """Days since the epoch of an ISO date string."""
    m = _DATE_RE.fullmatch(text.strip())
    if not m:
        raise ValidationError(f"{text!r} is not an ISO date (expected YYYY-MM-DD)")
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    _check_ymd(text, y, mo, d)
    return days_from_civil(y, mo, d)


def _check_ymd(text: str, y: int, mo: int, d: int) -> None:
    if not 1 <= mo <= 12 or not 1 <= d <= 31 or civil_from_days(days_from_civil(y, mo, d)) != (y, mo, d):
        raise ValidationError(f"{text!r} is not a valid calendar date")


def parse_time(text: str) -> int:
    """Microseconds since midnight of an ISO time string."""
    m = _TIME_RE.fullmatch(text.strip())
    if not m:
        raise ValidationError(f"{text!r} is not an ISO time (expected HH:MM:SS[.ffffff])")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValidationError(f"{text!r} is not a valid time of day")
    frac = (m.group(4) or "").ljust(9, "0")
    nanos = int(frac)
    if nanos % NANOS_PER_MICRO:
        raise ValidationError(f"{text!r} has more than microsecond precision")
    return ((h * 60 + mi) * 60 + s) * MICROS_PER_SECOND + nanos // NANOS_PER_MICRO


def parse_timestamp(text: str, nanos: bool = False, tz: bool = False) -> int:
    """Epoch micros (or nanos) of an ISO timestamp; zone offsets are applied for tz types only.

    A date alone means midnight. Timestamps with time zone without an offset are taken as UTC;
    timestamps without time zone reject an offset.
    """
    m = _TS_RE.fullmatch(text.strip())
    if not m:
        raise ValidationError(f"{text!r} is not an ISO-8601 timestamp")
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    _check_ymd(text, y, mo, d)
    h, mi, s = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
    if h > 23 or mi > 59 or s > 59:
        raise ValidationError(f"{text!r} has an invalid time of day")
    frac_ns = int((m.group(7) or "").ljust(9, "0"))
    offset = m.group(8)
    offset_seconds = 0
    if offset:
        if not tz:
            raise ValidationError(f"{text!r} has a zone offset but the type is a timestamp without time zone")
        if offset not in ("Z", "z"):
            sign = -1 if offset[0] == "-" else 1
            digits = offset[1:].replace(":", "")
            offset_seconds = sign * (int(digits[:2]) * 3600 + int(digits[2:4] or 0) * 60)
    seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_seconds
    total_ns = seconds * 1_000_000_000 + frac_ns
    if nanos:
        return total_ns
    if frac_ns % NANOS_PER_MICRO:
        raise ValidationError(f"{text!r} has more than microsecond precision")
    return total_ns // NANOS_PER_MICRO


# ---------------------------------------------------------------------------------------------
# JSON single-value serialisation


def to_json_value(type_: IcebergType, value: Any) -> Any:
    """JSON single-value serialisation of an internal value (spec Appendix D)."""
    if value is None:
        return None
    if isinstance(type_, BooleanType):
        return bool(value)
    if isinstance(type_, IntegerType | LongType):
        return int(value)
    if isinstance(type_, FloatType | DoubleType):
        return float(value)
    if isinstance(type_, DecimalType):
        return str(unscaled_to_decimal(decimal_to_unscaled(Decimal(value), type_.scale), type_.scale))
    if isinstance(type_, DateType):
        return format_date(value)
    if isinstance(type_, TimeType):
        return format_time(value)
    if isinstance(type_, _MICRO_TS + _NANO_TS):
        return format_timestamp(value, nanos=isinstance(type_, _NANO_TS), tz=isinstance(type_, _TZ_TYPES))
    if isinstance(type_, StringType):
        return str(value)
    if isinstance(type_, UUIDType):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))
    if isinstance(type_, FixedType | BinaryType):
        return bytes(value).hex()
    if isinstance(type_, StructType):
        out: dict[str, Any] = {}
        for f in type_.fields:
            key: Any = f.field_id if f.field_id in value else f.name
            if key in value:
                out[str(f.field_id)] = to_json_value(f.field_type, value[key])
        return out
    if isinstance(type_, ListType):
        return [to_json_value(type_.element_type, v) for v in value]
    if isinstance(type_, MapType):
        items = list(value.items())
        return {
            "keys": [to_json_value(type_.key_type, k) for k, _ in items],
            "values": [to_json_value(type_.value_type, v) for _, v in items],
        }
    raise Unsupported(f"JSON single-value serialisation is not defined for type {type_}")


def from_json_value(type_: IcebergType, value: Any) -> Any:
    """Parse a JSON single value into the internal representation; ValidationError on mismatch."""
    if value is None:
        return None
    if isinstance(type_, StructType):
        if not isinstance(value, dict):
            raise ValidationError(f"expected a JSON object for {type_}, got {value!r}")
        out: dict[int, Any] = {}
        for f in type_.fields:
            if str(f.field_id) in value:
                out[f.field_id] = from_json_value(f.field_type, value[str(f.field_id)])
        return out
    if isinstance(type_, ListType):
        if not isinstance(value, list):
            raise ValidationError(f"expected a JSON array for {type_}, got {value!r}")
        return [from_json_value(type_.element_type, v) for v in value]
    if isinstance(type_, MapType):
        if not isinstance(value, dict) or not isinstance(value.get("keys"), list):
            raise ValidationError(f"expected {{'keys': [...], 'values': [...]}} for {type_}, got {value!r}")
        keys = [from_json_value(type_.key_type, k) for k in value["keys"]]
        values = [from_json_value(type_.value_type, v) for v in value.get("values", [])]
        if len(keys) != len(values):
            raise ValidationError(f"map value {value!r} has {len(keys)} keys but {len(values)} values")
        return dict(zip(keys, values, strict=True))
    if isinstance(type_, FixedType | BinaryType) and isinstance(value, str):
        try:
            return _check_fixed(type_, bytes.fromhex(value))
        except ValueError as exc:
            raise ValidationError(f"{value!r} is not a hexadecimal string for {type_}") from exc
    return parse_literal(type_, value)


# ---------------------------------------------------------------------------------------------
# user literals


def _bad(value: Any, type_: IcebergType, why: str = "") -> ValidationError:
    extra = f": {why}" if why else ""
    return ValidationError(f"cannot convert {value!r} to {type_}{extra}")


def _check_fixed(type_: IcebergType, data: bytes) -> bytes:
    if isinstance(type_, FixedType) and len(data) != type_.length:
        raise _bad(data, type_, f"expected {type_.length} bytes, got {len(data)}")
    return data


def _to_int(type_: IcebergType, value: Any) -> int:
    if isinstance(value, bool):
        raise _bad(value, type_)
    if isinstance(value, int):
        out = value
    elif isinstance(value, float | Decimal):
        if not math.isfinite(value) or value != int(value):
            raise _bad(value, type_, "not a whole number")
        out = int(value)
    elif isinstance(value, str):
        try:
            out = int(value.strip())
        except ValueError:
            raise _bad(value, type_, "not an integer") from None
    else:
        raise _bad(value, type_)
    low, high = (INT_MIN, INT_MAX) if isinstance(type_, IntegerType) else (LONG_MIN, LONG_MAX)
    if not low <= out <= high:
        raise _bad(value, type_, "out of range")
    return out


def _to_decimal(type_: DecimalType, value: Any) -> Decimal:
    if isinstance(value, bool):
        raise _bad(value, type_)
    try:
        if isinstance(value, float):
            d = Decimal(repr(value))
        elif isinstance(value, int | Decimal | str):
            d = Decimal(value.strip() if isinstance(value, str) else value)
        else:
            raise _bad(value, type_)
        unscaled = decimal_to_unscaled(d, type_.scale)
    except (InvalidOperation, ValidationError) as exc:
        raise _bad(value, type_, str(exc) if isinstance(exc, ValidationError) else "") from None
    if len(str(abs(unscaled))) > type_.precision:
        raise _bad(value, type_, f"more than {type_.precision} digits")
    return unscaled_to_decimal(unscaled, type_.scale)


def _to_temporal(type_: IcebergType, value: Any) -> int:
    nanos = isinstance(type_, _NANO_TS)
    tz = isinstance(type_, _TZ_TYPES)
    per_micro = NANOS_PER_MICRO if nanos else 1
    if isinstance(value, bool):
        raise _bad(value, type_)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return parse_timestamp(value, nanos=nanos, tz=tz)
        except ValidationError as exc:
            raise _bad(value, type_, str(exc)) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and not tz:
            raise _bad(value, type_, "a timestamp without time zone needs a naive datetime")
        return datetime_to_micros(value) * per_micro
    if isinstance(value, dt.date):
        return date_to_days(value) * MICROS_PER_DAY * per_micro
    raise _bad(value, type_)


def parse_literal(type_: IcebergType, value: Any) -> Any:
    """Turn a Python value or string (``"2024-01-02"``, ``datetime``, ``"12.50"``) into the internal form.

    Raises ValidationError naming the value and the type when it does not fit.
    """
    if value is None:
        return None
    if isinstance(type_, BooleanType):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _bad(value, type_)
    if isinstance(type_, IntegerType | LongType):
        return _to_int(type_, value)
    if isinstance(type_, FloatType | DoubleType):
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
            raise _bad(value, type_)
        try:
            out = float(value)
        except ValueError:
            raise _bad(value, type_, "not a number") from None
        if isinstance(type_, FloatType) and math.isfinite(out) and abs(out) > 3.4028234663852886e38:
            raise _bad(value, type_, "out of range")
        return out
    if isinstance(type_, DecimalType):
        return _to_decimal(type_, value)
    if isinstance(type_, DateType):
        if isinstance(value, dt.datetime):
            if value.time() != dt.time(0) or value.tzinfo is not None:
                raise _bad(value, type_, "a date cannot carry a time of day")
            return date_to_days(value.date())
        if isinstance(value, dt.date):
            return date_to_days(value)
        if isinstance(value, str):
            try:
                return parse_date(value)
            except ValidationError as exc:
                raise _bad(value, type_, str(exc)) from None
        if isinstance(value, int) and not isinstance(value, bool):
            return _to_int(IntegerType(), value)
        raise _bad(value, type_)
    if isinstance(type_, TimeType):
        if isinstance(value, dt.time):
            return time_to_micros(value)
        if isinstance(value, str):
            try:
                return parse_time(value)
            except ValidationError as exc:
                raise _bad(value, type_, str(exc)) from None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MICROS_PER_DAY:
            return value
        raise _bad(value, type_)
    if isinstance(type_, _MICRO_TS + _NANO_TS):
        return _to_temporal(type_, value)
    if isinstance(type_, StringType):
        if isinstance(value, str):
            return value
        raise _bad(value, type_, "expected a string")
    if isinstance(type_, UUIDType):
        if isinstance(value, uuid.UUID):
            return value
        try:
            if isinstance(value, bytes | bytearray) and len(value) == 16:
                return uuid.UUID(bytes=bytes(value))
            if isinstance(value, str):
                return uuid.UUID(value.strip())
        except ValueError:
            pass
        raise _bad(value, type_)
    if isinstance(type_, FixedType | BinaryType):
        if isinstance(value, bytes | bytearray | memoryview):
            return _check_fixed(type_, bytes(value))
        if isinstance(value, str):
            return _check_fixed(type_, value.encode("utf-8"))
        raise _bad(value, type_)
    if isinstance(type_, UnknownType):
        raise _bad(value, type_, "columns of type unknown only hold nulls")
    if isinstance(type_, StructType | ListType | MapType):
        return from_json_value(type_, value)
    raise _bad(value, type_)
