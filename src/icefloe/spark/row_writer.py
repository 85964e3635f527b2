"""Executor side of row-level changes: write new data files and delete files, report what changed.

Two inputs:

- ``delete_in_files``: planned scan tasks (a delete): each Spark task reads its files with
  ``read_for_change``, evaluates the condition in Arrow, and either rewrites the surviving rows
  (copy-on-write) or writes position deletes / DVs for the matching rows (merge-on-read, one
  ``write_row_deletes`` call, so one Puffin file, per Spark task).
- ``write_changes``: rows of a DataFrame (update / merge), one action per row in ``ACTION``
  (``keep`` / ``update`` / ``delete`` / ``insert``), with the target row's ``_file`` / ``_pos`` and
  lineage columns, clustered by ``_file`` and sorted by it within each Spark partition, so the
  rows of one data file arrive together. Copy-on-write rewrites every file with a changed row
  (kept and updated rows); merge-on-read deletes the changed positions and writes updated rows
  as new rows, or (v4 column updates) writes a column file of the set columns for the updated
  rows; inserted rows are written as new rows either way.

Every file goes to the job's staging directory (the metadata's ``write.data.path``); the result
of each Spark task is one pickled ``ChangeResult``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.dml.column_updates import write_column_update
from icefloe.dml.delete import matching_positions
from icefloe.dml.position_deletes import RowDeletes, write_row_deletes
from icefloe.dml.row_io import LINEAGE_COLUMNS, POS_COLUMN, read_for_change, write_changed_rows
from icefloe.dml.row_io import write_survivors as write_survivor_file
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.ast import Expression
from icefloe.io.fileio import FileIO
from icefloe.scan.tasks import FileScanTask
from icefloe.spark.arrow_bridge import from_spark_arrow
from icefloe.spark.runtime import executor_io
from icefloe.spec.content import ColumnFile, DataFile
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import NestedField

ACTION = "__icefloe_action"
FILE_COLUMN = "_file"
KEEP, UPDATE, DELETE, INSERT = "keep", "update", "delete", "insert"
FLUSH_ROWS = 500_000  # write pending new rows once this many have accumulated


@dataclass
class ChangeResult:
    """What one Spark task (or, merged, the whole job) wrote and changed."""

    removed: list[str] = field(default_factory=list)  # data files rewritten or dropped (copy-on-write)
    added: list[DataFile] = field(default_factory=list)  # new data files
    deletes: RowDeletes = field(default_factory=RowDeletes)  # merge-on-read deletes
    column_files: dict[str, ColumnFile] = field(default_factory=dict)  # v4 column updates by data file
    deleted_rows: int = 0
    updated_rows: int = 0
    inserted_rows: int = 0

    def merge(self, other: ChangeResult) -> ChangeResult:
        """Both results together (each data file is handled by one task only)."""
        return ChangeResult(
            removed=[*self.removed, *other.removed],
            added=[*self.added, *other.added],
            deletes=self.deletes.merge(other.deletes),
            column_files={**self.column_files, **other.column_files},
            deleted_rows=self.deleted_rows + other.deleted_rows,
            updated_rows=self.updated_rows + other.updated_rows,
            inserted_rows=self.inserted_rows + other.inserted_rows,
        )

    def written_paths(self) -> set[str]:
        """Every file written for this result (what the staging directory must keep)."""
        columns = {cf.location for cf in self.column_files.values()}
        return {f.file_path for f in self.added} | set(self.deletes.written_files) | columns

    @property
    def changes_anything(self) -> bool:
        """True when a commit is needed."""
        return bool(self.removed or self.added or self.column_files or not self.deletes.is_empty)


def merge_results(results: Iterable[ChangeResult]) -> ChangeResult:
    """Fold the per-task results into one."""
    total = ChangeResult()
    for r in results:
        total = total.merge(r)
    return total


# ---------------------------------------------------------------------------------------------
# delete: planned tasks in, Arrow evaluation


@dataclass(frozen=True)
class DeleteJob:
    """A delete as executors see it: staged metadata, the condition, the write mode."""

    metadata: TableMetadata
    io_properties: dict[str, str]
    condition: Expression
    case_sensitive: bool
    copy_on_write: bool
    whole: frozenset[str] = frozenset()  # files whose partition proves every row matches


def delete_in_files(job: DeleteJob, tasks: Sequence[FileScanTask]) -> Iterator[ChangeResult]:
    """Delete the rows matching the condition from the tasks' files (one result per Spark task)."""
    md = job.metadata
    io = executor_io(job.io_properties, md.location)
    match = to_arrow_expression(job.condition, md.schema(), job.case_sensitive)
    keep = ~match | match.is_null()
    out = ChangeResult()
    targets: list[tuple[FileScanTask, np.ndarray]] = []
    try:
        for task in tasks:
            if not job.copy_on_write:
                if task.file_path in job.whole:
                    positions = np.arange(task.data_file.record_count, dtype=np.int64)
                else:  # reads only the filter's columns, applies the residual
                    positions = matching_positions(io, md, task, job.case_sensitive)
                if len(positions):
                    targets.append((task, positions))
                continue
            rows = read_for_change(io, md, task, job.case_sensitive)
            hit = rows.filter(match)
            if hit.num_rows == 0:
                continue
            out.removed.append(task.file_path)
            out.deleted_rows += hit.num_rows
            kept = rows.filter(keep)
            if kept.num_rows:
                out.added.append(write_survivor_file(io, md, task, kept))
        if targets:
            out.deletes = write_row_deletes(io, md, targets)
            out.deleted_rows = out.deletes.deleted_rows
    except BaseException:
        _cleanup(io, out)
        raise
    yield out


