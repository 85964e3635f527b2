"""Compaction: rewrite data files with their deletes applied, bin-packed to the target file size.

Planning (driver side, shared with the Spark version in ``icefloe.spark.rewrite``):

1. plan every live data file of the branch head with the delete files that apply to it;
2. candidates are the files that may hold rows matching ``filter`` and that carry deletes, are
   smaller than ``min_file_size`` (default 75% of the target) or larger than ``max_file_size``
   (default 180%), or every matching file with ``rewrite_all``;
3. candidates are bin-packed per partition spec and partition into groups of at most the target
   size; a group is rewritten when it has deletes, an oversized file, or ``min_input_files`` files;
4. a delete file is retired when every data file it applies to is rewritten.

Each group is read with its deletes applied and row lineage materialised (``_row_id`` and
``_last_updated_sequence_number`` are written as columns on v3+, so rows keep both), and written
into files of the group's own spec and partition. One ``replace`` snapshot commits everything, the
new files carrying the starting snapshot's data sequence number.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from icefloe.dml.row_io import prepare_changed_rows, read_for_change
from icefloe.errors import CommitStateUnknown, ValidationError, nothing_committed
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.binding import bind
from icefloe.expressions.parser import to_expression
from icefloe.io.fileio import FileIO
from icefloe.maintenance.sorting import RowOrder, check_sortable, sort_rows
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import DeleteFileRef, FileScanTask
from icefloe.spec.content import DataFile, EntryStatus, FileContent, ManifestEntry
from icefloe.spec.snapshots import MAIN_BRANCH, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.commit_options import CommitOptions, resolve_options
from icefloe.txn.data_writer import DEFAULT_TARGET_FILE_SIZE, write_partition_files
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.producers import branch_head
from icefloe.txn.rewrite_files import RewriteFiles

TARGET_FILE_SIZE_PROPERTY = "write.target-file-size-bytes"
MIN_FILE_SIZE_RATIO = 0.75
MAX_FILE_SIZE_RATIO = 1.8


@dataclass(frozen=True)
class FileGroup:
    """Data files of one spec and partition rewritten together."""

    spec_id: int
    partition: tuple[object, ...]
    tasks: tuple[FileScanTask, ...]

    @property
    def input_bytes(self) -> int:
        """Total size of the group's data files."""
        return sum(t.data_file.file_size_in_bytes for t in self.tasks)

    @property
    def live_bytes_estimate(self) -> int:
        """Input bytes scaled by the share of rows not deleted by position deletes / DVs."""
        total = 0.0
        for t in self.tasks:
            f = t.data_file
            deleted = sum(d.delete_file.record_count for d in t.deletes if _targets_one_file(d))
            live = max(0, f.record_count - deleted) / f.record_count if f.record_count else 0.0
            total += f.file_size_in_bytes * live
        return int(total)


@dataclass
class RewritePlan:
    """What a compaction will do: groups to rewrite, delete files to retire, the sequence number."""

    base: Snapshot | None
    groups: list[FileGroup] = field(default_factory=list)
    removed_deletes: list[ManifestEntry] = field(default_factory=list)
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    sort_order: RowOrder | None = None  # the ``sort`` strategy's order; None keeps rows as read

    @property
    def data_sequence_number(self) -> int | None:
        """Sequence number the new files keep: that of the snapshot the rewrite read."""
        return self.base.sequence_number if self.base is not None else None

    @property
    def removed_data(self) -> list[ManifestEntry]:
        """Entries of every data file being rewritten."""
        return [t.entry for g in self.groups for t in g.tasks]


@dataclass(frozen=True)
class RewriteResult:
    """Outcome of a compaction (``snapshot`` is None when nothing needed rewriting)."""

    rewritten_data_files: int
    added_data_files: int
    removed_delete_files: int
    rewritten_bytes: int
    snapshot: Snapshot | None


def target_size(md: TableMetadata, target_file_size: int | None) -> int:
    """The target file size in bytes: the argument, else ``write.target-file-size-bytes``."""
    size = (
        target_file_size
        if target_file_size is not None
        else md.int_property(TARGET_FILE_SIZE_PROPERTY, DEFAULT_TARGET_FILE_SIZE)
    )
    if size <= 0:
        raise ValidationError(f"target_file_size must be positive, got {size}")
    return size


