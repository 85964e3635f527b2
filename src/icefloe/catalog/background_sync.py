"""The fsyncs a pointer swap waits for, run while the swap's own statements run.

A commit writes its metadata file inside a durability barrier (``io.durability``) and must not
move the catalog pointer before that file and its directory entry are durable. The pointer moves
when the database transaction commits, not when it begins: so a SQL catalog starts the barrier's
pending fsyncs on a small pool, runs the transaction's statements (connection checkout, ``BEGIN``,
the conditional ``UPDATE``; none of it visible to any other connection) while the disk works, and
waits for the fsyncs right before ``COMMIT``. The swap's statements, about as long as the fsyncs on
this project's machines, no longer add to a commit's wall time. A lost compare-and-swap is found
before the fsyncs end, too.

The price: a SQLite writer holds the database's write lock (``BEGIN IMMEDIATE``) while it waits for
the rest of the fsyncs, so writers of *other* tables of the same database wait that much longer.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import Future, ThreadPoolExecutor, wait

from icefloe.io.durability import SYNC_WORKERS, current_barrier


class BackgroundSync:
    """The fsyncs of the files one durability barrier had pending, running on the pool."""

    def __init__(self, futures: list[Future[None]]) -> None:
        self._futures = futures

    def wait(self) -> None:
        """Return once every file and directory is durable; raise the first fsync error (after all
        have ended, so none still runs when the caller gives up)."""
        wait(self._futures)
        for future in self._futures:
            future.result()

    def settle(self) -> None:
        """Wait for the fsyncs, ignoring their errors (the caller is already failing)."""
        wait(self._futures)


def start_pending_sync() -> BackgroundSync | None:
    """Start fsyncing what this context's durability barrier has pending (None: nothing pending).

    The barrier forgets those files (``take_pending``): whoever started the sync must ``wait`` for
    it before moving a pointer to them, and ``settle`` it otherwise.
    """
    barrier = current_barrier()
    if barrier is None:
        return None
    targets = barrier.take_pending()
    if not targets:
        return None
    pool = _pool()
    return BackgroundSync([pool.submit(barrier.fsync_path, path) for path in targets])


@functools.cache
def _pool() -> ThreadPoolExecutor:
    # made on first use; two racing first uses may each make one, the uncached one's few idle
    # threads then stay (harmless)
    return ThreadPoolExecutor(max_workers=SYNC_WORKERS, thread_name_prefix="icefloe-swap-fsync")


# a forked child (Spark's Python workers) inherits the pool object but none of its threads
os.register_at_fork(after_in_child=_pool.cache_clear)

__all__ = ["BackgroundSync", "start_pending_sync"]
