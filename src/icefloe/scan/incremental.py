"""Snapshot ranges and incremental append planning.

A range is ``(start, end]`` along the ancestry of ``end``: the start is exclusive (the state a
reader already has), the end inclusive, as in Iceberg Java's ``IncrementalAppendScan`` and
``IncrementalChangelogScan``. The start is chosen by snapshot id, by ref (branch or tag: its
snapshot) or by timestamp (every ancestor committed strictly after it); no start means the whole
history of ``end``. A start that is not an ancestor of ``end`` is an error, never a silent empty
result.

The incremental append scan reads the data files that ``append`` snapshots of the range added,
each read as of the snapshot that added it (its deletes as of that snapshot applied: an append
that also wrote position deletes for its own files hides those rows), so the rows returned are
exactly the rows each append added, whatever later commits did to them. Other operations
(``overwrite``, ``delete``, ``replace``) are not appends and add nothing, as in Java.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from icefloe.errors import NotFound, ValidationError
from icefloe.expressions.ast import Expression
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import EntryStatus, FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata


@dataclass(frozen=True)
class SnapshotRange:
    """The snapshots of ``(start, end]`` oldest first, and the exclusive start (None: from the beginning)."""

    start: Snapshot | None
    snapshots: tuple[Snapshot, ...]

    @property
    def end(self) -> Snapshot | None:
        """The last (inclusive) snapshot, or the start when the range is empty."""
        return self.snapshots[-1] if self.snapshots else self.start

    def parent_of(self, index: int) -> Snapshot | None:
        """The snapshot before the ``index``-th of the range (the start for the first)."""
        return self.snapshots[index - 1] if index > 0 else self.start


def ancestors(md: TableMetadata, snapshot: Snapshot) -> list[Snapshot]:
    """``snapshot`` and its ancestors still in the metadata, newest first (stops at an expired parent)."""
    out = [snapshot]
    parent = snapshot.parent_snapshot_id
    while parent is not None:
        try:
            snap = md.snapshot_by_id(parent)
        except NotFound:
            break
        out.append(snap)
        parent = snap.parent_snapshot_id
    return out


def resolve_range(
    md: TableMetadata,
    end: Snapshot | None,
    *,
    start_snapshot_id: int | None = None,
    start_ref: str | None = None,
    start_timestamp_ms: int | None = None,
) -> SnapshotRange:
    """The range ``(start, end]``; at most one way of naming the start may be given."""
    given = [v for v in (start_snapshot_id, start_ref, start_timestamp_ms) if v is not None]
    if len(given) > 1:
        raise ValidationError("name the start of a range once: by snapshot id, by ref or by timestamp")
    if start_ref is not None:
        ref_snapshot = md.snapshot_for_ref(start_ref)
        start_snapshot_id = ref_snapshot.snapshot_id if ref_snapshot is not None else None
        if start_snapshot_id is None:
            return (
                SnapshotRange(None, tuple(reversed(ancestors(md, end)))) if end else SnapshotRange(None, ())
            )
    if end is None:
        if start_snapshot_id is not None:
            raise ValidationError(f"start snapshot {start_snapshot_id} is not an ancestor of an empty table")
        return SnapshotRange(None, ())
    chain = ancestors(md, end)
    if start_timestamp_ms is not None:
        after = [s for s in chain if s.timestamp_ms > start_timestamp_ms]
        start = chain[len(after)] if len(after) < len(chain) else None
        return SnapshotRange(start, tuple(reversed(after)))
    if start_snapshot_id is None:
        if chain[-1].parent_snapshot_id is not None:
            # the oldest known ancestor's parent expired: its own changes cannot be computed
            return SnapshotRange(chain[-1], tuple(reversed(chain[:-1])))
        return SnapshotRange(None, tuple(reversed(chain)))
    for i, snap in enumerate(chain):
        if snap.snapshot_id == start_snapshot_id:
            return SnapshotRange(snap, tuple(reversed(chain[:i])))
    md.snapshot_by_id(start_snapshot_id)  # NotFound when it was expired or never existed
    raise ValidationError(
        f"start snapshot {start_snapshot_id} is not an ancestor of end snapshot {end.snapshot_id}"
    )


def is_append(snapshot: Snapshot) -> bool:
    """Whether the snapshot is an ``append`` (the only operation an append scan reads)."""
    return snapshot.operation == Operation.APPEND.value


def added_data_tasks(tasks: Sequence[FileScanTask], snapshot: Snapshot) -> list[FileScanTask]:
    """The tasks of a snapshot's plan whose data file that snapshot added."""
    sid = snapshot.snapshot_id
    return [
        t
        for t in tasks
        if t.entry.snapshot_id == sid
        and t.entry.status == EntryStatus.ADDED
        and t.data_file.content == FileContent.DATA
    ]


def plan_appended(
    io: FileIO,
    md: TableMetadata,
    snapshots: Sequence[Snapshot],
    row_filter: Expression | None = None,
    schema: Schema | None = None,
    case_sensitive: bool = True,
) -> list[FileScanTask]:
    """Tasks reading the rows the ``append`` snapshots among ``snapshots`` added, oldest first."""
    tasks: list[FileScanTask] = []
    for snap in snapshots:
        if not is_append(snap):
            continue
        planned = plan_files(io, md, snap, row_filter, schema=schema, case_sensitive=case_sensitive)
        tasks.extend(added_data_tasks(planned, snap))
    return tasks
