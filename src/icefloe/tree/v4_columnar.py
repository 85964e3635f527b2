"""Fast decoding of v4 leaf rows: column at a time instead of one dict per row.

``formats.content_entry.to_positioned_rows`` turns each row into a dict by field id and then
into objects, which costs tens of microseconds per entry. Planning over millions of files reads
leaves on the hot path, so this module builds the same ``ManifestEntry`` objects from whole
columns: every member is converted once per column (bounds serialised with the column's codec),
and the per-row loop only assembles objects. Only DATA / EQUALITY_DELETES rows (leaf content)
are handled; a differential test keeps the result equal to ``to_positioned_rows``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata
from icefloe.formats import content_entry_schema as ce
from icefloe.formats.arrow_schema import arrow_type_to_iceberg, field_id_of
from icefloe.formats.content_entry_schema import POS_COLUMN, to_python_values
from icefloe.formats.content_stats import (
    LOWER_BOUND,
    NAN_VALUE_COUNT,
    NULL_VALUE_COUNT,
    UPPER_BOUND,
    VALUE_COUNT,
    StatsLayout,
    column_id_for_stats_struct,
)
from icefloe.spec.content import DataFile, DeletionVectorRef, EntryStatus, FileContent, ManifestEntry
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.types import BinaryType, IcebergType, StringType

Column = list[Any]


def _top(table: pa.Table) -> dict[int, pa.Array]:
    out: dict[int, pa.Array] = {}
    for i, f in enumerate(table.schema):
        fid = field_id_of(f)
        if fid is not None and fid not in out:
            col = table.column(i)
            out[fid] = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return out


def _children(arr: pa.Array | None) -> dict[int, pa.Array]:
    """A struct column's members by field id, parent nulls applied."""
    if arr is None:
        return {}
    struct = cast(pa.StructArray, arr)
    return {
        fid: pc.struct_field(struct, [i])
        for i in range(struct.type.num_fields)
        if (fid := field_id_of(struct.type.field(i))) is not None
    }


def _values(arr: pa.Array | None, n: int) -> Column:
    if arr is None:
        return [None] * n
    return list(arr.to_pylist())


def _typed(arr: pa.Array, name: str) -> Column:
    return to_python_values(arr, arrow_type_to_iceberg(arr.type, name))


def _partitions(arr: pa.Array | None, n: int) -> dict[int, Column]:
    return {fid: _typed(child, str(fid)) for fid, child in _children(arr).items()}


class _Metrics:
    """The v1–v3 metric maps of every row, built column by column from content_stats."""

    def __init__(self, arr: pa.Array | None, layout: StatsLayout, n: int) -> None:
        self.n = n
        self.value_counts: list[dict[int, int] | None] = [None] * n
        self.null_counts: list[dict[int, int] | None] = [None] * n
        self.nan_counts: list[dict[int, int] | None] = [None] * n
        self.lower: list[dict[int, bytes] | None] = [None] * n
        self.upper: list[dict[int, bytes] | None] = [None] * n
        for base, struct in _children(arr).items():
            col = column_id_for_stats_struct(base)
            if col is None or col not in layout.columns or layout.columns[col][0] != base:
                continue
            members = _children(struct)
            encode = _encoder(layout, col)
            self._counts(self.value_counts, col, members.get(base + VALUE_COUNT))
            self._counts(self.null_counts, col, members.get(base + NULL_VALUE_COUNT))
            self._counts(self.nan_counts, col, members.get(base + NAN_VALUE_COUNT))
            t = layout.columns[col][1]
            self._bounds(self.lower, col, members.get(base + LOWER_BOUND), t, encode)
            self._bounds(self.upper, col, members.get(base + UPPER_BOUND), t, encode)

    def _counts(self, out: list[Any], col: int, arr: pa.Array | None) -> None:
        if arr is None or arr.null_count == len(arr):
            return
        for i, v in enumerate(arr.to_pylist()):
            if v is not None:
                m = out[i]
                if m is None:
                    out[i] = {col: v}
                else:
                    m[col] = v

    def _bounds(
        self, out: list[Any], col: int, arr: pa.Array | None, t: IcebergType, encode: Callable[[Any], bytes]
    ) -> None:
        if arr is None or arr.null_count == len(arr):
            return
        for i, v in enumerate(to_python_values(arr, t)):
            if v is not None:
                m = out[i]
                if m is None:
                    out[i] = {col: encode(v)}
                else:
                    m[col] = encode(v)


def _encoder(layout: StatsLayout, col: int) -> Callable[[Any], bytes]:
    """The single-value serialiser of a column's bounds (strings and binary without dispatch)."""
    t = layout.columns[col][1]
    if isinstance(t, StringType):
        return str.encode
    if isinstance(t, BinaryType):
        return bytes
    return layout.codecs[col][1]


