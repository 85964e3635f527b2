"""Inclusive and strict projections of row filters onto partition values, per transform."""

from __future__ import annotations

import pytest

from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Or,
    inclusive_projection,
    parse,
    partition_schema,
    strict_projection,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
    TimestamptzType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "l", LongType()),
    NestedField(3, "i", IntegerType()),
    NestedField(4, "s", StringType()),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "d", DateType()),
    NestedField(7, "ts", TimestampType()),
    NestedField(8, "tz", TimestamptzType()),
    NestedField(9, "f", DoubleType()),
    NestedField(10, "bin", BinaryType()),
    NestedField(11, "other", IntegerType()),
)


def spec_of(source: str, transform: Transform, name: str = "p") -> PartitionSpec:
    return PartitionSpec(PartitionField(SCHEMA.find_field(source).field_id, 1000, transform, name))


def check(spec: PartitionSpec, row_filter: str, inclusive: str, strict: str) -> None:
    expr = parse(row_filter)
    assert inclusive_projection(SCHEMA, spec)(expr) == parse(inclusive), "inclusive"
    assert strict_projection(SCHEMA, spec)(expr) == parse(strict), "strict"


IDENTITY = [
    ("i = 5", "p = 5", "p = 5"),
    ("i != 5", "p != 5", "p != 5"),
    ("i < 5", "p < 5", "p < 5"),
    ("i >= 5", "p >= 5", "p >= 5"),
    ("i in (1, 2)", "p in (1, 2)", "p in (1, 2)"),
    ("i not in (1, 2)", "p not in (1, 2)", "p not in (1, 2)"),
    ("i is null", "p is null", "p is null"),
    ("i is not null", "p is not null", "p is not null"),
    ("not (i < 5)", "p >= 5", "p >= 5"),
]


@pytest.mark.parametrize(("row_filter", "inclusive", "strict"), IDENTITY)
def test_identity(row_filter: str, inclusive: str, strict: str) -> None:
    check(spec_of("i", IdentityTransform()), row_filter, inclusive, strict)


def test_identity_other_types() -> None:
    check(spec_of("s", IdentityTransform()), "s like 'ab%'", "p like 'ab%'", "p like 'ab%'")
    check(spec_of("f", IdentityTransform()), "f is nan", "p is nan", "p is nan")
    check(spec_of("d", IdentityTransform()), "d > '2024-01-02'", "p > '2024-01-02'", "p > '2024-01-02'")


BUCKET = [  # bucket[16] of long: 5 -> 7, 6 -> 1, 7 -> 3
    ("l = 5", "p = 7", "false"),
    ("l in (5, 6, 7)", "p in (7, 1, 3)", "false"),
    ("l in (5, 5.5)", "p = 7", "false"),
    ("l != 5", "true", "p != 7"),
    ("l not in (5, 6)", "true", "p not in (7, 1)"),
    ("l < 5", "true", "false"),
    ("l >= 5", "true", "false"),
    ("l is null", "p is null", "p is null"),
    ("l is not null", "p is not null", "p is not null"),
    ("not (l != 5)", "p = 7", "false"),
]


@pytest.mark.parametrize(("row_filter", "inclusive", "strict"), BUCKET)
def test_bucket(row_filter: str, inclusive: str, strict: str) -> None:
    check(spec_of("l", BucketTransform(16)), row_filter, inclusive, strict)


