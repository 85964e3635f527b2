"""Iceberg partition values computed in Spark equal icefloe's transforms, and survive the trip
through partition directory names."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from icefloe.spark.partitioning import (
    HIVE_NULL,
    decode_value,
    parse_partition_dirs,
    partition_column_name,
    partition_key_columns,
    unescape_path_name,
)
from icefloe.spark.schema import to_spark_schema
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
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
    NestedField(1, "id", LongType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "ntz", TimestampType()),
    NestedField(5, "d", DateType()),
    NestedField(6, "s", StringType()),
    NestedField(7, "dec", DecimalType(9, 2)),
    NestedField(8, "b", BinaryType()),
    NestedField(9, "flag", BooleanType()),
    NestedField(10, "x", DoubleType()),
)

_T = [
    (1, BucketTransform(7)),
    (2, BucketTransform(5)),
    (3, BucketTransform(9)),
    (4, BucketTransform(3)),
    (5, BucketTransform(4)),
    (6, BucketTransform(16)),
    (7, BucketTransform(6)),
    (8, BucketTransform(8)),
    (1, TruncateTransform(10)),
    (2, TruncateTransform(3)),
    (6, TruncateTransform(2)),
    (7, TruncateTransform(50)),
    (8, TruncateTransform(2)),
    (3, YearTransform()),
    (3, MonthTransform()),
    (3, DayTransform()),
    (3, HourTransform()),
    (4, YearTransform()),
    (4, MonthTransform()),
    (4, DayTransform()),
    (4, HourTransform()),
    (5, YearTransform()),
    (5, MonthTransform()),
    (5, DayTransform()),
    (1, IdentityTransform()),
    (3, IdentityTransform()),
    (4, IdentityTransform()),
    (5, IdentityTransform()),
    (6, IdentityTransform()),
    (7, IdentityTransform()),
    (8, IdentityTransform()),
    (9, IdentityTransform()),
    (10, IdentityTransform()),
]
SPEC = PartitionSpec(*(PartitionField(src, 1000 + i, t, f"p{i}") for i, (src, t) in enumerate(_T)))

UTC = dt.UTC
ROWS = [
    (
        0,
        0,
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(1970, 1, 1),
        dt.date(1970, 1, 1),
        "",
        Decimal("0.00"),
        b"",
        True,
        0.0,
    ),
    (
        -1,
        -1,
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
        dt.date(1969, 12, 31),
        "iceberg",
        Decimal("-1.23"),
        b"\x00\xff\x10",
        False,
        -0.0,
    ),
    (
        34,
        34,
        dt.datetime(2017, 11, 16, 22, 31, 8, tzinfo=UTC),
        dt.datetime(2017, 11, 16, 22, 31, 8),
        dt.date(2017, 11, 16),
        "a/b=c%d ü€𝄞",
        Decimal("14.20"),
        b"\x00\x01\x02\x03",
        True,
        1e-7,
    ),
    (
        2**40,
        2**31 - 1,
        dt.datetime(2262, 4, 11, 23, 47, 16, tzinfo=UTC),
        dt.datetime(1900, 2, 28, 1, 2, 3),
        dt.date(1900, 3, 1),
        "x" * 40,
        Decimal("-9999999.99"),
        b"\xff" * 5,
        False,
        float("nan"),
    ),
    (  # the int/long minimum: truncate wraps as Iceberg Java's arithmetic does
        -(2**63),
        -(2**31),
        dt.datetime(2000, 1, 1, tzinfo=UTC),
        dt.datetime(2000, 1, 1),
        dt.date(2000, 1, 1),
        "z",
        Decimal("9999999.99"),
        b"\x01",
        True,
        1.5,
    ),
    (None, None, None, None, None, None, None, None, None, None),
]


@pytest.fixture(scope="module")
def computed(spark):  # type: ignore[no-untyped-def]
    """Spark-computed encoded partition values for every row (one job)."""
    df = spark.createDataFrame(ROWS, to_spark_schema(SCHEMA))
    # a session time zone far from UTC must not change any value
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        rows = df.select(*partition_key_columns(SCHEMA, SPEC)).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    return rows


def _internal(value: object, source_type: object) -> object:
    if value is None:
        return None
    if isinstance(source_type, TimestamptzType):
        assert isinstance(value, dt.datetime)
        return (value - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
    if isinstance(source_type, TimestampType):
        assert isinstance(value, dt.datetime)
        return (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    if isinstance(source_type, DateType):
        assert isinstance(value, dt.date)
        return (value - dt.date(1970, 1, 1)).days
    return value


@pytest.mark.parametrize("index", range(len(_T)), ids=[f"{SCHEMA.find_field(s).name}-{t}" for s, t in _T])
def test_spark_partition_values_match_icefloe_transforms(computed, index: int) -> None:  # type: ignore[no-untyped-def]
    pf = SPEC.fields[index]
    source_type = SCHEMA.find_type(pf.source_id)
    result_type = pf.transform.result_type(source_type)
    pos = [f.field_id for f in SCHEMA.fields].index(pf.source_id)
    for row, out in zip(ROWS, computed, strict=True):
        value = row[pos]
        if isinstance(value, float) and value != value and isinstance(pf.transform, IdentityTransform):
            continue  # NaN identity partitions compare unequal by definition
        want = pf.transform.apply(source_type, _internal(value, source_type))
        got = decode_value(out[partition_column_name(index)], result_type)
        assert got == want, (pf.transform, value, got, want)


def test_directory_names_round_trip() -> None:
    spec = PartitionSpec(
        PartitionField(6, 1000, IdentityTransform(), "s"), PartitionField(1, 1001, BucketTransform(4), "b")
    )
    rel = f"{partition_column_name(0)}=va%2Fb%3Dc%25d ü/{partition_column_name(1)}={HIVE_NULL}"
    assert parse_partition_dirs(rel, SCHEMA, spec) == ("a/b=c%d ü", None)
    assert parse_partition_dirs(
        f"{partition_column_name(0)}=v/{partition_column_name(1)}=v3", SCHEMA, spec
    ) == ("", 3)
    assert unescape_path_name("%3A%2a") == ":*"


@pytest.mark.parametrize("text", ["9" * 36 + ".99", "-" + "9" * 36 + ".98", "-1" + "0" * 36 + ".00", "0.00"])
def test_decimal_directory_values_of_38_digits_decode_exactly(text: str) -> None:
    # (-10^36 at scale 2 is a truncated partition value one digit beyond decimal(38, 2), as Java writes)
    assert decode_value("v" + text, DecimalType(38, 2)) == Decimal(text)


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_truncating_the_lowest_decimal_38_values_is_refused_not_nulled(  # type: ignore[no-untyped-def]
    spark, catalog, table_name: str, ansi: str
) -> None:
    """truncate[10] of -(10^38 - 1) is -10^38 (as Java writes it), which Spark's decimal(38) cannot
    hold: without ANSI mode Spark would write a null partition value (the row then escapes pruning)."""
    from icefloe.spark import create_table, write_table

    create_table(spark, table_name, "id BIGINT NOT NULL, v DECIMAL(38,0)", partitioned_by=["truncate(10, v)"])
    top = 10**38 - 1
    ok = spark.createDataFrame([(1, Decimal(-top + 9)), (2, Decimal(top))], "id BIGINT, v DECIMAL(38,0)")
    write_table(ok, table_name)
    partitions = sorted(t.data_file.partition for t in catalog.load_table(table_name).scan().plan_files())
    assert partitions == [(Decimal(-top + 9),), (Decimal(top - 9),)]
    before = catalog.load_table(table_name).metadata_location
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        lowest = spark.createDataFrame([(0, Decimal(-top))], "id BIGINT, v DECIMAL(38,0)")
        with pytest.raises(
            Exception, match="Spark's decimal\\(38\\) cannot hold: write such rows with the Python"
        ):
            write_table(lowest, table_name)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)
    assert catalog.load_table(table_name).metadata_location == before
