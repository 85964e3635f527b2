"""UPDATE table SET column = value WHERE filter: copy-on-write or merge-on-read (``write.update.mode``).

Each touched file is read whole (deletes applied); matching rows get their new values and are
written to new files with their ``_row_id`` kept and a null ``_last_updated_sequence_number``
(v3+ lineage). Copy-on-write rewrites the rest of the file; merge-on-read deletes the old
versions of the updated rows instead, or on v4 tables with column updates on writes just the
changed columns of the changed rows as a column file (:mod:`icefloe.dml.column_updates`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from icefloe.dml.assignments import apply_assignments, resolve_assignments
from icefloe.dml.change_builder import ChangeBuilder, RowLevelChange, row_mask, write_mode
from icefloe.dml.row_io import LINEAGE_COLUMNS, POS_COLUMN, has_lineage, mark_modified, read_for_change
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.ast import Expression
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.scan.reader import ReadRequest
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata


def change_read_schema(md: TableMetadata) -> pa.Schema:
    """The Arrow schema ``read_for_change`` returns for this table."""
    schema = md.schema()
    meta = (POS_COLUMN, *LINEAGE_COLUMNS) if has_lineage(md) else (POS_COLUMN,)
    return ReadRequest(schema, schema, meta).output_schema()


def plan_update(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    assignments: Mapping[str, Any],
    row_filter: Expression,
    mode: str | None = None,
    case_sensitive: bool = True,
) -> RowLevelChange:
    """Write the files that give the rows matching ``row_filter`` their new values (uncommitted)."""
    chosen = write_mode(md, "update", mode)
    schema = md.schema()
    resolved = resolve_assignments(schema, assignments, case_sensitive)
    match_expr = to_arrow_expression(row_filter, schema, case_sensitive)
    apply_assignments(change_read_schema(md).empty_table(), resolved)  # type errors before any write
    changed = tuple(a.field.field_id for a in resolved)
    change = RowLevelChange.reading("update", chosen, snapshot, row_filter, case_sensitive)
    if snapshot is None:
        return change
    builder = ChangeBuilder(io, md, change)
    try:
        for task in plan_files(io, md, snapshot, row_filter, case_sensitive=case_sensitive):
            rows = read_for_change(io, md, task, case_sensitive)
            mask = row_mask(rows, match_expr)
            if not mask.any():
                continue
            updated = mark_modified(apply_assignments(rows.filter(pa.array(mask)), resolved))
            builder.update_rows(task, rows, mask, updated, changed)
            change.updated_rows += int(mask.sum())
        return builder.finish()
    except BaseException:
        builder.abort()
        raise