def _deletion_vectors(arr: pa.Array | None, n: int) -> list[DeletionVectorRef | None]:
    if arr is None or arr.null_count == len(arr):
        return [None] * n
    m = _children(arr)
    loc, off, size, card, key = (
        _values(m.get(i), n)
        for i in (ce.DV_LOCATION, ce.DV_OFFSET, ce.DV_SIZE, ce.DV_CARDINALITY, ce.DV_KEY_METADATA)
    )
    valid = arr.is_valid().to_pylist()
    return [
        DeletionVectorRef(loc[i], off[i], size[i], card[i], key[i]) if valid[i] else None for i in range(n)
    ]


def decode_leaf_rows(
    table: pa.Table, specs: Mapping[int, PartitionSpec], layout: StatsLayout, source: str
) -> list[tuple[int, ManifestEntry]]:
    """``(position, entry)`` for every row of a leaf table from ``read_content_entries`` (raw values)."""
    n = table.num_rows
    if n == 0:
        return []
    top = _top(table)
    tracking = _children(top.get(ce.TRACKING))
    status, sid, seq, fseq, dv_sid, frid = (
        _values(tracking.get(i), n)
        for i in (
            ce.STATUS,
            ce.SNAPSHOT_ID,
            ce.SEQUENCE_NUMBER,
            ce.FILE_SEQUENCE_NUMBER,
            ce.DV_SNAPSHOT_ID,
            ce.FIRST_ROW_ID,
        )
    )
    content = _values(top.get(ce.CONTENT_TYPE), n)
    location, fmt, records, size = (
        _values(top.get(i), n) for i in (ce.LOCATION, ce.FILE_FORMAT, ce.RECORD_COUNT, ce.FILE_SIZE)
    )
    spec_ids, sort_ids, keys = (
        _values(top.get(i), n) for i in (ce.SPEC_ID, ce.SORT_ORDER_ID, ce.KEY_METADATA)
    )
    splits, eq_ids = _values(top.get(ce.SPLIT_OFFSETS), n), _values(top.get(ce.EQUALITY_IDS), n)
    parts = _partitions(top.get(ce.PARTITION), n)
    metrics = _Metrics(top.get(ce.CONTENT_STATS), layout, n)
    dvs = _deletion_vectors(top.get(ce.DELETION_VECTOR), n)
    pos_col = table.column(POS_COLUMN) if POS_COLUMN in table.column_names else None
    positions = pos_col.to_pylist() if pos_col is not None else list(range(n))
    empty: Column = [None] * n
    unpartitioned = min((s.spec_id for s in specs.values() if not s.fields), default=0)
    partition_of = {
        spec_id: list(zip(*(parts.get(f.field_id, empty) for f in spec.fields), strict=True))
        if spec.fields
        else None
        for spec_id, spec in specs.items()
    }
    statuses = {int(s): s for s in EntryStatus}
    contents = {0: FileContent.DATA, 2: FileContent.EQUALITY_DELETES}
    out: list[tuple[int, ManifestEntry]] = []
    for i in range(n):
        ct = contents.get(content[i])
        st = statuses.get(status[i] or 0)
        if ct is None or st is None:
            raise CorruptMetadata(
                f"{source}: {location[i]}: bad content type {content[i]} or status {status[i]}"
            )
        spec_id = spec_ids[i] if spec_ids[i] is not None else unpartitioned
        if spec_id in partition_of:
            tuples = partition_of[spec_id]
            partition = tuples[i] if tuples is not None else ()
        elif spec_ids[i] is not None or specs:
            raise CorruptMetadata(f"{source}: {location[i]}: unknown partition spec id {spec_id}")
        else:
            partition = ()
        data_file = DataFile(
            file_path=location[i],
            file_format=str(fmt[i]).lower(),
            record_count=records[i],
            file_size_in_bytes=size[i],
            content=ct,
            spec_id=spec_id,
            partition=partition,
            value_counts=metrics.value_counts[i],
            null_value_counts=metrics.null_counts[i],
            nan_value_counts=metrics.nan_counts[i],
            lower_bounds=metrics.lower[i],
            upper_bounds=metrics.upper[i],
            key_metadata=keys[i],
            split_offsets=None if splits[i] is None else tuple(splits[i]),
            equality_ids=None if eq_ids[i] is None else tuple(eq_ids[i]),
            sort_order_id=sort_ids[i],
            first_row_id=frid[i] if ct == FileContent.DATA else None,
            deletion_vector=dvs[i],
        )
        out.append((positions[i], ManifestEntry(st, sid[i], seq[i], fseq[i], data_file, dv_sid[i])))
    return out
