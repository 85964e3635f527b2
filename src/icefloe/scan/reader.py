"""Read planned scan tasks into Arrow: project by field id, apply deletes, then the residual filter."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata, reading
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.binding import bind, referenced_field_ids
from icefloe.formats.arrow_schema import schema_to_arrow
from icefloe.formats.data_files import read_data_file
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.scan.column_files import overlay_column_files
from icefloe.scan.delete_readers import drop_equality_deleted, read_equality_delete_keys
from icefloe.scan.shared_deletes import STREAM_MAX_HELD_BYTES, SharedDeletes
from icefloe.scan.tasks import DeleteFileRef, FileScanTask
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import (
    FILE_PATH_COLUMN_ID,
    LAST_UPDATED_SEQ_COLUMN_ID,
    POS_COLUMN_ID,
    ROW_ID_COLUMN_ID,
    Schema,
    prune_columns,
)
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import (
    IcebergType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    UUIDType,
)

ROW_ID = NestedField(ROW_ID_COLUMN_ID, "_row_id", LongType(), False)
LAST_UPDATED_SEQ = NestedField(LAST_UPDATED_SEQ_COLUMN_ID, "_last_updated_sequence_number", LongType(), False)
FILE_PATH = NestedField(FILE_PATH_COLUMN_ID, "_file", StringType(), True)
POS = NestedField(POS_COLUMN_ID, "_pos", LongType(), True)
METADATA_COLUMNS = {f.name: f for f in (ROW_ID, LAST_UPDATED_SEQ, FILE_PATH, POS)}
_POS_NAME = "__icefloe_pos"
_IN_NEWEST_NAME = "__icefloe_newest_column_file_row"  # rows the newest v4 column file holds
_CF_LINEAGE_NAME = "__icefloe_column_file_lineage"  # the lineage it stores for them


@dataclass(frozen=True)
class RowGroups:
    """Some row groups of a data file: their indexes and the file's row group starts (plus its end)."""

    indexes: tuple[int, ...]
    starts: np.ndarray
    limits: tuple[int, ...] | None = None
    """Rows to read from the start of each group (None: whole groups)."""

    def _ends(self) -> list[int]:
        if self.limits is None:
            return [int(self.starts[i + 1]) for i in self.indexes]
        return [int(self.starts[i]) + n for i, n in zip(self.indexes, self.limits, strict=True)]

    def positions(self) -> np.ndarray:
        """File positions of the rows read, in read order."""
        ranges = [
            np.arange(self.starts[i], end, dtype=np.int64)
            for i, end in zip(self.indexes, self._ends(), strict=True)
        ]
        return np.concatenate(ranges) if ranges else np.empty(0, dtype=np.int64)

    @classmethod
    def covering(cls, starts: np.ndarray, positions: np.ndarray) -> RowGroups:
        """The leading rows of the row groups holding ``positions``, up to the last such position."""
        group_of = np.searchsorted(starts, positions, side="right") - 1
        indexes: list[int] = []
        limits: list[int] = []
        for g in np.unique(group_of):
            if 0 <= g < len(starts) - 1:
                indexes.append(int(g))
                limits.append(int(positions[group_of == g].max() - starts[g] + 1))
        return cls(tuple(indexes), starts, tuple(limits))


@dataclass(frozen=True)
class ReadRequest:
    """What to produce: table columns (a schema), metadata columns, the row filter, a limit."""

    table_schema: Schema
    projected: Schema
    metadata_columns: tuple[str, ...] = ()
    row_filter: Expression = field(default_factory=AlwaysTrue)
    case_sensitive: bool = True
    # the table's partition specs by id: a file that lacks an identity-partitioned column (an
    # imported Hive-style file) gets it from its partition tuple (empty: no such filling)
    specs: Mapping[int, PartitionSpec] = field(default_factory=dict)

    def identity_constants(self, data_file: DataFile) -> dict[int, Any] | None:
        """Source field id -> partition value of the file's identity partition fields (None: none)."""
        spec = self.specs.get(data_file.spec_id)
        if spec is None:
            return None
        out = {
            f.source_id: value
            for f, value in zip(spec.fields, data_file.partition, strict=False)
            if isinstance(f.transform, IdentityTransform)
        }
        return out or None

    def output_schema(self) -> pa.Schema:
        """Arrow schema of the result: projected columns then metadata columns (uuid as ``pa.uuid()``)."""
        fields = [
            f.with_type(presented_type(col.field_type, f.type))
            for col, f in zip(self.projected.fields, schema_to_arrow(self.projected), strict=True)
        ]
        for name in self.metadata_columns:
            fields.append(schema_to_arrow(Schema(METADATA_COLUMNS[name]))[0])
        return pa.schema(fields)


