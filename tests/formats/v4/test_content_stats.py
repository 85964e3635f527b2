"""Typed v4 content stats: id layout, per-table stats type, metric-map conversion, aggregation."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from icefloe.formats.v4.content_stats import (
    ColumnStats,
    MetricMaps,
    aggregate_content_stats,
    aggregate_tight_bounds,
    column_id_for_stats_struct,
    content_stats_from_metrics,
    content_stats_from_struct_value,
    content_stats_to_struct_value,
    content_stats_type,
    metrics_from_content_stats,
    stats_struct_id,
)
from icefloe.spec.content import DataFile
from icefloe.spec.conversions import to_bytes
from icefloe.spec.schema import LAST_UPDATED_SEQ_COLUMN_ID, ROW_ID_COLUMN_ID, Schema
from icefloe.spec.types import (
    BinaryType,
    DoubleType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType()),
    NestedField(3, "score", DoubleType()),
    NestedField(
        4, "loc", StructType(NestedField(5, "lat", FloatType()), NestedField(6, "raw", BinaryType()))
    ),
    NestedField(7, "tags", ListType(8, StringType())),
    NestedField(9, "props", MapType(10, StringType(), 11, IntegerType())),
    NestedField(12, "nothing", UnknownType()),
)


def test_stats_ids_follow_the_spec_layout() -> None:
    assert stats_struct_id(1) == 10_200
    assert stats_struct_id(0) == 10_000
    assert stats_struct_id(LAST_UPDATED_SEQ_COLUMN_ID) == 9_000
    assert stats_struct_id(ROW_ID_COLUMN_ID) == 9_200
    assert stats_struct_id(999_949) == 199_999_800
    assert stats_struct_id(999_950) is None
    assert stats_struct_id(-1) is None
    for fid in (0, 1, 17, 999_949, LAST_UPDATED_SEQ_COLUMN_ID, ROW_ID_COLUMN_ID):
        base = stats_struct_id(fid)
        assert base is not None
        assert column_id_for_stats_struct(base) == fid
    assert column_id_for_stats_struct(10_201) is None  # a member, not a struct
    assert column_id_for_stats_struct(9_400) is None  # reserved range, no such metadata column
    assert column_id_for_stats_struct(200_000_000) is None
    assert column_id_for_stats_struct(99_999) is None  # PR#16938 placeholder ids are not stats


def test_stats_type_has_one_struct_per_primitive_leaf() -> None:
    t = content_stats_type(SCHEMA)
    ids = [f.field_id for f in t.fields]
    assert ids == sorted(ids)
    expected_columns = [LAST_UPDATED_SEQ_COLUMN_ID, ROW_ID_COLUMN_ID, 1, 2, 3, 5, 6, 8, 10, 11]
    assert ids == [stats_struct_id(c) for c in expected_columns]
    assert all(not f.required for f in t.fields)
    by_col = {column_id_for_stats_struct(f.field_id): f for f in t.fields}
    assert by_col[2].name == "name" and by_col[5].name == "loc.lat" and by_col[8].name == "tags.element"

    def members(col: int) -> dict[int, str]:
        st = by_col[col].field_type
        assert isinstance(st, StructType)
        assert all(not m.required for m in st.fields)
        return {m.field_id - by_col[col].field_id: m.name for m in st.fields}

    assert members(1) == {
        1: "lower_bound",
        2: "upper_bound",
        3: "tight_bounds",
        4: "value_count",
        5: "null_value_count",
    }
    assert 6 in members(3) and 7 not in members(3)  # double: NaN count
    assert 6 in members(5)  # float
    assert 7 in members(2) and 7 in members(6) and 6 not in members(2)  # string / binary: avg size
    double_stats = by_col[3].field_type
    assert isinstance(double_stats, StructType)
    lower = double_stats.field_by_id(10_000 + 200 * 3 + 1)
    assert lower is not None and lower.field_type == DoubleType()


def test_stats_type_without_lineage_and_empty_schema() -> None:
    assert content_stats_type(Schema(), row_lineage=False).fields == ()
    with_lineage = content_stats_type(Schema())
    assert [f.name for f in with_lineage.fields] == ["_last_updated_sequence_number", "_row_id"]


def test_metric_maps_round_trip_through_content_stats() -> None:
    t = content_stats_type(SCHEMA)
    df = DataFile(
        "x.parquet",
        "parquet",
        10,
        100,
        value_counts={1: 10, 2: 10, 3: 10, 99: 5},
        null_value_counts={2: 1, 3: 0},
        nan_value_counts={3: 2},
        lower_bounds={
            1: to_bytes(LongType(), -5),
            2: to_bytes(StringType(), "a"),
            3: to_bytes(DoubleType(), 0.5),
        },
        upper_bounds={1: to_bytes(LongType(), 7), 2: to_bytes(StringType(), "zz")},
    )
    stats = content_stats_from_metrics(df, t)
    assert 99 not in stats  # no such column: dropped
    assert stats[1] == ColumnStats(lower_bound=-5, upper_bound=7, value_count=10)
    assert stats[3].nan_value_count == 2 and stats[3].lower_bound == 0.5 and stats[3].upper_bound is None
    assert stats[2].tight_bounds is None  # v1–v3 bounds may be truncated
    maps = metrics_from_content_stats(stats, t)
    assert maps.value_counts == {1: 10, 2: 10, 3: 10}
    assert maps.null_value_counts == {2: 1, 3: 0}
    assert maps.nan_value_counts == {3: 2}
    assert maps.lower_bounds == {k: v for k, v in (df.lower_bounds or {}).items()}
    assert maps.upper_bounds == df.upper_bounds
    assert metrics_from_content_stats({}, t) == MetricMaps()


def test_struct_values_keep_only_known_members() -> None:
    t = content_stats_type(SCHEMA)
    stats = {
        1: ColumnStats(lower_bound=1, upper_bound=2, nan_value_count=3),  # no NaN member for long
        2: ColumnStats(avg_value_size_in_bytes=12),
        42: ColumnStats(value_count=1),  # not a column
        3: ColumnStats(),
    }
    value = content_stats_to_struct_value(stats, t)
    assert value == {10_200: {10_201: 1, 10_202: 2}, 10_400: {10_407: 12}}
    back = content_stats_from_struct_value({**(value or {}), 99_998: {99_999: True}})
    assert back == {1: ColumnStats(lower_bound=1, upper_bound=2), 2: ColumnStats(avg_value_size_in_bytes=12)}
    assert content_stats_to_struct_value({}, t) is None
    assert content_stats_to_struct_value({3: ColumnStats()}, t) is None


def test_aggregate_sums_counts_and_widens_bounds() -> None:
    a = {1: ColumnStats(1, 5, True, 10, 0), 3: ColumnStats(0.5, 2.0, True, 10, 1, 0)}
    b = {1: ColumnStats(-3, 4, True, 5, 1), 3: ColumnStats(None, None, None, 4, 4, 0)}  # all-null
    agg = aggregate_content_stats([a, b])
    assert agg[1] == ColumnStats(-3, 5, True, 15, 1)
    assert agg[3].lower_bound == 0.5 and agg[3].upper_bound == 2.0
    assert agg[3].value_count == 14 and agg[3].null_value_count == 5 and agg[3].nan_value_count == 0
    assert agg[3].tight_bounds is None  # one entry did not know: unknown, not "known loose"
    assert aggregate_content_stats([a, b], has_mdv=True)[1].tight_bounds is False
    assert aggregate_content_stats([a, b], has_mdv=True)[3].tight_bounds is False


T, F, U = True, False, None


@pytest.mark.parametrize(
    ("values", "has_mdv", "want"),
    [
        ([T, T], False, T),
        ([T, U], False, U),
        ([U, T], False, U),
        ([T, F], False, F),
        ([F, T], False, F),
        ([U, U], False, U),
        ([U, F], False, F),
        ([F, U], False, F),
        ([F, F], False, F),
        ([T], False, T),
        ([U], False, U),
        ([T, T], True, F),
        ([T, U], True, F),
        ([U, U], True, F),
        ([T, F], True, F),
        ([T], True, F),
    ],
)
def test_aggregated_tight_bounds_follow_kleene_logic(
    values: list[bool | None], has_mdv: bool, want: bool | None
) -> None:
    assert aggregate_tight_bounds(values, has_mdv=has_mdv) is want
    entries = [{1: ColumnStats(i, i + 10, tight, 5, 0)} for i, tight in enumerate(values)]
    agg = aggregate_content_stats(entries, has_mdv=has_mdv)
    assert agg[1] == ColumnStats(0, len(values) + 9, want, 5 * len(values), 0)


def test_aggregated_tight_bounds_need_known_bounds() -> None:
    counts_only = {1: ColumnStats(tight_bounds=True, value_count=3, null_value_count=1)}
    assert aggregate_content_stats([counts_only, counts_only], has_mdv=True)[1].tight_bounds is None


def test_aggregate_unknowns_stay_unknown() -> None:
    a = {1: ColumnStats(1, 5, None, 10, 0)}
    b = {1: ColumnStats(None, None, None, 5, 1)}  # not all null, bounds unknown
    agg = aggregate_content_stats([a, b])
    assert agg[1].lower_bound is None and agg[1].upper_bound is None and agg[1].value_count == 15
    c = {1: ColumnStats(value_count=3)}
    assert aggregate_content_stats([a, c])[1].null_value_count is None
    assert aggregate_content_stats([a, None]) == {}
    assert aggregate_content_stats([]) == {}
    nan = {3: ColumnStats(math.nan, math.nan, None, 1, 0, 1)}
    assert aggregate_content_stats([nan])[3].lower_bound is None


@pytest.mark.parametrize("lineage", [True, False])
def test_stats_type_is_arrow_convertible(lineage: bool) -> None:
    from icefloe.formats.arrow_schema import type_to_arrow

    arrow = type_to_arrow(content_stats_type(SCHEMA, row_lineage=lineage))
    assert isinstance(arrow, pa.StructType)
    assert arrow.num_fields == (10 if lineage else 8)
