"""Which rows one commit took away and which it brought: the state difference of two snapshots.

Two snapshots are compared through their scan plans (the existing planner: delete index, DVs,
v4 colocated DVs, manifest DVs and inline entries all resolved by the read seam). A data file is
*touched* when it is live in one plan only, or live in both with a different set of deletes
applying to it (a new position delete file, DV, v4 colocated DV or equality delete file, or one
retired). Untouched files hold the same rows in both snapshots and are never read. A touched file
is read with the read machinery (``read_task``: deletes applied, row filter applied):

- live in the old snapshot only (removed by an overwrite, a copy-on-write rewrite, a compaction):
  all its rows there left;
- live in the new snapshot only: all its rows there arrived;
- live in both: the rows whose position is live in one snapshot and not the other (a file whose
  deletes only grew, the common case of a merge-on-read delete or update, reads only the row
  groups holding newly deleted positions).

Moved rows (a compaction, the survivors of a copy-on-write rewrite) appear on both sides; telling
them apart from real changes is :mod:`icefloe.scan.changelog_rows`' job.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.expressions.ast import Expression
from icefloe.formats.parquet.data_files import row_group_starts
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.scan.column_files import column_file_positions
from icefloe.scan.planner import plan_files
from icefloe.scan.reader import POS, ReadRequest, RowGroups, deleted_positions, read_task
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import FileContent
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata

POS_NAME = POS.name
READ_WORKERS = 4


@dataclass
class PlanCache:
    """Scan plans by snapshot id, keyed by data file location (each snapshot planned once per changelog)."""

    io: FileIO
    metadata: TableMetadata
    row_filter: Expression
    request: ReadRequest
    plans: dict[int, dict[str, FileScanTask]] = field(default_factory=dict)

    def plan(self, snapshot: Snapshot | None) -> dict[str, FileScanTask]:
        """The snapshot's tasks by normalised data file location ({} for no snapshot)."""
        if snapshot is None:
            return {}
        cached = self.plans.get(snapshot.snapshot_id)
        if cached is None:
            tasks = plan_files(
                self.io,
                self.metadata,
                snapshot,
                self.row_filter,
                schema=self.request.table_schema,
                case_sensitive=self.request.case_sensitive,
            )
            cached = {normalize_location(t.file_path): t for t in tasks}
            self.plans[snapshot.snapshot_id] = cached
        return cached

    def keep_only(self, snapshot: Snapshot) -> None:
        """Forget every plan but ``snapshot``'s."""
        self.plans = {k: v for k, v in self.plans.items() if k == snapshot.snapshot_id}


@dataclass(frozen=True)
class StateDiff:
    """Rows live in the old snapshot and not the new one (``before``), and the reverse (``after``)."""

    before: pa.Table
    after: pa.Table


def _signature(task: FileScanTask) -> tuple[object, ...]:
    """What decides a file's live rows: the file itself, the deletes applying to it and its v4
    column files."""
    deletes = sorted((d.delete_file.content_key, d.data_sequence_number) for d in task.deletes)
    return (task.data_file.content_key, tuple(deletes), task.data_file.column_files)


def diff_states(cache: PlanCache, old: Snapshot | None, new: Snapshot) -> StateDiff:
    """The rows that differ between two snapshots (``request`` columns, ``_pos`` included).

    Both snapshots are planned at once and the touched files read on a small thread pool (Parquet
    decoding releases the GIL), results kept in plan order.
    """
    request = cache.request
    io = cache.io
    with ThreadPoolExecutor(max_workers=READ_WORKERS) as pool:
        old_future = pool.submit(cache.plan, old)
        new_plan = cache.plan(new)
        old_plan = old_future.result()
        reads: list[Future[tuple[pa.Table, pa.Table]]] = []
        for path, task in old_plan.items():
            other = new_plan.get(path)
            if other is None or other.data_file.content_key != task.data_file.content_key:
                reads.append(pool.submit(_removed, io, task, request))
            elif _signature(other) != _signature(task):
                reads.append(pool.submit(_same_file_change, io, task, other, request))
        for path, task in new_plan.items():
            other = old_plan.get(path)
            if other is None or other.data_file.content_key != task.data_file.content_key:
                reads.append(pool.submit(_added, io, task, request))
        results = [r.result() for r in reads]
    empty = request.output_schema().empty_table()
    before = [empty, *(gone for gone, _ in results)]
    after = [empty, *(came for _, came in results)]
    return StateDiff(pa.concat_tables(before), pa.concat_tables(after))