# ---------------------------------------------------------------------------------------------
# update / merge: rows with actions in


@dataclass(frozen=True)
class ChangeJob:
    """An update or merge as executors see it."""

    metadata: TableMetadata
    io_properties: dict[str, str]
    copy_on_write: bool
    column_ids: tuple[int, ...] = ()  # v4 column updates on: the top-level columns an update sets


def write_changes(
    job: ChangeJob, tasks: Mapping[str, FileScanTask], batches: Iterator[pa.RecordBatch]
) -> Iterator[ChangeResult]:
    """Apply the actions of one Spark partition's rows (clustered by ``_file``); one result."""
    md = job.metadata
    io = executor_io(job.io_properties, md.location)
    schema = md.schema()
    out = ChangeResult()
    pending: list[pa.Table] = []
    pending_rows = 0
    targets: list[tuple[FileScanTask, np.ndarray]] = []

    def add_rows(rows: pa.Table) -> None:
        nonlocal pending, pending_rows
        if rows.num_rows == 0:
            return
        pending.append(rows)
        pending_rows += rows.num_rows
        if pending_rows >= FLUSH_ROWS:
            flush()

    def flush() -> None:
        nonlocal pending, pending_rows
        if pending:
            data = from_spark_arrow(pa.concat_tables(pending), schema)
            out.added.extend(write_changed_rows(io, md, _row_columns(data, schema.fields)))
        pending, pending_rows = [], 0

    def handle(path: str | None, rows: pa.Table) -> None:
        actions = rows.column(ACTION)
        if path is None:  # inserted rows have no target file
            inserts = rows.filter(pc.equal(actions, INSERT))
            out.inserted_rows += inserts.num_rows
            add_rows(inserts)
            return
        updated = pc.equal(actions, UPDATE)
        changed = pc.or_(updated, pc.equal(actions, DELETE))
        n_changed = pc.sum(changed).as_py() or 0
        if n_changed == 0:
            return
        n_updated = pc.sum(updated).as_py() or 0
        out.updated_rows += n_updated
        out.deleted_rows += n_changed - n_updated
        if job.copy_on_write:
            out.removed.append(path)
            add_rows(rows.filter(pc.or_(updated, pc.equal(actions, KEEP))))
        elif n_updated and job.column_ids and _column_update(path, rows, updated):
            gone = rows.filter(pc.equal(actions, DELETE)).column(POS_COLUMN).to_numpy()
            if len(gone):
                targets.append((_task(tasks, path), gone))
        else:
            positions = rows.filter(changed).column(POS_COLUMN).to_numpy()
            targets.append((_task(tasks, path), positions))
            add_rows(rows.filter(updated))

    def _column_update(path: str, rows: pa.Table, updated: pa.ChunkedArray) -> bool:
        """Write a column file for the updated rows of one data file (False: fall back)."""
        new_values = from_spark_arrow(rows.filter(updated), schema)
        column_file = write_column_update(io, md, _task(tasks, path), new_values, job.column_ids)
        if column_file is not None:
            out.column_files[path] = column_file
        return column_file is not None

    try:
        current: str | None = None
        group: list[pa.Table] = []
        started = False
        for batch in batches:
            if batch.num_rows == 0:
                continue
            for path, rows in _runs(pa.Table.from_batches([batch])):
                if started and path != current:
                    handle(current, pa.concat_tables(group))
                    group = []
                current, started = path, True
                group.append(rows)
        if group:
            handle(current, pa.concat_tables(group))
        flush()
        if targets:
            out.deletes = write_row_deletes(io, md, targets)
    except BaseException:
        _cleanup(io, out)
        raise
    yield out


def _task(tasks: Mapping[str, FileScanTask], path: str) -> FileScanTask:
    task = tasks.get(path)
    if task is None:
        raise RuntimeError(f"row of data file {path} that the job did not plan")
    return task


def _row_columns(data: pa.Table, fields: Sequence[NestedField]) -> pa.Table:
    """Table columns and lineage columns only (``_file``, ``_pos`` and the action are dropped)."""
    names = [f.name for f in fields if f.name in data.column_names]
    names += [n for n in LINEAGE_COLUMNS if n in data.column_names]
    return data.select(names)


def _runs(table: pa.Table) -> Iterator[tuple[str | None, pa.Table]]:
    """Consecutive rows with the same ``_file`` value (the input is sorted by it)."""
    files = table.column(FILE_COLUMN).to_pylist()
    start = 0
    for i in range(1, len(files) + 1):
        if i == len(files) or files[i] != files[start]:
            yield files[start], table.slice(start, i - start)
            start = i


def _cleanup(io: FileIO, out: ChangeResult) -> None:
    """Best effort: delete what a failing task wrote (the job's staging cleanup is the backstop)."""
    for path in out.written_paths():
        with contextlib.suppress(Exception):
            io.delete(path, missing_ok=True)
