"""Typed column statistics of v4 content entries (``content_stats``, field 146).

For a column with field id ``f`` the stats struct has id ``base = 10_000 + 200 * f`` and its members
sit at fixed offsets from it: +1 ``lower_bound`` and +2 ``upper_bound`` (in the column's own type),
+3 ``tight_bounds`` (boolean), +4 ``value_count``, +5 ``null_value_count``, +6 ``nan_value_count``
(float/double only) and +7 ``avg_value_size_in_bytes`` (int, string/binary only). The reserved
row-lineage columns use bases 9000 (``_last_updated_sequence_number``) and 9200 (``_row_id``).
Every member and every per-column struct is optional; names are informational (the column's full
name), readers resolve by id.

In Python the stats of one entry are a ``ContentStats``: a dict from *column* field id to a
``ColumnStats`` holding bounds in icefloe's internal value representation. This module converts
them to and from the v1–v3 metric maps of ``DataFile`` (bounds as single-value binary), to the
dict-by-field-id struct values written to Parquet, and aggregates them for manifest references.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe.formats.arrow_schema import field_id_of
from icefloe.spec.content import DataFile
from icefloe.spec.conversions import from_bytes, to_bytes
from icefloe.spec.schema import LAST_UPDATED_SEQ_COLUMN_ID, ROW_ID_COLUMN_ID, Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
)

__all__ = [
    "CONTENT_STATS_ID",
    "STATS_ID_END",
    "ColumnStats",
    "ContentStats",
    "MetricMaps",
    "StatsLayout",
    "aggregate_content_stats",
    "aggregate_tight_bounds",
    "column_id_for_stats_struct",
    "content_stats_column",
    "content_stats_from_metrics",
    "content_stats_from_struct_value",
    "content_stats_to_struct_value",
    "content_stats_type",
    "metrics_from_content_stats",
    "metrics_from_struct_value",
    "stats_struct_id",
    "struct_value_from_metrics",
]

CONTENT_STATS_ID = 146
STATS_PER_COLUMN = 200
DATA_STATS_START = 10_000
METADATA_STATS_START = 9_000
STATS_ID_END = 200_000_000  # exclusive
MAX_DATA_FIELD_ID = (STATS_ID_END - STATS_PER_COLUMN - DATA_STATS_START) // STATS_PER_COLUMN
_FIRST_METADATA_FIELD = LAST_UPDATED_SEQ_COLUMN_ID
_METADATA_FIELDS = {
    LAST_UPDATED_SEQ_COLUMN_ID: "_last_updated_sequence_number",
    ROW_ID_COLUMN_ID: "_row_id",
}

LOWER_BOUND, UPPER_BOUND, TIGHT_BOUNDS = 1, 2, 3
VALUE_COUNT, NULL_VALUE_COUNT, NAN_VALUE_COUNT, AVG_VALUE_SIZE = 4, 5, 6, 7


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Statistics of one column in one content entry; ``None`` means unknown."""

    lower_bound: Any = None
    upper_bound: Any = None
    tight_bounds: bool | None = None
    value_count: int | None = None
    null_value_count: int | None = None
    nan_value_count: int | None = None
    avg_value_size_in_bytes: int | None = None

    @property
    def is_empty(self) -> bool:
        """True when nothing is known."""
        return (
            self.lower_bound is None
            and self.upper_bound is None
            and self.tight_bounds is None
            and self.value_count is None
            and self.null_value_count is None
            and self.nan_value_count is None
            and self.avg_value_size_in_bytes is None
        )


ContentStats = dict[int, ColumnStats]
"""Stats of one entry keyed by column field id (table columns and reserved lineage columns)."""


@dataclass(frozen=True, slots=True)
class MetricMaps:
    """The v1–v3 metric maps of a ``DataFile`` (bounds as single-value binary)."""

    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None

    def as_changes(self) -> dict[str, Any]:
        """Keyword arguments for ``DataFile(...)`` / ``DataFile.with_changes``."""
        return {name: getattr(self, name) for name in self.__slots__}


# -- ids ---------------------------------------------------------------------------------------


def stats_struct_id(field_id: int) -> int | None:
    """Id of the stats struct of a column (None when the column cannot have stats)."""
    if field_id in _METADATA_FIELDS:
        return METADATA_STATS_START + STATS_PER_COLUMN * (field_id - _FIRST_METADATA_FIELD)
    if 0 <= field_id <= MAX_DATA_FIELD_ID:
        return DATA_STATS_START + STATS_PER_COLUMN * field_id
    return None


