"""Read the rows of a data file for a change, and write changed rows back with their row lineage.

The building blocks of delete / update / merge (Python and Spark): ``read_for_change`` gives every
live row of one file with its position and (v3+) materialised lineage; ``write_changed_rows``
writes rows partitioned by the default spec; ``write_survivors`` rewrites the kept rows of one file
into the same partition. Lineage rules (format/spec.md "Row Lineage"): a row moved to a new file
keeps its ``_row_id``; a modified row gets a null ``_last_updated_sequence_number`` (it inherits
the new snapshot's sequence number); an unmodified row keeps its value; an inserted row has a
null ``_row_id`` (it gets a fresh id from the new file's ``first_row_id``).
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from icefloe.expressions.ast import AlwaysTrue
from icefloe.formats.arrow_schema import check_arrow_compatible, check_required_no_nulls, to_table_schema
from icefloe.io.fileio import FileIO
from icefloe.scan.reader import LAST_UPDATED_SEQ, POS, ROW_ID, ReadRequest, read_task
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, ManifestEntry
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.data_writer import write_data_files, write_partition_files

LINEAGE_COLUMNS = (ROW_ID.name, LAST_UPDATED_SEQ.name)
POS_COLUMN = POS.name


def has_lineage(md: TableMetadata) -> bool:
    """Whether the table tracks row lineage (format version 3 and later)."""
    return md.format_version >= 3


def read_for_change(
    io: FileIO, md: TableMetadata, task: FileScanTask, case_sensitive: bool = True
) -> pa.Table:
    """Every live row of the task's file (deletes applied, residual ignored).

    Columns: the table schema, then ``_pos``, then on v3+ ``_row_id`` and
    ``_last_updated_sequence_number`` with inherited values filled in.
    """
    schema = md.schema()
    meta = (POS_COLUMN, *LINEAGE_COLUMNS) if has_lineage(md) else (POS_COLUMN,)
    request = ReadRequest(schema, schema, meta, case_sensitive=case_sensitive, specs=md.specs_by_id())
    return read_task(io, replace(task, residual=AlwaysTrue()), request)


def mark_modified(rows: pa.Table) -> pa.Table:
    """Rows that were changed: ``_last_updated_sequence_number`` becomes null (``_row_id`` is kept)."""
    name = LAST_UPDATED_SEQ.name
    if name not in rows.column_names:
        return rows
    index = rows.column_names.index(name)
    return rows.set_column(index, name, pa.nulls(rows.num_rows, pa.int64()))


def mark_inserted(rows: pa.Table) -> pa.Table:
    """New rows: null ``_row_id`` and ``_last_updated_sequence_number`` (fresh lineage on commit)."""
    out = rows
    for name in LINEAGE_COLUMNS:
        column = pa.nulls(rows.num_rows, pa.int64())
        if name in out.column_names:
            out = out.set_column(out.column_names.index(name), name, column)
        else:
            out = out.append_column(name, column)
    return out


def lineage_schema(schema: Schema) -> Schema:
    """The table schema plus ``_row_id`` and ``_last_updated_sequence_number`` (reserved field ids)."""
    return Schema(*schema.fields, ROW_ID, LAST_UPDATED_SEQ, schema_id=schema.schema_id)


def canonical_rows(md: TableMetadata, rows: pa.Table) -> pa.Table:
    """Rows cast to the table's exact Arrow form; on v3+ with both lineage columns (nulls allowed).

    Columns other than the table's and the lineage ones (e.g. ``_pos``) are dropped. Raises
    ``ValidationError`` naming the column for incompatible types or nulls in required columns.
    """
    schema = md.schema()
    names = [f.name for f in schema.fields if f.name in rows.column_names]
    data = rows.select(names)
    check_arrow_compatible(schema, data.schema)
    data = to_table_schema(data, schema)
    check_required_no_nulls(schema, data)
    if not has_lineage(md):
        return data
    for name in LINEAGE_COLUMNS:
        if name in rows.column_names:
            column = rows.column(name).cast(pa.int64())
        else:
            column = pa.chunked_array([pa.nulls(rows.num_rows, pa.int64())])
        data = data.append_column(name, column)
    return to_table_schema(data, lineage_schema(schema))


def prepare_changed_rows(md: TableMetadata, rows: pa.Table) -> tuple[pa.Table, Schema]:
    """``canonical_rows`` and the file schema to write them with.

    The lineage columns are written only when some row carries a value: files of new rows omit them.
    """
    schema = md.schema()
    data = canonical_rows(md, rows)
    if not has_lineage(md):
        return data, schema
    if all(data.column(n).null_count == data.num_rows for n in LINEAGE_COLUMNS):
        return data.select([f.name for f in schema.fields]), schema
    return data, lineage_schema(schema)


def write_changed_rows(io: FileIO, md: TableMetadata, rows: pa.Table) -> list[DataFile]:
    """Write rows (table columns, optional lineage columns) as data files of the default spec."""
    if rows.num_rows == 0:
        return []
    data, file_schema = prepare_changed_rows(md, rows)
    return write_data_files(io, md, data, file_schema)


def write_survivors(
    io: FileIO, md: TableMetadata, task_or_entry: FileScanTask | ManifestEntry, rows: pa.Table
) -> DataFile:
    """Copy-on-write rewrite of one file: ``rows`` go to one new file of the same spec and partition."""
    entry = task_or_entry.entry if isinstance(task_or_entry, FileScanTask) else task_or_entry
    source = entry.data_file
    data, file_schema = prepare_changed_rows(md, rows)
    spec = md.spec_by_id(source.spec_id)
    # One file, as the source was: rows of one file never need splitting by size.
    files = write_partition_files(io, md, data, file_schema, spec, tuple(source.partition), split=False)
    if len(files) != 1:
        raise ValueError(f"write_survivors needs at least one row to rewrite {source.file_path}")
    return files[0]
