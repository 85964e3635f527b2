"""Column updates (format v4): an UPDATE that writes only the changed columns of the changed rows.

With ``write.v4.column-updates.enabled=true`` and merge-on-read updates, an update of some
top-level columns of a data file writes one **column file**: those columns for the updated rows
plus ``_pos``, their base-file ordinals. The data file and its other columns stay as they are;
the write seam turns the file's entry into a REPLACED/MODIFIED pair carrying the new column file
with a bumped data sequence number. ``_row_id`` never changes; updated rows inherit the new
sequence number as ``_last_updated_sequence_number``.

At most one column file holds a given field of a data file: when an earlier column file holds a
field updated again, the new file takes over that field, and the earlier one keeps only its
other fields. The newest column file holds every row any column file of the data file holds
(current values carried over) with their ``_last_updated_sequence_number``: null for the rows it
updates, the value they had for the others. Row lineage stays exact across column updates that
way (the entry's data sequence number only says when the newest one was written).

**Policy** (``write.v4.column-updates.max-size-percent``, default 100): a column file is written
only when its rows (updated and carried over, the changed columns) take at most that percent of
the bytes of the rows merge-on-read would write instead (the updated rows, every column);
otherwise the file falls back to a deletion vector plus rewritten rows. Files with position or
equality delete files other than their colocated DV (v3 deletes carried into a v4 table) also fall
back: a column update moves the entry's data sequence number past theirs, and equality deletes
and column updates never mix on one data file. So do updates of a column a partition field of
the file's spec or of the default spec derives from (the rows may change partition).
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.dml.row_io import POS_COLUMN, has_lineage, mark_modified, read_for_change
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.io.fileio import FileIO
from icefloe.scan.column_files import LINEAGE_FIELD, POS_FIELD, column_file_positions
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import ColumnFile
from icefloe.spec.properties import checked_int_property
from icefloe.spec.schema import Schema, nested_field_ids
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider

COLUMN_UPDATES_ENABLED = "write.v4.column-updates.enabled"
MAX_SIZE_PERCENT = "write.v4.column-updates.max-size-percent"
DEFAULT_MAX_SIZE_PERCENT = 100


def column_updates_enabled(md: TableMetadata, merge_on_read: bool) -> bool:
    """Whether updates of this table write column files (v4, merge-on-read, property on)."""
    enabled = str(md.properties.get(COLUMN_UPDATES_ENABLED, "false")).strip().lower() == "true"
    return enabled and merge_on_read and md.format_version >= 4


def write_column_update(
    io: FileIO,
    md: TableMetadata,
    task: FileScanTask,
    updated_rows: pa.Table,
    field_ids: tuple[int, ...],
    current_rows: pa.Table | None = None,
) -> ColumnFile | None:
    """Write the column file giving the task's file its updated values; None to fall back.

    ``updated_rows``: the rows that change, with their new values and ``_pos``;
    ``current_rows``: every live row of the file as ``read_for_change`` gives them, when the
    caller has them (they are read here only if earlier column files hold rows to carry over).
    """
    if not field_ids or _has_delete_files(task) or _moves_partitions(md, task, field_ids):
        return None
    schema = md.schema()
    fields = [f for f in schema.fields if f.field_id in field_ids]
    lineage = has_lineage(md)
    columns = [*(f.name for f in fields), POS_COLUMN, *((LINEAGE_FIELD.name,) if lineage else ())]
    parts = [_columns(mark_modified(updated_rows), columns)]
    updated_positions = updated_rows.column(POS_COLUMN).to_numpy(zero_copy_only=False)
    carried = np.setdiff1d(_held_positions(io, task), updated_positions)
    if len(carried):  # rows earlier column files hold: current values and lineage carried over
        rows = current_rows if current_rows is not None else read_for_change(io, md, task)
        held = pc.is_in(rows.column(POS_COLUMN), value_set=pa.array(carried, pa.int64()))
        parts.insert(0, _columns(rows.filter(held), columns))
    values = pa.concat_tables(parts, promote_options="permissive").sort_by(POS_COLUMN)
    limit = checked_int_property(md.properties, MAX_SIZE_PERCENT, DEFAULT_MAX_SIZE_PERCENT)
    if values.nbytes * 100 > updated_rows.nbytes * limit:
        return None
    data_file = task.data_file
    spec = md.spec_by_id(data_file.spec_id)
    stem = data_file.file_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    path = LocationProvider(md).new_data_file_path(
        spec, schema, tuple(data_file.partition), file_name=f"{stem}-columns-{uuid.uuid4()}.parquet"
    )
    written = write_parquet_data_file(
        io,
        path,
        values,
        Schema(*fields, POS_FIELD, *((LINEAGE_FIELD,) if lineage else ())),
        data_file.spec_id,
        data_file.partition,
        md.properties,
    )
    return ColumnFile(
        location=written.file_path,
        file_format="parquet",
        file_size_in_bytes=written.file_size_in_bytes,
        field_ids=tuple(f.field_id for f in fields),
        split_offsets=written.split_offsets,
    )


def _columns(rows: pa.Table, names: list[str]) -> pa.Table:
    """``rows`` reduced to ``names`` (a missing lineage column reads as null: inherited)."""
    for name in names:
        if name not in rows.column_names:
            rows = rows.append_column(name, pa.nulls(rows.num_rows, pa.int64()))
    return rows.select(names)


def _moves_partitions(md: TableMetadata, task: FileScanTask, field_ids: tuple[int, ...]) -> bool:
    """Whether the update sets a column the file's partition (or the default spec's) derives from:
    the rows may belong to another partition then, which a column file cannot express."""
    schema = md.schema()
    sources = {
        top
        for spec in (md.spec_by_id(task.data_file.spec_id), md.spec())
        for pf in spec.fields
        for top in field_ids
        if pf.source_id in nested_field_ids(schema, (top,))
    }
    return bool(sources)


def _has_delete_files(task: FileScanTask) -> bool:
    """Deletes other than the file's colocated DV (legacy position deletes, equality deletes)."""
    dv = task.data_file.deletion_vector
    for ref in task.deletes:
        f = ref.delete_file
        if dv is None or (f.file_path, f.content_offset) != (dv.location, dv.offset):
            return True
    return False


def _held_positions(io: FileIO, task: FileScanTask) -> np.ndarray:
    """Positions the file's column files hold (the newest one holds them all)."""
    newest = task.data_file.column_files[-1:] if task.data_file.column_files else ()
    chunks = [column_file_positions(io, cf, task.data_file) for cf in newest]
    if not chunks:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(chunks))
