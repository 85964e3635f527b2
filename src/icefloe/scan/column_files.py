"""Reading v4 column files: a data file's rows with the column values its column files replaced.

A column file holds whole top-level columns for some rows of one data file plus a required
``_pos`` column, the base-file ordinal of each row it holds (at most one live column file per
field id and data file; see :class:`icefloe.spec.content.ColumnFile`). Reading merges by
position: a row listed in a column file takes that file's values for the columns the file holds,
every other row keeps the base file's. Deletion vectors are applied afterwards by the reader, so
a deleted row stays deleted whatever its column values (DVs win).

Columns are matched by field id, so schema evolution works as for data files: a column added
after the column file was written is not in it (base values: null or the default), a dropped one
is never read, a renamed or promoted one is found by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from icefloe.errors import CorruptMetadata, reading
from icefloe.formats.data_files import read_data_file
from icefloe.io.fileio import FileIO
from icefloe.spec.content import ColumnFile, DataFile
from icefloe.spec.schema import LAST_UPDATED_SEQ_COLUMN_ID, POS_COLUMN_ID, Schema
from icefloe.spec.types import LongType, NestedField

POS_FIELD = NestedField(POS_COLUMN_ID, "_pos", LongType(), True)
"""The ``_pos`` column every column file carries (base-file row ordinals)."""
LINEAGE_FIELD = NestedField(LAST_UPDATED_SEQ_COLUMN_ID, "_last_updated_sequence_number", LongType(), False)
"""Row lineage of the rows an icefloe column file holds (null: updated by the file's own commit)."""


def read_column_file(
    io: FileIO, column_file: ColumnFile, fields: Sequence[NestedField], lineage: bool = False
) -> pa.Table:
    """The ``fields`` (top-level columns the file holds) and ``_pos`` of one column file (and
    ``_last_updated_sequence_number`` with ``lineage``: null where the file does not store it)."""
    schema = Schema(*fields, POS_FIELD, *((LINEAGE_FIELD,) if lineage else ()))
    with reading(column_file.location, "read the column file"):
        return read_data_file(
            io,
            column_file.location,
            schema,
            column_file.file_format,
            file_size=column_file.file_size_in_bytes,
        )


def column_file_positions(io: FileIO, column_file: ColumnFile, data_file: DataFile) -> np.ndarray:
    """The base-file positions a column file holds values for (checked against the data file)."""
    table = read_column_file(io, column_file, ())
    return _checked_positions(table, column_file, data_file)


@dataclass(frozen=True)
class ColumnFileRows:
    """Which rows of a read the newest column file holds, and the lineage it stores for them."""

    in_newest: np.ndarray
    lineage: pa.Array


def overlay_column_files(
    io: FileIO, data_file: DataFile, table: pa.Table, read_schema: Schema, positions: np.ndarray
) -> tuple[pa.Table, ColumnFileRows]:
    """``table`` (rows of ``data_file`` at file ``positions``) with column-file values merged in.

    Also says which rows the newest column file holds, with the ``_last_updated_sequence_number``
    it stores for them (icefloe's newest column file holds every row any column file of the data
    file holds; a null there means updated by that file's commit, see docs/v4-decisions.md).
    """
    n = table.num_rows
    in_newest = np.zeros(n, dtype=bool)
    lineage = np.zeros(n, dtype=np.int64)
    lineage_valid = np.zeros(n, dtype=bool)
    if not data_file.column_files:
        return table, ColumnFileRows(in_newest, pa.nulls(n, pa.int64()))
    newest = data_file.column_files[-1]
    order = np.argsort(positions, kind="stable")
    sorted_positions = positions[order]
    by_id = {f.field_id: f for f in read_schema.fields}
    for column_file in data_file.column_files:
        held = [by_id[fid] for fid in column_file.field_ids if fid in by_id]
        fields = [f for f in held if f.name in table.column_names]
        is_newest = column_file is newest
        values = read_column_file(io, column_file, fields, lineage=is_newest)
        file_positions = _checked_positions(values, column_file, data_file)
        slots = np.searchsorted(sorted_positions, file_positions)
        inside = slots < n
        found = np.zeros(len(file_positions), dtype=bool)  # rows of the column file this read holds
        found[inside] = sorted_positions[slots[inside]] == file_positions[inside]
        rows = order[slots[found]]  # table rows that take this file's values
        if is_newest:
            in_newest[rows] = True
            stored = values.column(LINEAGE_FIELD.name).combine_chunks().filter(pa.array(found))
            lineage_valid[rows] = stored.is_valid().to_numpy(zero_copy_only=False)
            lineage[rows] = stored.fill_null(0).to_numpy(zero_copy_only=False)
        if not fields or not len(rows):
            continue
        take = np.arange(n, dtype=np.int64)
        take[rows] = n + np.arange(len(rows), dtype=np.int64)
        picked = pa.array(np.flatnonzero(found), pa.int64())
        for f in fields:
            index = table.column_names.index(f.name)
            base = table.column(index).combine_chunks()
            new = values.column(f.name).combine_chunks().take(picked)
            if new.type != base.type:
                new = new.cast(base.type)
            merged = pa.concat_arrays([base, new]).take(pa.array(take))
            table = table.set_column(index, table.schema.field(index), merged)
    return table, ColumnFileRows(in_newest, pa.array(lineage, pa.int64(), mask=~lineage_valid))


def _checked_positions(values: pa.Table, column_file: ColumnFile, data_file: DataFile) -> np.ndarray:
    positions = values.column(POS_FIELD.name).to_numpy(zero_copy_only=False)
    if len(positions) and (
        int(positions.min()) < 0
        or int(positions.max()) >= data_file.record_count
        or len(np.unique(positions)) != len(positions)
    ):
        raise CorruptMetadata(
            f"{column_file.location}: column file positions must be distinct rows of "
            f"{data_file.file_path}, which has {data_file.record_count} rows",
            location=column_file.location,
        )
    return np.asarray(positions, dtype=np.int64)
