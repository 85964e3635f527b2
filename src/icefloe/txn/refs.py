"""Branches, tags and the current snapshot: the ``ManageSnapshots`` builder (an Action).

The recorded operations are replayed, in order, on the refs of the table's current metadata at every
commit attempt (each one validated as it is recorded, too). The result is turned into the minimal
``SetSnapshotRef`` / ``RemoveSnapshotRef`` updates; moving ``main`` also appends to the snapshot log.

Resolution rules: ``create_branch(name)`` without a snapshot id uses the current snapshot of the
metadata the builder was created from; ``fast_forward`` and ``rollback_*`` resolve refs and ancestry
when the commit is applied (as Iceberg Java does). When a replay fails because the table changed
concurrently, the commit fails with a non-retryable ``CommitConflict``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Self

from icefloe.errors import ValidationError
from icefloe.spec.ref_names import check_ref_name
from icefloe.spec.snapshots import MAIN_BRANCH, RefType, SnapshotRef
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import TableUpdate, ref_updates
from icefloe.txn.schema_evolution import PendingAction
from icefloe.txn.transaction import AttemptContext, replayed_on_fresh_metadata

_Op = Callable[[TableMetadata, dict[str, SnapshotRef]], None]


def ancestor_ids(md: TableMetadata, snapshot_id: int | None) -> Iterator[int]:
    """``snapshot_id`` and its ancestors still in the metadata, newest first."""
    by_id = {s.snapshot_id: s for s in md.snapshots}
    seen: set[int] = set()
    while snapshot_id is not None and snapshot_id in by_id and snapshot_id not in seen:
        seen.add(snapshot_id)
        yield snapshot_id
        snapshot_id = by_id[snapshot_id].parent_snapshot_id


def is_ancestor(md: TableMetadata, ancestor_id: int, snapshot_id: int) -> bool:
    """Whether ``ancestor_id`` is ``snapshot_id`` or one of its ancestors."""
    return any(i == ancestor_id for i in ancestor_ids(md, snapshot_id))


def current_refs(md: TableMetadata) -> dict[str, SnapshotRef]:
    """The table's refs, with ``main`` filled in for old metadata that only has current-snapshot-id."""
    refs = dict(md.refs)
    if MAIN_BRANCH not in refs and md.current_snapshot_id not in (None, -1):
        refs[MAIN_BRANCH] = SnapshotRef(md.current_snapshot_id, RefType.BRANCH)
    return refs


