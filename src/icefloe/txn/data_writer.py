"""Turn an Arrow table into Parquet data files laid out by the table's partition spec."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import check_arrow_compatible, check_required_no_nulls, to_table_schema
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.formats.partition_arrow import partition_table
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider

DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
# In-memory Arrow bytes are larger than compressed Parquet; this ratio turns the target
# file size into a row budget without writing twice.
_ARROW_TO_PARQUET_RATIO = 4


def prepare_arrow_table(md: TableMetadata, table: pa.Table) -> pa.Table:
    """Validate user data against the table schema and cast it to the exact Arrow form."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise ValidationError(f"rows to write must be a pyarrow.Table, got {type(table).__name__}")
    schema = md.schema()
    check_arrow_compatible(schema, table.schema)
    prepared = to_table_schema(table, schema)
    check_required_no_nulls(schema, prepared)
    return prepared


def write_data_files(
    io: FileIO, md: TableMetadata, table: pa.Table, schema: Schema | None = None
) -> list[DataFile]:
    """Write ``table`` (already prepared) as data files of the default spec; return their entries.

    ``schema`` is the file schema when it differs from the table schema (e.g. the table schema plus
    the row-lineage columns); it must contain the partition source columns.
    """
    if table.num_rows == 0:
        return []
    schema = schema or md.schema()
    spec = md.spec()
    target = md.int_property("write.target-file-size-bytes", DEFAULT_TARGET_FILE_SIZE)
    pieces = (
        (partition, chunk)
        for partition, part in partition_table(table, schema, spec)
        for chunk in split_by_size(part, target)
    )
    return _write_pieces(io, md, pieces, schema, schema, spec)


def write_partition_files(
    io: FileIO,
    md: TableMetadata,
    table: pa.Table,
    schema: Schema,
    spec: PartitionSpec,
    partition: tuple[Any, ...],
    split: bool = True,
) -> list[DataFile]:
    """Write ``table`` into one given partition of ``spec`` (rows are not re-partitioned).

    With ``split`` the rows are cut into files of about ``write.target-file-size-bytes``.
    """
    if table.num_rows == 0:
        return []
    target = md.int_property("write.target-file-size-bytes", DEFAULT_TARGET_FILE_SIZE)
    chunks = split_by_size(table, target) if split else iter([table])
    return _write_pieces(io, md, ((partition, chunk) for chunk in chunks), schema, md.schema(), spec)


def _write_pieces(
    io: FileIO,
    md: TableMetadata,
    pieces: Iterator[tuple[tuple[Any, ...], pa.Table]],
    schema: Schema,
    path_schema: Schema,
    spec: PartitionSpec,
) -> list[DataFile]:
    """Write each ``(partition, rows)`` piece as one Parquet file; on failure delete what was written.

    ``schema`` is the file schema, ``path_schema`` the one that names the partition directories.
    """
    locations = LocationProvider(md)
    written: list[DataFile] = []
    try:
        for partition, chunk in pieces:
            path = locations.new_data_file_path(spec, path_schema, partition)
            written.append(
                write_parquet_data_file(io, path, chunk, schema, spec.spec_id, partition, md.properties)
            )
    except BaseException:
        _delete_all(io, written)
        raise
    return written


def _delete_all(io: FileIO, files: list[DataFile]) -> None:
    for f in files:
        io.delete(f.file_path, missing_ok=True)


def split_by_size(table: pa.Table, target_bytes: int) -> Iterator[pa.Table]:
    """``table`` in row slices that each make about ``target_bytes`` of Parquet (one if it fits)."""
    estimated = max(1, table.nbytes // _ARROW_TO_PARQUET_RATIO)
    if estimated <= target_bytes:
        yield table
        return
    pieces = -(-estimated // target_bytes)
    rows_per_piece = -(-table.num_rows // pieces)
    for start in range(0, table.num_rows, rows_per_piece):
        yield table.slice(start, rows_per_piece)
