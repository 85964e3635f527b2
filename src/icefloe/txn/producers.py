"""Snapshot producers: the actions that add a snapshot (append, overwrite, delete files).

Each producer describes *what* changes (files added, live entries removed) and hands that to
the write seam, which decides *how* the metadata tree changes for the table's format version.
Producers are re-applied on every commit attempt against the freshly loaded metadata, so all
validation happens inside ``apply``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from icefloe.errors import CommitConflict, NotFound, ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator
from icefloe.expressions.projection import strict_projection
from icefloe.spec.content import DataFile, DeletionVectorRef, FileContent, ManifestEntry
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import live_entries
from icefloe.tree.write_seam import TreeChange, write_snapshot_tree
from icefloe.txn.isolation import IsolationLevel
from icefloe.txn.transaction import AttemptContext


def new_snapshot_id() -> int:
    """A random positive 63-bit snapshot id."""
    return uuid.uuid4().int & ((1 << 63) - 1) or 1


def branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    """The snapshot a branch points at; a branch that does not exist yet starts from main."""
    if branch in md.refs:
        ref = md.refs[branch]
        if ref.ref_type is not RefType.BRANCH:
            raise ValidationError(f"{branch!r} is a tag; commits go to branches")
        return md.snapshot_by_id(ref.snapshot_id)
    return md.current_snapshot()


@dataclass
class SnapshotProducer:
    """Common skeleton: pick ids, let the subclass describe the change, write the tree."""

    branch: str = MAIN_BRANCH
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    owned_files: list[str] = field(default_factory=list)

    operation: Operation = Operation.APPEND
    merge_manifests: bool = False

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """What this producer adds and removes, validated against ``current``."""
        raise NotImplementedError

    def committed_files(self) -> list[str]:
        """Data files written on the user's behalf (deleted if the commit finally fails)."""
        return list(self.owned_files)

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Build the new snapshot and return AddSnapshot + SetSnapshotRef."""
        parent = branch_head(current, self.branch)
        change = self.change(ctx, current, parent)
        snapshot_id = new_snapshot_id()
        sequence_number = current.last_sequence_number + 1 if current.format_version >= 2 else 0
        result = write_snapshot_tree(
            ctx.io,
            current,
            parent,
            change,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            location_provider=LocationProvider(current),
            merge=self.merge_manifests,
        )
        ctx.written_files.extend(result.written_files)
        timestamp_ms = ctx.now_ms if parent is None else max(ctx.now_ms, parent.timestamp_ms + 1)
        summary = {"operation": self.operation.value, **result.summary, **self.snapshot_properties}
        snapshot = Snapshot(
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=sequence_number,
            timestamp_ms=timestamp_ms,
            manifest_list=result.manifest_list_location,
            root_manifest=result.root_manifest_location,
            summary=summary,
            schema_id=current.current_schema_id,
            first_row_id=result.first_row_id if current.format_version >= 3 else None,
            added_rows=result.added_rows if current.format_version >= 3 else None,
        )
        existing = current.refs.get(self.branch)  # a branch keeps its retention settings
        return [
            AddSnapshot(snapshot),
            SetSnapshotRef(
                self.branch,
                snapshot_id,
                RefType.BRANCH,
                min_snapshots_to_keep=existing.min_snapshots_to_keep if existing else None,
                max_snapshot_age_ms=existing.max_snapshot_age_ms if existing else None,
                max_ref_age_ms=existing.max_ref_age_ms if existing else None,
            ),
        ]


@dataclass
class AppendFiles(SnapshotProducer):
    """Add data files (fast append, or merge append when ``merge_manifests``)."""

    files: list[DataFile] = field(default_factory=list)

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Only additions: nothing to validate against concurrent commits."""
        _check_specs(current, self.files)
        return TreeChange(added_data_files=list(self.files))


