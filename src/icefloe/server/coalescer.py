"""Commit coalescing: queued commits to one table are applied together, in one metadata write.

Requests for one table queue up; the first thread to find no batch running becomes the leader,
takes everything queued, applies each commit in arrival order to the newest metadata, writes one
metadata file and swaps once. Every commit in the batch gets the resulting metadata; a commit
that fails its own checks gets its error and does not affect the others.

A fast append whose only failed requirement is that its branch moved is *rebased* instead of
refused (as Iceberg Java's FastAppend retries without validation): the server reads the data files
the client's snapshot added and writes a new manifest list / v4 root on top of the current head,
keeping the client's snapshot id and summary. So N concurrent appenders cost N queue slots, not
N client round trips per retry, and the table's commit rate is bound by the server.

A batch starts from the state the server last wrote or read for the table (``known_state``) when
the catalog's swap checks the location, so the common batch reads neither the pointer nor the
metadata file; a swap lost to another writer starts it again from freshly read state.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from icefloe.catalog.base import Catalog
from icefloe.errors import CommitConflict, CommitStateUnknown, NoSuchTable
from icefloe.formats.metadata.files import new_metadata_with_log
from icefloe.io.durability import durability_barrier
from icefloe.server.commits import LocationRules, current_state
from icefloe.server.known_state import KnownStates
from icefloe.spec.content import FileContent
from icefloe.spec.requirements import AssertRefSnapshotId, TableRequirement, validate_requirements
from icefloe.spec.snapshots import Operation
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate, apply_updates
from icefloe.tree.read_seam import entries_added_by, stored_additions_of
from icefloe.tree.summary import RESERVED_SUMMARY_KEYS, RESERVED_SUMMARY_PREFIXES
from icefloe.txn.producers import AppendFiles
from icefloe.txn.transaction import AttemptContext

logger = logging.getLogger(__name__)
TableKey = tuple[tuple[str, ...], str]


@dataclass
class _Pending:
    """One queued commit, and how its waiting thread is woken: once, when a batch has finished it
    or when it is this thread's turn to lead the table's next batch (``leads``)."""

    requirements: list[TableRequirement]
    updates: list[TableUpdate]
    result: tuple[str, TableMetadata] | None = None
    error: BaseException | None = None
    finished: bool = False
    leads: bool = False
    wake: threading.Event = field(default_factory=threading.Event)

    def finish(self) -> None:
        """The outcome (``result`` or ``error``) is final: wake the waiting thread."""
        self.finished = True
        self.wake.set()


def _append_shape(updates: list[TableUpdate]) -> tuple[AddSnapshot, SetSnapshotRef] | None:
    """The (AddSnapshot, SetSnapshotRef) of a plain fast append to a branch, else None."""
    if (
        len(updates) != 2
        or not isinstance(updates[0], AddSnapshot)
        or not isinstance(updates[1], SetSnapshotRef)
    ):
        return None
    add, ref = updates[0], updates[1]
    snap = add.snapshot
    if ref.snapshot_id != snap.snapshot_id or snap.summary.get("operation") != Operation.APPEND.value:
        return None
    return add, ref


def _only_branch_moved(md: TableMetadata, requirements: list[TableRequirement], branch: str) -> bool:
    others = [r for r in requirements if not (isinstance(r, AssertRefSnapshotId) and r.ref == branch)]
    try:
        validate_requirements(md, others)
    except CommitConflict:
        return False
    return True


def rebase_append(
    catalog: Catalog, md: TableMetadata, pending: _Pending, written: list[str], now_ms: int
) -> list[TableUpdate] | None:
    """Updates that re-apply a client's fast append on ``md``'s branch head, or None if not one."""
    shape = _append_shape(pending.updates)
    if shape is None:
        return None
    add, ref = shape
    if not _only_branch_moved(md, pending.requirements, ref.ref_name):
        return None
    snap = add.snapshot
    if md.has_snapshot(snap.snapshot_id):
        return None
    io = catalog._file_io(md.properties, md.location)
    # a v4 append's rows as the client's root stored them: decoded only for the summary, the new
    # root takes them as they are (tree.v4_fast_append)
    stored = stored_additions_of(io, md, snap)
    added, rows = stored if stored is not None else ([], None)
    if stored is None:
        for entry in entries_added_by(io, md, snap):
            if entry.data_file.content != FileContent.DATA:
                return None
            # row ids are assigned again on the new head (the read inherited the old assignment)
            added.append(dataclasses.replace(entry.data_file, first_row_id=None))
    extra = {
        k: v
        for k, v in snap.summary.items()
        if k not in RESERVED_SUMMARY_KEYS
        and not k.startswith((*RESERVED_SUMMARY_PREFIXES, "added-", "total-"))
    }
    producer = AppendFiles(
        branch=ref.ref_name,
        snapshot_properties=extra,
        files=added,
        snapshot_id=snap.snapshot_id,
        stored_additions=rows,
    )
    ctx = AttemptContext(io, md, now_ms)
    try:
        updates = producer.apply(ctx, md)
    finally:
        written.extend(ctx.written_files)
    return updates


def _same_locations(md: TableMetadata, checked: TableMetadata | None) -> bool:
    """Whether ``md`` names the locations ``checked`` did (a commit that changes neither the
    table's location nor its properties, as an append, needs no second check)."""
    return checked is not None and md.location == checked.location and md.properties is checked.properties


class CommitCoalescer:
    """Per-table queues of single-table commits (see the module doc)."""

    def __init__(
        self,
        catalog: Catalog,
        lock_for: Callable[[TableKey], threading.Lock],
        retries: int,
        rules: LocationRules | None = None,
    ) -> None:
        self._catalog = catalog
        self._rules = rules if rules is not None else LocationRules(catalog.warehouse)
        self._lock_for = lock_for
        self._retries = retries
        self._queues: dict[TableKey, list[_Pending]] = {}
        self._leading: set[TableKey] = set()
        self._guard = threading.Lock()  # guards the queues and who leads
        self._known = KnownStates()
        self._trust_known = catalog.swap_checks_location
        self.batches = 0
        self.rebased = 0
        self.state_reads = 0  # batches (or tries) that read the table's pointer and metadata

    def commit(
        self, key: TableKey, requirements: list[TableRequirement], updates: list[TableUpdate]
    ) -> tuple[str, TableMetadata]:
        """Queue one commit and wait for its outcome (this thread may run the batch).

        The thread that finds no batch of its table running leads: it takes everything queued and
        applies it. When the batch ends, the lead passes to the first commit queued meanwhile (its
        thread is woken to take the queue) or lapses when none is. A waiting thread is woken only
        when its own commit is finished or its turn to lead has come, never by other batches.
        """
        pending = _Pending(requirements, updates)
        with self._guard:
            self._queues.setdefault(key, []).append(pending)
            if key not in self._leading:
                self._leading.add(key)
                pending.leads = True
        if not pending.leads:
            pending.wake.wait()
        if pending.leads:  # set before the wake when this thread is handed the lead
            self._lead(key)
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    def _lead(self, key: TableKey) -> None:
        """Apply everything queued for the table as one batch, then hand the lead on."""
        with self._guard:
            batch = self._queues.pop(key)
        try:
            with self._lock_for(key):
                self._run_batch(key, batch)
        except BaseException as exc:  # e.g. interrupted waiting for the lock: nobody may hang
            for p in batch:
                if not p.finished:
                    p.error = exc
                    p.finish()
            raise
        finally:
            self._hand_off(key)

    def _hand_off(self, key: TableKey) -> None:
        """Wake the first commit queued behind the batch that ended to lead the next one."""
        with self._guard:
            queue = self._queues.get(key)
            if queue:
                successor = queue[0]
                successor.leads = True
                successor.wake.set()
            else:
                self._leading.discard(key)

    def running(self, key: TableKey) -> bool:
        """Whether a batch of the table is being applied (or about to be, by a woken leader)."""
        with self._guard:
            return key in self._leading

    def queued(self, key: TableKey) -> int:
        """How many commits to the table wait for its next batch."""
        with self._guard:
            return len(self._queues.get(key, ()))

    def _run_batch(self, key: TableKey, batch: list[_Pending]) -> None:
        """Attempts on known state (free: they do not count as tries), then on freshly read state,
        until one concludes; the last of ``retries + 1`` fresh tries gives up on a lost swap."""
        try:
            fresh_tries = 0
            while True:
                known = self._known.get(key) if self._trust_known else None
                state = known if known is not None else self._read_state(key)
                final = known is None and fresh_tries == self._retries
                # rebased roots and the metadata file are made durable together before the swap
                with durability_barrier():
                    if self._attempt(key, batch, state, known=known is not None, final=final):
                        break
                self._known.forget(key)  # the pointer moved (or the state is unconfirmed): read it
                if known is None:
                    fresh_tries += 1
        except BaseException as exc:
            for p in batch:
                if not p.finished:
                    p.error = exc
        finally:
            for p in batch:
                p.finish()
        self.batches += 1

    def _read_state(self, key: TableKey) -> tuple[str, TableMetadata]:
        """The table's current state, read from the catalog (and remembered)."""
        namespace, name = key
        state = current_state(self._catalog, namespace, name)
        self.state_reads += 1
        if state is None:
            self._known.forget(key)
            raise NoSuchTable(f"table {'.'.join((*namespace, name))!r} does not exist")
        self._known.put(key, *state)
        return state

    def _attempt(
        self, key: TableKey, batch: list[_Pending], state: tuple[str, TableMetadata], known: bool, final: bool
    ) -> bool:
        """One try at the batch from ``state``; False when the swap lost to another process (and not
        ``final``), or when ``state`` is ``known`` (not read just now) and no swap confirmed it."""
        namespace, name = key
        base_location, base = state
        md = base
        applied: list[_Pending] = []
        written: list[str] = []
        now_ms = int(time.time() * 1000)
        inside: TableMetadata | None = None  # the last metadata whose locations were checked
        for p in batch:
            p.error = None
        for p in batch:
            try:
                try:
                    validate_requirements(md, p.requirements)
                    new = apply_updates(md, p.updates, now_ms)
                except CommitConflict as conflict:
                    try:
                        rebased = rebase_append(self._catalog, md, p, written, now_ms)
                    except Exception as exc:  # the client's files unreadable: its conflict stands
                        logger.info("could not rebase a stale append: %s", exc)
                        raise conflict from None
                    if rebased is None:
                        raise
                    new = apply_updates(md, rebased, now_ms)
                    self.rebased += 1
                if not _same_locations(new, inside):
                    self._rules.check(new)
                    inside = new
            except Exception as exc:
                p.error = exc
                continue
            md = new
            applied.append(p)
        if md is base:
            self._delete(md, written)  # a rebase whose commit was then refused
            if known:
                return False  # refusals and no-op answers rest on freshly read state only
        if not applied:
            return True
        if md is base:
            for p in applied:
                p.result = (base_location, base)
            return True
        md = new_metadata_with_log(md, base_location, base)
        try:
            location = self._catalog.commit_table((*namespace, name), base_location, md, base_metadata=base)
        except CommitConflict:
            self._delete(md, written)
            if final:
                raise
            return False
        except CommitStateUnknown:
            self._known.forget(key)
            raise
        except BaseException:
            self._known.forget(key)
            self._delete(md, written)
            raise
        self._known.put(key, location, md)
        for p in applied:
            p.result = (location, md)
        return True

    def _delete(self, md: TableMetadata, paths: list[str]) -> None:
        io = self._catalog._file_io(md.properties, md.location)
        for path in paths:
            try:
                io.delete(path, missing_ok=True)
            except Exception as exc:  # best effort: an orphan file is harmless
                logger.warning("could not delete %s after a failed batch: %s", path, exc)


__all__ = ["CommitCoalescer", "rebase_append"]
