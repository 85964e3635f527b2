"""Transforms: spec Appendix B hash vectors, truncate examples, time ordinals, parsing."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.conversions import parse_literal
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    bucket_hash,
    parse_transform,
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
    StringType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

# Appendix B of format/spec.md: (type, literal, expected 32-bit hash)
HASH_VECTORS: list[tuple[IcebergType, object, int]] = [
    (IntegerType(), 34, 2017239379),
    (LongType(), 34, 2017239379),
    (DecimalType(9, 2), "14.20", -500754589),
    (DateType(), "2017-11-16", -653330422),
    (TimeType(), "22:31:08", -662762989),
    (TimestampType(), "2017-11-16T22:31:08", -2047944441),
    (TimestampType(), "2017-11-16T22:31:08.000001", -1207196810),
    (TimestamptzType(), "2017-11-16T14:31:08-08:00", -2047944441),
    (TimestamptzType(), "2017-11-16T14:31:08.000001-08:00", -1207196810),
    (TimestampNanoType(), "2017-11-16T22:31:08", -2047944441),
    (TimestampNanoType(), "2017-11-16T22:31:08.000001001", -1207196810),
    (TimestamptzNanoType(), "2017-11-16T14:31:08-08:00", -2047944441),
    (TimestamptzNanoType(), "2017-11-16T14:31:08.000001001-08:00", -1207196810),
    (StringType(), "iceberg", 1210000089),
    (UUIDType(), "f79c3e09-677c-4bbd-a479-3f349cb785e7", 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BinaryType(), b"\x00\x01\x02\x03", -188683207),
    (BooleanType(), True, 1392991556),
    (FloatType(), 1.0, -142385009),
    (FloatType(), 0.0, 1669671676),
    (FloatType(), -0.0, 1669671676),
    (DoubleType(), 1.0, -142385009),
    (DoubleType(), -0.0, 1669671676),
]


@pytest.mark.parametrize(("type_", "literal", "expected"), HASH_VECTORS, ids=lambda x: str(x))
def test_bucket_hash_spec_vectors(type_: IcebergType, literal: object, expected: int) -> None:
    assert bucket_hash(type_, parse_literal(type_, literal)) == expected


def test_int_and_string_34_hash_differently() -> None:
    assert bucket_hash(StringType(), "34") == -427558391


def test_uuid_bytes_are_big_endian() -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    assert u.bytes.hex() == "f79c3e09677c4bbda4793f349cb785e7"


def test_bucket_apply() -> None:
    t = BucketTransform(16)
    assert t.apply(IntegerType(), 34) == 2017239379 % 16 == 3
    assert t.apply(StringType(), "iceberg") == 1210000089 % 16 == 9
    # negative hash: sign bit discarded first
    assert t.apply(DecimalType(9, 2), Decimal("14.20")) == (-500754589 & 0x7FFFFFFF) % 16 == 3
    assert t.apply(IntegerType(), None) is None
    assert t.result_type(StringType()) == IntegerType()
    assert not t.preserves_order


def test_bucket_source_types() -> None:
    t = BucketTransform(4)
    assert t.can_transform(UUIDType())
    assert t.can_transform(TimestamptzNanoType())
    assert not t.can_transform(BooleanType())
    assert not t.can_transform(DoubleType())
    with pytest.raises(ValidationError, match="bucket\\[4\\] cannot be applied to type double"):
        t.apply(DoubleType(), 1.0)
    with pytest.raises(ValidationError):
        BucketTransform(0)


def test_truncate_spec_examples() -> None:
    t10 = TruncateTransform(10)
    assert t10.apply(IntegerType(), 1) == 0
    assert t10.apply(IntegerType(), -1) == -10
    assert t10.apply(LongType(), 1) == 0
    assert t10.apply(LongType(), -1) == -10
    assert t10.apply(IntegerType(), 10) == 10
    assert t10.apply(IntegerType(), -10) == -10
    assert t10.apply(IntegerType(), -11) == -20
    out = TruncateTransform(50).apply(DecimalType(9, 2), Decimal("10.65"))
    assert out == Decimal("10.50") and str(out) == "10.50"
    assert str(TruncateTransform(50).apply(DecimalType(9, 2), Decimal("-0.05"))) == "-0.50"
    assert TruncateTransform(3).apply(StringType(), "iceberg") == "ice"
    assert TruncateTransform(3).apply(BinaryType(), b"\x01\x02\x03\x04\x05") == b"\x01\x02\x03"
    # code points, not UTF-16 units or bytes
    assert TruncateTransform(2).apply(StringType(), "\U0001f600\U0001f601x") == "\U0001f600\U0001f601"
    assert TruncateTransform(3).result_type(StringType()) == StringType()
    assert not TruncateTransform(3).can_transform(UUIDType())
    assert TruncateTransform(3).preserves_order


def test_time_transforms_on_dates_and_timestamps() -> None:
    d = parse_literal(DateType(), "2017-11-16")
    assert d == 17486
    assert YearTransform().apply(DateType(), d) == 47
    assert MonthTransform().apply(DateType(), d) == 47 * 12 + 10
    assert DayTransform().apply(DateType(), d) == 17486
    ts = parse_literal(TimestampType(), "2017-11-16T22:31:08")
    assert YearTransform().apply(TimestampType(), ts) == 47
    assert MonthTransform().apply(TimestampType(), ts) == 574
    assert DayTransform().apply(TimestampType(), ts) == 17486
    assert HourTransform().apply(TimestampType(), ts) == 17486 * 24 + 22
    ns = parse_literal(TimestampNanoType(), "2017-11-16T22:31:08.123456789")
    assert HourTransform().apply(TimestampNanoType(), ns) == 17486 * 24 + 22
    assert DayTransform().apply(TimestamptzNanoType(), ns) == 17486


def test_time_transforms_before_epoch_use_floor() -> None:
    ts = parse_literal(TimestampType(), "1969-12-31T23:59:59.999999")
    assert ts == -1
    assert YearTransform().apply(TimestampType(), ts) == -1
    assert MonthTransform().apply(TimestampType(), ts) == -1
    assert DayTransform().apply(TimestampType(), ts) == -1
    assert HourTransform().apply(TimestampType(), ts) == -1
    assert MonthTransform().apply(DateType(), parse_literal(DateType(), "1969-01-01")) == -12
    assert YearTransform().apply(DateType(), parse_literal(DateType(), "1900-06-15")) == -70
    ns = parse_literal(TimestampNanoType(), "1969-12-31T23:00:00")
    assert HourTransform().apply(TimestampNanoType(), ns) == -1


def test_time_transform_types_and_strings() -> None:
    assert DayTransform().result_type(TimestampType()) == DateType()
    assert YearTransform().result_type(DateType()) == IntegerType()
    assert not HourTransform().can_transform(DateType())
    assert not YearTransform().can_transform(StringType())
    assert YearTransform().to_human_string(DateType(), 47) == "2017"
    assert MonthTransform().to_human_string(DateType(), 574) == "2017-11"
    assert MonthTransform().to_human_string(DateType(), -1) == "1969-12"
    assert DayTransform().to_human_string(DateType(), 17486) == "2017-11-16"
    assert HourTransform().to_human_string(TimestampType(), 17486 * 24 + 22) == "2017-11-16-22"
    assert IdentityTransform().to_human_string(StringType(), None) == "null"


def test_order_relations() -> None:
    assert HourTransform().satisfies_order_of(DayTransform())
    assert DayTransform().satisfies_order_of(YearTransform())
    assert not YearTransform().satisfies_order_of(MonthTransform())
    assert IdentityTransform().satisfies_order_of(TruncateTransform(4))
    assert not IdentityTransform().satisfies_order_of(BucketTransform(4))
    assert TruncateTransform(4).satisfies_order_of(TruncateTransform(4))
    assert not TruncateTransform(4).satisfies_order_of(TruncateTransform(2))


def test_void_and_unknown() -> None:
    assert VoidTransform().apply(IntegerType(), 5) is None
    assert VoidTransform().result_type(LongType()) == LongType()
    assert VoidTransform().can_transform(ListType(3, StringType()))
    u = UnknownTransform("zorder[2]")
    assert str(u) == "zorder[2]"
    assert not u.can_transform(IntegerType())
    with pytest.raises(Unsupported):
        u.apply(IntegerType(), 1)


def test_identity() -> None:
    assert IdentityTransform().apply(StringType(), "a") == "a"
    assert IdentityTransform().result_type(DecimalType(9, 2)) == DecimalType(9, 2)
    assert not IdentityTransform().can_transform(ListType(3, StringType()))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        ("truncate[4]", TruncateTransform(4)),
        ("year", YearTransform()),
        ("month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
        ("Bucket[ 8 ]", BucketTransform(8)),
        ("zorder", UnknownTransform("zorder")),
        ("bucket[0]", UnknownTransform("bucket[0]")),
    ],
)
def test_parse_transform(text: str, expected: object) -> None:
    assert parse_transform(text) == expected


def test_str_round_trip_and_equality() -> None:
    for text in ("identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void"):
        assert str(parse_transform(text)) == text
    assert BucketTransform(16) == BucketTransform(16)
    assert BucketTransform(16) != BucketTransform(8)
    assert BucketTransform(4) != TruncateTransform(4)
    assert YearTransform() != MonthTransform()
    assert len({BucketTransform(16), BucketTransform(16), DayTransform(), DayTransform()}) == 2
