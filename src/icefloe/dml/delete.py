"""DELETE FROM table WHERE filter: copy-on-write or merge-on-read (``write.delete.mode``).

When every file the filter touches is known to match entirely from its partition values, the
delete is metadata-only in both modes: the files (and the deletes that applied to them alone)
are removed and nothing is written. Otherwise copy-on-write rewrites the touched files without
the matching rows (``cow.plan_copy_on_write``) and merge-on-read writes deletes for the matching
positions.
"""

from __future__ import annotations

import numpy as np

from icefloe.dml.change_builder import COPY_ON_WRITE, ChangeBuilder, RowLevelChange, write_mode
from icefloe.dml.copy_on_write import plan_copy_on_write, retired_deletes
from icefloe.dml.position_deletes import existing_deleted_positions
from icefloe.expressions.ast import Expression
from icefloe.expressions.evaluators import strict_partition_evaluators
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.scan.reader import POS, ReadRequest, read_task
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import FileContent
from icefloe.spec.schema import prune_columns
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata


def plan_delete(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: Expression,
    mode: str | None = None,
    case_sensitive: bool = True,
) -> RowLevelChange:
    """Write the files that delete the rows matching ``row_filter`` (uncommitted)."""
    chosen = write_mode(md, "delete", mode)
    change = RowLevelChange.reading("delete", chosen, snapshot, row_filter, case_sensitive)
    if snapshot is None:
        return change
    if chosen == COPY_ON_WRITE:
        plan = plan_copy_on_write(io, md, snapshot, row_filter, case_sensitive)
        change.removed, change.added, change.deleted_rows = plan.removed, plan.added, plan.deleted_rows
        return change
    tasks = plan_files(io, md, snapshot, row_filter, case_sensitive=case_sensitive)
    whole = _wholly_matching(io, md, tasks, row_filter, case_sensitive)
    if len(whole) == len(tasks):  # metadata-only: drop the files (and their own deletes), write nothing
        for task in tasks:
            change.removed.append(task.entry)
            change.removed.extend(retired_deletes(io, md, task))
        change.deleted_rows = sum(whole.values())
        return change
    builder = ChangeBuilder(io, md, change)
    try:
        for task in tasks:
            if task.file_path in whole:
                builder.drop_file(task, whole[task.file_path])
                continue
            positions = matching_positions(io, md, task, case_sensitive)
            change.deleted_rows += len(positions)
            builder.delete_positions(task, positions)
        return builder.finish()
    except BaseException:
        builder.abort()
        raise


def _wholly_matching(
    io: FileIO, md: TableMetadata, tasks: list[FileScanTask], row_filter: Expression, case_sensitive: bool
) -> dict[str, int]:
    """Files whose partition proves every row matches, with their live row count.

    Files with equality deletes are left out: their live rows are only known by reading them.
    """
    schema = md.schema()
    evaluators = strict_partition_evaluators(md.specs_by_id(), schema, row_filter, case_sensitive)
    out: dict[str, int] = {}
    for t in tasks:
        if any(d.delete_file.content == FileContent.EQUALITY_DELETES for d in t.deletes):
            continue
        if evaluators[t.data_file.spec_id].eval(t.data_file.partition):
            deleted = len(existing_deleted_positions(io, t)) if t.deletes else 0
            out[t.file_path] = t.data_file.record_count - deleted
    return out


def matching_positions(
    io: FileIO, md: TableMetadata, task: FileScanTask, case_sensitive: bool = True
) -> np.ndarray:
    """Positions of the live rows of the task's file that match its residual (filter columns only)."""
    schema = md.schema()
    request = ReadRequest(
        schema,
        prune_columns(schema, set()),
        (POS.name,),
        case_sensitive=case_sensitive,
        specs=md.specs_by_id(),
    )
    rows = read_task(io, task, request)
    return np.asarray(rows.column(POS.name).to_numpy(), dtype=np.int64)