def plan_rewrite(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    row_filter: Expression | str | None = None,
    target_file_size: int | None = None,
    *,
    min_input_files: int = 2,
    rewrite_all: bool = False,
    case_sensitive: bool = True,
) -> RewritePlan:
    """Choose the file groups to rewrite and the delete files that become unused (no I/O on data)."""
    target = target_size(md, target_file_size)
    if min_input_files < 1:
        raise ValidationError(f"min_input_files must be at least 1, got {min_input_files}")
    expr = AlwaysTrue() if row_filter is None else to_expression(row_filter)
    bind(md.schema(), expr, case_sensitive)  # a bad filter fails before anything happens
    plan = RewritePlan(base=snapshot, target_file_size=target)
    if snapshot is None:
        return plan
    all_tasks = plan_files(io, md, snapshot, case_sensitive=case_sensitive)
    if isinstance(expr, AlwaysTrue):
        selected = {t.file_path for t in all_tasks}
    else:
        selected = {t.file_path for t in plan_files(io, md, snapshot, expr, case_sensitive=case_sensitive)}
    low, high = int(target * MIN_FILE_SIZE_RATIO), int(target * MAX_FILE_SIZE_RATIO)
    by_partition: dict[tuple[int, tuple[object, ...]], list[FileScanTask]] = {}
    for t in all_tasks:
        f = t.data_file
        if t.file_path not in selected:
            continue
        if rewrite_all or t.deletes or f.column_files or not low <= f.file_size_in_bytes <= high:
            by_partition.setdefault((f.spec_id, tuple(f.partition)), []).append(t)
    for (spec_id, partition), tasks in by_partition.items():
        for bin_ in _bin_pack(tasks, target):
            needed = (
                rewrite_all
                or len(bin_) >= min_input_files
                or any(t.deletes or t.data_file.column_files for t in bin_)
                or any(t.data_file.file_size_in_bytes > high for t in bin_)
            )
            if needed:
                plan.groups.append(FileGroup(spec_id, partition, tuple(bin_)))
    plan.removed_deletes = _unused_deletes(all_tasks, {t.file_path for g in plan.groups for t in g.tasks})
    return plan


def _targets_one_file(ref: DeleteFileRef) -> bool:
    """A DV or position delete file for a single data file (its record count is that file's)."""
    f = ref.delete_file
    return f.content == FileContent.POSITION_DELETES and f.referenced_data_file is not None


def _external_deletes(task: FileScanTask) -> list[DeleteFileRef]:
    """The task's delete files that are entries of their own (not a v4 colocated DV)."""
    dv = task.data_file.deletion_vector
    return [
        d
        for d in task.deletes
        if dv is None or (d.delete_file.file_path, d.delete_file.content_offset) != (dv.location, dv.offset)
    ]


def _bin_pack(tasks: list[FileScanTask], target: int) -> list[list[FileScanTask]]:
    """First-fit decreasing into bins of at most ``target`` bytes (a bigger file gets its own bin)."""
    bins: list[list[FileScanTask]] = []
    sizes: list[int] = []
    for t in sorted(tasks, key=lambda t: (-t.data_file.file_size_in_bytes, t.file_path)):
        size = t.data_file.file_size_in_bytes
        for i, used in enumerate(sizes):
            if used + size <= target:
                bins[i].append(t)
                sizes[i] += size
                break
        else:
            bins.append([t])
            sizes.append(size)
    return bins


def _unused_deletes(all_tasks: Sequence[FileScanTask], rewritten: set[str]) -> list[ManifestEntry]:
    """Delete files all of whose data files are rewritten (the new files do not need them)."""
    users: dict[tuple[str, int], list[str]] = {}
    refs: dict[tuple[str, int], DeleteFileRef] = {}
    for t in all_tasks:
        for d in _external_deletes(t):
            key = d.delete_file.content_key
            users.setdefault(key, []).append(t.file_path)
            refs[key] = d
    out = []
    for key, paths in users.items():
        if all(p in rewritten for p in paths):
            d = refs[key]
            out.append(ManifestEntry(EntryStatus.EXISTING, None, d.data_sequence_number, None, d.delete_file))
    return out


def read_group(io: FileIO, md: TableMetadata, group: FileGroup) -> pa.Table:
    """Every live row of the group (deletes applied), with ``_pos`` and (v3+) materialised lineage."""
    tables = [read_for_change(io, md, t) for t in group.tasks]
    return pa.concat_tables(tables)


def write_group(
    io: FileIO,
    md: TableMetadata,
    group: FileGroup,
    target_file_size: int,
    sort_order: RowOrder | None = None,
) -> list[DataFile]:
    """Rewrite one group: its live rows, lineage kept, in files of about ``target_file_size`` bytes
    (sorted across the group by ``sort_order`` when one is given).

    Files go where ``LocationProvider(md)`` puts data files (``write.data.path`` redirects them).
    """
    rows = read_group(io, md, group)
    if rows.num_rows == 0:
        return []
    data, file_schema = prepare_changed_rows(md, rows)
    if sort_order is not None:
        data = sort_rows(data, md.schema(), sort_order)
    spec = md.spec_by_id(group.spec_id)
    pieces = max(1, math.ceil(group.live_bytes_estimate / target_file_size))
    per_file = math.ceil(data.num_rows / pieces)
    written: list[DataFile] = []
    try:
        for start in range(0, data.num_rows, per_file):
            chunk = data.slice(start, per_file)
            written += write_partition_files(io, md, chunk, file_schema, spec, group.partition, split=False)
    except BaseException:
        for f in written:
            io.delete(f.file_path, missing_ok=True)
        raise
    return written


