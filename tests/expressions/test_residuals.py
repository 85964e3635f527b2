"""Residual filters per partition tuple."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.expressions import AlwaysFalse, AlwaysTrue, ResidualEvaluator, parse, residual_for
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "i", IntegerType()),
    NestedField(5, "other", IntegerType()),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, DayTransform(), "ts_day"),
    PartitionField(3, 1001, IdentityTransform(), "s"),
    PartitionField(1, 1002, BucketTransform(16), "id_bucket"),
    PartitionField(4, 1003, TruncateTransform(10), "i_trunc"),
)
JAN2 = 19724
P = (JAN2, "a", 7, 10)  # id 5 is in bucket 7


@pytest.mark.parametrize(
    ("row_filter", "partition", "residual"),
    [
        ("ts >= '2024-01-02T00:00:00'", P, "true"),
        ("ts >= '2024-01-02T10:00:00'", P, "ts >= '2024-01-02T10:00:00.000000'"),
        ("ts >= '2024-01-02T10:00:00'", (JAN2 + 1, "a", 7, 10), "true"),
        ("ts >= '2024-01-02T10:00:00'", (JAN2 - 1, "a", 7, 10), "false"),
        ("ts < '2024-01-03'", P, "true"),
        ("ts >= '2024-01-02' and other = 1", P, "other = 1"),
        ("ts < '2024-01-02' and other = 1", P, "false"),
        ("ts < '2024-01-02' or other = 1", P, "other = 1"),
        ("ts >= '2024-01-02' or other = 1", P, "true"),
        ("s = 'a'", P, "true"),
        ("s = 'b'", P, "false"),
        ("s != 'a'", P, "false"),
        ("s != 'b'", P, "true"),
        ("s in ('a', 'b')", P, "true"),
        ("s like 'a%'", P, "true"),
        ("s is null", P, "false"),
        ("s is null", (JAN2, None, 7, 10), "true"),
        ("s = 'a'", (JAN2, None, 7, 10), "false"),
        ("s != 'a'", (JAN2, None, 7, 10), "false"),
        ("s is not null and s != 'a'", (JAN2, None, 7, 10), "false"),
        ("id = 5", P, "id = 5"),
        ("id = 5", (JAN2, "a", 8, 10), "false"),
        ("id != 5", (JAN2, "a", 8, 10), "true"),
        ("id != 5", P, "id != 5"),
        ("i >= 10 and i < 20", P, "true"),
        ("i > 10", P, "i > 10"),
        ("i > 19", P, "false"),
        ("not (i < 10)", P, "true"),
        ("not (s = 'a' and other = 2)", P, "other != 2"),
        ("other > 1", P, "other > 1"),
        ("id is null", P, "false"),
    ],
)
def test_residuals(row_filter: str, partition: tuple[Any, ...], residual: str) -> None:
    assert residual_for(SPEC, SCHEMA, parse(row_filter), partition) == parse(residual)


def test_unpartitioned_residual_is_the_filter() -> None:
    expr = parse("i > 1 and s like 'x%'")
    assert residual_for(PartitionSpec(), SCHEMA, expr, ()) == expr


def test_residual_evaluator_reuse_and_bound_form() -> None:
    ev = ResidualEvaluator(SPEC, SCHEMA, parse("ts >= '2024-01-02T10:00:00' and I > 3"), case_sensitive=False)
    assert ev.residual_for(P) == parse("ts >= '2024-01-02T10:00:00.000000'")
    assert ev.residual_for((JAN2 + 5, "a", 1, 0)) == parse("i > 3")
    assert ev.residual_for((JAN2 - 5, "a", 1, 0)) == AlwaysFalse()
    assert ev.residual_for((JAN2 + 5, "a", 1, 10)) == AlwaysTrue()
    bound = ev.bound_residual_for((JAN2 + 5, "a", 1, 0))
    assert str(bound) == "i > 3"
