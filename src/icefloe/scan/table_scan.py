"""TableScan: the user-facing description of a read (snapshot, filter, columns) and its results.

A scan reads one snapshot (``snapshot_id`` / ``ref`` / ``as_of_timestamp_ms``, default the
current one) or, when a start is named (``start_snapshot_id`` / ``start_ref`` /
``start_timestamp_ms``), the rows appended in the range ``(start, end]`` where the end is the
snapshot the scan would otherwise read (:mod:`icefloe.scan.incremental`). ``changelog()`` turns
a scan into a :class:`~icefloe.scan.changelog.ChangelogScan` of the same range.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from icefloe.errors import (
    CorruptMetadata,
    IcefloeError,
    NotFound,
    UnsupportedLocation,
    ValidationError,
    reading,
)
from icefloe.expressions.ast import AlwaysTrue, And, Expression
from icefloe.expressions.parser import to_expression
from icefloe.io.fileio import FileIO
from icefloe.scan.batch_reader import DEFAULT_BATCH_SIZE, DEFAULT_PREFETCH, record_batch_reader
from icefloe.scan.changelog import ChangelogScan
from icefloe.scan.error_context import with_scan_context
from icefloe.scan.incremental import SnapshotRange, plan_appended, resolve_range
from icefloe.scan.planner import PlanStats, plan_files
from icefloe.scan.reader import METADATA_COLUMNS, ReadRequest, read_task, read_tasks
from icefloe.scan.shared_deletes import STREAM_MAX_HELD_BYTES, SharedDeletes
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import RefType, Snapshot
from icefloe.spec.table_metadata import TableMetadata


@dataclass(frozen=True)
class TableScan:
    """An immutable scan description; ``to_arrow()`` plans and reads it."""

    io: FileIO
    metadata: TableMetadata
    row_filter: Expression = field(default_factory=AlwaysTrue)
    selected_fields: tuple[str, ...] = ("*",)
    snapshot_id: int | None = None
    ref: str | None = None
    as_of_timestamp_ms: int | None = None
    case_sensitive: bool = True
    limit: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    metadata_location: str | None = None
    """The metadata file the scan's metadata came from (named when the metadata cannot be scanned)."""
    start_snapshot_id: int | None = None
    start_ref: str | None = None
    start_timestamp_ms: int | None = None

    @contextmanager
    def _boundary(self) -> Iterator[None]:
        """Only IcefloeErrors leave a scan: anything else is metadata that parses but cannot be used.

        A CorruptMetadata or NotFound from inside the tree also says which snapshot, metadata file
        and manifest list (or v4 root) led to the file it names: a bad path or count in a parent
        shows up as a missing or inconsistent child, and the parent must be findable from the message.
        """
        where = self.metadata_location or f"metadata of the table at {self.metadata.location}"
        try:
            with reading(where, "scan the table", snapshot_id=self.snapshot_id):
                yield
        except (CorruptMetadata, NotFound, UnsupportedLocation) as exc:
            if getattr(exc, "scan_context", False):
                raise
            try:
                snap = self.snapshot()
            except IcefloeError:  # the snapshot itself is what the metadata file gets wrong
                snap = None
            new = with_scan_context(exc, self.io, self.metadata, snap, where)
            new.scan_context = True  # type: ignore[attr-defined]
            raise new from exc

    def filter(self, expr: Expression | str) -> TableScan:
        """A scan with an additional row filter (AND-ed)."""
        return replace(self, row_filter=And(self.row_filter, to_expression(expr)))

    def select(self, *names: str) -> TableScan:
        """A scan of only these columns (metadata columns such as ``_row_id`` allowed)."""
        return replace(self, selected_fields=tuple(names))

    def use_ref(self, name: str) -> TableScan:
        """A scan of a branch or tag."""
        return replace(self, ref=name, snapshot_id=None)

    @property
    def is_incremental(self) -> bool:
        """Whether the scan reads the rows appended after a start snapshot rather than a whole snapshot."""
        return any(v is not None for v in (self.start_snapshot_id, self.start_ref, self.start_timestamp_ms))

    def from_snapshot(self, snapshot_id: int) -> TableScan:
        """An incremental scan: rows appended after ``snapshot_id`` (exclusive) up to this scan's end."""
        return replace(self, start_snapshot_id=snapshot_id, start_ref=None, start_timestamp_ms=None)

    def snapshot_range(self) -> SnapshotRange:
        """The range ``(start, end]`` of an incremental scan (every ancestor of the end when no start)."""
        return resolve_range(
            self.metadata,
            self.snapshot(),
            start_snapshot_id=self.start_snapshot_id,
            start_ref=self.start_ref,
            start_timestamp_ms=self.start_timestamp_ms,
        )

    def snapshot(self) -> Snapshot | None:
        """The snapshot this scan reads (the end of an incremental scan; None for an empty table)."""
        md = self.metadata
        if self.snapshot_id is not None:
            return md.snapshot_by_id(self.snapshot_id)
        if self.ref is not None:
            return md.snapshot_for_ref(self.ref)
        if self.as_of_timestamp_ms is not None:
            return md.snapshot_as_of(self.as_of_timestamp_ms)
        return md.current_snapshot()

    def schema(self) -> Schema:
        """Schema used to read: a snapshot id or tag reads with the snapshot's schema (Java's rule)."""
        md = self.metadata
        snap = self.snapshot()
        time_travel = self.snapshot_id is not None or self.as_of_timestamp_ms is not None
        if self.ref is not None and self.ref in md.refs and md.refs[self.ref].ref_type is RefType.TAG:
            time_travel = True
        if time_travel and snap is not None and snap.schema_id is not None:
            return md.schema_by_id(snap.schema_id)
        return md.schema()

    def projection(self) -> tuple[Schema, tuple[str, ...]]:
        """Projected table columns and requested metadata columns."""
        schema = self.schema()
        if "*" in self.selected_fields:
            extra = tuple(n for n in self.selected_fields if n in METADATA_COLUMNS)
            return schema, extra
        names = [n for n in self.selected_fields if n not in METADATA_COLUMNS]
        meta = tuple(n for n in self.selected_fields if n in METADATA_COLUMNS)
        if (
            meta
            and self.metadata.format_version < 3
            and set(meta) & {"_row_id", "_last_updated_sequence_number"}
        ):
            raise ValidationError("_row_id and _last_updated_sequence_number need format version 3 or later")
        return schema.select(names, self.case_sensitive), meta

    def plan_files(self, stats: PlanStats | None = None) -> list[FileScanTask]:
        """The files to read, with deletes and residual filters."""
        with self._boundary(), gc_paused():
            if self.is_incremental:
                return plan_appended(
                    self.io,
                    self.metadata,
                    self.snapshot_range().snapshots,
                    self.row_filter,
                    schema=self.schema(),
                    case_sensitive=self.case_sensitive,
                )
            return plan_files(
                self.io,
                self.metadata,
                self.snapshot(),
                self.row_filter,
                schema=self.schema(),
                case_sensitive=self.case_sensitive,
                stats=stats,
            )

    def read_request(self) -> ReadRequest:
        """What every task of this scan produces (projected columns, metadata columns, filter)."""
        projected, meta = self.projection()
        return ReadRequest(
            self.schema(), projected, meta, self.row_filter, self.case_sensitive, self.metadata.specs_by_id()
        )

    def _output_columns(self, available: list[str]) -> list[str]:
        if "*" in self.selected_fields:
            return available
        return _resolve_order(self.selected_fields, available, self.case_sensitive)

    def to_arrow(self) -> pa.Table:
        """Plan and read the scan into one Arrow table, columns in the order selected."""
        return self.read_planned(self.plan_files())

    def read_planned(self, tasks: Sequence[FileScanTask]) -> pa.Table:
        """Read tasks this scan planned (``plan_files``) into one Arrow table: the second half of
        ``to_arrow``, for a caller that already holds the plan."""
        with self._boundary():
            table = read_tasks(self.io, list(tasks), self.read_request(), limit=self.limit)
        return table.select(self._output_columns(table.column_names))

    def to_arrow_batch_reader(
        self, batch_size: int = DEFAULT_BATCH_SIZE, prefetch: int = DEFAULT_PREFETCH
    ) -> pa.RecordBatchReader:
        """Plan the scan and stream its rows file by file (at most ``prefetch + 1`` files in memory).

        A delete file several tasks use is read once and kept until its last task is read, up to
        :data:`STREAM_MAX_HELD_BYTES` at once (``scan.shared_deletes``).
        """
        request = self.read_request()
        full = request.output_schema()
        columns = self._output_columns(full.names)
        schema = pa.schema([full.field(name) for name in columns])
        io = self.io
        tasks = self.plan_files()
        shared = SharedDeletes(io, tasks, max_held_bytes=STREAM_MAX_HELD_BYTES)

        def read(task: FileScanTask) -> pa.Table:
            return read_task(io, task, request, shared_deletes=shared).select(columns)

        return record_batch_reader(
            schema, tasks, read, batch_size=batch_size, prefetch=prefetch, limit=self.limit
        )

    def changelog(
        self,
        *,
        compute_updates: bool | None = None,
        identifier_columns: Sequence[str] | None = None,
        net_changes: bool = False,
    ) -> ChangelogScan:
        """The rows inserted, deleted and updated in this scan's range (see :mod:`icefloe.scan.changelog`)."""
        return ChangelogScan(
            self.io,
            self.metadata,
            self.snapshot_range(),
            row_filter=self.row_filter,
            selected_fields=self.selected_fields,
            case_sensitive=self.case_sensitive,
            compute_updates=compute_updates,
            identifier_columns=tuple(identifier_columns) if identifier_columns is not None else None,
            net_changes=net_changes,
            schema=self.schema(),
        )

    def count(self) -> int:
        """Number of rows the scan returns (from metadata alone when no file needs reading)."""
        tasks = self.plan_files()
        if all(not t.deletes and isinstance(t.residual, AlwaysTrue) for t in tasks):
            total = sum(t.data_file.record_count for t in tasks)
            return total if self.limit is None else min(total, self.limit)
        return self.select(*self.selected_fields).to_arrow().num_rows


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while planning builds millions of acyclic objects.

    Measured: a third of a 1M-file plan went to generation scans that could never free anything.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _resolve_order(order: Sequence[str], available: list[str], case_sensitive: bool) -> list[str]:
    """Output columns in the order the user selected them (nested picks keep their top column)."""
    lookup = {n if case_sensitive else n.lower(): n for n in available}
    picked: list[str] = []
    for name in order:
        top = name.split(".")[0]
        key = top if case_sensitive else top.lower()
        if key in lookup and lookup[key] not in picked:
            picked.append(lookup[key])
    return picked or available
