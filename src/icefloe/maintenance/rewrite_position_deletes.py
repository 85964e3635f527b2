"""Position delete rewrite: the position delete files of each data file merged into one file.

A data file that two or more position delete files apply to gets a single new position delete
file holding the union of their positions; a delete file is retired only when every data file it
applies to got its new file (so the set of data files rewritten is closed over shared delete
files). Everything commits as one ``replace`` snapshot; the new files keep the highest data
sequence number of the files they replace. Deletion vectors (v3 and later) are already one per
data file: they are never touched, so on a table with only DVs this is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.dml.position_deletes import existing_deleted_positions
from icefloe.errors import nothing_committed
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, FileContent, ManifestEntry
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries
from icefloe.tree.summary import is_dv
from icefloe.txn import validation
from icefloe.txn.delete_writer import write_position_delete_file
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.producers import RowLevelProducer, branch_head
from icefloe.txn.transaction import AttemptContext


@dataclass(frozen=True)
class RewritePositionDeletesResult:
    """Counts and bytes of the delete files retired and written."""

    rewritten_delete_files: int = 0
    added_delete_files: int = 0
    rewritten_bytes: int = 0
    added_bytes: int = 0


@dataclass
class ReplaceDeleteFiles(RowLevelProducer):
    """Retire live delete files and add their replacements (same deleted rows) in one snapshot."""

    operation: Operation = Operation.REPLACE
    removed_deletes: list[ManifestEntry] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    data_sequence_number: int | None = None

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """The retired delete files must still be live on the branch."""
        history = self._history(ctx, current, parent)
        if not history.is_empty:
            keys = (e.data_file.content_key for e in self.removed_deletes)
            validation.check_still_live(history, keys, self._action())
        return TreeChange(
            added_delete_files=list(self.added_deletes),
            removed_entries=list(self.removed_deletes),
            added_data_sequence_number=self.data_sequence_number,
        )


def _position_files(task: FileScanTask) -> list[DataFile]:
    return [
        ref.delete_file
        for ref in task.deletes
        if ref.delete_file.content == FileContent.POSITION_DELETES and not is_dv(ref.delete_file)
    ]


def _closed_selection(
    tasks: list[FileScanTask], min_delete_files: int = 2
) -> tuple[list[FileScanTask], set[tuple[str, int]]]:
    """Data files to give one delete file each (those with at least ``min_delete_files``, closed over
    shared delete files), and the delete files that then become unused."""
    users: dict[tuple[str, int], list[int]] = {}
    for i, task in enumerate(tasks):
        for f in _position_files(task):
            users.setdefault(f.content_key, []).append(i)
    chosen = {i for i, task in enumerate(tasks) if len(_position_files(task)) >= max(1, min_delete_files)}
    retired: set[tuple[str, int]] = set()
    pending = list(chosen)
    while pending:
        i = pending.pop()
        for f in _position_files(tasks[i]):
            if f.content_key in retired:
                continue
            retired.add(f.content_key)
            for j in users[f.content_key]:
                if j not in chosen:
                    chosen.add(j)
                    pending.append(j)
    return [tasks[i] for i in sorted(chosen)], retired


def rewrite_position_delete_files(
    table: TableHandle, branch: str = MAIN_BRANCH, min_delete_files: int = 2
) -> RewritePositionDeletesResult:
    """Merge the position delete files of each data file of ``branch``'s head into one file.

    Data files with at least ``min_delete_files`` position delete files are chosen; 1 rewrites every
    position delete file (dropping positions of removed data files, as Iceberg's ``rewrite-all``).
    """
    md = table.metadata
    head = branch_head(md, branch)
    if head is None or md.format_version < 2:
        return RewritePositionDeletesResult()
    io = table.io
    chosen, retired = _closed_selection(plan_files(io, md, head), min_delete_files)
    if not retired:
        return RewritePositionDeletesResult()
    removed = [e for e in live_entries(io, md, head) if e.data_file.content_key in retired]
    added: list[DataFile] = []
    try:
        for task in chosen:
            positions = existing_deleted_positions(io, task)
            if len(positions):
                added.append(write_position_delete_file(io, md, task.data_file, positions))
        seqs = [e.sequence_number for e in removed if e.sequence_number is not None]
        producer = ReplaceDeleteFiles(
            branch=branch,
            removed_deletes=removed,
            added_deletes=added,
            data_sequence_number=max(seqs) if seqs else None,
            base_snapshot_id=head.snapshot_id,
        )
        commit_action(table, producer)
    except BaseException as exc:
        if nothing_committed(exc):  # else the swap may have happened (an interrupt, say)
            for f in added:
                io.delete(f.file_path, missing_ok=True)
        raise
    return RewritePositionDeletesResult(
        rewritten_delete_files=len(removed),
        added_delete_files=len(added),
        rewritten_bytes=sum(e.data_file.file_size_in_bytes for e in removed),
        added_bytes=sum(f.file_size_in_bytes for f in added),
    )