# Wrapped hour partitions: timestamps below -2^31 hours land in HOUR_LOW, above 2^31 - 1 in HOUR_HIGH.
HOUR_LOW = "(p >= 1732919507 and p <= 2147483647)"
HOUR_HIGH = "(p >= -2147483648 and p <= -1732919508)"
NOT_HOUR_LOW = "(p < 1732919507 or p > 2147483647)"
NOT_HOUR_HIGH = "(p < -2147483648 or p > -1732919508)"
W = "2147483646"  # truncate(10, Integer.MIN_VALUE) as Java computes it: wrapped
TRUNCATE_INT = [  # truncate[10]; rows near the int minimum live in partition W
    ("i < 15", f"p <= 10 or p = {W}", "p < 10"),
    ("i < 10", f"p <= 0 or p = {W}", "p < 10"),
    ("i <= 15", f"p <= 10 or p = {W}", "p < 10"),
    ("i <= 19", f"p <= 10 or p = {W}", "p < 20"),
    ("i > 15", "p >= 10", f"p > 10 and p != {W}"),
    ("i > 19", "p >= 20", f"p > 10 and p != {W}"),
    ("i >= 20", "p >= 20", f"p > 10 and p != {W}"),
    ("i >= 15", "p >= 10", f"p > 10 and p != {W}"),
    ("i = 15", "p = 10", "false"),
    ("i != 15", "true", "p != 10"),
    ("i in (1, 15, 25, 19)", "p in (0, 10, 20)", "false"),
    ("i not in (1, 15)", "true", "p not in (0, 10)"),
    ("i < -5", f"p <= -10 or p = {W}", "p < -10"),
    ("i is null", "p is null", "p is null"),
    ("i = -2147483648", f"p = {W}", "false"),
    ("i < -2147483648", "false", "false"),
    ("i > 2147483647", "false", f"p > 2147483640 and p != {W}"),  # true for no real partition
    ("i <= -2147483641", "true", "p < -2147483640"),  # a literal whose partition wrapped orders nothing
    ("i >= 2147483647", "p >= 2147483640", f"p > 2147483640 and p != {W}"),
]


@pytest.mark.parametrize(("row_filter", "inclusive", "strict"), TRUNCATE_INT)
def test_truncate_int(row_filter: str, inclusive: str, strict: str) -> None:
    check(spec_of("i", TruncateTransform(10)), row_filter, inclusive, strict)


TRUNCATE_DECIMAL = [  # truncate[50] of decimal(9, 2): 10.65 -> 10.50
    ("dec < 10.65", "p <= 10.50", "p < 10.50"),
    ("dec <= 10.49", "p <= 10.00", "p < 10.50"),
    ("dec > 10.49", "p >= 10.50", "p > 10.00"),
    ("dec >= 10.50", "p >= 10.50", "p > 10.00"),
    ("dec = 10.65", "p = 10.50", "false"),
    ("dec != 10.65", "true", "p != 10.50"),
]


@pytest.mark.parametrize(("row_filter", "inclusive", "strict"), TRUNCATE_DECIMAL)
def test_truncate_decimal(row_filter: str, inclusive: str, strict: str) -> None:
    check(spec_of("dec", TruncateTransform(50)), row_filter, inclusive, strict)


TRUNCATE_STRING = [  # truncate[3]
    ("s < 'abcd'", "p <= 'abc'", "p < 'abc'"),
    ("s <= 'ab'", "p <= 'ab'", "p < 'ab'"),
    ("s > 'abcd'", "p >= 'abc'", "p > 'abc'"),
    ("s >= 'ab'", "p >= 'ab'", "p > 'ab'"),
    ("s = 'abcdef'", "p = 'abc'", "false"),
    ("s = 'ab'", "p = 'ab'", "p = 'ab'"),
    ("s in ('ab', 'abcd')", "p in ('ab', 'abc')", "false"),
    ("s in ('ab', 'xy')", "p in ('ab', 'xy')", "p in ('ab', 'xy')"),
    ("s != 'abcd'", "true", "p != 'abc'"),
    ("s not in ('abcd', 'x')", "true", "p not in ('abc', 'x')"),
    ("s like 'ab%'", "p like 'ab%'", "p like 'ab%'"),
    ("s like 'abc%'", "p = 'abc'", "p like 'abc%'"),
    ("s like 'abcd%'", "p = 'abc'", "false"),
    ("s not like 'ab%'", "p not like 'ab%'", "p not like 'ab%'"),
    ("s not like 'abc%'", "p != 'abc'", "p not like 'abc%'"),
    ("s not like 'abcd%'", "true", "p not like 'abc%'"),
    ("s is not null", "p is not null", "p is not null"),
]