def column_id_for_stats_struct(stats_id: int) -> int | None:
    """The column field id a stats struct id belongs to (None for ids outside the stats space)."""
    if not METADATA_STATS_START <= stats_id < STATS_ID_END or stats_id % STATS_PER_COLUMN:
        return None
    if stats_id >= DATA_STATS_START:
        return (stats_id - DATA_STATS_START) // STATS_PER_COLUMN
    field_id = (stats_id - METADATA_STATS_START) // STATS_PER_COLUMN + _FIRST_METADATA_FIELD
    return field_id if field_id in _METADATA_FIELDS else None


# -- the per-table stats type --------------------------------------------------------------------


def _leaves(fields: Iterable[NestedField], schema: Schema) -> Iterable[tuple[NestedField, str]]:
    for f in fields:
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            yield from _leaves(t.fields, schema)
        elif isinstance(t, PrimitiveType) and not isinstance(t, UnknownType):
            yield f, schema.find_column_name(f.field_id) or f.name


def _column_stats_type(f: NestedField, base: int) -> StructType:
    t = f.field_type
    members = [
        NestedField(base + LOWER_BOUND, "lower_bound", t),
        NestedField(base + UPPER_BOUND, "upper_bound", t),
        NestedField(base + TIGHT_BOUNDS, "tight_bounds", BooleanType()),
        NestedField(base + VALUE_COUNT, "value_count", LongType()),
        NestedField(base + NULL_VALUE_COUNT, "null_value_count", LongType()),
    ]
    if isinstance(t, FloatType | DoubleType):
        members.append(NestedField(base + NAN_VALUE_COUNT, "nan_value_count", LongType()))
    if isinstance(t, StringType | BinaryType):
        members.append(NestedField(base + AVG_VALUE_SIZE, "avg_value_size_in_bytes", IntegerType()))
    return StructType(*members)


def content_stats_type(schema: Schema, *, row_lineage: bool = True) -> StructType:
    """The ``content_stats`` struct type of a table: one optional struct per primitive leaf column.

    Structs are sorted by id. ``row_lineage`` adds the reserved ``_row_id`` and
    ``_last_updated_sequence_number`` columns (always present in v3+ tables). The null count is
    included for every column (required columns report 0), so the type does not change when a
    column becomes optional.
    """
    leaves = list(_leaves(schema.fields, schema))
    if row_lineage:
        present = schema.field_ids()
        for fid, name in _METADATA_FIELDS.items():
            if fid not in present:
                leaves.append((NestedField(fid, name, LongType()), name))
    structs = []
    for f, name in leaves:
        base = stats_struct_id(f.field_id)
        if base is not None:
            structs.append(NestedField(base, name, _column_stats_type(f, base)))
    return StructType(*sorted(structs, key=lambda nf: nf.field_id))


_Decode = Callable[[bytes], Any]
_Encode = Callable[[Any], bytes]
_FIXED_WIDTH: tuple[tuple[tuple[type, ...], struct.Struct], ...] = (
    ((IntegerType, DateType), struct.Struct("<i")),
    (
        (LongType, TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType),
        struct.Struct("<q"),
    ),
    ((FloatType,), struct.Struct("<f")),
    ((DoubleType,), struct.Struct("<d")),
)


def _bound_codec(t: IcebergType) -> tuple[_Decode, _Encode]:
    """Fast single-value (de)serialisers for the common fixed-width types, else the generic ones."""
    for types, fmt in _FIXED_WIDTH:
        if isinstance(t, types):
            size, unpack, pack = fmt.size, fmt.unpack, fmt.pack

            def decode(data: bytes, size: int = size, unpack: Any = unpack, t: IcebergType = t) -> Any:
                return unpack(data)[0] if len(data) == size else from_bytes(t, data)

            def encode(value: Any, pack: Any = pack, t: IcebergType = t) -> bytes:
                try:
                    return bytes(pack(value))
                except struct.error:
                    return to_bytes(t, value)

            return decode, encode
    return (lambda data: from_bytes(t, data)), (lambda value: to_bytes(t, value))


class StatsLayout:
    """Where each column's stats live in one ``content_stats`` struct type (build once per table)."""

    def __init__(self, stats_type: StructType) -> None:
        self.stats_type = stats_type
        #: column field id -> (stats struct id, column type, member ids present in the struct)
        self.columns: dict[int, tuple[int, IcebergType, frozenset[int]]] = {}
        self.codecs: dict[int, tuple[_Decode, _Encode]] = {}
        for s in stats_type.fields:
            col = column_id_for_stats_struct(s.field_id)
            if col is None or not isinstance(s.field_type, StructType):
                continue
            lower = s.field_type.field_by_id(s.field_id + LOWER_BOUND)
            if lower is not None:
                members = frozenset(m.field_id for m in s.field_type.fields)
                self.columns[col] = (s.field_id, lower.field_type, members)
                self.codecs[col] = _bound_codec(lower.field_type)


