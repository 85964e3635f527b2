"""Snapshot producers: the actions that add a snapshot (append, overwrite, row deltas).

Each producer describes *what* changes (files added, live entries removed) and hands that to
the write seam, which decides *how* the metadata tree changes for the table's format version.
Producers are re-applied on every commit attempt against the freshly loaded metadata, so all
validation happens inside ``apply``. Row-level producers (``OverwriteFiles``, ``RowDelta``) check
what the commits made since their base snapshot did with :mod:`icefloe.txn.validation`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from icefloe.errors import CommitConflict, ValidationError
from icefloe.expressions.ast import Expression
from icefloe.spec.content import ColumnFile, DataFile, DeletionVectorRef, FileContent, ManifestEntry
from icefloe.spec.ref_names import check_ref_name
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate
from icefloe.tree.changes import StoredAdditions, TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.summary import check_snapshot_properties
from icefloe.tree.write_seam import write_snapshot_tree
from icefloe.txn import validation
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
    # the new snapshot's id (None: a random one); a catalog service re-applying a client's append keeps its id
    snapshot_id: int | None = None

    operation: Operation = Operation.APPEND
    merge_manifests: bool = False

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """What this producer adds and removes, validated against ``current``."""
        raise NotImplementedError

    def committed_files(self) -> list[str]:
        """Data files written on the user's behalf (deleted if the commit finally fails)."""
        return list(self.owned_files)

    def write_tree(self, ctx: AttemptContext, request: TreeWriteRequest) -> TreeResult:
        """Hand the change to the write seam (subclasses may translate its errors)."""
        return write_snapshot_tree(request)

    def check_written(self, result: TreeResult) -> None:
        """Validate what the write seam did (its files are already registered for cleanup)."""

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Build the new snapshot and return AddSnapshot + SetSnapshotRef."""
        check_snapshot_properties(self.snapshot_properties)
        if self.branch not in current.refs:  # the commit creates the branch
            check_ref_name(self.branch, "branch")
        parent = branch_head(current, self.branch)
        change = self.change(ctx, current, parent)
        snapshot_id = self.snapshot_id or new_snapshot_id()
        sequence_number = current.last_sequence_number + 1 if current.format_version >= 2 else 0
        request = TreeWriteRequest(
            io=ctx.io,
            metadata=current,
            parent=parent,
            change=change,
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            location_provider=LocationProvider(current),
            merge=self.merge_manifests,
        )
        result = self.write_tree(ctx, request)
        ctx.written_files.extend(result.written_files)
        self.check_written(result)
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
    # v4: the files' rows as a client's root stored them (a server rebasing the client's append)
    stored_additions: StoredAdditions | None = None

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Only additions: nothing to validate against concurrent commits."""
        _check_specs(current, self.files)
        return TreeChange(added_data_files=list(self.files), stored_additions=self.stored_additions)


@dataclass
class RowLevelProducer(SnapshotProducer):
    """What copy-on-write and merge-on-read commits share: the base and the conflict-validation inputs.

    ``base_snapshot_id`` is the branch head the change was planned from (None: an empty branch, so
    the whole history counts as concurrent); ``conflict_filter`` the rows the operation read;
    ``isolation_level`` SERIALIZABLE also fails on concurrently added data matching the filter.
    """

    base_snapshot_id: int | None = None
    conflict_filter: Expression | None = None
    isolation_level: IsolationLevel = IsolationLevel.SERIALIZABLE
    case_sensitive: bool = True

    def _checks_new_data(self) -> bool:
        return self.isolation_level is IsolationLevel.SERIALIZABLE and self.conflict_filter is not None

    def _history(
        self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None
    ) -> validation.ConcurrentHistory:
        """The concurrent snapshots' changes (nothing read when the head is still the base)."""
        own = {s.snapshot_id for s in current.snapshots} - {s.snapshot_id for s in ctx.base.snapshots}
        snapshots = validation.concurrent_snapshots(
            current, parent, self.base_snapshot_id, self.branch, skip=own
        )
        if not snapshots:
            return validation.ConcurrentHistory()
        return validation.read_concurrent_history(
            ctx.io, current, snapshots, include_appends=self._checks_new_data()
        )

    def _check_new_data(
        self, history: validation.ConcurrentHistory, current: TableMetadata, action: str
    ) -> None:
        if self._checks_new_data() and self.conflict_filter is not None:
            validation.check_no_new_matching_data(
                history, current, self.conflict_filter, action, self.case_sensitive
            )

    def _action(self) -> str:
        base = "none" if self.base_snapshot_id is None else str(self.base_snapshot_id)
        return f"cannot commit {self.operation.value} (planned from snapshot {base})"


