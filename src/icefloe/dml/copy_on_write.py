"""Copy-on-write row removal: find the files a filter touches and rewrite them without those rows.

Files whose partition proves every row matches are dropped without being read; files that may
hold matching rows are read (deletes applied) and either kept, dropped, or rewritten with the
surviving rows. On format v3+ the surviving rows keep their ``_row_id`` and
``_last_updated_sequence_number`` (written as columns of the new file), as row lineage requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.dml.position_deletes import deletes_only_for
from icefloe.dml.row_io import read_for_change, write_survivors
from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.ast import Expression
from icefloe.expressions.evaluators import strict_partition_evaluators
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, EntryStatus, FileContent, ManifestEntry
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata


@dataclass
class RewritePlan:
    """Entries to remove, files that replace part of them, and how many rows went away.

    ``removed`` holds the data files and the delete files that applied to them alone (their DVs,
    file-scoped position deletes): a removed data file takes its deletes with it.
    """

    removed: list[ManifestEntry] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    deleted_rows: int = 0

    @property
    def removed_data_files(self) -> int:
        """How many data files are removed."""
        return sum(1 for e in self.removed if e.data_file.content == FileContent.DATA)

    @property
    def rewrites_files(self) -> bool:
        """True when some file was rewritten rather than dropped whole."""
        return bool(self.added)


def plan_copy_on_write(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    delete_filter: Expression,
    case_sensitive: bool = True,
) -> RewritePlan:
    """Compute the files to drop and rewrite so no row matching ``delete_filter`` stays live."""
    plan = RewritePlan()
    if snapshot is None:
        return plan
    schema = md.schema()
    strict = strict_partition_evaluators(md.specs_by_id(), schema, delete_filter, case_sensitive)
    match_expr = to_arrow_expression(delete_filter, schema, case_sensitive)
    keep_expr = ~match_expr | match_expr.is_null()
    try:
        for task in plan_files(io, md, snapshot, delete_filter, case_sensitive=case_sensitive):
            f = task.data_file
            if not task.deletes and strict[f.spec_id].eval(f.partition):
                plan.removed.append(task.entry)
                plan.deleted_rows += f.record_count
                continue
            # Read every live row of the file: the residual would drop exactly the rows we keep.
            rows = read_for_change(io, md, task, case_sensitive)
            kept = rows.filter(keep_expr)
            if kept.num_rows == rows.num_rows:
                continue  # nothing matched; leave the file and its deletes alone
            plan.removed.append(task.entry)
            plan.removed.extend(retired_deletes(io, md, task))
            plan.deleted_rows += rows.num_rows - kept.num_rows
            if kept.num_rows:
                plan.added.append(write_survivors(io, md, task, kept))
    except BaseException:
        for f in plan.added:
            io.delete(f.file_path, missing_ok=True)
        raise
    return plan


def retired_deletes(io: FileIO, md: TableMetadata, task: FileScanTask) -> list[ManifestEntry]:
    """Entries for the delete files that go away with the task's data file."""
    seqs = {ref.delete_file.content_key: ref.data_sequence_number for ref in task.deletes}
    return [
        ManifestEntry(EntryStatus.EXISTING, None, seqs.get(f.content_key), None, f)
        for f in deletes_only_for(io, md, task)
    ]
