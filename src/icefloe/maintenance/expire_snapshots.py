"""Snapshot expiry: drop old snapshots from the table metadata, then delete the files only they needed.

Every commit rewrites the table metadata file whole, and it holds every snapshot of the history:
a streaming job committing every few seconds makes each commit slower and larger until old
snapshots are expired. This runs in two steps, in this order so that a crash between (or during)
them can only leave unreferenced files behind, never a table that names a missing file:

1. **commit** an ``ExpireSnapshots`` action (``txn.expire_snapshots``: Iceberg's retention rules,
   re-evaluated on every commit attempt, so concurrent commits are judged too);
2. **delete** (unless ``delete_files=False``) the files reachable from the expired snapshots that
   no retained snapshot of the *committed* metadata needs: their manifest lists or root manifests,
   manifests and v4 leaves, the data / delete / deletion-vector files live only in expired
   snapshots (``tree.reachable``), and statistics files of expired snapshots. Nothing is deleted
   when the commit's outcome is unknown (``CommitStateUnknown`` propagates).

Old metadata files are not touched here: ``write.metadata.delete-after-commit.enabled`` with
``write.metadata.previous-versions-max`` governs those.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from icefloe.errors import ValidationError
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.spec.properties import GC_ENABLED, gc_enabled
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.reachable import live_files, tree_views
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.snapshot_retention import ExpireSnapshots, RetentionRequest, select_expired


@dataclass(frozen=True)
class ExpireResult:
    """What an expiry removed."""

    expired_snapshot_ids: tuple[int, ...]
    removed_refs: tuple[str, ...]
    deleted_metadata_files: tuple[str, ...]  # manifest lists, roots, manifests, leaves, statistics
    deleted_content_files: tuple[str, ...]  # data files, delete files, deletion-vector Puffin files
    failed_deletes: tuple[str, ...] = ()  # files that could not be deleted (now orphans)


def to_epoch_ms(value: datetime | int | None) -> int | None:
    """Milliseconds since the epoch from a datetime (naive = UTC) or an int already in ms."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1000)
    raise ValidationError(f"expected a datetime or epoch milliseconds, got {type(value).__name__}")


def check_gc_enabled(table: TableHandle, what: str) -> None:
    """ValidationError unless the table lets icefloe delete files it no longer needs."""
    if not gc_enabled(table.metadata.properties):
        raise ValidationError(
            f"cannot {what}: table {table.name} has {GC_ENABLED}=false (its files may be shared)"
        )


def expire_snapshots(
    table: TableHandle,
    *,
    older_than: datetime | int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    delete_files: bool = True,
) -> ExpireResult:
    """Expire snapshots of ``table`` (see ``txn.expire_snapshots`` for the rules) and delete their files.

    File deletion is refused (ValidationError, nothing committed) when ``gc.enabled`` is false,
    as in Iceberg Java: the files may belong to other tables too.

    ``older_than``: snapshots committed before it may go (default: now minus
    ``history.expire.max-snapshot-age-ms``, 5 days); ``retain_last``: each branch keeps at least
    this many of its newest snapshots (default ``history.expire.min-snapshots-to-keep``, 1);
    ``snapshot_ids``: also expire these (alone, they are the only ones expired). A bad argument
    raises ValidationError and changes nothing.
    """
    request = RetentionRequest(to_epoch_ms(older_than), retain_last, tuple(snapshot_ids))
    action = ExpireSnapshots(request)
    table.refresh()
    if delete_files:
        check_gc_enabled(table, "expire snapshots and delete their files (pass delete_files=False)")
    if select_expired(table.metadata, int(time.time() * 1000), request).is_empty:
        return ExpireResult((), (), (), ())  # nothing to expire: no commit, no new metadata file
    commit_action(table, action)
    expiry, base = action.expiry, action.base
    if expiry.is_empty or base is None or not delete_files:
        return ExpireResult(expiry.snapshot_ids, expiry.removed_refs, (), ())
    metadata_files, content_files = files_to_delete(table.io, base, table.metadata, expiry.snapshot_ids)
    failed = set(table.io.delete_many([*metadata_files, *content_files]))
    return ExpireResult(
        expiry.snapshot_ids,
        expiry.removed_refs,
        tuple(p for p in metadata_files if p not in failed),
        tuple(p for p in content_files if p not in failed),
        tuple(sorted(failed)),
    )


def files_to_delete(
    io: FileIO, base: TableMetadata, committed: TableMetadata, expired_ids: Iterable[int]
) -> tuple[list[str], list[str]]:
    """(metadata files, content files) reachable from the expired snapshots and from no retained one.

    Manifest views the expired snapshots share with retained ones hold the same live files in
    both, so only the expired snapshots' own views are read for candidates. Locations are
    compared in their canonical spelling: tables written by several engines may name one file
    ``file:/x`` in one manifest and ``file:///x`` in another.
    """
    wanted = set(expired_ids)
    expired = tree_views(io, base, [s for s in base.snapshots if s.snapshot_id in wanted])
    retained = tree_views(io, committed, committed.snapshots)
    own_views = [ref for key, ref in expired.views.items() if key not in retained.views]
    candidates = expired.inline_live | live_files(io, base, own_views)
    still_live = retained.inline_live | live_files(io, committed, retained.views.values())
    stats = set(base.statistics_paths()) - set(committed.statistics_paths())
    keep = {
        normalize_location(p)
        for p in (*retained.tree, *still_live, *committed.statistics_paths())
    }
    metadata_files = sorted(p for p in expired.tree | stats if normalize_location(p) not in keep)
    content_files = sorted(p for p in candidates if normalize_location(p) not in keep)
    return metadata_files, content_files
