"""Write row-level delete files: v3 deletion vectors (Puffin) and v2 position delete files (Parquet)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, cast

import pyarrow as pa

from icefloe.formats.arrow_schema import schema_to_arrow
from icefloe.formats.parquet_data import write_parquet_data_file
from icefloe.formats.puffin import write_deletion_vectors
from icefloe.formats.roaring64 import PositionBitmap
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID, Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.tree.locations import LocationProvider

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", StringType(), True),
    NestedField(DELETE_FILE_POS_ID, "pos", LongType(), True),
)


def write_deletion_vectors_file(
    io: FileIO,
    md: TableMetadata,
    targets: Mapping[str, tuple[DataFile, Iterable[int] | PositionBitmap]],
) -> list[DataFile]:
    """One Puffin file holding a DV per data file; returns the v3 delete-file entries for them.

    ``targets`` maps a data file path to (its DataFile, the positions to delete, already merged
    with any earlier DV of that file: a data file has at most one DV per snapshot).
    """
    if not targets:
        return []
    path = LocationProvider(md).new_data_file_path(extension="puffin")
    bitmaps = {
        data_path: positions if isinstance(positions, PositionBitmap) else PositionBitmap(positions)
        for data_path, (_, positions) in targets.items()
    }
    with io.new_output(path).create() as stream:
        result = write_deletion_vectors(cast(IO[bytes], stream), list(bitmaps.items()))
    out = []
    for ref in result.refs:
        data_file = targets[ref.referenced_data_file][0]
        out.append(
            DataFile(
                file_path=path,
                file_format="puffin",
                record_count=ref.cardinality,
                file_size_in_bytes=result.file_size,
                content=FileContent.POSITION_DELETES,
                spec_id=data_file.spec_id,
                partition=data_file.partition,
                referenced_data_file=ref.referenced_data_file,
                content_offset=ref.offset,
                content_size_in_bytes=ref.length,
            )
        )
    return out


def write_position_delete_file(
    io: FileIO, md: TableMetadata, data_file: DataFile, positions: Iterable[int]
) -> DataFile:
    """A v2 position delete file (sorted ``file_path``, ``pos``) for one data file."""
    ordered = sorted(set(positions))
    table = pa.table(
        {
            "file_path": pa.array([data_file.file_path] * len(ordered), pa.string()),
            "pos": pa.array(ordered, pa.int64()),
        }
    )
    table = table.cast(schema_to_arrow(POSITION_DELETE_SCHEMA))
    spec = md.spec_by_id(data_file.spec_id)
    path = LocationProvider(md).new_data_file_path(spec, md.schema(), data_file.partition)
    written = write_parquet_data_file(
        io,
        path,
        table,
        POSITION_DELETE_SCHEMA,
        data_file.spec_id,
        data_file.partition,
        md.properties,
        content=FileContent.POSITION_DELETES,
    )
    return written.with_changes(referenced_data_file=data_file.file_path)
