"""Write row-level delete files: v3 deletion vectors (Puffin) and v2 position delete files (Parquet).

Nothing here is committed: the caller hands the returned entries to a ``RowDelta`` (and deletes
the files when the commit fails).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, cast

import numpy as np
import pyarrow as pa

from icefloe.formats.arrow_schema import schema_to_arrow
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.formats.puffin.files import DVBlobRef, write_deletion_vectors
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, DeletionVectorRef, FileContent, deletion_vector_file
from icefloe.spec.schema import DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID, Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.tree.locations import LocationProvider

POSITION_DELETE_SCHEMA = Schema(
    NestedField(DELETE_FILE_PATH_ID, "file_path", StringType(), True),
    NestedField(DELETE_FILE_POS_ID, "pos", LongType(), True),
)


@dataclass(frozen=True)
class PuffinDVs:
    """One written Puffin file of deletion vectors: its path, size and where each DV landed."""

    path: str
    file_size: int
    blobs: dict[str, DVBlobRef]  # by referenced data file path

    def reference(self, data_path: str) -> DeletionVectorRef:
        """The v4 colocated-DV reference of one data file's blob."""
        blob = self.blobs[data_path]
        return DeletionVectorRef(self.path, blob.offset, blob.length, blob.cardinality)

    def delete_file(self, data_file: DataFile) -> DataFile:
        """The v3 delete-file entry (Puffin, content offset/size) of one data file's DV."""
        dv = self.reference(data_file.file_path)
        return deletion_vector_file(data_file, dv, puffin_size=self.file_size)


def write_dv_puffin(io: FileIO, md: TableMetadata, bitmaps: Mapping[str, PositionBitmap]) -> PuffinDVs:
    """Write one Puffin file holding a ``deletion-vector-v1`` blob per data file path."""
    path = LocationProvider(md).new_data_file_path(extension="puffin")
    ordered = sorted(bitmaps.items())
    for _, bitmap in ordered:
        bitmap.run_optimize()
    try:
        with io.new_output(path, fresh_name=True).create() as stream:
            result = write_deletion_vectors(cast(IO[bytes], stream), ordered)
    except BaseException:
        io.delete(path, missing_ok=True)
        raise
    return PuffinDVs(path, result.file_size, {ref.referenced_data_file: ref for ref in result.refs})


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
    bitmaps = {
        data_path: positions if isinstance(positions, PositionBitmap) else PositionBitmap(positions)
        for data_path, (_, positions) in targets.items()
    }
    written = write_dv_puffin(io, md, bitmaps)
    return [written.delete_file(data_file) for data_file, _ in targets.values()]


def write_position_deletes(
    io: FileIO, md: TableMetadata, deletes: Mapping[str, tuple[DataFile, Any]]
) -> DataFile:
    """A v2 position delete file for data files of one spec and partition, sorted by (file_path, pos).

    ``deletes`` maps a data file path to (its DataFile, positions as an int iterable or array).
    ``referenced_data_file`` is set when the file covers a single data file.
    """
    if not deletes:
        raise ValueError("write_position_deletes needs at least one data file")
    firsts = [data_file for data_file, _ in deletes.values()]
    spec_id, partition = firsts[0].spec_id, firsts[0].partition
    for f in firsts[1:]:
        if f.spec_id != spec_id or tuple(f.partition) != tuple(partition):
            raise ValueError(
                f"position deletes for {f.file_path} and {firsts[0].file_path} belong to different partitions"
            )
    paths: list[pa.Array] = []
    positions: list[np.ndarray] = []
    for data_path in sorted(deletes):
        ordered = np.unique(np.asarray(deletes[data_path][1], dtype=np.int64))
        paths.append(pa.array([data_path] * len(ordered), pa.string()))
        positions.append(ordered)
    table = pa.Table.from_arrays(
        [pa.chunked_array(paths, pa.string()), pa.array(np.concatenate(positions), pa.int64())],
        schema=schema_to_arrow(POSITION_DELETE_SCHEMA),
    )
    spec = md.spec_by_id(spec_id)
    path = LocationProvider(md).new_data_file_path(spec, md.schema(), tuple(partition))
    written = write_parquet_data_file(
        io,
        path,
        table,
        POSITION_DELETE_SCHEMA,
        spec_id,
        partition,
        md.properties,
        content=FileContent.POSITION_DELETES,
    )
    return written.with_changes(referenced_data_file=firsts[0].file_path if len(deletes) == 1 else None)


def write_position_delete_file(
    io: FileIO, md: TableMetadata, data_file: DataFile, positions: Iterable[int]
) -> DataFile:
    """A v2 position delete file (sorted ``file_path``, ``pos``) for one data file."""
    values = positions if isinstance(positions, np.ndarray) else np.fromiter(positions, dtype=np.int64)
    return write_position_deletes(io, md, {data_file.file_path: (data_file, values)})
