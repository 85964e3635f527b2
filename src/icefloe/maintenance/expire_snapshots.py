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

import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from icefloe.catalog.table import Table
from icefloe.errors import ValidationError
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.reachable import reachable_files
from icefloe.txn.expire_snapshots import ExpireSnapshots, RetentionRequest, select_expired

log = logging.getLogger(__name__)

DELETE_WORKERS = 8


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


def expire_snapshots(
    table: Table,
    *,
    older_than: datetime | int | None = None,
    retain_last: int | None = None,
    snapshot_ids: Iterable[int] = (),
    delete_files: bool = True,
) -> ExpireResult:
    """Expire snapshots of ``table`` (see ``txn.expire_snapshots`` for the rules) and delete their files.

    ``older_than``: snapshots committed before it may go (default: now minus
    ``history.expire.max-snapshot-age-ms``, 5 days); ``retain_last``: each branch keeps at least
    this many of its newest snapshots (default ``history.expire.min-snapshots-to-keep``, 1);
    ``snapshot_ids``: also expire these (alone, they are the only ones expired). A bad argument
    raises ValidationError and changes nothing.
    """
    request = RetentionRequest(to_epoch_ms(older_than), retain_last, tuple(snapshot_ids))
    action = ExpireSnapshots(request)
    table.refresh()
    if select_expired(table.metadata, int(time.time() * 1000), request).is_empty:
        return ExpireResult((), (), (), ())  # nothing to expire: no commit, no new metadata file
    with table.transaction() as tx:
        tx.add_action(action)
    expiry, base = action.expiry, action.base
    if expiry.is_empty or base is None or not delete_files:
        return ExpireResult(expiry.snapshot_ids, expiry.removed_refs, (), ())
    metadata_files, content_files = files_to_delete(table.io, base, table.metadata, expiry.snapshot_ids)
    failed = delete_all(table.io, [*metadata_files, *content_files])
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

    Locations are compared in their canonical spelling: tables written by several engines may
    name one file ``file:/x`` in one manifest and ``file:///x`` in another.
    """
    wanted = set(expired_ids)
    expired = reachable_files(io, base, [s for s in base.snapshots if s.snapshot_id in wanted])
    retained = reachable_files(io, committed, committed.snapshots)
    stats_before = {s.get("statistics-path") for s in (*base.statistics, *base.partition_statistics)}
    stats_after = {s.get("statistics-path") for s in (*committed.statistics, *committed.partition_statistics)}
    stats = {p for p in stats_before - stats_after if isinstance(p, str)}
    still_named = (*retained.tree, *retained.live, *stats_after)
    keep = {normalize_location(p) for p in still_named if isinstance(p, str)}
    metadata_files = sorted(p for p in expired.tree | stats if normalize_location(p) not in keep)
    content_files = sorted(p for p in expired.live if normalize_location(p) not in keep)
    return metadata_files, content_files


def delete_all(io: FileIO, paths: list[str]) -> set[str]:
    """Delete ``paths`` (a missing file counts as deleted); returns the ones that failed."""
    failed: set[str] = set()
    if not paths:
        return failed

    def delete(path: str) -> str | None:
        try:
            io.delete(path, missing_ok=True)
        except Exception as exc:  # keep going: an undeleted file is only an orphan
            log.warning("could not delete %s: %s", path, exc)
            return path
        return None

    with ThreadPoolExecutor(max_workers=min(DELETE_WORKERS, len(paths))) as pool:
        failed.update(p for p in pool.map(delete, paths) if p is not None)
    return failed