def rewrite_action(
    plan: RewritePlan,
    added: list[DataFile],
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> RewriteFiles:
    """The ``replace`` producer committing a plan's rewrite."""
    return RewriteFiles(
        branch=branch,
        snapshot_properties=dict(snapshot_properties or {}),
        owned_files=[f.file_path for f in added],
        removed_data=plan.removed_data,
        removed_deletes=list(plan.removed_deletes),
        added=list(added),
        data_sequence_number=plan.data_sequence_number,
        base_snapshot_id=plan.base.snapshot_id if plan.base is not None else None,
    )


def commit_rewrite(
    table: TableHandle,
    plan: RewritePlan,
    added: list[DataFile],
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> RewriteResult:
    """Commit the rewrite of ``plan`` as one ``replace`` snapshot (new files deleted if it fails)."""
    action = rewrite_action(plan, added, branch, snapshot_properties)
    commit_action(table, action)
    return RewriteResult(
        rewritten_data_files=len(plan.removed_data),
        added_data_files=len(added),
        removed_delete_files=len(plan.removed_deletes),
        rewritten_bytes=sum(g.input_bytes for g in plan.groups),
        snapshot=table.metadata.snapshot_for_ref(branch),
    )


@dataclass(frozen=True)
class RewriteRequest:
    """What to compact and how: the options of ``rewrite_data_files`` (Python and Spark alike)."""

    filter: Expression | str | None = None
    target_file_size: int | None = None
    min_input_files: int = 2
    rewrite_all: bool = False
    branch: str = MAIN_BRANCH
    snapshot_properties: dict[str, str] | None = None
    case_sensitive: bool = True
    sort_order: RowOrder | None = None

    def committing_with(self, options: CommitOptions) -> RewriteRequest:
        """This request, committed to ``options``' branch with its snapshot properties."""
        return dataclasses.replace(self, branch=options.branch, snapshot_properties=options.properties)


class GroupWriter(Protocol):
    """Writes the file groups of a plan: here in this process, or on Spark's executors."""

    def write(self, table: TableHandle, plan: RewritePlan) -> list[DataFile]:
        """Rewrite every group of ``plan``; the new data files (deleting its own files if it fails)."""
        ...

    def discard(self) -> None:
        """The rewrite failed after ``write`` returned: delete what it wrote."""
        ...


class LocalGroupWriter:
    """Rewrites the groups one after the other in this process."""

    def __init__(self) -> None:
        self._io: FileIO | None = None
        self._written: list[DataFile] = []

    def write(self, table: TableHandle, plan: RewritePlan) -> list[DataFile]:
        """Rewrite each group with ``write_group``."""
        self._io = table.io
        try:
            for group in plan.groups:
                self._written += write_group(
                    table.io, table.metadata, group, plan.target_file_size, plan.sort_order
                )
        except BaseException:
            self.discard()
            raise
        return list(self._written)

    def discard(self) -> None:
        """Delete the files written so far."""
        if self._io is not None:
            for f in self._written:
                self._io.delete(f.file_path, missing_ok=True)
        self._written = []


def compact(table: TableHandle, request: RewriteRequest, writer: GroupWriter) -> RewriteResult:
    """The compaction flow: plan on the branch head, let ``writer`` rewrite the groups, commit once.

    Files written are deleted only when the commit failed cleanly (``errors.nothing_committed``).
    """
    md = table.metadata
    plan = plan_rewrite(
        table.io,
        md,
        branch_head(md, request.branch),
        request.filter,
        request.target_file_size,
        min_input_files=request.min_input_files,
        rewrite_all=request.rewrite_all,
        case_sensitive=request.case_sensitive,
    )
    if request.sort_order is not None:
        check_sortable(md.schema(), request.sort_order)
        plan = dataclasses.replace(plan, sort_order=request.sort_order)
    if not plan.groups:
        return RewriteResult(0, 0, 0, 0, None)
    added = writer.write(table, plan)
    try:
        return commit_rewrite(table, plan, added, request.branch, request.snapshot_properties)
    except CommitStateUnknown:
        raise  # the commit may have happened: keep every file
    except BaseException as exc:
        if nothing_committed(exc):  # else the swap may have happened (an interrupt, say)
            writer.discard()
        raise


def rewrite_data_files(
    table: TableHandle,
    filter: Expression | str | None = None,
    target_file_size: int | None = None,
    *,
    min_input_files: int = 2,
    rewrite_all: bool = False,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
    sort_order: RowOrder | None = None,
) -> RewriteResult:
    """Compact the files of ``table`` that may hold rows matching ``filter``; one ``replace`` snapshot.

    ``sort_order`` sorts the rows of each rewritten group (the ``sort`` strategy).
    ``branch=`` / ``snapshot_properties=`` are deprecated: pass ``options=CommitOptions(...)``.
    """
    request = RewriteRequest(
        filter,
        target_file_size,
        min_input_files,
        rewrite_all,
        case_sensitive=case_sensitive,
        sort_order=sort_order,
    )
    opts = resolve_options(options, branch, snapshot_properties)
    return compact(table, request.committing_with(opts), LocalGroupWriter())