@dataclass
class OverwriteFiles(SnapshotProducer):
    """Remove some live files and add others in one snapshot (copy-on-write overwrite/delete).

    ``removed`` lists the entries that were live in ``base_snapshot_id``; each must still be live
    at commit time, and with ``conflict_filter`` set no concurrent commit may have added data that
    matches it (serializable isolation).
    """

    operation: Operation = Operation.OVERWRITE
    removed: list[ManifestEntry] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    base_snapshot_id: int | None = None
    conflict_filter: Expression | None = None
    isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Validate that removed files are still live and no conflicting data was added."""
        _check_specs(current, self.added)
        if parent is None and self.removed:
            raise CommitConflict("the table was emptied concurrently", retryable=False)
        live = _live_by_path(ctx, current, parent)
        missing = [e.data_file.file_path for e in self.removed if e.data_file.file_path not in live]
        if missing:
            raise CommitConflict(
                f"cannot commit {self.operation.value}: file {missing[0]} was removed by a concurrent commit",
                retryable=False,
            )
        if self.conflict_filter is not None and parent is not None:
            _validate_no_new_matching_data(ctx, current, parent, self.base_snapshot_id, self.conflict_filter)
        return TreeChange(
            added_data_files=list(self.added),
            removed_entries=[live[e.data_file.file_path] for e in self.removed],
        )


@dataclass
class RowDelta(SnapshotProducer):
    """Add data files and row-level delete files (and retire superseded delete files) in one snapshot.

    Operation per Iceberg: ``append`` when only data is added, ``delete`` when only deletes are,
    else ``overwrite``. Every data file a delete references must still be live at commit time.
    """

    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    removed_deletes: list[ManifestEntry] = field(default_factory=list)
    # v4: new colocated deletion vectors by data file path (merged with the file's earlier deletes)
    added_dvs: dict[str, DeletionVectorRef] = field(default_factory=dict)
    # conflict validation: the snapshot the change was computed from, the rows it looked at
    base_snapshot_id: int | None = None
    conflict_filter: Expression | None = None
    isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE

    def __post_init__(self) -> None:
        has_deletes = bool(self.added_deletes or self.added_dvs)
        if has_deletes and self.added_data:
            self.operation = Operation.OVERWRITE
        elif has_deletes or self.removed_deletes:
            self.operation = Operation.DELETE
        else:
            self.operation = Operation.APPEND

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Validate that referenced data files are live and superseded deletes still exist."""
        _check_specs(current, [*self.added_data, *self.added_deletes])
        live = _live_by_path(ctx, current, parent)
        added_paths = {d.file_path for d in self.added_data}
        targets = [f.referenced_data_file for f in self.added_deletes] + list(self.added_dvs)
        for target in targets:
            if target is not None and target not in live and target not in added_paths:
                raise CommitConflict(
                    f"cannot add deletes for {target}: the data file is not live (removed concurrently?)",
                    retryable=False,
                )
        live_deletes = _live_deletes_by_key(ctx, current, parent) if self.removed_deletes else {}
        retired = []
        for e in self.removed_deletes:
            if e.data_file.content_key not in live_deletes:
                raise CommitConflict(
                    f"delete file {e.data_file.file_path} was removed by a concurrent commit", retryable=False
                )
            retired.append(live_deletes[e.data_file.content_key])
        return TreeChange(
            added_data_files=list(self.added_data),
            added_delete_files=list(self.added_deletes),
            removed_entries=retired,
            added_dvs=dict(self.added_dvs),
        )


@dataclass
class DeleteFiles(SnapshotProducer):
    """Remove whole files whose rows all match a filter (metadata-only delete)."""

    operation: Operation = Operation.DELETE
    delete_filter: Expression = field(default_factory=AlwaysTrue)
    case_sensitive: bool = True

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Pick the live files that the filter matches entirely (by partition values)."""
        if parent is None:
            return TreeChange()
        removed = list(
            _files_matching_strictly(ctx, current, parent, self.delete_filter, self.case_sensitive)
        )
        return TreeChange(removed_entries=removed)


def _check_specs(md: TableMetadata, files: Iterable[DataFile]) -> None:
    specs = md.specs_by_id()
    for f in files:
        if f.spec_id not in specs:
            raise ValidationError(f"data file {f.file_path} uses unknown partition spec {f.spec_id}")


def _live_by_path(
    ctx: AttemptContext, md: TableMetadata, parent: Snapshot | None
) -> dict[str, ManifestEntry]:
    """Live data files of the parent by path."""
    if parent is None:
        return {}
    return {
        e.data_file.file_path: e
        for e in live_entries(ctx.io, md, parent)
        if e.data_file.content == FileContent.DATA
    }


def _live_deletes_by_key(
    ctx: AttemptContext, md: TableMetadata, parent: Snapshot | None
) -> dict[tuple[str, int], ManifestEntry]:
    """Live delete files of the parent by content key (DVs share Puffin files)."""
    if parent is None:
        return {}
    return {
        e.data_file.content_key: e
        for e in live_entries(ctx.io, md, parent)
        if e.data_file.content != FileContent.DATA
    }


def _files_matching_strictly(
    ctx: AttemptContext, md: TableMetadata, snapshot: Snapshot, row_filter: Expression, case_sensitive: bool
) -> Iterable[ManifestEntry]:
    schema = md.schema()
    evaluators = {
        spec_id: PartitionEvaluator(
            spec,
            schema,
            strict_projection(schema, spec, case_sensitive)(row_filter),
            case_sensitive,
            projected=True,
        )
        for spec_id, spec in md.specs_by_id().items()
    }
    for entry in live_entries(ctx.io, md, snapshot):
        evaluator = evaluators[entry.data_file.spec_id]
        if evaluator.eval(entry.data_file.partition):
            yield entry


def _validate_no_new_matching_data(
    ctx: AttemptContext,
    md: TableMetadata,
    parent: Snapshot,
    base_snapshot_id: int | None,
    conflict_filter: Expression,
) -> None:
    """Serializable isolation: fail if a commit after the base added data matching the filter."""
    new_snapshot_ids = set()
    snap: Snapshot | None = parent
    while snap is not None and snap.snapshot_id != base_snapshot_id:
        new_snapshot_ids.add(snap.snapshot_id)
        try:
            snap = md.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
        except NotFound:
            snap = None
    if not new_snapshot_ids:
        return
    schema = md.schema()
    metrics = InclusiveMetricsEvaluator(schema, conflict_filter)
    for entry in live_entries(ctx.io, md, parent):
        concurrent = entry.snapshot_id in new_snapshot_ids and entry.data_file.content == FileContent.DATA
        if concurrent and metrics.eval(entry.data_file):
            raise CommitConflict(
                f"a concurrent commit (snapshot {entry.snapshot_id}) added data file "
                f"{entry.data_file.file_path} that matches the overwrite filter {conflict_filter}",
                retryable=False,
            )