def _layout(stats: StatsLayout | StructType) -> StatsLayout:
    return stats if isinstance(stats, StatsLayout) else StatsLayout(stats)


# -- struct values (dict by field id, as written to / read from Parquet) --------------------------


def content_stats_to_struct_value(
    stats: ContentStats | None, layout: StatsLayout | StructType
) -> dict[int, Any] | None:
    """The struct value (dict by stats field id) of an entry's stats; None when nothing is known.

    Columns without a struct in the layout are dropped; members the struct lacks are dropped.
    """
    if not stats:
        return None
    columns = _layout(layout).columns
    out: dict[int, Any] = {}
    for col, cs in stats.items():
        where = columns.get(col)
        if where is None:
            continue
        base, _, members = where
        values = (
            cs.lower_bound,
            cs.upper_bound,
            cs.tight_bounds,
            cs.value_count,
            cs.null_value_count,
            cs.nan_value_count,
            cs.avg_value_size_in_bytes,
        )
        kept = {
            base + offset: v
            for offset, v in enumerate(values, start=LOWER_BOUND)
            if v is not None and base + offset in members
        }
        if kept:
            out[base] = kept
    return out or None


def content_stats_from_struct_value(value: Mapping[int, Any] | None) -> ContentStats:
    """An entry's stats from its struct value (dict by stats field id); unknown ids are ignored."""
    out: ContentStats = {}
    for base, member in (value or {}).items():
        col = column_id_for_stats_struct(base)
        if col is None or not member:
            continue
        cs = ColumnStats(*(member.get(base + offset) for offset in range(LOWER_BOUND, AVG_VALUE_SIZE + 1)))
        if not cs.is_empty:
            out[col] = cs
    return out


# -- v1–v3 metric maps ---------------------------------------------------------------------------


def struct_value_from_metrics(data_file: DataFile, layout: StatsLayout | StructType) -> dict[int, Any] | None:
    """The content_stats struct value of a ``DataFile``'s metric maps (bounds decoded by type).

    ``tight_bounds`` and the average value size stay unknown: v1–v3 bounds may be truncated.
    Columns the layout does not know (dropped, nested parents) are left out.
    """
    lay = _layout(layout)
    columns, codecs = lay.columns, lay.codecs
    value_counts = data_file.value_counts or {}
    null_counts = data_file.null_value_counts or {}
    nan_counts = data_file.nan_value_counts or {}
    lower = data_file.lower_bounds or {}
    upper = data_file.upper_bounds or {}
    ids = {*value_counts, *null_counts, *nan_counts, *lower, *upper}
    out: dict[int, Any] = {}
    for fid in sorted(ids):
        where = columns.get(fid)
        if where is None:
            continue
        base, _, members = where
        decode = codecs[fid][0]
        m: dict[int, Any] = {}
        if (lo := lower.get(fid)) is not None:
            m[base + LOWER_BOUND] = decode(lo)
        if (hi := upper.get(fid)) is not None:
            m[base + UPPER_BOUND] = decode(hi)
        if (vc := value_counts.get(fid)) is not None:
            m[base + VALUE_COUNT] = vc
        if (nc := null_counts.get(fid)) is not None:
            m[base + NULL_VALUE_COUNT] = nc
        if (nan := nan_counts.get(fid)) is not None and base + NAN_VALUE_COUNT in members:
            m[base + NAN_VALUE_COUNT] = nan
        if m:
            out[base] = m
    return out or None


def metrics_from_struct_value(
    value: Mapping[int, Any] | None, layout: StatsLayout | StructType
) -> MetricMaps:
    """v1–v3 metric maps of a content_stats struct value (bounds serialised with the column types).

    A map is None when no column has that metric, as for v1–v3 entries written without it.
    """
    if not value:
        return MetricMaps()
    lay = _layout(layout)
    value_counts: dict[int, int] = {}
    null_counts: dict[int, int] = {}
    nan_counts: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for col, (base, _, _) in lay.columns.items():
        m = value.get(base)
        if not m:
            continue
        encode = lay.codecs[col][1]
        if (vc := m.get(base + VALUE_COUNT)) is not None:
            value_counts[col] = vc
        if (nc := m.get(base + NULL_VALUE_COUNT)) is not None:
            null_counts[col] = nc
        if (nan := m.get(base + NAN_VALUE_COUNT)) is not None:
            nan_counts[col] = nan
        if (lo := m.get(base + LOWER_BOUND)) is not None:
            lower[col] = encode(lo)
        if (hi := m.get(base + UPPER_BOUND)) is not None:
            upper[col] = encode(hi)
    return MetricMaps(
        value_counts or None, null_counts or None, nan_counts or None, lower or None, upper or None
    )


