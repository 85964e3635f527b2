"""Property tests: pruning never drops a matching row, residuals are exact, Arrow agrees with rows."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.expressions import (
    Expression,
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    Op,
    PartitionEvaluator,
    ResidualEvaluator,
    bind,
    evaluate,
    make_predicate,
    strict_projection,
)
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.projection import partition_schema
from icefloe.spec.content import DataFile, ManifestFile, PartitionFieldSummary
from icefloe.spec.conversions import to_bytes
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    TruncateTransform,
    VoidTransform,
)
from icefloe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "a", IntegerType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "ts", TimestampType()),
    NestedField(5, "f", DoubleType()),
)
HALF_HOUR = 1_800_000_000
SPECS = [
    PartitionSpec(
        PartitionField(2, 1000, TruncateTransform(5), "a_t"),
        PartitionField(3, 1001, TruncateTransform(2), "s_t"),
        PartitionField(4, 1002, DayTransform(), "ts_day"),
    ),
    PartitionSpec(
        PartitionField(2, 1000, BucketTransform(3), "a_b"),
        PartitionField(4, 1001, HourTransform(), "ts_hour"),
        PartitionField(5, 1002, IdentityTransform(), "f"),
    ),
    PartitionSpec(
        PartitionField(2, 1000, IdentityTransform(), "a"),
        PartitionField(3, 1001, IdentityTransform(), "s"),
        PartitionField(3, 1002, VoidTransform(), "s_void"),
    ),
]

ints = st.integers(-12, 12)
strs = st.text(alphabet="abc", max_size=4)
stamps = st.integers(0, 100).map(lambda k: k * HALF_HOUR) | st.integers(0, 100).map(
    lambda k: k * HALF_HOUR + 1
)
floats = st.sampled_from([-1.5, 0.0, 1.0, 2.5, float("nan")])
VALUES = {"a": ints, "s": strs, "ts": stamps, "f": floats}
LITERALS = {
    "a": ints,
    "s": strs,
    "ts": st.integers(-2, 102).map(lambda k: k * HALF_HOUR) | stamps.map(lambda v: v - 1),
    "f": st.sampled_from([-1.5, 0.0, 1.0, 2.5, 3.0]),
}


def _row(id_: int, values: dict[str, Any]) -> tuple[Any, ...]:
    return (id_, values["a"], values["s"], values["ts"], values["f"])


rows_strategy = st.lists(
    st.fixed_dictionaries({k: st.none() | v for k, v in VALUES.items()}), min_size=0, max_size=16
).map(lambda ds: [_row(i, d) for i, d in enumerate(ds)])


@st.composite
def predicates(draw: st.DrawFn) -> Expression:
    column = draw(st.sampled_from(["a", "s", "ts", "f"]))
    ops = [Op.EQ, Op.NOT_EQ, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.IN, Op.NOT_IN, Op.IS_NULL, Op.NOT_NULL]
    if column == "s":
        ops += [Op.STARTS_WITH, Op.NOT_STARTS_WITH]
    if column == "f":
        ops += [Op.IS_NAN, Op.NOT_NAN]
    op = draw(st.sampled_from(ops))
    if op.is_unary:
        return make_predicate(op, column)
    if op.is_set:
        return make_predicate(op, column, draw(st.lists(LITERALS[column], min_size=1, max_size=3)))
    return make_predicate(op, column, draw(LITERALS[column]))


filters = st.recursive(
    predicates(),
    lambda inner: (
        st.tuples(inner, inner).map(lambda p: p[0] & p[1])
        | st.tuples(inner, inner).map(lambda p: p[0] | p[1])
        | inner.map(lambda e: ~e)
    ),
    max_leaves=4,
)


def _partition(spec: PartitionSpec, row: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for pf in spec.fields:
        source_type = SCHEMA.find_type(pf.source_id)
        out.append(pf.transform.apply(source_type, row[pf.source_id - 1]))
    return tuple(out)


def _upper_str(value: str, length: int) -> str:
    if len(value) <= length:
        return value
    head = value[:length]
    return head[:-1] + chr(ord(head[-1]) + 1)


def _data_file(rows: list[tuple[Any, ...]], drop_bounds: bool) -> DataFile:
    value_counts: dict[int, int] = {}
    nulls: dict[int, int] = {}
    nans: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for fid in (2, 3, 4, 5):
        col = [r[fid - 1] for r in rows]
        value_counts[fid] = len(col)
        nulls[fid] = sum(v is None for v in col)
        if fid == 5:
            nans[fid] = sum(v is not None and v != v for v in col)
        vals = [v for v in col if v is not None and v == v]
        if vals and not drop_bounds:
            ftype = SCHEMA.find_type(fid)
            lo, hi = min(vals), max(vals)
            if fid == 3:  # truncated string bounds, like Parquet writers produce
                lo, hi = lo[:2], _upper_str(hi, 2)
            lower[fid], upper[fid] = to_bytes(ftype, lo), to_bytes(ftype, hi)
    return DataFile(
        "x.parquet",
        "parquet",
        len(rows),
        1,
        value_counts=value_counts,
        null_value_counts=nulls,
        nan_value_counts=nans,
        lower_bounds=lower,
        upper_bounds=upper,
    )


def _manifest(spec: PartitionSpec, partitions: list[tuple[Any, ...]], drop_bounds: bool) -> ManifestFile:
    ptypes = [f.field_type for f in partition_schema(spec, SCHEMA).fields]
    summaries = []
    for pos, ptype in enumerate(ptypes):
        col = [p[pos] for p in partitions]
        vals = [v for v in col if v is not None and v == v]
        has_nan = any(isinstance(v, float) and v != v for v in col)
        lo = to_bytes(ptype, min(vals)) if vals and not drop_bounds else None
        hi = to_bytes(ptype, max(vals)) if vals and not drop_bounds else None
        summaries.append(PartitionFieldSummary(any(v is None for v in col), has_nan, lo, hi))
    return ManifestFile("m.avro", 1, 0, partitions=tuple(summaries))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_index=st.integers(0, len(SPECS) - 1), rows=rows_strategy, row_filter=filters, drop=st.booleans())
def test_pruning_is_sound_and_residuals_exact(
    spec_index: int, rows: list[tuple[Any, ...]], row_filter: Expression, drop: bool
) -> None:
    spec = SPECS[spec_index]
    bound = bind(SCHEMA, row_filter)
    matching = {r[0] for r in rows if evaluate(bound, r)}

    # Arrow agrees with row evaluation
    table = pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "a": pa.array([r[1] for r in rows], pa.int32()),
            "s": pa.array([r[2] for r in rows], pa.string()),
            "ts": pa.array([r[3] for r in rows], pa.timestamp("us")),
            "f": pa.array([r[4] for r in rows], pa.float64()),
        }
    )
    assert set(table.filter(to_arrow_expression(bound)).column("id").to_pylist()) == matching

    # metrics: a file with a matching row is never pruned
    if matching:
        assert InclusiveMetricsEvaluator(SCHEMA, row_filter).eval(_data_file(rows, drop))

    by_partition: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for r in rows:
        by_partition[_partition(spec, r)].append(r)
    if matching:
        assert ManifestEvaluator(spec, SCHEMA, row_filter).eval(_manifest(spec, list(by_partition), drop))

    partition_eval = PartitionEvaluator(spec, SCHEMA, row_filter)
    strict = bind(partition_schema(spec, SCHEMA), strict_projection(SCHEMA, spec)(row_filter))
    residuals = ResidualEvaluator(spec, SCHEMA, row_filter)
    for partition, part_rows in by_partition.items():
        part_matching = [r for r in part_rows if r[0] in matching]
        if part_matching:
            assert partition_eval.eval(partition)
        if evaluate(strict, partition):
            assert len(part_matching) == len(part_rows)
        residual = bind(SCHEMA, residuals.residual_for(partition))
        assert [evaluate(residual, r) for r in part_rows] == [r[0] in matching for r in part_rows]
