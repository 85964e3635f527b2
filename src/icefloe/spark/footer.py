"""DataFile entries for Parquet files written by Spark, from their footers alone.

Spark's Parquet writer records per-row-group statistics; the driver turns them into Iceberg
metrics (column sizes, value and null counts, lower/upper bounds truncated per the table's
``write.metadata.metrics.*`` modes) without reading the data. Footers carry no NaN counts, so float
and double columns alone are read back from the file: their NaN counts and NaN-free bounds are
computed from the values, as icefloe's own writer does (spec: bounds never include NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pyarrow.parquet as pq

from icefloe.formats.parquet.metrics import (
    FileMetrics,
    Leaf,
    MetricsConfig,
    float_leaf_metrics,
    iter_leaves,
    split_offsets,
    truncate_binary_lower,
    truncate_binary_upper,
    truncate_string_lower,
    truncate_string_upper,
)
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.conversions import to_bytes, unscaled_to_decimal
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

_BOUNDED = (
    BooleanType,
    IntegerType,
    LongType,
    DateType,
    TimestampType,
    TimestamptzType,
    DecimalType,
    StringType,
    BinaryType,
)


def read_footer(io: FileIO, path: str) -> tuple[pq.FileMetaData, int]:
    """The Parquet footer of a file and the file's size in bytes."""
    input_file = io.new_input(path)
    with input_file.open() as stream:
        size = stream.size()
        return pq.read_metadata(stream), size


def data_files_from_footers(
    io: FileIO,
    files: list[tuple[str, tuple[Any, ...]]],
    schema: Schema,
    spec_id: int,
    properties: dict[str, str],
    threads: int = 16,
) -> list[DataFile]:
    """DataFile entries for ``(path, partition)`` pairs, footers read in parallel."""
    config = MetricsConfig(properties, schema)

    def one(item: tuple[str, tuple[Any, ...]]) -> DataFile:
        path, partition = item
        footer, size = read_footer(io, path)
        floats = _float_metrics(io, path, footer, schema, config)
        return data_file_from_footer(path, footer, size, schema, spec_id, partition, config, floats)

    if len(files) <= 1:
        return [one(f) for f in files]
    with ThreadPoolExecutor(max_workers=min(threads, len(files))) as pool:
        return list(pool.map(one, files))


def data_file_from_footer(
    path: str,
    footer: pq.FileMetaData,
    file_size: int,
    schema: Schema,
    spec_id: int,
    partition: tuple[Any, ...],
    config: MetricsConfig,
    floats: FileMetrics | None = None,
) -> DataFile:
    """One DataFile with metrics from the footer's column-chunk statistics (``floats``: NaN counts
    and bounds of float/double columns, computed from their values by ``_float_metrics``)."""
    by_path = {leaf.name: leaf for leaf in iter_leaves(schema.fields)}
    column_sizes: dict[int, int] = {}
    value_counts: dict[int, int] = {}
    null_counts: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    if footer.num_row_groups:
        first = footer.row_group(0)
        for i in range(first.num_columns):
            leaf = by_path.get(first.column(i).path_in_schema)
            if leaf is None:
                continue
            fid = leaf.field.field_id
            mode = config.mode(fid)
            if not mode.counts:
                continue
            t = leaf.field.field_type
            stats = _column_stats(footer, i, _converter(t))
            column_sizes[fid] = stats.size
            value_counts[fid] = stats.values
            if stats.nulls is not None:
                null_counts[fid] = stats.nulls
            if mode.bounds and not leaf.repeated and isinstance(t, _BOUNDED) and stats.complete:
                _add_bounds(t, fid, stats.lo, stats.hi, mode.kind, mode.length, lower, upper)
    nan_counts = dict(floats.nan_value_counts) if floats is not None else {}
    if floats is not None:
        lower.update(floats.lower_bounds)
        upper.update(floats.upper_bounds)
    return DataFile(
        file_path=path,
        file_format="parquet",
        record_count=footer.num_rows,
        file_size_in_bytes=file_size,
        content=FileContent.DATA,
        spec_id=spec_id,
        partition=tuple(partition),
        column_sizes=column_sizes,
        value_counts=value_counts,
        null_value_counts=null_counts,
        nan_value_counts=nan_counts,
        lower_bounds=lower,
        upper_bounds=upper,
        split_offsets=split_offsets(footer),
    )


