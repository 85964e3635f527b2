"""Partition, manifest-summary and data-file-metrics evaluators."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.expressions import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
    col,
    parse,
)
from icefloe.spec.content import DataFile, ManifestFile, PartitionFieldSummary
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from icefloe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "f", DoubleType()),
    NestedField(5, "i", IntegerType()),
    NestedField(6, "st", StructType(NestedField(7, "x", IntegerType()))),
    NestedField(8, "g", FloatType()),
    NestedField(9, "d", DateType()),
)

SPEC = PartitionSpec(
    PartitionField(2, 1000, DayTransform(), "ts_day"),
    PartitionField(3, 1001, IdentityTransform(), "s"),
    PartitionField(4, 1002, IdentityTransform(), "f"),
    PartitionField(1, 1003, BucketTransform(16), "id_bucket"),
    PartitionField(5, 1004, TruncateTransform(10), "i_trunc"),
    spec_id=1,
)
JAN2 = 19724  # 2024-01-02 in days


# ------------------------------------------------------------------------------ partitions


@pytest.mark.parametrize(
    ("row_filter", "partition", "expected"),
    [
        ("ts >= '2024-01-02T10:00:00'", (JAN2, "a", 1.0, 7, 10), True),
        ("ts >= '2024-01-02T10:00:00'", (JAN2 - 1, "a", 1.0, 7, 10), False),
        ("ts >= '2024-01-02T10:00:00'", (None, "a", 1.0, 7, 10), False),
        ("ts is null", (None, "a", 1.0, 7, 10), True),
        ("ts is null", (JAN2, "a", 1.0, 7, 10), False),
        ("s = 'a' and id = 5", (JAN2, "a", 1.0, 7, 10), True),
        ("s = 'a' and id = 5", (JAN2, "a", 1.0, 8, 10), False),
        ("s = 'a' or id = 5", (JAN2, "b", 1.0, 8, 10), False),
        ("s != 'a'", (JAN2, None, 1.0, 8, 10), False),
        ("s not in ('a', 'b')", (JAN2, None, 1.0, 8, 10), False),
        ("s not like 'a%'", (JAN2, "ba", 1.0, 8, 10), True),
        ("f is nan", (JAN2, "a", float("nan"), 8, 10), True),
        ("f is nan", (JAN2, "a", 1.0, 8, 10), False),
        ("f is not nan", (JAN2, "a", None, 8, 10), True),
        ("f > 0", (JAN2, "a", float("nan"), 8, 10), False),
        ("i < 5", (JAN2, "a", 1.0, 8, 10), False),
        ("i < 11", (JAN2, "a", 1.0, 8, 10), True),
        ("not (i >= 11)", (JAN2, "a", 1.0, 8, 10), True),
        ("st.x = 3", (JAN2, "a", 1.0, 8, 10), True),
        ("id is null", (JAN2, "a", 1.0, 8, 10), False),
    ],
)
def test_partition_evaluator(row_filter: str, partition: tuple[Any, ...], expected: bool) -> None:
    assert PartitionEvaluator(SPEC, SCHEMA, parse(row_filter)).eval(partition) is expected


def test_partition_names_with_dots() -> None:
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "s.part"))
    assert PartitionEvaluator(spec, SCHEMA, parse("s = 'x'")).eval(("x",)) is True
    assert PartitionEvaluator(spec, SCHEMA, parse("s = 'x'")).eval(("y",)) is False


# ------------------------------------------------------------------------------ manifests


def summary(
    type_: IcebergType | None = None,
    lower: Any = None,
    upper: Any = None,
    contains_null: bool = False,
    contains_nan: bool | None = None,
) -> PartitionFieldSummary:
    return PartitionFieldSummary(
        contains_null=contains_null,
        contains_nan=contains_nan,
        lower_bound=None if lower is None or type_ is None else to_bytes(type_, lower),
        upper_bound=None if upper is None or type_ is None else to_bytes(type_, upper),
    )


def manifest(*summaries: PartitionFieldSummary) -> ManifestFile:
    return ManifestFile("m.avro", 100, partition_spec_id=1, partitions=summaries or None)


FULL = manifest(
    summary(DateType(), JAN2, JAN2 + 2),
    summary(StringType(), "apple", "banana"),
    summary(DoubleType(), -1.0, 1.0, contains_nan=False),
    summary(IntegerType(), 3, 7),
    summary(IntegerType(), 10, 20, contains_null=True),
)
NO_BOUNDS = manifest(
    summary(), summary(), summary(contains_nan=False), summary(), summary(contains_null=True)
)


@pytest.mark.parametrize(
    ("row_filter", "expected"),
    [
        ("ts >= '2024-01-02T10:00:00'", True),
        ("ts >= '2024-01-05T00:00:00'", False),
        ("ts < '2024-01-02T00:00:00'", False),
        ("ts < '2024-01-02T00:00:01'", True),
        ("ts = '2024-01-03T12:00:00'", True),
        ("ts in ('2023-01-01T00:00:00', '2025-01-01T00:00:00')", False),
        ("ts in ('2023-01-01T00:00:00', '2024-01-04T00:00:00')", True),
        ("ts is null", False),
        ("ts is not null", True),
        ("s = 'apple'", True),
        ("s = 'zebra'", False),
        ("s > 'banana'", False),
        ("s >= 'banana'", True),
        ("s <= 'apple'", True),
        ("s < 'apple'", False),
        ("s like 'b%'", True),
        ("s like 'c%'", False),
        ("s like 'ab%'", False),
        ("s like 'bananas%'", False),
        ("s not like 'a%'", True),
        ("s != 'apple'", True),
        ("f is nan", False),
        ("f is not nan", True),
        ("f > 1", False),
        ("f >= 1", True),
        ("id = 5", True),  # bucket of 5 is 7
        ("id = 8", False),  # bucket of 8 is 15
        ("id != 8", True),
        ("i < 10", False),
        ("i < 11", True),
        ("i > 29", False),
        ("i is null", True),
        ("st.x = 1", True),
        ("ts >= '2024-01-05T00:00:00' or s = 'apple'", True),
        ("ts >= '2024-01-05T00:00:00' or s = 'zebra'", False),
        ("not (s < 'zebra')", False),
        ("id is null", False),
    ],
)
def test_manifest_evaluator_with_bounds(row_filter: str, expected: bool) -> None:
    assert ManifestEvaluator(SPEC, SCHEMA, parse(row_filter)).eval(FULL) is expected


@pytest.mark.parametrize(
    "row_filter",
    [
        "ts >= '2024-01-05T00:00:00'",
        "ts < '2024-01-02T00:00:00'",
        "ts is not null",
        "s = 'zebra'",
        "s like 'c%'",
        "s not like 'a%'",
        "f > 1",
        "f is not nan",
        "id = 8",
        "i in (1, 2)",
        "i is not null",
    ],
)
def test_manifest_missing_bounds_mean_unknown(row_filter: str) -> None:
    # contains_null=False and no bounds: the manifest holds values we know nothing about
    assert ManifestEvaluator(SPEC, SCHEMA, parse(row_filter)).eval(NO_BOUNDS) is True


def test_manifest_null_and_nan_flags() -> None:
    ev = ManifestEvaluator(SPEC, SCHEMA, parse("ts is null"))
    assert ev.eval(NO_BOUNDS) is False
    assert ManifestEvaluator(SPEC, SCHEMA, parse("i is null")).eval(NO_BOUNDS) is True
    assert ManifestEvaluator(SPEC, SCHEMA, parse("f is nan")).eval(NO_BOUNDS) is False
    unknown_nan = manifest(summary(), summary(), summary(contains_nan=None), summary(), summary())
    assert ManifestEvaluator(SPEC, SCHEMA, parse("f is nan")).eval(unknown_nan) is True


def test_manifest_without_summaries() -> None:
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s = 'zebra'")).eval(manifest()) is True
    short = manifest(summary(DateType(), 0, 1))
    assert ManifestEvaluator(SPEC, SCHEMA, parse("ts >= '2024-01-05'")).eval(short) is True
    assert ManifestEvaluator(SPEC, SCHEMA, parse("id is null")).eval(manifest()) is False
    assert ManifestEvaluator(SPEC, SCHEMA, parse("true")).eval(FULL) is True


def test_manifest_one_bound_and_bad_bytes() -> None:
    only_lower = manifest(summary(), summary(StringType(), "m", None), summary(), summary(), summary())
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s < 'a'")).eval(only_lower) is False
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s > 'z'")).eval(only_lower) is True
    garbage = manifest(
        summary(),
        PartitionFieldSummary(False, None, b"\xff\xfe", b"\xff"),
        summary(),
        summary(),
        summary(),
    )
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s = 'a'")).eval(garbage) is True


def test_manifest_not_starts_with_prunes_when_all_values_share_prefix() -> None:
    m = manifest(summary(), summary(StringType(), "abc", "abz"), summary(), summary(), summary())
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s not like 'ab%'")).eval(m) is False
    assert ManifestEvaluator(SPEC, SCHEMA, parse("s not like 'abc%'")).eval(m) is True


def test_unpartitioned_manifest() -> None:
    spec = PartitionSpec()
    m = ManifestFile("m.avro", 1, partition_spec_id=0, partitions=())
    assert ManifestEvaluator(spec, SCHEMA, parse("s = 'x'")).eval(m) is True


# ------------------------------------------------------------------------------ metrics


def data_file(
    record_count: int = 10,
    value_counts: dict[int, int] | None = None,
    null_counts: dict[int, int] | None = None,
    nan_counts: dict[int, int] | None = None,
    lower: dict[int, bytes] | None = None,
    upper: dict[int, bytes] | None = None,
) -> DataFile:
    return DataFile(
        "f.parquet",
        "parquet",
        record_count,
        1000,
        value_counts=value_counts,
        null_value_counts=null_counts,
        nan_value_counts=nan_counts,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def may_match(row_filter: str, f: DataFile, include_empty_files: bool = False) -> bool:
    return InclusiveMetricsEvaluator(SCHEMA, parse(row_filter), include_empty_files=include_empty_files).eval(
        f
    )


STATS = data_file(
    value_counts={1: 10, 3: 10, 4: 10, 5: 10, 7: 10, 8: 10},
    null_counts={1: 0, 3: 2, 4: 0, 5: 10, 7: 1, 8: 0},
    nan_counts={4: 3, 8: 10},
    lower={
        1: to_bytes(LongType(), 30),
        3: to_bytes(StringType(), "ab"),  # truncated from "abz"
        4: to_bytes(DoubleType(), -5.0),
        7: to_bytes(IntegerType(), 5),
    },
    upper={
        1: to_bytes(LongType(), 79),
        3: to_bytes(StringType(), "ad"),  # truncated "acz..." rounded up
        4: to_bytes(DoubleType(), 5.0),
        7: to_bytes(IntegerType(), 9),
    },
)


@pytest.mark.parametrize(
    ("row_filter", "expected"),
    [
        ("id < 30", False),
        ("id < 31", True),
        ("id <= 30", True),
        ("id <= 29", False),
        ("id > 79", False),
        ("id >= 79", True),
        ("id > 78", True),
        ("id = 5", False),
        ("id = 30", True),
        ("id = 80", False),
        ("id != 30", True),
        ("id in (1, 2, 80)", False),
        ("id in (1, 50)", True),
        ("id not in (30)", True),
        ("id between 80 and 90", False),
        ("id < 30 or id > 79", False),
        ("not (id >= 30)", False),
        # nulls
        ("s is null", True),
        ("id is not null", True),
        ("f is null", False),
        ("i is null", True),
        ("i is not null", False),
        ("i = 1", False),
        ("i != 1", False),
        ("i not in (1, 2)", False),
        ("i < 100", False),
        # NaN
        ("f is nan", True),
        ("f is not nan", True),
        ("g is nan", True),
        ("g is not nan", False),
        ("g < 100", False),
        ("g = 1", False),
        ("g != 1", True),
        ("g in (1, 2)", False),
        ("f > 5", False),
        ("f >= 5", True),
        ("f < -5", False),
        # truncated string bounds
        ("s = 'abz'", True),
        ("s = 'acz'", True),
        ("s = 'ad'", True),
        ("s = 'ada'", False),
        ("s = 'aa'", False),
        ("s < 'ab'", False),
        ("s > 'ad'", False),
        ("s like 'ab%'", True),
        ("s like 'abzz%'", True),
        ("s like 'ac%'", True),
        ("s like 'ae%'", False),
        ("s like 'aa%'", False),
        ("s like 'a%'", True),
        ("s not like 'a%'", False),
        ("s not like 'ab%'", True),
        # nested struct field
        ("st.x < 5", False),
        ("st.x = 7", True),
        ("st.x is null", True),
        # no stats for these columns: may match
        ("ts < '1970-01-01'", True),
        ("d = '2024-01-02'", True),
        ("d is null", True),
        ("d is not null", True),
    ],
)
def test_metrics_evaluator(row_filter: str, expected: bool) -> None:
    assert may_match(row_filter, STATS) is expected


def test_metrics_empty_and_unknown_files() -> None:
    empty = data_file(record_count=0)
    assert may_match("id > 0", empty) is False
    assert may_match("true", empty) is False
    assert may_match("id > 0", empty, include_empty_files=True) is True
    assert may_match("id > 0", data_file(record_count=-1, lower={1: to_bytes(LongType(), 5)})) is True
    assert may_match("id > 0", data_file()) is True
    assert may_match("id is null", data_file()) is False


def test_metrics_null_counts_without_value_counts_use_record_count() -> None:
    f = data_file(record_count=4, null_counts={5: 4})
    assert may_match("i = 1", f) is False
    assert may_match("i is null", f) is True
    f2 = data_file(record_count=4, null_counts={7: 4})  # nested: value count unknown
    assert may_match("st.x = 1", f2) is True


def test_metrics_nan_bounds_and_bad_bytes_are_ignored() -> None:
    f = data_file(
        lower={4: to_bytes(DoubleType(), float("nan")), 3: b"\xff\xfe"},
        upper={4: to_bytes(DoubleType(), float("nan")), 3: b"\xff"},
    )
    assert may_match("f > 100", f) is True
    assert may_match("f < -100", f) is True
    assert may_match("s = 'x'", f) is True


def test_metrics_promoted_bounds() -> None:
    f = data_file(lower={1: to_bytes(IntegerType(), 5)}, upper={1: to_bytes(IntegerType(), 9)})
    assert may_match("id > 9", f) is False
    assert may_match("id = 7", f) is True


def test_metrics_float_bounds_compare_exactly() -> None:
    f = data_file(lower={8: to_bytes(FloatType(), 0.1)}, upper={8: to_bytes(FloatType(), 0.1)})
    # float32(0.1) is 0.100000001490116...: greater than the double 0.1
    assert InclusiveMetricsEvaluator(SCHEMA, col("g") > 0.1).eval(f) is True
    assert InclusiveMetricsEvaluator(SCHEMA, col("g") < 0.1).eval(f) is False
    assert InclusiveMetricsEvaluator(SCHEMA, col("g") == 0.1).eval(f) is False


def test_metrics_zero_signs() -> None:
    f = data_file(lower={4: to_bytes(DoubleType(), -0.0)}, upper={4: to_bytes(DoubleType(), 0.0)})
    assert may_match("f = 0", f) is True
    assert may_match("f < 0", f) is True  # -0.0 < 0.0, as Java's Double.compare orders them
    assert may_match("f < -0.0", f) is False
    only_negative_zero = data_file(
        lower={4: to_bytes(DoubleType(), -0.0)}, upper={4: to_bytes(DoubleType(), -0.0)}
    )
    assert may_match("f = 0.0", only_negative_zero) is False
    assert may_match("f = -0.0", only_negative_zero) is True
    assert may_match("f >= 0.0", only_negative_zero) is False


def test_partition_evaluator_on_projected_filters() -> None:
    from icefloe.expressions import strict_projection

    strict = strict_projection(SCHEMA, SPEC)(parse("ts >= '2024-01-02' and s = 'a'"))
    assert strict == parse("ts_day > '2024-01-01' and s = 'a'")
    ev = PartitionEvaluator(SPEC, SCHEMA, strict, projected=True)
    assert ev.eval((JAN2, "a", 1.0, 7, 10)) is True
    assert ev.eval((JAN2 - 1, "a", 1.0, 7, 10)) is False
    assert ev.eval((JAN2, None, 1.0, 7, 10)) is False
    alias = PartitionEvaluator(SPEC, SCHEMA, strict, True, bound_to_partition=True)
    assert alias.eval((JAN2, "a", 1.0, 7, 10)) is True
    unpartitioned = PartitionSpec()
    nothing = strict_projection(SCHEMA, unpartitioned)(parse("s = 'a'"))
    assert PartitionEvaluator(unpartitioned, SCHEMA, nothing, projected=True).eval(()) is False
