"""Offsets of an icefloe streaming read, and what lies between two of them.

An offset is ``{"snapshot_id": S, "position": p, "scan_all": b}``: the stream has consumed the
first ``p`` *units* of snapshot ``S`` (``p == END``: all of them) and every unit of the snapshots
before ``S`` in the branch's ancestry. The units of a snapshot are, in a fixed order (by file
location), so a restart from a checkpointed offset reads exactly the same units again:

- an ``append``: the data files it added, each read as of that snapshot (deletes as of it applied);
- the first snapshot of a stream started on a table whose older history was expired
  (``scan_all``): every live file of it;
- ``replace`` (compaction): none: no row changed;
- ``delete`` / ``overwrite``: an error naming the snapshot and the options, unless
  ``skip-delete-snapshots`` / ``skip-overwrite-snapshots`` (none) or the changelog mode;
- changelog mode (``read-changelog``): one unit per snapshot, its changelog.

Admission control: a micro-batch takes whole units, at most ``max-files-per-trigger`` of them and
at most ``max-records-per-trigger`` rows (but always at least one unit, so the stream advances).

Input partitions: the file units of a micro-batch are packed into input partitions the way Spark
packs its own file sources (:func:`group_units`): each partition holds up to
``min(split size, max(open-file cost, batch bytes / min-partitions))`` bytes, a file costing at
least the open-file cost. The split size and open-file cost are Iceberg's table properties
``read.split.target-size`` (128 MB) and ``read.split.open-file-cost`` (4 MB), or the options
``split-size`` / ``file-open-cost``; ``min-partitions`` defaults to the driver's CPU count (the
parallelism of a ``local[*]`` session). Every partition is a Spark task with a Python worker round
trip, so a micro-batch of many small files read one file per task spent most of its time between
tasks. Partitions never change offsets: a replayed micro-batch reads the same units.
Options also take Iceberg Java's names (``streaming-skip-delete-snapshots``,
``streaming-max-files-per-micro-batch``, ...).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.errors import NotFound, ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.scan.incremental import added_data_tasks, ancestors
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata

END = 2**31 - 1
"""``position`` of an offset that has consumed every unit of its snapshot."""
BEFORE_EVERYTHING = -1
"""``snapshot_id`` of an offset before the first snapshot of the branch."""

_ALIASES = {
    "skip-delete-snapshots": ("streaming-skip-delete-snapshots",),
    "skip-overwrite-snapshots": ("streaming-skip-overwrite-snapshots",),
    "max-files-per-trigger": ("streaming-max-files-per-micro-batch", "maxfilespertrigger"),
    "max-records-per-trigger": ("streaming-max-rows-per-micro-batch",),
    "stream-from-timestamp": (),
    "start-snapshot-id": ("streaming-start-snapshot-id",),
    "starting-offsets": ("startingoffsets",),
    "read-changelog": (),
    "min-partitions": ("minpartitions",),
    "split-size": (),
    "file-open-cost": (),
}
SPLIT_SIZE_PROPERTY = "read.split.target-size"
OPEN_FILE_COST_PROPERTY = "read.split.open-file-cost"
DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024


def _option(opts: dict[str, str], key: str) -> str | None:
    for name in (key, *_ALIASES.get(key, ())):
        value = opts.get(name)
        if value not in (None, ""):
            return value
    return None


def _flag(opts: dict[str, str], key: str) -> bool:
    value = _option(opts, key)
    return value is not None and value.strip().lower() in ("true", "1", "yes")


def _int(opts: dict[str, str], key: str) -> int | None:
    value = _option(opts, key)
    if value is None:
        return None
    number = int(value)
    if number <= 0:
        raise ValidationError(f"option {key} must be positive, got {value}")
    return number


@dataclass(frozen=True)
class StreamOptions:
    """The streaming read options, parsed (keys lower case, values strings, as Spark hands them)."""

    start: str = "earliest"
    start_snapshot_id: int | None = None
    start_timestamp_ms: int | None = None
    max_files: int | None = None
    max_records: int | None = None
    skip_delete: bool = False
    skip_overwrite: bool = False
    changelog: bool = False
    branch: str = MAIN_BRANCH
    min_partitions: int | None = None
    split_size: int | None = None
    open_file_cost: int | None = None

    @classmethod
    def parse(cls, opts: dict[str, str]) -> StreamOptions:
        """Options from a data source's option map."""
        start = (_option(opts, "starting-offsets") or "earliest").strip().lower()
        if start not in ("earliest", "latest"):
            raise ValidationError(f"starting-offsets must be earliest or latest, got {start!r}")
        sid = _option(opts, "start-snapshot-id")
        ts = _option(opts, "stream-from-timestamp")
        if sid is not None and ts is not None:
            raise ValidationError("give either start-snapshot-id or stream-from-timestamp, not both")
        return cls(
            start=start,
            start_snapshot_id=int(sid) if sid is not None else None,
            start_timestamp_ms=int(ts) if ts is not None else None,
            max_files=_int(opts, "max-files-per-trigger"),
            max_records=_int(opts, "max-records-per-trigger"),
            skip_delete=_flag(opts, "skip-delete-snapshots"),
            skip_overwrite=_flag(opts, "skip-overwrite-snapshots"),
            changelog=_flag(opts, "read-changelog"),
            branch=opts.get("branch") or MAIN_BRANCH,
            min_partitions=_int(opts, "min-partitions"),
            split_size=_int(opts, "split-size"),
            open_file_cost=_int(opts, "file-open-cost"),
        )

    def packing(self, table_properties: dict[str, str]) -> tuple[int, int, int]:
        """(min partitions, split size, open-file cost): the options, else the table's properties."""
        split = self.split_size or int(table_properties.get(SPLIT_SIZE_PROPERTY, DEFAULT_SPLIT_SIZE))
        cost = self.open_file_cost or int(
            table_properties.get(OPEN_FILE_COST_PROPERTY, DEFAULT_OPEN_FILE_COST)
        )
        return self.min_partitions or os.cpu_count() or 1, split, cost


