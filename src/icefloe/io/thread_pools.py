"""Thread pools made on first use and forgotten in a forked child.

Durability barriers fsync on a pool, uploads PUT on one, and the SQL catalog's swap fsyncs on
another. A forked child (Spark's Python workers fork from a warm daemon) inherits the pool object
but none of its threads: submitting to it there would wait forever. ``LazyPool`` builds its
executor on first use and drops it (and its lock) in a child, which builds its own.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    """``get()`` is the same executor on every call in one process; a forked child gets a new one."""

    def __init__(self, workers: int, thread_name_prefix: str) -> None:
        self.workers = workers
        self.thread_name_prefix = thread_name_prefix
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=self.thread_name_prefix)
            return self._executor

    def _forget(self) -> None:
        self._executor = None
        self._lock = threading.Lock()


__all__ = ["LazyPool"]
