"""Single-value binary/JSON serialisation (spec Appendix D) and user literal parsing."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.conversions import (
    civil_from_days,
    days_from_civil,
    from_bytes,
    from_json_value,
    int_to_min_bytes,
    parse_literal,
    to_bytes,
    to_json_value,
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
    ListType,
    LongType,
    MapType,
    NestedField,
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

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

BINARY_CASES: list[tuple[IcebergType, Any, str]] = [
    (BooleanType(), True, "01"),
    (BooleanType(), False, "00"),
    (IntegerType(), 34, "22000000"),
    (IntegerType(), -1, "ffffffff"),
    (LongType(), 34, "2200000000000000"),
    (FloatType(), 1.0, "0000803f"),
    (DoubleType(), 1.0, "000000000000f03f"),
    (DateType(), 17486, "4e440000"),
    (TimeType(), 81068000000, "008307e012000000"),
    (TimestampType(), 1510871468000000, "00c3262d215e0500"),
    (TimestamptzType(), 1510871468000000, "00c3262d215e0500"),
    (TimestampNanoType(), 1510871468000000001, "01b8695f98b1f714"),
    (TimestamptzNanoType(), 1, "0100000000000000"),
    (StringType(), "iceberg", "69636562657267"),
    (UUIDType(), U, "f79c3e09677c4bbda4793f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\x03", "00010203"),
    (BinaryType(), b"\x00\x01\x02\x03", "00010203"),
    (DecimalType(9, 2), Decimal("14.20"), "058c"),
    (DecimalType(9, 2), Decimal("-14.20"), "fa74"),
    (DecimalType(9, 2), Decimal("0.00"), "00"),
    (DecimalType(9, 2), Decimal("1.27"), "7f"),
    (DecimalType(9, 2), Decimal("1.28"), "0080"),
    (DecimalType(9, 2), Decimal("-1.28"), "80"),
    (DecimalType(9, 2), Decimal("-1.29"), "ff7f"),
]


@pytest.mark.parametrize(("type_", "value", "hexbytes"), BINARY_CASES, ids=lambda x: str(x))
def test_binary_round_trip(type_: IcebergType, value: Any, hexbytes: str) -> None:
    assert to_bytes(type_, value).hex() == hexbytes
    assert from_bytes(type_, bytes.fromhex(hexbytes)) == value


def test_decimal_from_bytes_keeps_scale() -> None:
    assert str(from_bytes(DecimalType(9, 2), bytes.fromhex("058c"))) == "14.20"
    assert str(from_bytes(DecimalType(38, -2), bytes.fromhex("02"))) == "2E+2"


def test_min_bytes_matches_java_biginteger() -> None:
    assert int_to_min_bytes(0) == b"\x00"
    assert int_to_min_bytes(-1) == b"\xff"
    assert int_to_min_bytes(127) == b"\x7f"
    assert int_to_min_bytes(128) == b"\x00\x80"
    assert int_to_min_bytes(-128) == b"\x80"
    assert int_to_min_bytes(-129) == b"\xff\x7f"


def test_promoted_bounds_are_inferred_from_length() -> None:
    assert from_bytes(LongType(), to_bytes(IntegerType(), -5)) == -5
    assert from_bytes(DoubleType(), to_bytes(FloatType(), 1.5)) == 1.5
    assert from_bytes(TimestampType(), to_bytes(DateType(), 1)) == 86_400_000_000
    assert from_bytes(TimestampNanoType(), to_bytes(DateType(), 1)) == 86_400_000_000_000


def test_binary_unsupported_types() -> None:
    with pytest.raises(Unsupported):
        to_bytes(UnknownType(), None)
    with pytest.raises(Unsupported):
        from_bytes(ListType(1, IntegerType()), b"")


JSON_CASES: list[tuple[IcebergType, Any, Any]] = [
    (BooleanType(), True, True),
    (IntegerType(), 34, 34),
    (LongType(), 34, 34),
    (FloatType(), 1.0, 1.0),
    (DoubleType(), 1.0, 1.0),
    (DecimalType(9, 2), Decimal("14.20"), "14.20"),
    (DecimalType(9, -20), Decimal("2E+20"), "2E+20"),
    (DateType(), 17486, "2017-11-16"),
    (TimeType(), 81068123456, "22:31:08.123456"),
    (TimestampType(), 1510871468123456, "2017-11-16T22:31:08.123456"),
    (TimestamptzType(), 1510871468123456, "2017-11-16T22:31:08.123456+00:00"),
    (TimestampNanoType(), 1510871468123456789, "2017-11-16T22:31:08.123456789"),
    (TimestamptzNanoType(), 1510871468123456789, "2017-11-16T22:31:08.123456789+00:00"),
    (StringType(), "iceberg", "iceberg"),
    (UUIDType(), U, "f79c3e09-677c-4bbd-a479-3f349cb785e7"),
    (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
    (BinaryType(), b"\x00\x01\x02\xff", "000102ff"),
    (
        StructType(NestedField(1, "a", IntegerType()), NestedField(2, "b", StringType())),
        {1: 1, 2: "bar"},
        {"1": 1, "2": "bar"},
    ),
    (ListType(3, IntegerType()), [1, 2, 3], [1, 2, 3]),
    (MapType(4, StringType(), 5, IntegerType()), {"a": 1, "b": 2}, {"keys": ["a", "b"], "values": [1, 2]}),
    (TimestampType(), -1, "1969-12-31T23:59:59.999999"),
]


@pytest.mark.parametrize(("type_", "value", "json_value"), JSON_CASES, ids=lambda x: str(x))
def test_json_single_value(type_: IcebergType, value: Any, json_value: Any) -> None:
    assert to_json_value(type_, value) == json_value
    assert from_json_value(type_, json_value) == value


def test_json_reads_other_spellings() -> None:
    assert from_json_value(TimestamptzType(), "2017-11-16T14:31:08-08:00") == 1510871468000000
    assert from_json_value(TimestamptzType(), "2017-11-16T22:31:08Z") == 1510871468000000
    assert from_json_value(TimeType(), "22:31:08") == 81068000000
    assert from_json_value(BinaryType(), "000102FF") == b"\x00\x01\x02\xff"
    assert from_json_value(StructType(NestedField(1, "a", IntegerType())), {}) == {}
    with pytest.raises(ValidationError, match="zone offset"):
        from_json_value(TimestampType(), "2017-11-16T22:31:08+01:00")
    with pytest.raises(ValidationError):
        from_json_value(FixedType(2), "000102")


def test_calendar_helpers() -> None:
    for days in (-719162, -1, 0, 1, 17486, 2932896, 10**7, -(10**7)):
        assert days_from_civil(*civil_from_days(days)) == days
    assert civil_from_days(0) == (1970, 1, 1)
    assert civil_from_days(-1) == (1969, 12, 31)
    assert days_from_civil(2000, 3, 1) == 11017


LITERALS: list[tuple[IcebergType, Any, Any]] = [
    (BooleanType(), "TRUE", True),
    (IntegerType(), "42", 42),
    (IntegerType(), 5.0, 5),
    (LongType(), 2**40, 2**40),
    (DoubleType(), "1.5", 1.5),
    (DoubleType(), 3, 3.0),
    (DecimalType(9, 2), "12.5", Decimal("12.50")),
    (DecimalType(9, 2), 12.5, Decimal("12.50")),
    (DecimalType(9, 2), 3, Decimal("3.00")),
    (DateType(), "2024-01-02", 19724),
    (DateType(), dt.date(2024, 1, 2), 19724),
    (DateType(), dt.datetime(2024, 1, 2), 19724),
    (TimeType(), dt.time(1, 2, 3, 4), 3723000004),
    (TimestampType(), "2024-01-02", 19724 * 86_400_000_000),
    (TimestampType(), "2024-01-02 10:00:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (TimestampType(), dt.datetime(2024, 1, 2, 10), 19724 * 86_400_000_000 + 36_000_000_000),
    (TimestampType(), dt.date(2024, 1, 2), 19724 * 86_400_000_000),
    (TimestamptzType(), "2024-01-02T12:00:00+02:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (TimestamptzType(), "2024-01-02T10:00:00", 19724 * 86_400_000_000 + 36_000_000_000),
    (
        TimestamptzType(),
        dt.datetime(2024, 1, 2, 11, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        19724 * 86_400_000_000 + 36_000_000_000,
    ),
    (TimestampNanoType(), dt.datetime(1970, 1, 1, 0, 0, 0, 1), 1000),
    (TimestampNanoType(), "1970-01-01T00:00:00.000000001", 1),
    (UUIDType(), "F79C3E09-677C-4BBD-A479-3F349CB785E7", U),
    (UUIDType(), U.bytes, U),
    (BinaryType(), b"ab", b"ab"),
    (FixedType(2), bytearray(b"ab"), b"ab"),
    (StringType(), "x", "x"),
    (IntegerType(), None, None),
]


@pytest.mark.parametrize(("type_", "value", "expected"), LITERALS, ids=lambda x: str(x))
def test_parse_literal(type_: IcebergType, value: Any, expected: Any) -> None:
    assert parse_literal(type_, value) == expected


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        (IntegerType(), "abc"),
        (IntegerType(), 2**31),
        (IntegerType(), True),
        (IntegerType(), 1.5),
        (BooleanType(), 1),
        (DecimalType(9, 2), "12.505"),
        (DecimalType(3, 2), "12.50"),
        (DecimalType(9, 2), "nope"),
        (DateType(), "2024-13-01"),
        (DateType(), "2023-02-29"),
        (DateType(), dt.datetime(2024, 1, 2, 3)),
        (TimestampType(), "2024-01-02T10:00:00Z"),
        (TimestampType(), dt.datetime(2024, 1, 2, tzinfo=dt.UTC)),
        (TimestampType(), "2024-01-02T10:00:00.0000001"),
        (TimeType(), "25:00:00"),
        (StringType(), 5),
        (UUIDType(), "not-a-uuid"),
        (FixedType(3), b"ab"),
        (UnknownType(), 1),
    ],
    ids=lambda x: str(x),
)
def test_parse_literal_rejects(type_: IcebergType, value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        parse_literal(type_, value)
    assert str(type_) in str(info.value)
    assert repr(value) in str(info.value)


def test_decimal_38_digits_round_trip_exactly() -> None:
    from decimal import Decimal

    from icefloe.spec.conversions import decimal_to_unscaled
    from icefloe.spec.types import DecimalType

    value = Decimal("-1234567890123456789.0123456789")
    assert decimal_to_unscaled(value, 10) == -12345678901234567890123456789
    t = DecimalType(38, 10)
    assert from_bytes(t, to_bytes(t, value)) == value
