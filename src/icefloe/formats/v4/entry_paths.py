"""The paths a v4 content-entry file (root or leaf manifest) holds, read and replaced in place.

A content entry names files in three places: its ``location`` (a data or delete file, or a leaf
manifest), its colocated deletion vector's ``deletion_vector.location`` and its column files'
``column_files[].location``; ``file_size_in_bytes`` goes with ``location``. Copying a table to
another location changes those and nothing else, so the file is read as stored (no projection onto
this process's schema, no location resolution: relative locations stay relative), the columns are
replaced by field id, and it is written again with its own footer metadata and codec. Rows keep
their order, so manifest deletion vectors (positions of rows in a leaf) stay valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4 import content_entry_schema as ce


@dataclass(frozen=True)
class EntryPaths:
    """One entry's file references, as stored (locations may be relative to the table location)."""

    content_type: int
    status: int
    snapshot_id: int | None  # None: inherited from the file's snapshot
    dv_snapshot_id: int | None  # the snapshot that wrote the colocated deletion vector
    column_file_snapshot_id: int | None  # the snapshot that wrote the newest column file
    location: str
    file_format: str
    file_size_in_bytes: int
    dv_location: str | None
    column_file_locations: tuple[str, ...]


def read_entry_paths(data: bytes, source: str) -> list[EntryPaths]:
    """The file references of every entry of a content-entry file, in row order."""
    table, _ = _read(data, source)
    tracking = _child_lists(
        _column(table, ce.TRACKING),
        (ce.STATUS, ce.SNAPSHOT_ID, ce.DV_SNAPSHOT_ID, ce.LATEST_COLUMN_FILE_SNAPSHOT_ID),
        table.num_rows,
    )
    dv = _child_lists(_column(table, ce.DELETION_VECTOR), (ce.DV_LOCATION,), table.num_rows)[0]
    return [
        EntryPaths(
            content_type=content_type,
            status=status,
            snapshot_id=snapshot_id,
            dv_snapshot_id=dv_snapshot_id,
            column_file_snapshot_id=column_file_snapshot_id,
            location=location,
            file_format=file_format,
            file_size_in_bytes=size,
            dv_location=dv_location,
            column_file_locations=tuple(columns or ()),
        )
        for (
            content_type,
            status,
            snapshot_id,
            dv_snapshot_id,
            column_file_snapshot_id,
            location,
            file_format,
            size,
            dv_location,
            columns,
        ) in zip(
            _values(table, ce.CONTENT_TYPE),
            *tracking,
            _values(table, ce.LOCATION),
            _values(table, ce.FILE_FORMAT),
            _values(table, ce.FILE_SIZE),
            dv,
            _column_file_locations(table),
            strict=True,
        )
    ]


def with_entry_paths(data: bytes, source: str, entries: Sequence[EntryPaths]) -> bytes:
    """The content-entry file ``data`` with each row's locations and file size taken from
    ``entries`` (one per row, in order); every other column and the footer are kept."""
    table, footer = _read(data, source)
    if len(entries) != table.num_rows:
        raise ValueError(f"{source}: {len(entries)} entries given for {table.num_rows} rows")
    columns = list(table.columns)
    for i, f in enumerate(table.schema):
        fid = field_id_of(f)
        if fid == ce.LOCATION:
            columns[i] = pa.array([e.location for e in entries], f.type)
        elif fid == ce.FILE_SIZE:
            columns[i] = pa.array([e.file_size_in_bytes for e in entries], f.type)
        elif fid == ce.DELETION_VECTOR:
            dv = cast(pa.StructArray, _single(table.column(i)))
            stored = dv.field(_child_index(dv.type, ce.DV_LOCATION)).to_pylist()
            # a required member under a null struct keeps what the writer filled in there
            locations = [
                old if e.dv_location is None else e.dv_location
                for e, old in zip(entries, stored, strict=True)
            ]
            columns[i] = _with_child(dv, ce.DV_LOCATION, pa.array(locations, pa.string()))
        elif fid == ce.COLUMN_FILES:
            columns[i] = _with_column_file_locations(_single(table.column(i)), entries)
    rewritten = pa.Table.from_arrays(columns, schema=table.schema)
    buf = pa.BufferOutputStream()
    with pq.ParquetWriter(
        buf,
        rewritten.schema,
        compression=_codec(data),
        version="2.6",
        store_schema=False,
        write_page_checksum=True,
    ) as out:
        out.write_table(rewritten)
        out.add_key_value_metadata(footer)
    return cast(bytes, buf.getvalue().to_pybytes())