def _removed(io: FileIO, task: FileScanTask, request: ReadRequest) -> tuple[pa.Table, pa.Table]:
    return read_task(io, task, request), request.output_schema().empty_table()


def _added(io: FileIO, task: FileScanTask, request: ReadRequest) -> tuple[pa.Table, pa.Table]:
    return request.output_schema().empty_table(), read_task(io, task, request)


def _position_deletes_only(task: FileScanTask) -> bool:
    return all(d.delete_file.content == FileContent.POSITION_DELETES for d in task.deletes)


def _same_file_change(
    io: FileIO, old: FileScanTask, new: FileScanTask, request: ReadRequest
) -> tuple[pa.Table, pa.Table]:
    """Rows of one data file live in ``old`` only, and live in ``new`` only.

    A row a new v4 column file holds counts on both sides (its values may have changed);
    rows with equal values on both sides are told apart as carry-overs by the changelog.
    """
    rewritten = _new_column_file_positions(io, old, new)
    if len(rewritten):
        was = read_task(io, old, request)
        now = read_task(io, new, request)
        was_pos, now_pos = was.column(POS_NAME), now.column(POS_NAME)
        values = pa.array(rewritten, pa.int64())
        gone = was.filter(
            pc.or_(
                pc.invert(pc.is_in(was_pos, value_set=now_pos.combine_chunks())),
                pc.is_in(was_pos, value_set=values),
            )
        )
        came = now.filter(
            pc.or_(
                pc.invert(pc.is_in(now_pos, value_set=was_pos.combine_chunks())),
                pc.is_in(now_pos, value_set=values),
            )
        )
        return gone, came
    if _position_deletes_only(old) and _position_deletes_only(new):
        old_deleted = deleted_positions(io, old, old.deletes)
        new_deleted = deleted_positions(io, new, new.deletes)
        if np.isin(old_deleted, new_deleted).all():
            newly = np.setdiff1d(new_deleted, old_deleted)
            return _rows_at(io, old, request, newly), request.output_schema().empty_table()
    was = read_task(io, old, request)
    now = read_task(io, new, request)
    was_pos, now_pos = was.column(POS_NAME), now.column(POS_NAME)
    gone = was.filter(pc.invert(pc.is_in(was_pos, value_set=now_pos.combine_chunks())))
    came = now.filter(pc.invert(pc.is_in(now_pos, value_set=was_pos.combine_chunks())))
    return gone, came


def _new_column_file_positions(io: FileIO, old: FileScanTask, new: FileScanTask) -> np.ndarray:
    """Positions held by column files the new task has and the old one does not."""
    known = {cf.location for cf in old.data_file.column_files or ()}
    added = [cf for cf in new.data_file.column_files or () if cf.location not in known]
    chunks = [column_file_positions(io, cf, new.data_file) for cf in added]
    return np.unique(np.concatenate(chunks)) if chunks else np.empty(0, dtype=np.int64)


def _rows_at(io: FileIO, task: FileScanTask, request: ReadRequest, positions: np.ndarray) -> pa.Table:
    """The rows of the task's file (as read in ``task``) at ``positions``."""
    if len(positions) == 0:
        return request.output_schema().empty_table()
    starts = row_group_starts(io, task.file_path, task.data_file.file_size_in_bytes)
    groups = RowGroups.covering(starts, positions)
    rows = read_task(io, task, request, row_groups=groups)
    return rows.filter(pc.is_in(rows.column(POS_NAME), value_set=pa.array(positions, pa.int64())))
