"""Column metrics for data files: metrics modes, bound truncation, and collection from Parquet.

Counts and sizes come from the Parquet footer (exactly what a reader of the file would see);
NaN counts and lower/upper bounds come from the Arrow data that was written (NaN never enters a
bound; struct fields under a null parent do not count). Bounds are kept only for primitive
columns outside lists and maps, serialised with ``icefloe.spec.conversions.to_bytes``.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import map_items, map_keys
from icefloe.spec.conversions import to_bytes
from icefloe.spec.properties import checked_int_property
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
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
    UUIDType,
)

DEFAULT_MODE_PROPERTY = "write.metadata.metrics.default"
COLUMN_MODE_PREFIX = "write.metadata.metrics.column."
MAX_INFERRED_COLUMNS_PROPERTY = "write.metadata.metrics.max-inferred-column-defaults"
MAX_INFERRED_COLUMNS_DEFAULT = 100
_TRUNCATE = re.compile(r"truncate\(\s*(\d+)\s*\)")


@dataclass(frozen=True, slots=True)
class MetricsMode:
    """What to record for a column: ``none``, ``counts``, ``truncate`` (with length) or ``full``."""

    kind: str
    length: int = 0

    @property
    def counts(self) -> bool:
        """Whether sizes and value/null/NaN counts are recorded."""
        return self.kind != "none"

    @property
    def bounds(self) -> bool:
        """Whether lower/upper bounds are recorded."""
        return self.kind in ("truncate", "full")

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


NONE = MetricsMode("none")
COUNTS = MetricsMode("counts")
FULL = MetricsMode("full")
DEFAULT_MODE = MetricsMode("truncate", 16)


def parse_metrics_mode(text: str) -> MetricsMode:
    """Parse ``none``, ``counts``, ``full`` or ``truncate(N)`` (case-insensitive)."""
    key = text.strip().lower()
    if key in ("none", "counts", "full"):
        return MetricsMode(key)
    if m := _TRUNCATE.fullmatch(key):
        length = int(m.group(1))
        if length <= 0:
            raise ValidationError(f"metrics mode {text!r}: truncate length must be positive")
        return MetricsMode("truncate", length)
    raise ValidationError(f"invalid metrics mode {text!r} (use none, counts, full or truncate(N))")


@dataclass(frozen=True, slots=True)
class Leaf:
    """A primitive column of a schema as stored in Parquet (a leaf of the nested structure)."""

    field: NestedField
    path: tuple[str, ...]  # Iceberg names from the top (list element = "element", map = key/value)
    repeated: bool  # inside a list or a map

    @property
    def name(self) -> str:
        """Dotted Iceberg column name."""
        return ".".join(self.path)


def iter_leaves(
    fields: tuple[NestedField, ...], prefix: tuple[str, ...] = (), repeated: bool = False
) -> Iterator[Leaf]:
    """Primitive leaves in Parquet column order (unknown-typed fields are never stored)."""
    for f in fields:
        path = (*prefix, f.name)
        t = f.field_type
        if isinstance(t, StructType):
            yield from iter_leaves(t.fields, path, repeated)
        elif isinstance(t, ListType | MapType):
            yield from iter_leaves(t.fields, path, True)
        elif not isinstance(t, UnknownType):
            yield Leaf(f, path, repeated)


class MetricsConfig:
    """Metrics mode per column from table properties (``write.metadata.metrics.*``)."""

    def __init__(self, properties: Mapping[str, str], schema: Schema) -> None:
        leaves = list(iter_leaves(schema.fields))
        explicit_default = properties.get(DEFAULT_MODE_PROPERTY)
        self._modes: dict[int, MetricsMode] = {}
        if explicit_default is not None:
            default = parse_metrics_mode(explicit_default)
            for leaf in leaves:
                self._modes[leaf.field.field_id] = default
        else:
            limit = checked_int_property(
                properties, MAX_INFERRED_COLUMNS_PROPERTY, MAX_INFERRED_COLUMNS_DEFAULT
            )
            for i, leaf in enumerate(leaves):
                self._modes[leaf.field.field_id] = DEFAULT_MODE if i < limit else NONE
        by_name = {leaf.name: leaf.field.field_id for leaf in leaves}
        for key, value in properties.items():
            if key.startswith(COLUMN_MODE_PREFIX):
                name = key[len(COLUMN_MODE_PREFIX) :]
                mode = parse_metrics_mode(value)
                if name in by_name:
                    self._modes[by_name[name]] = mode
                else:  # a struct name applies to every leaf below it
                    for leaf_name, fid in by_name.items():
                        if leaf_name.startswith(name + "."):
                            self._modes[fid] = mode

    def mode(self, field_id: int) -> MetricsMode:
        """The mode of a leaf column."""
        return self._modes.get(field_id, DEFAULT_MODE)


# ---------------------------------------------------------------------------------------------
# truncation


def truncate_string_lower(value: str, length: int) -> str:
    """A lower bound of at most ``length`` code points."""
    return value[:length]


def truncate_string_upper(value: str, length: int) -> str | None:
    """An upper bound of at most ``length`` code points, or None when none exists.

    Truncates, then increments the last code point that can be incremented (dropping the ones
    after it); surrogate code points are skipped.
    """
    if len(value) <= length:
        return value
    chars = list(value[:length])
    for i in range(len(chars) - 1, -1, -1):
        nxt = ord(chars[i]) + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000
        if nxt <= 0x10FFFF:
            return "".join(chars[:i]) + chr(nxt)
    return None


def truncate_binary_lower(value: bytes, length: int) -> bytes:
    """A lower bound of at most ``length`` bytes."""
    return bytes(value[:length])


def truncate_binary_upper(value: bytes, length: int) -> bytes | None:
    """An upper bound of at most ``length`` bytes (last byte that is not 0xFF incremented), or None."""
    if len(value) <= length:
        return bytes(value)
    data = bytearray(value[:length])
    for i in range(len(data) - 1, -1, -1):
        if data[i] != 0xFF:
            data[i] += 1
            return bytes(data[: i + 1])
    return None


# ---------------------------------------------------------------------------------------------
# collection


@dataclass
class FileMetrics:
    """Per-column metrics of one data file, keyed by field id."""

    column_sizes: dict[int, int] = field(default_factory=dict)
    value_counts: dict[int, int] = field(default_factory=dict)
    null_value_counts: dict[int, int] = field(default_factory=dict)
    nan_value_counts: dict[int, int] = field(default_factory=dict)
    lower_bounds: dict[int, bytes] = field(default_factory=dict)
    upper_bounds: dict[int, bytes] = field(default_factory=dict)


_TEMPORAL_INT64 = (TimeType, TimestampType, TimestamptzType, TimestampNanoType, TimestamptzNanoType)


def collect_metrics(
    table: pa.Table, schema: Schema, footer: pq.FileMetaData, config: MetricsConfig
) -> FileMetrics:
    """Metrics of a written Parquet file: footer counts and sizes, data NaN counts and bounds."""
    leaves = list(iter_leaves(schema.fields))
    if footer.num_columns != len(leaves):
        raise ValidationError(
            f"Parquet file has {footer.num_columns} leaf columns but the schema has {len(leaves)}"
        )
    out = FileMetrics()
    for i, leaf in enumerate(leaves):
        fid = leaf.field.field_id
        mode = config.mode(fid)
        if not mode.counts:
            continue
        size = values = nulls = 0
        nulls_known = True
        for rg in range(footer.num_row_groups):
            col = footer.row_group(rg).column(i)
            size += col.total_compressed_size
            values += col.num_values
            stats = col.statistics
            if stats is not None and stats.has_null_count:
                nulls += stats.null_count
            else:
                nulls_known = False
        out.column_sizes[fid] = size
        out.value_counts[fid] = values
        leaf_type = leaf.field.field_type
        needs_data = (
            not nulls_known
            or isinstance(leaf_type, FloatType | DoubleType)
            or (mode.bounds and not leaf.repeated)
        )
        data = _leaf_values(table, leaf.path) if needs_data else None
        if nulls_known:
            out.null_value_counts[fid] = nulls
        elif data is not None and not leaf.repeated:
            out.null_value_counts[fid] = data.null_count
        if data is not None and isinstance(leaf_type, FloatType | DoubleType):
            out.nan_value_counts[fid] = int(pc.sum(pc.is_nan(data)).as_py() or 0) if len(data) else 0
        if data is not None and mode.bounds and not leaf.repeated and isinstance(leaf_type, PrimitiveType):
            _add_bounds(out, fid, leaf_type, data, mode)
    return out


def float_leaf_metrics(table: pa.Table, leaves: list[Leaf], config: MetricsConfig) -> FileMetrics:
    """NaN counts and NaN-free bounds of float/double ``leaves``, computed from ``table``'s values."""
    out = FileMetrics()
    for leaf in leaves:
        fid = leaf.field.field_id
        mode = config.mode(fid)
        if not mode.counts:
            continue
        data = _leaf_values(table, leaf.path)
        out.nan_value_counts[fid] = int(pc.sum(pc.is_nan(data)).as_py() or 0) if len(data) else 0
        if mode.bounds and not leaf.repeated:
            _add_bounds(out, fid, leaf.field.field_type, data, mode)
    return out