@dataclass
class OverwriteFiles(RowLevelProducer):
    """Remove some live files and add others in one snapshot (copy-on-write overwrite/delete).

    ``removed`` lists the entries that were live in ``base_snapshot_id``. At commit time, whatever
    the isolation level: each must still be live, and no concurrent commit may have added a delete
    (position delete, DV, v4 DV change, equality delete in scope) that applies to a removed data
    file, since rewriting it would bring those rows back. Under serializable isolation with a
    ``conflict_filter``, no concurrent commit may have added data that may match the filter.
    """

    operation: Operation = Operation.OVERWRITE
    removed: list[ManifestEntry] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Validate against the commits made since the base; describe the swap of files."""
        _check_specs(current, self.added)
        if self.removed or self._checks_new_data():
            history = self._history(ctx, current, parent)
            if not history.is_empty:
                action = self._action()
                removed_data = [e.data_file for e in self.removed if e.data_file.content == FileContent.DATA]
                validation.check_still_live(history, (e.data_file.content_key for e in self.removed), action)
                validation.check_no_new_deletes(
                    history, (validation.Target.of(f) for f in removed_data), action
                )
                validation.check_no_new_equality_deletes(history, current, removed_data, action)
                self._check_new_data(history, current, action)
        return TreeChange(
            added_data_files=list(self.added),
            removed_entries=list(self.removed),
            fail_missing_removals=False,
        )

    def check_written(self, result: TreeResult) -> None:
        """A removed file the seam did not find live was removed concurrently (unrecorded in v4)."""
        _check_all_removed(self.removed, result, self._action(), self.branch)


@dataclass
class RowDelta(RowLevelProducer):
    """Add data files and row-level delete files (and retire superseded delete files) in one snapshot.

    Operation per Iceberg: ``append`` when only data is added, ``delete`` when only deletes are,
    else ``overwrite``. At commit time, whatever the isolation level: every data file a new delete
    or DV references must still be live, no concurrent commit may have added a delete that applies
    to it (a DV / position delete naming it, a v4 colocated DV change, or an equality delete in
    scope: an update would otherwise re-insert a row that commit deleted), and retired delete files
    must still be live. Under serializable isolation with a ``conflict_filter``, no concurrent
    commit may have added data that may match the filter.
    """

    added_data: list[DataFile] = field(default_factory=list)
    added_deletes: list[DataFile] = field(default_factory=list)
    removed_deletes: list[ManifestEntry] = field(default_factory=list)
    # v4: new colocated deletion vectors by data file path (merged with the file's earlier deletes)
    added_dvs: dict[str, DeletionVectorRef] = field(default_factory=dict)
    # v4: a new column file for each of these live data files (column updates)
    added_column_files: dict[str, ColumnFile] = field(default_factory=dict)
    # the data files the new deletes apply to, as planned (others are looked up when needed)
    target_files: list[DataFile] = field(default_factory=list)
    _targets: list[validation.Target] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        has_deletes = bool(self.added_deletes or self.added_dvs)
        if self.added_column_files or (has_deletes and self.added_data):
            self.operation = Operation.OVERWRITE
        elif has_deletes or self.removed_deletes:
            self.operation = Operation.DELETE
        else:
            self.operation = Operation.APPEND

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Validate against the commits made since the base; describe the added and retired files."""
        _check_specs(current, [*self.added_data, *self.added_deletes])
        validation.check_equality_deletes_miss_column_files(ctx.io, current, parent, self.added_deletes)
        targets = self.delete_targets(ctx)
        if targets or self.removed_deletes or self._checks_new_data():
            history = self._history(ctx, current, parent)
            if not history.is_empty:
                action = self._action()
                retired = [e.data_file.content_key for e in self.removed_deletes]
                validation.check_still_live(history, ((t.path, -1) for t in targets), action)
                validation.check_no_new_deletes(history, targets, action, ignore=retired)
                if targets and validation.has_new_equality_deletes(history):
                    files = self._target_data_files(ctx, current, targets)
                    validation.check_no_new_equality_deletes(history, current, files, action)
                validation.check_still_live(history, retired, action)
                self._check_new_data(history, current, action)
        return TreeChange(
            added_data_files=list(self.added_data),
            added_delete_files=list(self.added_deletes),
            removed_entries=list(self.removed_deletes),
            added_dvs=dict(self.added_dvs),
            added_column_files=dict(self.added_column_files),
            fail_missing_removals=False,
        )

    def delete_targets(self, ctx: AttemptContext) -> list[validation.Target]:
        """The existing data files the new deletes apply to (computed once, kept across attempts)."""
        if self._targets is None:
            added = {f.file_path for f in self.added_data}
            found: dict[str, validation.Target] = {}
            for f in self.added_deletes:
                if f.content != FileContent.POSITION_DELETES:
                    continue
                for path in validation.referenced_data_paths(ctx.io, f):
                    found.setdefault(path, validation.Target(path, f.spec_id, tuple(f.partition)))
            for path in (*self.added_dvs, *self.added_column_files):
                found.setdefault(path, validation.Target(path))
            self._targets = [t for p, t in found.items() if p not in added]
        return self._targets

    def _target_data_files(
        self, ctx: AttemptContext, current: TableMetadata, targets: list[validation.Target]
    ) -> list[DataFile]:
        """The targets as data files (partition and bounds): as planned, else from the base snapshot."""
        known = {f.file_path: f for f in self.target_files}
        missing = [t.path for t in targets if t.path not in known]
        if missing and self.base_snapshot_id is not None:
            base = current.snapshot_by_id(self.base_snapshot_id)
            known.update(validation.live_data_files(ctx.io, current, base, missing))
        return [known[t.path] for t in targets if t.path in known]

    def write_tree(self, ctx: AttemptContext, request: TreeWriteRequest) -> TreeResult:
        """The v4 seam refuses DVs for files that are not live: that is a concurrent removal."""
        try:
            return super().write_tree(ctx, request)
        except ValidationError as exc:
            if not self.added_dvs and not self.added_column_files:
                raise
            added = {f.file_path for f in self.added_data}
            wanted = [p for p in (*self.added_dvs, *self.added_column_files) if p not in added]
            missing = validation.missing_live_data_files(ctx.io, request.metadata, request.parent, wanted)
            if not missing:
                raise
            raise CommitConflict(
                f"{self._action()}: data file {missing[0]} is no longer live on branch {self.branch!r} "
                "(removed by a concurrent commit)",
                retryable=False,
            ) from exc

    def check_written(self, result: TreeResult) -> None:
        """A retired delete file the seam did not find live was removed concurrently."""
        _check_all_removed(self.removed_deletes, result, self._action(), self.branch)


def _check_specs(md: TableMetadata, files: Iterable[DataFile]) -> None:
    specs = md.specs_by_id()
    for f in files:
        if f.spec_id not in specs:
            raise ValidationError(f"data file {f.file_path} uses unknown partition spec {f.spec_id}")


def _check_all_removed(wanted: list[ManifestEntry], result: TreeResult, action: str, branch: str) -> None:
    found = {e.data_file.content_key for e in result.removed_entries}
    for e in wanted:
        if e.data_file.content_key not in found:
            kind = "data file" if e.data_file.content == FileContent.DATA else "delete file"
            raise CommitConflict(
                f"{action}: {kind} {e.data_file.file_path} is no longer live on branch {branch!r} "
                "(removed by a concurrent commit)",
                retryable=False,
            )