@pytest.mark.parametrize(("row_filter", "inclusive", "strict"), TRUNCATE_STRING)
def test_truncate_string(row_filter: str, inclusive: str, strict: str) -> None:
    check(spec_of("s", TruncateTransform(3)), row_filter, inclusive, strict)


def test_truncate_binary() -> None:
    spec = spec_of("bin", TruncateTransform(2))
    check(spec, "bin < X'010203'", "p <= X'0102'", "p < X'0102'")
    check(spec, "bin = X'010203'", "p = X'0102'", "false")


TIME = [
    # (source, transform, row filter, inclusive, strict)
    ("ts", DayTransform(), "ts < '2024-01-02T00:00:00'", "p <= '2024-01-01'", "p < '2024-01-02'"),
    ("ts", DayTransform(), "ts < '2024-01-02T10:00:00'", "p <= '2024-01-02'", "p < '2024-01-02'"),
    ("ts", DayTransform(), "ts <= '2024-01-02T00:00:00'", "p <= '2024-01-02'", "p < '2024-01-02'"),
    (
        "ts",
        DayTransform(),
        "ts <= '2024-01-02T23:59:59.999999'",
        "p <= '2024-01-02'",
        "p < '2024-01-03'",
    ),
    ("ts", DayTransform(), "ts > '2024-01-02T23:59:59.999999'", "p >= '2024-01-03'", "p > '2024-01-02'"),
    ("ts", DayTransform(), "ts >= '2024-01-02T00:00:00'", "p >= '2024-01-02'", "p > '2024-01-01'"),
    ("ts", DayTransform(), "ts >= '2024-01-02T10:00:00'", "p >= '2024-01-02'", "p > '2024-01-02'"),
    ("ts", DayTransform(), "ts = '2024-01-02T10:00:00'", "p = '2024-01-02'", "false"),
    (
        "ts",
        DayTransform(),
        "ts in ('2024-01-02T10:00:00', '2024-01-02T11:00:00')",
        "p = '2024-01-02'",
        "false",
    ),
    ("ts", DayTransform(), "ts != '2024-01-02T10:00:00'", "true", "p != '2024-01-02'"),
    ("ts", DayTransform(), "ts < '1969-12-31T12:00:00'", "p <= '1969-12-31'", "p < '1969-12-31'"),
    ("tz", DayTransform(), "tz >= '2024-01-02T01:00:00+02:00'", "p >= '2024-01-01'", "p > '2024-01-01'"),
    ("ts", YearTransform(), "ts < '2024-01-01T00:00:00'", "p <= 53", "p < 54"),
    ("ts", YearTransform(), "ts >= '2024-06-01T00:00:00'", "p >= 54", "p > 54"),
    ("ts", MonthTransform(), "ts >= '2024-03-15'", "p >= 650", "p > 650"),
    ("ts", MonthTransform(), "ts >= '2024-03-01'", "p >= 650", "p > 649"),
    # hour() of a long wraps its int result beyond ~245,000 years from 1970 (as Java's cast does)
    (
        "ts",
        HourTransform(),
        "ts > '2024-01-02T10:30:00'",
        f"p >= 473386 or {HOUR_HIGH}",
        f"p > 473386 and {NOT_HOUR_LOW}",
    ),
    (
        "ts",
        HourTransform(),
        "ts < '2024-01-02T10:00:00'",
        f"p <= 473385 or {HOUR_LOW}",
        f"p < 473386 and {NOT_HOUR_HIGH}",
    ),
    ("d", DayTransform(), "d < '2024-01-02'", "p <= '2024-01-01'", "p < '2024-01-02'"),
    ("d", DayTransform(), "d >= '2024-01-02'", "p >= '2024-01-02'", "p > '2024-01-01'"),
    ("d", YearTransform(), "d >= '2024-01-01'", "p >= 54", "p > 53"),
    ("d", MonthTransform(), "d <= '2024-01-31'", "p <= 648", "p < 649"),
    ("d", MonthTransform(), "d is null", "p is null", "p is null"),
]


