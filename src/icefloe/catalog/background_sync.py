"""The fsyncs a pointer swap waits for, run while the swap's own statements run.

A commit writes its metadata file inside a durability barrier (``io.durability``) and must not
move the catalog pointer before that file and its directory entry are durable. The pointer moves
when the database transaction commits, not when it begins: so a SQL catalog starts the barrier's
pending fsyncs on a small pool, runs the transaction's statements (connection checkout, ``BEGIN``,
the conditional ``UPDATE``; none of it visible to any other connection) while the disk works, and
waits for the fsyncs right before ``COMMIT``. The swap's statements, about as long as the fsyncs on
this project's machines, no longer add to a commit's wall time. A lost compare-and-swap is found
before the fsyncs end, too.

On an object store the barrier's pending work is uploads instead (``io.uploads``), running since
each file's writer closed; the COMMIT waits for them the same way, and a failed upload fails the
swap before its COMMIT: the pointer stays where it was.

The price: a SQLite writer holds the database's write lock (``BEGIN IMMEDIATE``) while it waits for
the rest of the fsyncs, so writers of *other* tables of the same database wait that much longer.
"""

from __future__ import annotations

from concurrent.futures import Future, wait

from icefloe.errors import mark_nothing_committed
from icefloe.io.durability import SYNC_WORKERS, current_barrier, wait_all
from icefloe.io.thread_pools import LazyPool


class BackgroundSync:
    """The fsyncs of the files one durability barrier had pending, running on the pool, and the
    uploads of its objects."""

    def __init__(self, futures: list[Future[None]]) -> None:
        self._futures = futures

    def wait(self) -> None:
        """Return once every file and directory is durable and every object uploaded; raise the
        first error (after all have ended, so none still runs when the caller gives up), marked as
        leaving the catalog unchanged: this is waited for before the COMMIT."""
        try:
            wait_all(self._futures)
        except Exception as exc:  # an interrupt stays unmarked: its files are kept (orphans at worst)
            mark_nothing_committed(exc)
            raise

    def settle(self) -> None:
        """Wait for the fsyncs and uploads, ignoring their errors (the caller is already failing)."""
        wait(self._futures)


def start_pending_sync() -> BackgroundSync | None:
    """Start fsyncing what this context's durability barrier has pending (None: nothing pending).

    The barrier forgets those files and uploads (``take_pending``, ``take_uploads``): whoever
    started the sync must ``wait`` for it before moving a pointer to them, and ``settle`` it
    otherwise.
    """
    barrier = current_barrier()
    if barrier is None:
        return None
    uploads = barrier.take_uploads()
    targets = barrier.take_pending()
    if not targets and not uploads:
        return None
    return BackgroundSync([*uploads, *(_pool.get().submit(barrier.fsync_path, path) for path in targets)])


_pool = LazyPool(SYNC_WORKERS, "icefloe-swap-fsync")

__all__ = ["BackgroundSync", "start_pending_sync"]
