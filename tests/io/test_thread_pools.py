"""LazyPool: one executor per process, a new one in a forked child (whose inherited one has no
threads and would never run what is submitted)."""

from __future__ import annotations

import subprocess
import sys

from icefloe.io.thread_pools import LazyPool


def test_the_same_executor_in_one_process() -> None:
    pool = LazyPool(2, "icefloe-test")
    first = pool.get()
    assert pool.get() is first
    assert first.submit(lambda: 6 * 7).result(timeout=30) == 42


# Forked from a small interpreter of its own, not from the test process and its many threads.
FORK_CHECK = """
import os
from icefloe.io.thread_pools import LazyPool
pool = LazyPool(2, "icefloe-test")
parents = pool.get()
assert parents.submit(lambda: 1).result(timeout=30) == 1  # its threads exist in the parent only
child = os.fork()
if child == 0:
    ok = False
    try:
        ok = pool.get() is not parents and pool.get().submit(lambda: 6 * 7).result(timeout=30) == 42
    finally:
        os._exit(0 if ok else 3)
_, status = os.waitpid(child, 0)
assert pool.get() is parents
print("child exit code", os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_gets_its_own_working_executor() -> None:
    done = subprocess.run([sys.executable, "-c", FORK_CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "child exit code 0"