def content_stats_from_metrics(data_file: DataFile, layout: StatsLayout | StructType) -> ContentStats:
    """Typed stats (``ContentStats``) from a ``DataFile``'s metric maps."""
    return content_stats_from_struct_value(struct_value_from_metrics(data_file, layout))


def metrics_from_content_stats(stats: ContentStats | None, layout: StatsLayout | StructType) -> MetricMaps:
    """v1–v3 metric maps of typed stats (columns unknown to the layout are dropped)."""
    lay = _layout(layout)
    return metrics_from_struct_value(content_stats_to_struct_value(stats, lay), lay)


# -- aggregation for manifest references ---------------------------------------------------------


def _sum(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def aggregate_tight_bounds(values: Iterable[bool | None], *, has_mdv: bool = False) -> bool | None:
    """Three-valued (Kleene) AND of the entries' ``tight_bounds``; False under a manifest DV.

    False wins (one loose entry, or a manifest DV whose masked rows still count, makes the bounds
    loose); otherwise an unknown entry (e.g. converted from v1–v3 metrics, whose bounds may be
    truncated) makes the aggregate unknown; only all-True gives True.
    """
    if has_mdv:
        return False
    known = True
    for tight in values:
        if tight is False:
            return False
        known = known and tight is not None
    return True if known else None


def aggregate_content_stats(entries: Iterable[ContentStats | None], *, has_mdv: bool = False) -> ContentStats:
    """Manifest-level stats over the entries of a leaf (pass the live ones).

    Counts are summed, bounds are the min of lower / max of upper bounds, ``tight_bounds`` is the
    three-valued AND of the entries' (see ``aggregate_tight_bounds``), the average size is left
    unknown. A statistic unknown for any entry is unknown for the manifest, except that a bound may
    be missing on an entry whose column is all null.
    """
    rows = list(entries)
    if not rows or any(r is None for r in rows):
        return {}
    columns = set().union(*(r.keys() for r in rows if r))
    out: ContentStats = {}
    for fid in sorted(columns):
        per = [(r or {}).get(fid, ColumnStats()) for r in rows]
        lows, highs, bounds_known = [], [], True
        for cs in per:
            all_null = cs.value_count is not None and cs.null_value_count == cs.value_count
            if cs.lower_bound is None or cs.upper_bound is None or _is_nan(cs.lower_bound):
                bounds_known = bounds_known and all_null
                continue
            lows.append(cs.lower_bound)
            highs.append(cs.upper_bound)
        bounded = bounds_known and bool(lows)
        agg = ColumnStats(
            lower_bound=min(lows) if bounded else None,
            upper_bound=max(highs) if bounded else None,
            tight_bounds=aggregate_tight_bounds([cs.tight_bounds for cs in per], has_mdv=has_mdv)
            if bounded
            else None,
            value_count=_sum([cs.value_count for cs in per]),
            null_value_count=_sum([cs.null_value_count for cs in per]),
            nan_value_count=_sum([cs.nan_value_count for cs in per])
            if any(cs.nan_value_count is not None for cs in per)
            else None,
        )
        if not agg.is_empty:
            out[fid] = agg
    return out


# -- columnar access -----------------------------------------------------------------------------


def content_stats_column(table: pa.Table, field_id: int) -> pa.StructArray | None:
    """The stats struct of one column across a content-entry table (parent nulls applied).

    Members are found by field id; the result's fields keep their ``PARQUET:field_id``
    metadata. None when the table has no stats for the column.
    """
    base = stats_struct_id(field_id)
    if base is None:
        return None
    for i, f in enumerate(table.schema):
        if field_id_of(f) != CONTENT_STATS_ID or not pa.types.is_struct(f.type):
            continue
        stats = table.column(i).combine_chunks()
        for j in range(f.type.num_fields):
            if field_id_of(f.type.field(j)) == base:
                child = stats.flatten()[j]
                return child if isinstance(child, pa.StructArray) else None
    return None