def presented_type(t: IcebergType, arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type handed to users: as stored, except uuid columns become ``pa.uuid()``."""
    if isinstance(t, UUIDType):
        return pa.uuid()
    if isinstance(t, StructType):
        return pa.struct(
            [
                f.with_type(presented_type(col.field_type, f.type))
                for col, f in zip(t.fields, arrow_type, strict=True)
            ]
        )
    if isinstance(t, ListType):
        value_field = arrow_type.value_field
        return pa.list_(value_field.with_type(presented_type(t.element_type, value_field.type)))
    if isinstance(t, MapType):
        key_field, item_field = arrow_type.key_field, arrow_type.item_field
        return pa.map_(
            key_field.with_type(presented_type(t.key_type, key_field.type)),
            item_field.with_type(presented_type(t.value_type, item_field.type)),
        )
    return arrow_type


def read_tasks(
    io: FileIO, tasks: list[FileScanTask], request: ReadRequest, limit: int | None = None, threads: int = 8
) -> pa.Table:
    """Read every task and concatenate the results (in task order).

    A delete file several tasks share is read once for all of them (:mod:`scan.shared_deletes`).
    """
    out_schema = request.output_schema()
    batches: list[pa.Table] = []
    total = 0
    for table in _read_in_order(io, tasks, request, threads):
        if table.num_rows:
            batches.append(table)
            total += table.num_rows
        if limit is not None and total >= limit:
            break
    if not batches:
        return out_schema.empty_table()
    if not len(out_schema):
        # concat_tables drops the row count of column-less tables; rebuild it from the total.
        result = pa.table({"_": pa.nulls(total)}).select([])
    else:
        result = pa.concat_tables(batches)
    return result.slice(0, limit) if limit is not None else result


def _read_in_order(
    io: FileIO, tasks: list[FileScanTask], request: ReadRequest, threads: int
) -> Iterator[pa.Table]:
    shared = SharedDeletes(io, tasks)
    if len(tasks) <= 1 or threads <= 1:
        for t in tasks:
            yield read_task(io, t, request, shared_deletes=shared)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        yield from pool.map(lambda t: read_task(io, t, request, shared_deletes=shared), tasks)


def read_each_task(io: FileIO, tasks: Sequence[FileScanTask], request: ReadRequest) -> Iterator[pa.Table]:
    """Each task read in turn, for a caller holding one task's rows at a time (a Spark task's
    share of a scan): delete files these tasks share are read once, keeping no more of them than
    a streaming read does (:data:`~icefloe.scan.shared_deletes.STREAM_MAX_HELD_BYTES`)."""
    shared = SharedDeletes(io, tasks, max_held_bytes=STREAM_MAX_HELD_BYTES)
    for task in tasks:
        yield read_task(io, task, request, shared_deletes=shared)


def read_task(
    io: FileIO,
    task: FileScanTask,
    request: ReadRequest,
    row_groups: RowGroups | None = None,
    shared_deletes: SharedDeletes | None = None,
) -> pa.Table:
    """Read one data file: needed columns by id, deletes applied, residual filtered, projected.

    ``row_groups`` (indexes and the file's row group starts) reads only those row groups; positions
    (``_pos``, row ids, position deletes) stay those of the whole file. ``shared_deletes``: the
    scan's delete files read once for all its tasks (None: this task reads what it needs alone).
    """
    eq_deletes = [d for d in task.deletes if d.delete_file.content == FileContent.EQUALITY_DELETES]
    pos_deletes = [d for d in task.deletes if d.delete_file.content == FileContent.POSITION_DELETES]
    residual = task.residual
    needed_ids = _ids_of(request.projected)
    if not isinstance(residual, AlwaysTrue):
        needed_ids |= _referenced_ids(request.table_schema, residual, request.case_sensitive)
    for d in eq_deletes:
        needed_ids |= set(d.delete_file.equality_ids or ())
    lineage = {ROW_ID.name, LAST_UPDATED_SEQ.name} & set(request.metadata_columns)
    read_schema = prune_columns(request.table_schema, needed_ids)
    if lineage:
        read_schema = Schema(*read_schema.fields, *(METADATA_COLUMNS[n] for n in sorted(lineage)))
    if task.data_file.file_format.lower() != "parquet":
        row_groups = None  # only Parquet files are read by row group; others are read whole
    groups = None if row_groups is None else row_groups.indexes
    limits = None if row_groups is None else row_groups.limits
    with reading(task.file_path, "read the data file"):
        table = read_data_file(
            io,
            task.file_path,
            read_schema,
            task.data_file.file_format,
            row_groups=groups,
            row_limits=limits,
            constants=request.identity_constants(task.data_file),
            file_size=task.data_file.file_size_in_bytes,
        )
    if row_groups is None:
        _check_against_manifest(table, task, read_schema)
        file_positions = np.arange(table.num_rows, dtype=np.int64)
    else:
        file_positions = row_groups.positions()
    table = table.append_column(_POS_NAME, pa.array(file_positions))
    if task.data_file.column_files:
        table, held = overlay_column_files(io, task.data_file, table, read_schema, file_positions)
        table = table.append_column(_IN_NEWEST_NAME, pa.array(held.in_newest))
        table = table.append_column(_CF_LINEAGE_NAME, held.lineage)

    if pos_deletes:
        deleted = _deleted_positions(io, task, pos_deletes, shared_deletes)
        if len(deleted) and row_groups is not None:
            table = table.filter(pa.array(~np.isin(file_positions, deleted)))
        elif len(deleted):
            keep = np.ones(table.num_rows, dtype=bool)  # positions are row indexes of this file
            keep[deleted[(deleted >= 0) & (deleted < table.num_rows)]] = False
            table = table.filter(pa.array(keep))
    for d in eq_deletes:
        table = _apply_equality_delete(io, table, d, request.table_schema, shared_deletes)
    if not isinstance(residual, AlwaysTrue):
        expr = to_arrow_expression(residual, request.table_schema)
        table = table.filter(expr)
    return _finish(table, task, request)


def _finish(table: pa.Table, task: FileScanTask, request: ReadRequest) -> pa.Table:
    """Add metadata columns (with row-lineage inheritance) and select the output columns."""
    out_schema = request.output_schema()
    columns: list[pa.Array | pa.ChunkedArray] = []
    pos = table.column(_POS_NAME)
    for column in request.projected.fields:
        columns.append(table.column(column.name))
    for name in request.metadata_columns:
        if name == FILE_PATH.name:
            columns.append(pa.array([task.file_path] * table.num_rows, pa.string()))
        elif name == POS.name:
            columns.append(pos)
        elif name == ROW_ID.name:
            first = task.data_file.first_row_id
            inherited = pc.add(pos, first) if first is not None else pa.nulls(table.num_rows, pa.int64())
            columns.append(pc.coalesce(table.column(ROW_ID.name), inherited))
        elif name == LAST_UPDATED_SEQ.name:
            columns.append(_last_updated(table, task))
    if not columns:
        return table.select([])  # no columns selected: keep the row count (e.g. for count(*))
    stored = pa.schema([f.with_type(c.type) for f, c in zip(out_schema, columns, strict=True)])
    table = pa.Table.from_arrays(columns, schema=stored)
    return table if stored == out_schema else table.cast(out_schema)


def _last_updated(table: pa.Table, task: FileScanTask) -> pa.ChunkedArray | pa.Array:
    """``_last_updated_sequence_number``: the stored value, else inherited from the entry.

    Rows of a data file with v4 column files: a row the newest column file holds takes the value
    stored there, else (updated by that file's commit) the entry's data sequence number, which
    moved to that commit; any other row keeps the base file's value, else the file sequence
    number, the data sequence number the file was added with (docs/v4-decisions.md).
    """
    stored = table.column(LAST_UPDATED_SEQ.name)
    if task.data_file.first_row_id is None:
        return pc.coalesce(stored, pa.scalar(None, pa.int64()))
    current = pa.scalar(task.data_sequence_number, pa.int64())
    if _IN_NEWEST_NAME not in table.column_names:
        return pc.coalesce(stored, current)
    added = task.entry.file_sequence_number
    kept = pc.coalesce(stored, current if added is None else pa.scalar(added, pa.int64()))
    updated = pc.coalesce(table.column(_CF_LINEAGE_NAME), current)
    return pc.if_else(table.column(_IN_NEWEST_NAME), updated, kept)


def _ids_of(schema: Schema) -> set[int]:
    return schema.field_ids()


def _referenced_ids(schema: Schema, expr: Expression, case_sensitive: bool) -> set[int]:
    return referenced_field_ids(bind(schema, expr, case_sensitive))


def deleted_positions(io: FileIO, task: FileScanTask, deletes: Iterable[DeleteFileRef]) -> np.ndarray:
    """Sorted distinct positions of the task's data file that position deletes / DVs in ``deletes`` delete."""
    return _deleted_positions(io, task, deletes)


def _deleted_positions(
    io: FileIO, task: FileScanTask, deletes: Iterable[DeleteFileRef], shared: SharedDeletes | None = None
) -> np.ndarray:
    """Positions of the data file deleted by DVs and position delete files."""
    if shared is None:
        shared = SharedDeletes(io, ())  # nothing shared: each file read narrowly, for this task
    target = normalize_location(task.file_path)
    chunks: list[np.ndarray] = []
    for ref in deletes:
        f = ref.delete_file
        with reading(f.file_path, "read the delete file"):
            if f.file_format.lower() == "puffin":
                chunk = shared.dv_positions(f)
            elif f.file_format.lower() in ("parquet", "avro", "orc"):
                chunk = shared.position_deletes(f, target)
            else:
                raise CorruptMetadata(
                    f"unsupported position delete file format {f.file_format}: {f.file_path}"
                )
        rows = task.data_file.record_count
        if len(chunk) and (int(chunk.min()) < 0 or int(chunk.max()) >= rows):
            bad = int(chunk.min()) if int(chunk.min()) < 0 else int(chunk.max())
            raise CorruptMetadata(
                f"{f.file_path}: deletes position {bad} of {task.file_path}, which has {rows} rows",
                location=f.file_path,
            )
        chunks.append(chunk)
    if not chunks:
        return np.empty(0, dtype=np.int64)
    return np.unique(np.concatenate(chunks))


def _apply_equality_delete(
    io: FileIO, table: pa.Table, ref: DeleteFileRef, schema: Schema, shared: SharedDeletes | None
) -> pa.Table:
    f = ref.delete_file
    with reading(f.file_path, "read the equality delete file"):
        keys = read_equality_delete_keys(io, f, schema) if shared is None else shared.equality_keys(f, schema)
        return drop_equality_deleted(table, keys, f, schema)


def _check_against_manifest(table: pa.Table, task: FileScanTask, read_schema: Schema) -> None:
    """The file read must be the one its manifest describes: row count, and no column the manifest
    counts values for may come back all null (a file whose footer lost or changed a field id)."""
    f = task.data_file
    if table.num_rows != f.record_count:
        raise CorruptMetadata(
            f"{task.file_path}: holds {table.num_rows} rows, its manifest says {f.record_count}",
            location=task.file_path,
        )
    nulls = f.null_value_counts
    if not table.num_rows or not nulls:
        return
    for col in read_schema.fields:
        expected = nulls.get(col.field_id)
        if expected is None or expected >= table.num_rows or col.name not in table.column_names:
            continue
        if table.column(col.name).null_count == table.num_rows:
            raise CorruptMetadata(
                f"{task.file_path}: column {col.name} (id {col.field_id}) reads as all null, its "
                f"manifest counts {expected} nulls in {f.record_count} rows",
                location=task.file_path,
            )
