"""Splitting Arrow tables by partition values; vectorised transforms agree with the spec transforms."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from decimal import Decimal

import mmh3
import numpy as np
import pyarrow as pa
import pytest

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import primitive_to_arrow, schema_to_arrow, to_internal_values
from icefloe.formats.partition_arrow import murmur3_long, partition_table, transform_array
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
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
)
from icefloe.spec.types import (
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType()),
    NestedField(3, "d", DateType()),
    NestedField(4, "ts", TimestamptzType()),
    NestedField(5, "st", StructType(NestedField(6, "z", IntegerType()))),
)
ROWS = [
    {
        "id": 1,
        "cat": "apple",
        "d": dt.date(2020, 1, 1),
        "ts": dt.datetime(2020, 1, 1, 5, tzinfo=dt.UTC),
        "st": {"z": 1},
    },
    {
        "id": 2,
        "cat": "banana",
        "d": dt.date(2020, 1, 2),
        "ts": dt.datetime(1969, 12, 31, 23, tzinfo=dt.UTC),
        "st": None,
    },
    {"id": 3, "cat": "apple", "d": dt.date(2020, 1, 1), "ts": None, "st": {"z": None}},
    {"id": 4, "cat": None, "d": None, "ts": dt.datetime(2020, 1, 1, 6, tzinfo=dt.UTC), "st": {"z": 1}},
    {"id": 5, "cat": "apricot", "d": dt.date(2020, 1, 2), "ts": None, "st": {"z": 2}},
]
TABLE = pa.Table.from_pylist(ROWS, schema=schema_to_arrow(SCHEMA))


def _split(*fields: PartitionField) -> list[tuple[tuple, list[int]]]:
    return [
        (key, part.column("id").to_pylist())
        for key, part in partition_table(TABLE, SCHEMA, PartitionSpec(*fields))
    ]


def test_identity_and_day() -> None:
    assert _split(
        PartitionField(2, 1000, IdentityTransform(), "cat"), PartitionField(3, 1001, DayTransform(), "d_day")
    ) == [
        (("apple", 18262), [1, 3]),
        (("banana", 18263), [2]),
        ((None, None), [4]),
        (("apricot", 18263), [5]),
    ]


def test_day_and_hour_of_timestamptz_use_utc_and_floor() -> None:
    assert _split(PartitionField(4, 1000, DayTransform(), "ts_day")) == [
        ((18262,), [1, 4]),
        ((-1,), [2]),
        ((None,), [3, 5]),
    ]
    assert _split(PartitionField(4, 1000, HourTransform(), "ts_hour")) == [
        ((438293,), [1]),
        ((-1,), [2]),
        ((None,), [3, 5]),
        ((438294,), [4]),
    ]


def test_truncate_and_bucket() -> None:
    expected_buckets = {i: BucketTransform(2).apply(LongType(), i) for i in range(1, 6)}
    groups = _split(
        PartitionField(2, 1000, TruncateTransform(2), "cat_trunc"),
        PartitionField(1, 1001, BucketTransform(2), "b"),
    )
    for (trunc, bucket), ids in groups:
        for i in ids:
            row = ROWS[i - 1]
            assert trunc == (row["cat"][:2] if row["cat"] else None)
            assert bucket == expected_buckets[i]
    assert sorted(i for _, ids in groups for i in ids) == [1, 2, 3, 4, 5]


def test_struct_nested_source_and_void() -> None:
    assert _split(
        PartitionField(6, 1000, IdentityTransform(), "z"), PartitionField(1, 1001, VoidTransform(), "v")
    ) == [
        ((1, None), [1, 4]),
        ((None, None), [2, 3]),  # a null parent struct makes the source value null
        ((2, None), [5]),
    ]


def test_unpartitioned_and_empty() -> None:
    [(key, part)] = partition_table(TABLE, SCHEMA, PartitionSpec())
    assert key == () and part.num_rows == 5
    assert (
        partition_table(
            TABLE.slice(0, 0), SCHEMA, PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"))
        )
        == []
    )


def test_unknown_transform_is_rejected() -> None:
    spec = PartitionSpec(PartitionField(1, 1000, UnknownTransform("zorder"), "zz"))
    with pytest.raises(ValidationError, match="unknown transform"):
        partition_table(TABLE, SCHEMA, spec)


def test_murmur3_matches_spec_and_mmh3() -> None:
    assert murmur3_long(np.array([34], dtype=np.int64))[0] == 2017239379  # spec Appendix B
    values = np.array([0, 1, -1, 2**63 - 1, -(2**63), 1_234_567_890_123], dtype=np.int64)
    expected = [mmh3.hash(int(v).to_bytes(8, "little", signed=True), 0, signed=True) for v in values]
    assert murmur3_long(values).tolist() == expected


@pytest.mark.parametrize(
    ("source_type", "values", "transforms"),
    [
        (
            LongType(),
            [random.Random(1).randint(-(2**63), 2**63 - 1) for _ in range(300)] + [0, -1, None],
            [BucketTransform(16), TruncateTransform(10), IdentityTransform()],
        ),
        (
            IntegerType(),
            [*range(-50, 50), None],
            [BucketTransform(7), TruncateTransform(3)],
        ),
        (
            DateType(),
            [random.Random(2).randint(-100_000, 100_000) for _ in range(300)] + [None],
            [YearTransform(), MonthTransform(), DayTransform(), BucketTransform(10)],
        ),
        (
            TimestampType(),
            [random.Random(3).randint(-(10**17), 10**17) for _ in range(300)] + [None],
            [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(10)],
        ),
        (
            TimestampNanoType(),
            [random.Random(4).randint(-(10**18), 10**18) for _ in range(300)] + [None],
            [YearTransform(), MonthTransform(), DayTransform(), HourTransform(), BucketTransform(10)],
        ),
        (
            StringType(),
            ["", "a", "ab😀c", "héllo", "iceberg", None],
            [TruncateTransform(3), BucketTransform(5), IdentityTransform()],
        ),
        (
            DecimalType(9, 2),
            [Decimal("10.65"), Decimal("-0.01"), Decimal("0.00"), None],
            [TruncateTransform(50), BucketTransform(5)],
        ),
    ],
    ids=lambda v: str(v) if not isinstance(v, list) else "",
)
def test_vectorised_transforms_agree_with_scalar(source_type, values, transforms) -> None:
    target = primitive_to_arrow(source_type)
    if isinstance(source_type, DateType):
        arr = pa.array(values, pa.int32()).cast(target)
    elif isinstance(source_type, TimestampType | TimestampNanoType):
        arr = pa.array(values, pa.int64()).cast(target)
    else:
        arr = pa.array(values, target)
    for transform in transforms:
        got = to_internal_values(
            transform_array(transform, source_type, arr), transform.result_type(source_type)
        )
        assert got == [transform.apply(source_type, v) for v in values], transform


def test_uuid_identity_partition_values_are_uuids() -> None:
    schema = Schema(NestedField(1, "u", UUIDType()))
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    table = pa.Table.from_pylist([{"u": u.bytes}, {"u": u.bytes}], schema=schema_to_arrow(schema))
    [(key, part)] = partition_table(
        table, schema, PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "u"))
    )
    assert key == (u,) and part.num_rows == 2