@dataclass(frozen=True)
class Unit:
    """One input partition of a micro-batch: a file to read, or one snapshot's changelog."""

    snapshot_id: int
    records: int
    task: FileScanTask | None = None
    size_bytes: int = 0
    """The bytes the unit reads (its data file and delete files)."""


def group_units(
    units: Sequence[Unit], min_partitions: int, split_size: int, open_file_cost: int
) -> list[list[Unit]]:
    """The units of one micro-batch packed into input partitions, as Spark packs file splits.

    A unit weighs its bytes, at least ``open_file_cost``; a partition holds at most
    ``min(split_size, max(open_file_cost, total / min_partitions))`` (but always one unit). Units
    are taken heaviest first and a partition is closed when the next unit would overflow it
    (Spark's ``FilePartition.getFilePartitions``), so the result is the same for the same units.
    """
    weights = [max(u.size_bytes, open_file_cost) for u in units]
    limit = min(split_size, max(open_file_cost, sum(weights) // max(min_partitions, 1)))
    order = sorted(range(len(units)), key=lambda i: (-weights[i], i))
    groups: list[list[Unit]] = []
    current: list[Unit] = []
    filled = 0
    for i in order:
        if current and filled + weights[i] > limit:
            groups.append(current)
            current, filled = [], 0
        current.append(units[i])
        filled += weights[i]
    if current:
        groups.append(current)
    return groups


def group_payload(group: Sequence[Unit]) -> bytes:
    """What an input partition of file units carries to the executor."""
    return pickle.dumps([(u.snapshot_id, u.task) for u in group])


def offset(snapshot_id: int, position: int, scan_all: bool = False) -> dict[str, Any]:
    """An offset as Spark stores it (JSON)."""
    return {"snapshot_id": snapshot_id, "position": position, "scan_all": scan_all}


@dataclass
class StreamPlanner:
    """Offsets and units of one streaming read (the table is reloaded on every call)."""

    load_metadata: Callable[[], tuple[Any, TableMetadata]]
    options: StreamOptions
    schema: Schema
    row_filter: Expression = field(default_factory=AlwaysTrue)
    target_snapshot_id: int | None = None
    _units: dict[tuple[int, bool], list[Unit]] = field(default_factory=dict)

    # ---- offsets -------------------------------------------------------------------------------
    def freeze_head(self) -> None:
        """Trigger.AvailableNow: never read past the snapshot that is the head now."""
        _, md = self.load_metadata()
        head = md.snapshot_for_ref(self.options.branch)
        self.target_snapshot_id = head.snapshot_id if head is not None else None

    def _head(self, md: TableMetadata) -> Snapshot | None:
        if self.target_snapshot_id is not None:
            return md.snapshot_by_id(self.target_snapshot_id)
        return md.snapshot_for_ref(self.options.branch)

    def initial_offset(self) -> dict[str, Any]:
        """Where a new query starts (a restarted query continues from its checkpoint instead)."""
        _, md = self.load_metadata()
        head = self._head(md)
        opts = self.options
        if head is None:
            if opts.start_snapshot_id is not None:
                raise ValidationError(f"start-snapshot-id {opts.start_snapshot_id}: the table is empty")
            return offset(BEFORE_EVERYTHING, END)
        chain = ancestors(md, head)  # newest first
        if opts.start_snapshot_id is not None:
            if all(s.snapshot_id != opts.start_snapshot_id for s in chain):
                raise ValidationError(
                    f"start-snapshot-id {opts.start_snapshot_id} is not an ancestor of the head of "
                    f"{opts.branch!r} ({head.snapshot_id})"
                )
            return offset(opts.start_snapshot_id, END)  # exclusive, like a batch incremental read
        if opts.start_timestamp_ms is not None:
            older = [s for s in chain if s.timestamp_ms < opts.start_timestamp_ms]
            if older:
                return offset(older[0].snapshot_id, END)
        elif opts.start == "latest":
            return offset(head.snapshot_id, END)
        oldest = chain[-1]
        return offset(oldest.snapshot_id, 0, scan_all=oldest.parent_snapshot_id is not None)

    def _after(
        self, md: TableMetadata, head: Snapshot, start: dict[str, Any]
    ) -> list[tuple[Snapshot, int, bool]]:
        """(snapshot, first unit position, scan_all) for every snapshot from ``start`` to ``head``."""
        chain = list(reversed(ancestors(md, head)))
        sid = start["snapshot_id"]
        if sid == BEFORE_EVERYTHING:
            first = chain[0]
            return [(first, 0, first.parent_snapshot_id is not None)] + [(s, 0, False) for s in chain[1:]]
        for i, snap in enumerate(chain):
            if snap.snapshot_id == sid:
                head_part = [(snap, start["position"], bool(start.get("scan_all")))]
                return head_part + [(s, 0, False) for s in chain[i + 1 :]]
        raise NotFound(
            f"snapshot {sid} of the stream's offset is no longer an ancestor of {self.options.branch!r} "
            "(expired or rolled back): restart the query from a new checkpoint"
        )

    def latest_offset(self, start: dict[str, Any], limited: bool) -> dict[str, Any]:
        """The end of the next micro-batch from ``start`` (``start`` itself when nothing is new)."""
        io, md = self.load_metadata()
        head = self._head(md)
        if head is None:
            return start
        max_files = self.options.max_files if limited else None
        max_records = self.options.max_records if limited else None
        files = records = 0
        end = start
        for snap, begin, scan_all in self._after(md, head, start):
            units = self.units(io, md, snap, scan_all)
            for i in range(begin, len(units)):
                full = (max_files is not None and files >= max_files) or (
                    max_records is not None and files > 0 and records + units[i].records > max_records
                )
                if full:
                    return end if i == 0 else offset(snap.snapshot_id, i, scan_all)
                files += 1
                records += units[i].records
            end = offset(snap.snapshot_id, END, scan_all)
        return end

    def units_between(self, start: dict[str, Any], end: dict[str, Any]) -> list[Unit]:
        """The units after ``start`` up to ``end`` (empty when they are equal)."""
        if start == end:
            return []
        io, md = self.load_metadata()
        head = md.snapshot_by_id(end["snapshot_id"])
        out: list[Unit] = []
        for snap, begin, scan_all in self._after(md, head, start):
            units = self.units(io, md, snap, scan_all)
            stop = end["position"] if snap.snapshot_id == end["snapshot_id"] else len(units)
            out += units[begin : min(stop, len(units))]
        return out

    # ---- units ---------------------------------------------------------------------------------
    def units(self, io: Any, md: TableMetadata, snap: Snapshot, scan_all: bool) -> list[Unit]:
        """The units of one snapshot, in their fixed order (remembered: snapshots never change)."""
        key = (snap.snapshot_id, scan_all)
        cached = self._units.get(key)
        if cached is None:
            cached = self._plan_units(io, md, snap, scan_all)
            self._units[key] = cached
        return cached

    def _plan_units(self, io: Any, md: TableMetadata, snap: Snapshot, scan_all: bool) -> list[Unit]:
        op = snap.operation
        sid = snap.snapshot_id
        if op == Operation.REPLACE.value and not scan_all:
            return []
        if self.options.changelog and not scan_all:
            records = int(snap.summary.get("added-records", 0)) + int(snap.summary.get("deleted-records", 0))
            return [Unit(sid, records)]
        if not scan_all and op != Operation.APPEND.value:
            self._check_skippable(snap)
            return []
        tasks = plan_files(io, md, snap, self.row_filter, schema=self.schema)
        if not scan_all:
            tasks = added_data_tasks(tasks, snap)
        tasks.sort(key=lambda t: t.file_path)
        return [Unit(sid, t.data_file.record_count, t, task_bytes(t)) for t in tasks]

    def _check_skippable(self, snap: Snapshot) -> None:
        op = snap.operation
        if op == Operation.DELETE.value and self.options.skip_delete:
            return
        if op == Operation.OVERWRITE.value and self.options.skip_overwrite:
            return
        option = "skip-delete-snapshots" if op == Operation.DELETE.value else "skip-overwrite-snapshots"
        raise ValidationError(
            f"streaming read found snapshot {snap.snapshot_id} with operation {op!r}, which changes or "
            f"removes rows an append-only stream has already emitted: set .option('{option}', 'true') "
            "to ignore such snapshots, or .option('read-changelog', 'true') to stream the changelog"
        )


def task_bytes(task: FileScanTask) -> int:
    """The bytes a task reads: its data file and its delete files."""
    return task.data_file.file_size_in_bytes + sum(d.delete_file.file_size_in_bytes for d in task.deletes)