def _read(data: bytes, source: str) -> tuple[pa.Table, dict[bytes, bytes]]:
    try:
        pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
        return pf.read(), dict(pf.metadata.metadata or {})
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadata(f"{source}: not a readable content-entry file: {exc}", location=source) from exc


def _codec(data: bytes) -> str:
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata
    if meta.num_row_groups and meta.num_columns:
        return str(meta.row_group(0).column(0).compression).lower()
    return "zstd"


def _single(column: pa.ChunkedArray) -> pa.Array:
    return ce.single_array(column)


def _column(table: pa.Table, field_id: int) -> pa.Array | None:
    for i, f in enumerate(table.schema):
        if field_id_of(f) == field_id:
            return _single(table.column(i))
    return None


def _values(table: pa.Table, field_id: int) -> list:
    column = _column(table, field_id)
    if column is None:
        raise CorruptMetadata(f"content-entry file has no column with field id {field_id}")
    return column.to_pylist()


def _child_lists(parent: pa.Array | None, field_ids: tuple[int, ...], rows: int) -> list[list]:
    """The values of ``parent``'s children with these ids (None where the struct or the member is
    missing: compact files leave out members that hold only nulls)."""
    out: list[list] = []
    for fid in field_ids:
        values: list = [None] * rows
        if parent is not None:
            struct = cast(pa.StructArray, parent)
            for j, child in enumerate(struct.type):
                if field_id_of(child) == fid:
                    flat = struct.field(j).to_pylist()
                    valid = struct.is_valid().to_pylist()
                    values = [v if ok else None for v, ok in zip(flat, valid, strict=True)]
        out.append(values)
    return out


def _column_file_locations(table: pa.Table) -> list[list[str] | None]:
    column = _column(table, ce.COLUMN_FILES)
    if column is None:
        return [None] * table.num_rows
    lists = cast(pa.ListArray, column)
    struct = cast(pa.StructArray, lists.values)
    index = _child_index(struct.type, ce.CF_LOCATION)
    locations = struct.field(index).to_pylist()
    offsets = lists.offsets.to_pylist()
    valid = lists.is_valid().to_pylist()
    return [locations[offsets[r] : offsets[r + 1]] if valid[r] else None for r in range(len(lists))]


def _child_index(struct_type: pa.StructType, field_id: int) -> int:
    for j, child in enumerate(struct_type):
        if field_id_of(child) == field_id:
            return j
    raise CorruptMetadata(f"content-entry struct has no member with field id {field_id}")


def _with_child(struct: pa.StructArray, field_id: int, values: pa.Array) -> pa.StructArray:
    index = _child_index(struct.type, field_id)
    children = [struct.field(j) for j in range(struct.type.num_fields)]
    children[index] = values.cast(struct.type.field(index).type)
    mask = struct.is_null() if struct.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(struct.type), mask=mask)


def _with_column_file_locations(column: pa.Array, entries: Sequence[EntryPaths]) -> pa.Array:
    lists = cast(pa.ListArray, column)
    struct = cast(pa.StructArray, lists.values)
    if lists.offset or struct.offset:
        raise CorruptMetadata("content-entry column_files are not stored as one contiguous list")
    offsets = lists.offsets.to_pylist()
    locations = struct.field(_child_index(struct.type, ce.CF_LOCATION)).to_pylist()
    for r, e in enumerate(entries):
        start, end = offsets[r], offsets[r + 1]
        if end - start != len(e.column_file_locations):
            raise ValueError("an entry's column files cannot change in number")
        locations[start:end] = e.column_file_locations
    values = _with_child(struct, ce.CF_LOCATION, pa.array(locations, pa.string()))
    mask = lists.is_null() if lists.null_count else None
    return pa.ListArray.from_arrays(lists.offsets, values, type=lists.type, mask=mask)