def _float_metrics(
    io: FileIO, path: str, footer: pq.FileMetaData, schema: Schema, config: MetricsConfig
) -> FileMetrics | None:
    """NaN counts and NaN-free bounds of the file's float/double columns (read back: footers lack NaN
    counts); None when the table has no such column with metrics enabled."""
    leaves: list[Leaf] = [
        leaf
        for leaf in iter_leaves(schema.fields)
        if isinstance(leaf.field.field_type, FloatType | DoubleType)
        and config.mode(leaf.field.field_id).counts
    ]
    if not leaves or not footer.num_rows:
        return None
    tops = sorted({leaf.path[0] for leaf in leaves})
    present = set(footer.schema.to_arrow_schema().names)
    fs, fs_path = io.filesystem_and_path(path)
    data = pq.read_table(fs_path, filesystem=fs, columns=[t for t in tops if t in present])
    return float_leaf_metrics(data, [leaf for leaf in leaves if leaf.path[0] in present], config)


class _Stats:
    """Column statistics summed / folded over the row groups of one file."""

    def __init__(self) -> None:
        self.size = 0
        self.values = 0
        self.nulls: int | None = 0
        self.lo: Any = None
        self.hi: Any = None
        self.complete = True  # every row group with non-null values has min/max


def _column_stats(footer: pq.FileMetaData, index: int, convert: Callable[[Any], Any]) -> _Stats:
    out = _Stats()
    for rg in range(footer.num_row_groups):
        col = footer.row_group(rg).column(index)
        out.size += col.total_compressed_size
        out.values += col.num_values
        stats = col.statistics
        if stats is None or not stats.has_null_count:
            out.nulls = None
            out.complete = False
            continue
        if out.nulls is not None:
            out.nulls += stats.null_count
        if stats.null_count == col.num_values:
            continue
        if not stats.has_min_max or col.physical_type == "INT96":
            out.complete = False
            continue
        lo, hi = convert(stats.min_raw), convert(stats.max_raw)
        out.lo = lo if out.lo is None or lo < out.lo else out.lo
        out.hi = hi if out.hi is None or hi > out.hi else out.hi
    if out.lo is None:
        out.complete = False
    return out


def _converter(t: IcebergType) -> Callable[[Any], Any]:
    """Physical statistic value -> internal Iceberg value, so row groups fold in the type's order."""
    if isinstance(t, DecimalType):
        scale = t.scale
        return lambda v: _decimal(v, scale)
    if isinstance(t, StringType):
        return lambda v: v if isinstance(v, str) else bytes(v).decode("utf-8")
    if isinstance(t, BinaryType):
        return lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v)
    if isinstance(t, BooleanType):
        return bool
    if isinstance(t, FloatType | DoubleType):
        return float  # NaN and +-inf have no int; float bounds come from the values (_float_metrics)
    return int


def _add_bounds(
    t: IcebergType,
    fid: int,
    lo: Any,
    hi: Any,
    kind: str,
    length: int,
    lower: dict[int, bytes],
    upper: dict[int, bytes],
) -> None:
    if kind == "truncate" and isinstance(t, StringType):
        lo, hi = truncate_string_lower(lo, length), truncate_string_upper(hi, length)
    elif kind == "truncate" and isinstance(t, BinaryType):
        lo, hi = truncate_binary_lower(lo, length), truncate_binary_upper(hi, length)
    lower[fid] = to_bytes(t, lo)
    if hi is not None:
        upper[fid] = to_bytes(t, hi)


def _decimal(value: Any, scale: int) -> Decimal:
    unscaled = int.from_bytes(value, "big", signed=True) if isinstance(value, bytes) else int(value)
    return unscaled_to_decimal(unscaled, scale)
