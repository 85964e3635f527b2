"""Which snapshots and refs a snapshot expiry removes: the ``ExpireSnapshots`` action.

Retention follows Iceberg's rules (the ``history.expire.*`` table properties and the retention
settings of each ref), evaluated on the metadata of each commit attempt, so snapshots committed
concurrently are judged too:

1. a branch or tag other than ``main`` whose head is older than its ``max-ref-age-ms`` (the ref's
   own, else ``history.expire.max-ref-age-ms``; default: never) is removed;
2. every remaining tag keeps its snapshot;
3. every remaining branch keeps the ancestors of its head that are newer than its age limit (the
   ref's ``max-snapshot-age-ms``, else the call's ``older_than``, else
   ``history.expire.max-snapshot-age-ms``, default 5 days), and at least the newest
   ``min-snapshots-to-keep`` of them (the ref's own, else the call's ``retain_last``, else
   ``history.expire.min-snapshots-to-keep``, default 1) — so a branch head is always kept;
4. a snapshot on no branch's ancestry and no tag (a rolled-back or staged one) is kept while it
   is newer than the call's age limit;
5. snapshots named explicitly are removed too; naming the head of a branch or tag is an error.

With only explicit snapshot ids (no ``older_than`` / ``retain_last``) nothing else is removed.
The action only changes table metadata; deleting the files that no retained snapshot needs is
the job of ``maintenance.expire_snapshots`` once the commit has succeeded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from icefloe.errors import ValidationError
from icefloe.spec.properties import int_property
from icefloe.spec.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotRef
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import RemoveSnapshotRef, RemoveSnapshots, TableUpdate
from icefloe.txn.refs import ancestor_ids, current_refs
from icefloe.txn.transaction import AttemptContext

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"

DEFAULT_MAX_SNAPSHOT_AGE_MS = 5 * 24 * 3600 * 1000
DEFAULT_MIN_SNAPSHOTS_TO_KEEP = 1


@dataclass(frozen=True)
class RetentionRequest:
    """What the caller asked for; None falls back to the table properties."""

    older_than_ms: int | None = None
    retain_last: int | None = None
    snapshot_ids: tuple[int, ...] = ()

    @property
    def only_explicit(self) -> bool:
        """True when the call names snapshots and sets no age or count rule."""
        return bool(self.snapshot_ids) and self.older_than_ms is None and self.retain_last is None


@dataclass(frozen=True)
class Expiry:
    """The outcome of the retention rules on one metadata version."""

    snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        """Nothing to remove."""
        return not self.snapshot_ids and not self.removed_refs


def check_request(request: RetentionRequest) -> None:
    """ValidationError for a request no table could satisfy."""
    if request.retain_last is not None and request.retain_last < 1:
        raise ValidationError(f"retain_last must be at least 1, got {request.retain_last}")
    if request.older_than_ms is not None and request.older_than_ms < 0:
        raise ValidationError(f"older_than must not be before 1970, got {request.older_than_ms} ms")


def select_expired(md: TableMetadata, now_ms: int, request: RetentionRequest) -> Expiry:
    """The snapshots and refs the retention rules remove from ``md`` at ``now_ms``."""
    check_request(request)
    by_id = {s.snapshot_id: s for s in md.snapshots}
    refs = current_refs(md)
    explicit = set(request.snapshot_ids)
    missing = sorted(i for i in explicit if i not in by_id)
    if missing:
        raise ValidationError(f"cannot expire snapshot {missing[0]}: the table has no such snapshot")
    if request.only_explicit:
        _check_not_ref_heads(explicit, refs)
        return Expiry(tuple(sorted(explicit)), ())

    table_max_ref_age = int_property(md.properties, MAX_REF_AGE_MS, 0, 1)  # 0: refs never age out
    removed_refs = []
    for name, ref in sorted(refs.items()):
        max_age = ref.max_ref_age_ms or table_max_ref_age
        head = by_id.get(ref.snapshot_id)
        if name != MAIN_BRANCH and max_age and head is not None and now_ms - head.timestamp_ms > max_age:
            removed_refs.append(name)
    kept_refs = {name: ref for name, ref in refs.items() if name not in removed_refs}
    _check_not_ref_heads(explicit, kept_refs)

    default_age = int_property(md.properties, MAX_SNAPSHOT_AGE_MS, DEFAULT_MAX_SNAPSHOT_AGE_MS, 1)
    older_than = request.older_than_ms if request.older_than_ms is not None else now_ms - default_age
    min_keep = request.retain_last or int_property(
        md.properties, MIN_SNAPSHOTS_TO_KEEP, DEFAULT_MIN_SNAPSHOTS_TO_KEEP, 1
    )
    retained: set[int] = set()
    on_refs: set[int] = set()
    for ref in kept_refs.values():
        if ref.ref_type is RefType.TAG:
            retained.add(ref.snapshot_id)
            on_refs.add(ref.snapshot_id)
            continue
        history = list(ancestor_ids(md, ref.snapshot_id))
        on_refs.update(history)
        retained.update(_branch_retained(by_id, history, ref, now_ms, older_than, min_keep))
    retained.update(
        sid for sid, s in by_id.items() if sid not in on_refs and s.timestamp_ms >= older_than
    )
    expired = sorted(sid for sid in by_id if sid not in retained or sid in explicit)
    return Expiry(tuple(expired), tuple(removed_refs))


def _branch_retained(
    by_id: dict[int, Snapshot],
    history: list[int],
    ref: SnapshotRef,
    now_ms: int,
    older_than: int,
    min_keep: int,
) -> Iterable[int]:
    """The ancestors a branch keeps: the newest ``min_keep`` and all newer than its age limit."""
    limit = now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else older_than
    keep = ref.min_snapshots_to_keep or min_keep
    for count, sid in enumerate(history):
        if count < keep or by_id[sid].timestamp_ms >= limit:
            yield sid


def _check_not_ref_heads(snapshot_ids: set[int], refs: dict[str, SnapshotRef]) -> None:
    for name, ref in sorted(refs.items()):
        if ref.snapshot_id in snapshot_ids:
            raise ValidationError(
                f"cannot expire snapshot {ref.snapshot_id}: it is the head of {ref.ref_type.value} {name!r}"
            )


class ExpireSnapshots:
    """An action removing the snapshots (and aged-out refs) the retention rules select.

    ``expiry`` and ``base`` hold the outcome of the last applied attempt and the metadata it was
    applied to: after a successful commit they name exactly what the committed metadata no longer
    has, and the metadata that still describes it.
    """

    def __init__(self, request: RetentionRequest, now_ms: int | None = None) -> None:
        check_request(request)
        self.request = request
        self.now_ms = now_ms
        self.expiry = Expiry((), ())
        self.base: TableMetadata | None = None

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Select on ``current`` and return the ref and snapshot removals."""
        now_ms = self.now_ms if self.now_ms is not None else ctx.now_ms
        self.expiry = select_expired(current, now_ms, self.request)
        self.base = current
        updates: list[TableUpdate] = [RemoveSnapshotRef(name) for name in self.expiry.removed_refs]
        if self.expiry.snapshot_ids:
            updates.append(RemoveSnapshots(self.expiry.snapshot_ids))
        return updates

    def committed_files(self) -> list[str]:
        """Metadata-only: the action writes no files."""
        return []
