"""One durability barrier per commit: files a commit writes are fsynced together before the swap.

Outside a barrier every local file is fsynced (with its directory) when it is closed, one after
the other: ~2 journal commits per file on ext4, ~4-5 ms each. A commit writes several files (data
file, manifests, manifest list or v4 root, metadata file) and needs none of them durable until the
catalog pointer moves to them. Inside ``durability_barrier()`` a local file written under a fresh
(UUID) name is published at once but not fsynced; the barrier records it, and ``sync_pending()``
fsyncs every recorded file and directory concurrently on a small thread pool, where the file
system lets concurrent fsyncs share journal commits (~4x faster than the same fsyncs in turn on
this project's ext4 machines, see BENCHMARKS.md).

The rule that keeps this safe: **everything that moves a catalog pointer makes the pending files
durable first** (``SqlCatalog._run`` fsyncs them while a write transaction's statements run and
waits for them before its COMMIT, ``catalog.background_sync``; the REST client calls
``sync_pending()`` before any mutation, the Hadoop catalog before creating ``vN.metadata.json``).
Leaving the outermost barrier syncs whatever is still pending, so no file outlives its barrier
undurable. A crash before the sync can leave a recorded file incomplete under its final name;
nothing refers to it (it is an orphan, as every file of an uncommitted attempt is). Files under
reused names (Hadoop's ``vN``) and files written on other threads (which do not inherit the
barrier) are fsynced on close, as before.

Object stores follow the same rule with uploads in place of fsyncs (``io.uploads``): inside a
barrier a small fresh-named object is PUT in the background once its writer closes, the barrier
records the upload, and ``sync`` (or whatever else moves a pointer) waits for every recorded upload.
A failed upload (or fsync) fails that wait: the pointer does not move, and the error says so
(``errors.nothing_committed``), so the commit cleans up what it wrote.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, wait
from contextvars import ContextVar

from icefloe.errors import mark_nothing_committed
from icefloe.io.thread_pools import LazyPool

SYNC_WORKERS = 8
"""fsyncs in flight at once when a barrier syncs (they wait on the disk, not on the GIL)."""


class DurabilityBarrier:
    """Files written without their own fsync (and objects still uploading), made durable together
    by ``sync``."""

    def __init__(self) -> None:
        self._files: dict[str, None] = {}
        self._directories: dict[str, None] = {}
        self._uploads: dict[str, Future[None]] = {}
        self._failed_uploads: list[Future[None]] = []
        self._lock = threading.Lock()

    def defer(self, path: str) -> None:
        """Record a just-published local file (and its directory entry) for the next ``sync``."""
        with self._lock:
            self._files[path] = None
            self._directories[os.path.dirname(path)] = None

    def defer_upload(self, location: str, upload: Future[None]) -> None:
        """Record an object's running upload (``io.uploads``): the next ``sync`` waits for it.

        Once it has failed, every later sync of this barrier fails too: a later attempt of the same
        commit may name the object again (a data file is written once, named by every attempt), so
        an error swallowed once (the swap lost its compare-and-swap first) must not be forgotten.
        """
        with self._lock:
            self._uploads[location] = upload
        upload.add_done_callback(self._note_failure)

    def _note_failure(self, upload: Future[None]) -> None:
        if not upload.cancelled() and upload.exception() is not None:
            with self._lock:
                self._failed_uploads.append(upload)

    @property
    def pending(self) -> tuple[str, ...]:
        """Files recorded since the last sync."""
        with self._lock:
            return tuple(self._files)

    @property
    def pending_uploads(self) -> dict[str, Future[None]]:
        """Uploads recorded since the last sync, by location (running or finished)."""
        with self._lock:
            return dict(self._uploads)

    def sync(self) -> None:
        """fsync every recorded file and directory, concurrently, and wait for every recorded
        upload; returns when all are durable, raises the first error once all have ended.

        A file deleted meanwhile (an abandoned attempt cleaned up) is skipped: nothing refers to it.
        """
        uploads = self.take_uploads()
        targets = self.take_pending()
        if not targets:
            wait_all(uploads)
            return
        # The calling thread would only wait: it fsyncs the first target itself (one thread
        # hand-off fewer), the pool the others.
        others = [_pool.get().submit(self.fsync_path, path) for path in targets[1:]]
        try:
            self.fsync_path(targets[0])
        except BaseException as exc:
            wait_all([*uploads, *others], first_error=exc)
        wait_all([*uploads, *others])

    def take_uploads(self) -> list[Future[None]]:
        """The recorded uploads, forgotten by the barrier (the caller waits for them), after those
        that failed earlier (never forgotten)."""
        with self._lock:
            uploads = [*self._failed_uploads, *self._uploads.values()]
            self._uploads.clear()
        return uploads

    def take_pending(self) -> list[str]:
        """The recorded files, then their directories, forgotten by the barrier (the caller syncs)."""
        with self._lock:
            targets = [*self._files, *self._directories]
            self._files.clear()
            self._directories.clear()
        return targets

    def fsync_path(self, path: str) -> None:
        """fsync one file or directory by path (a missing one is skipped)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_current: ContextVar[DurabilityBarrier | None] = ContextVar("icefloe_durability_barrier", default=None)


def current_barrier() -> DurabilityBarrier | None:
    """The barrier local writes of this context defer their fsync to, or None (fsync on close)."""
    return _current.get()


@contextlib.contextmanager
def durability_barrier(barrier: DurabilityBarrier | None = None) -> Iterator[DurabilityBarrier]:
    """Defer the fsync of fresh-named local files written in this block to one barrier.

    Nested blocks join the enclosing barrier (``barrier`` is used only by the outermost block). The
    outermost block syncs what is still pending when it ends, also when it ends by an exception.
    """
    enclosing = _current.get()
    if enclosing is not None:
        yield enclosing
        return
    own = barrier if barrier is not None else DurabilityBarrier()
    token = _current.set(own)
    try:
        yield own
    except BaseException:
        with contextlib.suppress(OSError):  # the block's own error is the one to report
            own.sync()
        raise
    else:
        own.sync()
    finally:
        _current.reset(token)


def sync_pending() -> None:
    """Make every deferred write of this context durable: call before moving a catalog pointer.

    Its error (an upload or fsync that failed) is marked as leaving the catalog unchanged: the
    caller has not moved the pointer yet.
    """
    barrier = _current.get()
    if barrier is not None:
        try:
            barrier.sync()
        except Exception as exc:  # an interrupt stays unmarked: its files are kept (orphans at worst)
            mark_nothing_committed(exc)
            raise


def wait_all(futures: Sequence[Future[None]], first_error: BaseException | None = None) -> None:
    """Wait until every future has ended, then raise ``first_error`` or else the first future's error.

    Nothing is left running when the caller gives up (an abandoned attempt's files are deleted
    right after, which must not race an upload still creating one).
    """
    wait(futures)
    if first_error is not None:
        raise first_error
    for future in futures:
        future.result()


_pool = LazyPool(SYNC_WORKERS, "icefloe-fsync")