def _leaf_values(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray:
    """A leaf column's values; struct parents' nulls applied, lists/maps flattened."""
    col: pa.ChunkedArray = table.column(path[0])
    for name in path[1:]:
        t = col.type
        if pa.types.is_struct(t):
            col = col.flatten()[t.get_field_index(name)]
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            col = pc.list_flatten(col)
        elif pa.types.is_map(t):
            pick = map_keys if name == "key" else map_items
            col = pa.chunked_array(
                [pick(c) for c in col.chunks], type=t.key_type if name == "key" else t.item_type
            )
        else:
            raise ValidationError(f"cannot find column {'.'.join(path)} in the data")
    if isinstance(col.type, pa.BaseExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
    return col


def _add_bounds(out: FileMetrics, fid: int, t: IcebergType, data: pa.ChunkedArray, mode: MetricsMode) -> None:
    if data.null_count == len(data):
        return
    if isinstance(t, DateType):
        data = data.cast(pa.int32())
    elif isinstance(t, _TEMPORAL_INT64):
        data = data.cast(pa.int64())
    lo: Any
    hi: Any
    if len(data) == 1:  # a one-row file (a small append's): its value is both bounds
        lo = hi = data[0].as_py()
    else:
        mm = pc.min_max(data)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if lo is None or hi is None:
        return
    if isinstance(t, FloatType | DoubleType):
        if math.isnan(lo) or math.isnan(hi):
            return
        if lo == 0.0:
            lo = -0.0
        if hi == 0.0:
            hi = 0.0
    upper: Any = hi
    if isinstance(t, UUIDType):
        lo, upper = uuid.UUID(bytes=lo), uuid.UUID(bytes=hi)
    elif mode.kind == "truncate" and isinstance(t, StringType):
        lo, upper = truncate_string_lower(lo, mode.length), truncate_string_upper(hi, mode.length)
    elif mode.kind == "truncate" and isinstance(t, BinaryType):
        lo, upper = truncate_binary_lower(lo, mode.length), truncate_binary_upper(hi, mode.length)
    out.lower_bounds[fid] = to_bytes(t, lo)
    if upper is not None:
        out.upper_bounds[fid] = to_bytes(t, upper)


def split_offsets(footer: pq.FileMetaData) -> tuple[int, ...]:
    """Start offset of every row group (its first column chunk's first page), ascending."""
    offsets = []
    for rg in range(footer.num_row_groups):
        group = footer.row_group(rg)
        if group.num_columns == 0:
            continue
        col = group.column(0)
        start = col.data_page_offset
        if col.has_dictionary_page and col.dictionary_page_offset and col.dictionary_page_offset < start:
            start = col.dictionary_page_offset
        offsets.append(int(start))
    return tuple(sorted(offsets))