@pytest.mark.parametrize(("source", "transform", "row_filter", "inclusive", "strict"), TIME)
def test_time_transforms(
    source: str, transform: Transform, row_filter: str, inclusive: str, strict: str
) -> None:
    check(spec_of(source, transform), row_filter, inclusive, strict)


def test_void_and_unknown_transforms() -> None:
    for transform in (VoidTransform(), UnknownTransform("zorder")):
        spec = spec_of("i", transform)
        for f in ("i = 1", "i is null", "i < 3", "i not in (1, 2)"):
            check(spec, f, "true", "false")


def test_columns_without_partition_field() -> None:
    spec = spec_of("i", IdentityTransform())
    check(spec, "other = 1", "true", "false")
    check(spec, "other = 1 and i = 2", "p = 2", "false")
    check(spec, "other = 1 or i = 2", "true", "p = 2")
    check(spec, "not (other = 1 or i = 2)", "p != 2", "false")
    check(spec, "id is null", "false", "false")
    check(spec, "id is not null", "true", "true")


def test_several_partition_fields_on_one_column() -> None:
    spec = PartitionSpec(
        PartitionField(7, 1000, DayTransform(), "ts_day"),
        PartitionField(7, 1001, HourTransform(), "ts_hour"),
        PartitionField(4, 1002, BucketTransform(16), "s_bucket"),
        PartitionField(4, 1003, TruncateTransform(2), "s_trunc"),
    )
    expr = parse("ts >= '2024-01-02T10:30:00'")
    assert inclusive_projection(SCHEMA, spec)(expr) == And(
        parse("ts_day >= '2024-01-02'"), parse(f"ts_hour >= 473386 or {HOUR_HIGH.replace('p ', 'ts_hour ')}")
    )
    assert strict_projection(SCHEMA, spec)(expr) == Or(
        parse("ts_day > '2024-01-02'"),
        parse(f"ts_hour > 473386 and {NOT_HOUR_LOW.replace('p ', 'ts_hour ')}"),
    )
    assert inclusive_projection(SCHEMA, spec)(parse("s = 'a'")) == parse("s_bucket = 2 and s_trunc = 'a'")
    assert strict_projection(SCHEMA, spec)(parse("s = 'a'")) == parse("s_trunc = 'a'")


def test_case_insensitive_projection() -> None:
    spec = spec_of("i", IdentityTransform(), name="I_part")
    assert inclusive_projection(SCHEMA, spec, case_sensitive=False)(parse("I = 3")) == parse("I_part = 3")


def test_partition_schema() -> None:
    spec = PartitionSpec(
        PartitionField(7, 1000, DayTransform(), "ts_day"),
        PartitionField(4, 1001, BucketTransform(8), "s.bucket"),
        PartitionField(99, 1002, IdentityTransform(), "dropped"),
    )
    ps = partition_schema(spec, SCHEMA)
    assert [(f.field_id, f.name, str(f.field_type), f.required) for f in ps.fields] == [
        (1000, "ts_day", "date", False),
        (1001, "s.bucket", "int", False),
        (1002, "dropped", "unknown", False),
    ]


def test_projection_of_constants() -> None:
    spec = spec_of("i", IdentityTransform())
    always: list[Expression] = [AlwaysTrue(), AlwaysFalse()]
    for e in always:
        assert inclusive_projection(SCHEMA, spec)(e) == e
        assert strict_projection(SCHEMA, spec)(e) == e
