"""Conflict validation for row-level commits: what did the snapshots committed since the base do?

A row-level change (copy-on-write ``OverwriteFiles``, merge-on-read ``RowDelta``) is planned against
a *base* snapshot and committed against whatever the branch head is by then. The snapshots in
between are the *concurrent* ones, and only what they did matters. Each of them records its own
work in the manifests it wrote, so validation reads those and nothing else:

- v1–v3: the manifests whose ``added_snapshot_id`` is the snapshot, holding its ADDED and DELETED
  entries (the spec requires the deleting snapshot to keep DELETED entries);
- v4: the leaves and inline root rows the snapshot wrote (a removed inline entry is a DELETED
  root row), the references whose manifest DV it changed and the DELETED references of leaves
  it emptied (their ``deleted_positions`` / ``replaced_positions`` come back as DELETED /
  REPLACED rows); a colocated DV change is a REPLACED row plus a MODIFIED row stamped with the
  snapshot in ``dv_snapshot_id``.

``append`` snapshots only add data, so they are not read at all unless the isolation level asks
about added data (serializable). The checks (Java Iceberg's semantics):

- ``check_still_live``: no concurrent snapshot removed a file the change removes or references;
- ``check_no_new_deletes``: no concurrent snapshot added a position delete / DV naming those data
  files, or (v4) changed their colocated DV;
- ``check_no_new_equality_deletes``: no concurrent snapshot added an equality delete whose
  partition scope and key bounds may cover one of those data files. Copy-on-write rewrites and
  merge-on-read deletes both run it, at every isolation level (Java's
  ``validateNoNewDeleteFiles`` semantics): the rewritten rows, or the rows an update re-inserts,
  would otherwise bring back rows that commit deleted;
- ``check_no_new_matching_data``: no concurrent snapshot added a data file that may hold rows
  matching the change's conflict filter (partition projection + inclusive metrics).

Every failure is a ``CommitConflict(retryable=False)`` whose message names the file(s) and the
concurrent snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from icefloe.errors import CommitConflict, IcefloeError, NotFound, ValidationError
from icefloe.expressions.ast import Expression
from icefloe.expressions.bound_evaluation import decode_bound
from icefloe.expressions.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator
from icefloe.formats.data_files import read_data_file
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.schema import DELETE_FILE_PATH_ID, Schema
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import NestedField, StringType
from icefloe.tree.read_seam import dropped_entries, live_entries, manifest_refs, read_entries_many

ContentKey = tuple[str, int]
_POSITION_DELETE_PATHS = Schema(NestedField(DELETE_FILE_PATH_ID, "file_path", StringType(), True))


@dataclass(frozen=True)
class Target:
    """A data file a change removes or writes deletes for; ``spec_id`` / ``partition`` None when unknown."""

    path: str
    spec_id: int | None = None
    partition: tuple[Any, ...] | None = None

    @classmethod
    def of(cls, data_file: DataFile) -> Target:
        """The target for a known data file."""
        return cls(data_file.file_path, data_file.spec_id, tuple(data_file.partition))


@dataclass(frozen=True)
class Change:
    """One content-file change made by a concurrent snapshot."""

    snapshot: Snapshot
    entry: ManifestEntry

    def describe(self) -> str:
        """``snapshot <id> (<operation>)`` for messages."""
        return f"snapshot {self.snapshot.snapshot_id} ({self.snapshot.operation or 'unknown operation'})"


@dataclass
class ConcurrentHistory:
    """What the snapshots committed after a base did, read from the manifests they wrote."""

    snapshots: list[Snapshot] = field(default_factory=list)  # newest first
    added_data: list[Change] = field(default_factory=list)
    added_deletes: list[Change] = field(default_factory=list)
    removed: dict[ContentKey, Change] = field(default_factory=dict)  # data and delete files
    dv_changes: dict[str, Change] = field(default_factory=dict)  # v4 colocated DVs, by data file path

    @property
    def is_empty(self) -> bool:
        """True when nothing was committed after the base."""
        return not self.snapshots


def concurrent_snapshots(
    md: TableMetadata,
    head: Snapshot | None,
    base_snapshot_id: int | None,
    branch: str,
    skip: Iterable[int] = (),
) -> list[Snapshot]:
    """The snapshots from ``head`` back to (not including) the base, newest first.

    ``base_snapshot_id`` None means the change was planned against an empty branch: every ancestor
    counts (older ones that have expired are out of reach and end the walk). ``skip`` names
    snapshots that are not concurrent (earlier actions of the same transaction). A base that is no
    longer an ancestor of the head (rollback, branch replaced, history expired) is a conflict.
    """
    own = set(skip)
    out: list[Snapshot] = []
    snap = head
    while snap is not None:
        if snap.snapshot_id == base_snapshot_id:
            return out
        if snap.snapshot_id not in own:
            out.append(snap)
        parent_id = snap.parent_snapshot_id
        if parent_id is None:
            break
        try:
            snap = md.snapshot_by_id(parent_id)
        except NotFound:
            if base_snapshot_id is None:
                return out
            raise CommitConflict(
                f"cannot validate against concurrent commits on branch {branch!r}: snapshot {parent_id}, "
                f"between the base snapshot {base_snapshot_id} and the head, has expired",
                retryable=False,
            ) from None
    if base_snapshot_id is not None:
        where = f"head {head.snapshot_id}" if head is not None else "no snapshot any more"
        raise CommitConflict(
            f"branch {branch!r} ({where}) no longer descends from snapshot {base_snapshot_id} that the "
            "change was planned from (rolled back, replaced or emptied concurrently)",
            retryable=False,
        )
    return out


def _owned_refs(io: Any, md: TableMetadata, snap: Snapshot, data_only: bool) -> list[ManifestFile]:
    """The manifests a snapshot wrote itself, or whose manifest DV it changed (v4)."""
    sid = snap.snapshot_id
    return [
        m
        for m in manifest_refs(io, md, snap)
        if (m.added_snapshot_id == sid or m.dv_snapshot_id == sid)
        and (not data_only or m.content == ManifestContent.DATA)
    ]


def read_concurrent_history(
    io: Any, md: TableMetadata, snapshots: Sequence[Snapshot], *, include_appends: bool
) -> ConcurrentHistory:
    """Collect the changes of ``snapshots`` (only the manifests each one wrote are read).

    ``include_appends`` False skips ``append`` snapshots entirely (they only add data files).
    Data added by ``replace`` snapshots (compaction: the same rows) and delete files they add
    (rewritten deletes) are not counted as new, as in Java Iceberg.
    """
    history = ConcurrentHistory(snapshots=list(snapshots))
    jobs: list[tuple[Snapshot, ManifestFile]] = []
    for snap in snapshots:
        is_append = snap.operation == Operation.APPEND.value
        if is_append and not include_appends:
            continue
        jobs.extend((snap, m) for m in _owned_refs(io, md, snap, data_only=is_append))
    manifests = [m for _, m in jobs]
    for (snap, _), entries in zip(jobs, read_entries_many(io, md, manifests), strict=True):
        for entry in entries:
            _classify(history, snap, entry)
    for snap in snapshots:
        if snap.operation != Operation.APPEND.value or include_appends:
            for entry in dropped_entries(io, md, snap):
                _classify(history, snap, entry)
    return history


def _classify(history: ConcurrentHistory, snap: Snapshot, e: ManifestEntry) -> None:
    sid = snap.snapshot_id
    f = e.data_file
    by_snap = e.snapshot_id == sid
    rewrite = snap.operation == Operation.REPLACE.value
    if f.content == FileContent.DATA:
        if e.status == EntryStatus.ADDED and by_snap:
            if not rewrite:
                history.added_data.append(Change(snap, e))
        elif e.status == EntryStatus.DELETED and by_snap:
            history.removed[f.content_key] = Change(snap, e)
        elif (e.status == EntryStatus.REPLACED and by_snap) or (
            e.status == EntryStatus.MODIFIED and sid in (e.dv_snapshot_id, e.latest_column_file_snapshot_id)
        ):
            history.dv_changes.setdefault(f.file_path, Change(snap, e))
    elif e.status == EntryStatus.ADDED and by_snap:
        if not rewrite:
            history.added_deletes.append(Change(snap, e))
    elif e.status == EntryStatus.DELETED and by_snap:
        history.removed[f.content_key] = Change(snap, e)


def _kind(f: DataFile) -> str:
    if f.content == FileContent.DATA:
        return "data file"
    if f.content == FileContent.EQUALITY_DELETES:
        return "equality delete file"
    if f.referenced_data_file is not None and f.content_offset is not None:
        return "deletion vector in"
    return "position delete file"


def check_still_live(history: ConcurrentHistory, keys: Iterable[ContentKey], action: str) -> None:
    """Fail when a concurrent snapshot removed one of the files (by content key)."""
    for key in keys:
        hit = history.removed.get(key)
        if hit is not None:
            f = hit.entry.data_file
            raise CommitConflict(
                f"{action}: {_kind(f)} {f.file_path} was removed by a concurrent commit, {hit.describe()}",
                retryable=False,
            )


def check_no_new_deletes(
    history: ConcurrentHistory,
    targets: Iterable[Target],
    action: str,
    *,
    ignore: Iterable[ContentKey] = (),
) -> None:
    """Fail when a concurrent snapshot added a position delete / DV for one of the target data files.

    A delete counts when it names the file (``referenced_data_file``) or, without one, when its
    partition and ``file_path`` bounds admit the file; a v4 colocated DV change always counts.
    ``ignore`` lists delete files the change itself retires.
    """
    skipped = set(ignore)
    by_ref: dict[str, list[Change]] = {}
    unreferenced: list[Change] = []
    for c in history.added_deletes:
        f = c.entry.data_file
        if f.content != FileContent.POSITION_DELETES or f.content_key in skipped:
            continue
        if f.referenced_data_file is not None:
            by_ref.setdefault(f.referenced_data_file, []).append(c)
        else:
            unreferenced.append(c)
    for t in targets:
        dv = history.dv_changes.get(t.path)
        if dv is not None:
            _raise_new_delete(action, t, dv, "changed the deletion vector or column files of")
        for c in by_ref.get(t.path, []):
            d = c.entry.data_file
            _raise_new_delete(action, t, c, f"added {_kind(d)} {d.file_path} for")
        for c in unreferenced:
            if _position_delete_may_apply(c.entry.data_file, t):
                d = c.entry.data_file
                _raise_new_delete(action, t, c, f"added {_kind(d)} {d.file_path} that may apply to")


def has_new_equality_deletes(history: ConcurrentHistory) -> bool:
    """Whether a concurrent snapshot added an equality delete file (rewrites not counted)."""
    return any(c.entry.data_file.content == FileContent.EQUALITY_DELETES for c in history.added_deletes)


def check_no_new_equality_deletes(
    history: ConcurrentHistory, md: TableMetadata, data_files: Iterable[DataFile], action: str
) -> None:
    """Fail when a concurrent equality delete may apply to one of the data files (scope + bounds).

    An equality delete committed later always has the higher sequence number; it applies to a
    data file when its spec is unpartitioned (global) or it shares the file's spec and partition,
    and its key bounds may meet the file's.
    """
    eq = [c for c in history.added_deletes if c.entry.data_file.content == FileContent.EQUALITY_DELETES]
    if not eq:
        return
    specs = md.specs_by_id()
    for f in data_files:
        for c in eq:
            d = c.entry.data_file
            spec = specs.get(d.spec_id)
            is_global = spec is not None and not spec.fields
            in_scope = is_global or (d.spec_id, tuple(d.partition)) == (f.spec_id, tuple(f.partition))
            if in_scope and equality_bounds_overlap(md, d, f):
                _raise_new_delete(
                    action, Target.of(f), c, f"added equality delete file {d.file_path} that may apply to"
                )


def _raise_new_delete(action: str, t: Target, c: Change, what: str) -> None:
    raise CommitConflict(
        f"{action}: a concurrent commit, {c.describe()}, {what} data file {t.path}; "
        "committing would lose those deletes or bring the deleted rows back",
        retryable=False,
    )


def _position_delete_may_apply(d: DataFile, t: Target) -> bool:
    """Whether a position delete file without a referenced data file may hold positions of ``t``."""
    known = t.spec_id is not None and t.partition is not None
    if known and (d.spec_id, tuple(d.partition)) != (t.spec_id, t.partition):
        return False
    lower = decode_bound(StringType(), (d.lower_bounds or {}).get(DELETE_FILE_PATH_ID))
    upper = decode_bound(StringType(), (d.upper_bounds or {}).get(DELETE_FILE_PATH_ID))
    if lower is not None and lower > t.path:
        return False
    return upper is None or t.path[: len(upper)] <= upper


def equality_bounds_overlap(md: TableMetadata, delete: DataFile, data: DataFile) -> bool:
    """False only when the metrics prove no equality key of ``delete`` can equal a row of ``data``."""
    schema = md.schema()
    for field_id in delete.equality_ids or ():
        try:
            field_type = schema.find_type(field_id)
        except IcefloeError:
            continue
        if _may_hold_nulls(delete, field_id) and _may_hold_nulls(data, field_id):
            continue  # a null key deletes rows with a null value
        d_lo = decode_bound(field_type, (delete.lower_bounds or {}).get(field_id))
        d_hi = decode_bound(field_type, (delete.upper_bounds or {}).get(field_id))
        f_lo = decode_bound(field_type, (data.lower_bounds or {}).get(field_id))
        f_hi = decode_bound(field_type, (data.upper_bounds or {}).get(field_id))
        try:
            if (d_hi is not None and f_lo is not None and d_hi < f_lo) or (
                d_lo is not None and f_hi is not None and d_lo > f_hi
            ):
                return False
        except TypeError:
            continue
    return True


def _may_hold_nulls(f: DataFile, field_id: int) -> bool:
    counts = f.null_value_counts
    return counts is None or field_id not in counts or counts[field_id] > 0


def check_no_new_matching_data(
    history: ConcurrentHistory,
    md: TableMetadata,
    conflict_filter: Expression,
    action: str,
    case_sensitive: bool = True,
) -> None:
    """Serializable isolation: fail when a concurrent snapshot added data that may match the filter."""
    if not history.added_data:
        return
    schema = md.schema()
    metrics = InclusiveMetricsEvaluator(schema, conflict_filter, case_sensitive)
    partitions: dict[int, PartitionEvaluator | None] = {}
    specs = md.specs_by_id()
    for c in history.added_data:
        f = c.entry.data_file
        if f.spec_id not in partitions:
            spec = specs.get(f.spec_id)
            try:
                partitions[f.spec_id] = (
                    PartitionEvaluator(spec, schema, conflict_filter, case_sensitive) if spec else None
                )
            except IcefloeError:  # a spec whose source columns are gone: decide on metrics alone
                partitions[f.spec_id] = None
        by_partition = partitions[f.spec_id]
        if by_partition is not None and not by_partition.eval(f.partition):
            continue
        if metrics.eval(f):
            raise CommitConflict(
                f"{action}: a concurrent commit, {c.describe()}, added data file {f.file_path} that may hold "
                f"rows matching {conflict_filter} (serializable isolation)",
                retryable=False,
            )


def referenced_data_paths(io: Any, delete_file: DataFile) -> list[str]:
    """The data file paths a position delete file names (read from its ``file_path`` column)."""
    if delete_file.referenced_data_file is not None:
        return [delete_file.referenced_data_file]
    table = read_data_file(
        io,
        delete_file.file_path,
        _POSITION_DELETE_PATHS,
        delete_file.file_format,
        file_size=delete_file.file_size_in_bytes,
    )
    return sorted(str(p) for p in pc.unique(table.column("file_path")).to_pylist())


def live_data_files(
    io: Any, md: TableMetadata, snapshot: Snapshot, paths: Iterable[str]
) -> dict[str, DataFile]:
    """The live data files of ``snapshot`` among ``paths``, by path (reads every data manifest)."""
    want = set(paths)
    return {
        e.data_file.file_path: e.data_file
        for e in live_entries(
            io,
            md,
            snapshot,
            content=ManifestContent.DATA,
            entry_filter=lambda e: e.data_file.file_path in want,
        )
    }


def missing_live_data_files(
    io: Any, md: TableMetadata, snapshot: Snapshot | None, paths: Iterable[str]
) -> list[str]:
    """Which of ``paths`` are not live data files of ``snapshot`` (reads every data manifest: use rarely)."""
    want = set(paths)
    if snapshot is None or not want:
        return sorted(want)
    return sorted(want - live_data_files(io, md, snapshot, want).keys())


def check_equality_deletes_miss_column_files(
    io: Any, md: TableMetadata, snapshot: Snapshot | None, deletes: Iterable[DataFile]
) -> None:
    """Refuse equality deletes that would apply to a data file with v4 column files.

    Column updates and equality deletes never mix on one data file (a column update moves the
    file's data sequence number, which decides which equality deletes apply): the file must be
    compacted first. An equality delete of an unpartitioned spec applies to every file; one of a
    partitioned spec to the files of its spec and partition.
    """
    equality = [d for d in deletes if d.content == FileContent.EQUALITY_DELETES]
    if snapshot is None or not equality or md.format_version < 4:
        return
    specs = md.specs_by_id()
    global_scope = any(not specs[d.spec_id].fields for d in equality if d.spec_id in specs)
    scopes = {(d.spec_id, tuple(d.partition)) for d in equality}
    for e in live_entries(io, md, snapshot, content=ManifestContent.DATA):
        f = e.data_file
        if f.column_files and (global_scope or (f.spec_id, tuple(f.partition)) in scopes):
            raise ValidationError(
                f"equality deletes cannot apply to {f.file_path}: it has column files (column updates "
                "and equality deletes never mix on one data file); compact it first (rewrite_data_files)"
            )