class ManageSnapshots(PendingAction):
    """Record branch/tag changes, rollbacks and current-snapshot changes."""

    def __init__(self, metadata: TableMetadata, *, on_commit: Callable[[Any], None] | None = None) -> None:
        self._md = metadata
        self._on_commit = on_commit
        self._ops: list[_Op] = []

    # ---- branches and tags -----------------------------------------------------------------
    def create_branch(
        self,
        name: str,
        snapshot_id: int | None = None,
        min_snapshots_to_keep: int | None = None,
        max_snapshot_age_ms: int | None = None,
        max_ref_age_ms: int | None = None,
    ) -> Self:
        """Create a branch at a snapshot (default: the current snapshot)."""
        if snapshot_id is None:
            snapshot_id = self._md.current_snapshot_id
            if snapshot_id in (None, -1):
                raise ValidationError(f"cannot create branch {name!r}: the table has no snapshot yet")
        target: int = snapshot_id
        _check_positive("min_snapshots_to_keep", min_snapshots_to_keep)
        _check_positive("max_snapshot_age_ms", max_snapshot_age_ms)
        _check_positive("max_ref_age_ms", max_ref_age_ms)

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            _check_new_name(refs, name)
            _check_snapshot(md, target, f"branch {name!r}")
            refs[name] = SnapshotRef(
                target, RefType.BRANCH, min_snapshots_to_keep, max_snapshot_age_ms, max_ref_age_ms
            )

        return self._record(op)

    def create_tag(self, name: str, snapshot_id: int, max_ref_age_ms: int | None = None) -> Self:
        """Create a tag at a snapshot."""
        _check_positive("max_ref_age_ms", max_ref_age_ms)

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            if name == MAIN_BRANCH:
                raise ValidationError("'main' must be a branch, not a tag")
            _check_new_name(refs, name)
            _check_snapshot(md, snapshot_id, f"tag {name!r}")
            refs[name] = SnapshotRef(snapshot_id, RefType.TAG, max_ref_age_ms=max_ref_age_ms)

        return self._record(op)

    def replace_branch(self, name: str, snapshot_id: int) -> Self:
        """Point an existing branch at any snapshot (retention settings are kept)."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            ref = _existing(refs, name, RefType.BRANCH)
            _check_snapshot(md, snapshot_id, f"branch {name!r}")
            refs[name] = _moved(ref, snapshot_id)

        return self._record(op)

    def replace_tag(self, name: str, snapshot_id: int) -> Self:
        """Point an existing tag at another snapshot."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            ref = _existing(refs, name, RefType.TAG)
            _check_snapshot(md, snapshot_id, f"tag {name!r}")
            refs[name] = _moved(ref, snapshot_id)

        return self._record(op)

    def fast_forward(self, branch: str, to: str) -> Self:
        """Move ``branch`` to the head of ref ``to``; its head must be an ancestor (missing: created)."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            target = refs.get(to)
            if target is None:
                raise ValidationError(f"cannot fast-forward {branch!r}: no branch or tag named {to!r}")
            ref = refs.get(branch)
            if ref is None:
                refs[branch] = SnapshotRef(target.snapshot_id, RefType.BRANCH)
                return
            if ref.ref_type is not RefType.BRANCH:
                raise ValidationError(f"cannot fast-forward {branch!r}: it is a tag, not a branch")
            if not is_ancestor(md, ref.snapshot_id, target.snapshot_id):
                raise ValidationError(
                    f"cannot fast-forward {branch!r} to {to!r}: snapshot {ref.snapshot_id} ({branch}) is not "
                    f"an ancestor of snapshot {target.snapshot_id} ({to})"
                )
            refs[branch] = _moved(ref, target.snapshot_id)

        return self._record(op)

    def remove_branch(self, name: str) -> Self:
        """Remove a branch (never ``main``); its snapshots stay until they expire."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            if name == MAIN_BRANCH:
                raise ValidationError("cannot remove the main branch")
            _existing(refs, name, RefType.BRANCH)
            del refs[name]

        return self._record(op)

    def remove_tag(self, name: str) -> Self:
        """Remove a tag."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            _existing(refs, name, RefType.TAG)
            del refs[name]

        return self._record(op)

    def rename_branch(self, name: str, new_name: str) -> Self:
        """Rename a branch (never ``main``)."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            if name == MAIN_BRANCH:
                raise ValidationError("cannot rename the main branch")
            ref = _existing(refs, name, RefType.BRANCH)
            _check_new_name(refs, new_name)
            del refs[name]
            refs[new_name] = ref

        return self._record(op)

    # ---- retention --------------------------------------------------------------------------
    def set_min_snapshots_to_keep(self, branch: str, count: int | None) -> Self:
        """How many snapshots of a branch expiration keeps (None: the table default)."""
        _check_positive("min_snapshots_to_keep", count)
        return self._set_retention(branch, RefType.BRANCH, min_snapshots_to_keep=count)

    def set_max_snapshot_age_ms(self, branch: str, age_ms: int | None) -> Self:
        """Maximum age of a branch's snapshots kept by expiration (None: the table default)."""
        _check_positive("max_snapshot_age_ms", age_ms)
        return self._set_retention(branch, RefType.BRANCH, max_snapshot_age_ms=age_ms)

    def set_max_ref_age_ms(self, name: str, age_ms: int | None) -> Self:
        """Maximum age of a branch or tag before expiration removes it (not for ``main``)."""
        _check_positive("max_ref_age_ms", age_ms)
        if name == MAIN_BRANCH and age_ms is not None:
            raise ValidationError("the main branch never expires: it takes no max_ref_age_ms")
        return self._set_retention(name, None, max_ref_age_ms=age_ms)

    def _set_retention(self, name: str, kind: RefType | None, **changes: int | None) -> Self:
        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            ref = _existing(refs, name, kind)
            values = {
                "min_snapshots_to_keep": ref.min_snapshots_to_keep,
                "max_snapshot_age_ms": ref.max_snapshot_age_ms,
                "max_ref_age_ms": ref.max_ref_age_ms,
                **changes,
            }
            refs[name] = SnapshotRef(ref.snapshot_id, ref.ref_type, **values)

        return self._record(op)

    # ---- the current snapshot --------------------------------------------------------------
    def set_current_snapshot(self, snapshot_id: int) -> Self:
        """Make any snapshot of the table the head of ``main``."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            _check_snapshot(md, snapshot_id, "the current snapshot")
            _move_main(refs, snapshot_id)

        return self._record(op)

    def rollback_to_snapshot(self, snapshot_id: int) -> Self:
        """Make an ancestor of main's current snapshot the head of ``main``."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            _check_snapshot(md, snapshot_id, "rollback")
            head = refs[MAIN_BRANCH].snapshot_id if MAIN_BRANCH in refs else None
            if head is None or not is_ancestor(md, snapshot_id, head):
                raise ValidationError(
                    f"cannot roll back to snapshot {snapshot_id}: it is not an ancestor of main's current "
                    f"snapshot {head}"
                )
            _move_main(refs, snapshot_id)

        return self._record(op)

    def rollback_to_timestamp(self, timestamp_ms: int) -> Self:
        """Make the newest ancestor of main older than ``timestamp_ms`` the head of ``main``."""

        def op(md: TableMetadata, refs: dict[str, SnapshotRef]) -> None:
            head = refs[MAIN_BRANCH].snapshot_id if MAIN_BRANCH in refs else None
            for sid in ancestor_ids(md, head):
                if md.snapshot_by_id(sid).timestamp_ms < timestamp_ms:
                    _move_main(refs, sid)
                    return
            raise ValidationError(f"cannot roll back: main has no snapshot older than {timestamp_ms}")

        return self._record(op)

    # ---- results ---------------------------------------------------------------------------
    def preview(self) -> dict[str, SnapshotRef]:
        """The refs this update produces on the metadata it was created from."""
        return self._replay(self._md)

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Replay the operations on the current refs and return the ref updates."""
        before = current_refs(current)
        moved = before != current_refs(self._md) or current.snapshots != self._md.snapshots
        with replayed_on_fresh_metadata(
            moved, "cannot apply the snapshot/ref changes: the table changed concurrently"
        ):
            after = self._replay(current)
        return ref_updates(before, after)

    def _record(self, op: _Op) -> Self:
        self._ops.append(op)
        try:
            self._replay(self._md)
        except BaseException:
            self._ops.pop()
            raise
        return self

    def _replay(self, md: TableMetadata) -> dict[str, SnapshotRef]:
        refs = current_refs(md)
        for op in self._ops:
            op(md, refs)
        return refs


def _check_positive(what: str, value: int | None) -> None:
    if value is not None and value <= 0:
        raise ValidationError(f"{what} must be positive, got {value}")


def _check_new_name(refs: dict[str, SnapshotRef], name: str) -> None:
    check_ref_name(name)
    if name in refs:
        kind = refs[name].ref_type.value
        raise ValidationError(
            f"a {kind} named {name!r} already exists (at snapshot {refs[name].snapshot_id})"
        )


def _check_snapshot(md: TableMetadata, snapshot_id: int, what: str) -> None:
    if not any(s.snapshot_id == snapshot_id for s in md.snapshots):
        raise ValidationError(f"cannot set {what}: snapshot {snapshot_id} does not exist")


def _existing(refs: dict[str, SnapshotRef], name: str, kind: RefType | None) -> SnapshotRef:
    ref = refs.get(name)
    what = "branch or tag" if kind is None else kind.value
    if ref is None:
        raise ValidationError(f"no {what} named {name!r}")
    if kind is not None and ref.ref_type is not kind:
        raise ValidationError(f"{name!r} is a {ref.ref_type.value}, not a {kind.value}")
    return ref


def _moved(ref: SnapshotRef, snapshot_id: int) -> SnapshotRef:
    return SnapshotRef(
        snapshot_id, ref.ref_type, ref.min_snapshots_to_keep, ref.max_snapshot_age_ms, ref.max_ref_age_ms
    )


def _move_main(refs: dict[str, SnapshotRef], snapshot_id: int) -> None:
    main = refs.get(MAIN_BRANCH)
    refs[MAIN_BRANCH] = SnapshotRef(snapshot_id) if main is None else _moved(main, snapshot_id)
