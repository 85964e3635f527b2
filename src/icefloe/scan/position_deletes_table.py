"""The ``position_deletes`` metadata table: one row per position a live position delete deletes.

Columns as Iceberg Java's ``PositionDeletesTable``: ``file_path`` and ``pos`` (the deleted row),
``row`` (the deleted row's values when the delete file stores them, else null; deletion vectors
never do), ``partition`` (the table's unified partition type; absent on unpartitioned tables),
``spec_id`` and ``delete_file_path`` of the delete file, and on format v3 and later
``content_offset`` / ``content_size_in_bytes`` (the blob of a deletion vector, null for position
delete files). The deletes listed are the snapshot's live position delete files, v3 deletion
vectors and v4 deletion vectors colocated with data entries; entries a v4 manifest deletion vector
removed are not live, so their deletes are not listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from icefloe.formats.arrow_schema import type_to_arrow
from icefloe.formats.data_files import read_data_file
from icefloe.io.fileio import FileIO
from icefloe.scan.delete_readers import read_dv_positions
from icefloe.scan.metadata_tables import FileLayout, snapshot_entries, snapshot_or_current
from icefloe.spec.content import DataFile, FileContent, deletion_vector_file
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType, StructType

DELETE_FILE_PATH_ID = 2147483546
DELETE_FILE_POS_ID = 2147483545
DELETE_FILE_ROW_ID = 2147483544


@dataclass(frozen=True)
class _Deletes:
    """The positions one delete file (or one deletion vector) deletes, with their rows if stored."""

    delete_file: DataFile
    paths: pa.Array
    positions: pa.Array
    rows: pa.Array


def position_deletes_schema(md: TableMetadata) -> pa.Schema:
    """The table's columns: Java's order, ``partition`` only when partitioned, DV columns from v3."""
    layout = FileLayout(md)
    fields = [
        pa.field("file_path", pa.string(), False),
        pa.field("pos", pa.int64(), False),
        pa.field("row", _row_type(md.schema())),
    ]
    if layout.partition_fields:
        fields.append(layout.partition_field())
    fields += [pa.field("spec_id", pa.int32(), False), pa.field("delete_file_path", pa.string(), False)]
    if md.format_version >= 3:
        fields += [pa.field("content_offset", pa.int64()), pa.field("content_size_in_bytes", pa.int64())]
    return pa.schema(fields)


def position_deletes_table(io: FileIO, md: TableMetadata, snapshot_id: int | None = None) -> pa.Table:
    """Every position deleted by the snapshot's live position deletes, delete file by delete file."""
    schema = position_deletes_schema(md)
    layout = FileLayout(md)
    parts = [_as_rows(d, layout, schema) for d in _live_deletes(io, md, snapshot_id)]
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts)


def _live_deletes(io: FileIO, md: TableMetadata, snapshot_id: int | None) -> Iterator[_Deletes]:
    row_type = _row_type(md.schema())
    for entry in snapshot_entries(io, md, snapshot_or_current(md, snapshot_id)):
        if not entry.is_live:
            continue
        f = entry.data_file
        if f.content == FileContent.DATA and f.deletion_vector is not None:
            yield _vector_deletes(io, deletion_vector_file(f, f.deletion_vector), row_type)
        elif f.content == FileContent.POSITION_DELETES and f.content_offset is not None:
            yield _vector_deletes(io, f, row_type)
        elif f.content == FileContent.POSITION_DELETES:
            yield _file_deletes(io, f, md.schema(), row_type)


def _vector_deletes(io: FileIO, dv: DataFile, row_type: pa.DataType) -> _Deletes:
    positions = np.sort(read_dv_positions(io, dv)).astype(np.int64)
    paths = pa.array([dv.referenced_data_file] * len(positions), pa.string())
    return _Deletes(dv, paths, pa.array(positions, pa.int64()), pa.nulls(len(positions), row_type))


def _file_deletes(io: FileIO, f: DataFile, table_schema: Schema, row_type: pa.DataType) -> _Deletes:
    """A position delete file read by field id (``row`` is null when the file does not store it)."""
    projection = Schema(
        NestedField(DELETE_FILE_PATH_ID, "file_path", StringType(), required=True),
        NestedField(DELETE_FILE_POS_ID, "pos", LongType(), required=True),
        NestedField(DELETE_FILE_ROW_ID, "row", StructType(*table_schema.fields), required=False),
    )
    read = read_data_file(io, f.file_path, projection, f.file_format, file_size=f.file_size_in_bytes)
    rows = read.column("row").combine_chunks().cast(row_type)
    paths = read.column("file_path").combine_chunks().cast(pa.string())
    return _Deletes(f, paths, read.column("pos").combine_chunks().cast(pa.int64()), rows)


def _as_rows(d: _Deletes, layout: FileLayout, schema: pa.Schema) -> pa.Table:
    n = len(d.positions)
    f = d.delete_file
    columns: dict[str, Any] = {"file_path": d.paths, "pos": d.positions, "row": d.rows}
    if layout.partition_fields:
        columns["partition"] = layout.partition_array([layout.unified(f)] * n)
    columns["spec_id"] = pa.array([f.spec_id] * n, pa.int32())
    columns["delete_file_path"] = pa.array([f.file_path] * n, pa.string())
    if "content_offset" in schema.names:
        columns["content_offset"] = pa.array([f.content_offset] * n, pa.int64())
        columns["content_size_in_bytes"] = pa.array([f.content_size_in_bytes] * n, pa.int64())
    return pa.Table.from_arrays([columns[name] for name in schema.names], schema=schema)


def _row_type(schema: Schema) -> pa.DataType:
    """The table's row as a struct whose top-level fields are all nullable: the column is null for
    deletes that store no row, and Spark refuses null structs whose fields are non-nullable."""
    fields = (replace(f, required=False) for f in schema.fields)
    return type_to_arrow(StructType(*fields), include_field_ids=False)
