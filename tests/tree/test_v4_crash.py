"""Crash safety: a writer killed at random points of its v4 commits never leaves a broken table.

A child process appends one row per commit (row k holds id k) to a v4 table in a SQLite
catalog; the test SIGKILLs it at random times, and after every kill the table must load and
read as one of the committed states (ids 0..m-1 for the m-th snapshot).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

COMMITS = 30 if os.environ.get("CI") else 100

CHILD = """
import os, signal, sys
import pyarrow as pa
from icefloe.catalog import load_catalog

uri, warehouse, total, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "pause"
table = load_catalog(uri=uri, warehouse=warehouse).load_table("db.t")
print("ready", flush=True)
while True:
    snap = table.current_snapshot()
    k = int(snap.summary["total-records"]) if snap is not None else 0
    if k >= total:
        break
    table.append(pa.table({"id": pa.array([k], pa.int64())}))
    print("committed", flush=True)
    if pause:  # wait for the parent's SIGKILL after one commit, however slow the parent is
        os.kill(os.getpid(), signal.SIGSTOP)
"""


def _check(uri: str, warehouse: str) -> int:
    """Load the table fresh and check it is a committed state; returns the number of rows."""
    table = load_catalog(uri=uri, warehouse=warehouse).load_table("db.t")
    got = sorted(table.scan().to_arrow()["id"].to_pylist())
    assert got == list(range(len(got)))
    snaps = table.snapshots()
    assert len(snaps) == len(got)
    assert int(snaps[-1].summary["total-records"]) == len(got) if snaps else True
    return len(got)


@pytest.mark.slow
def test_killed_v4_writers_leave_a_committed_state(tmp_path: Path) -> None:
    uri, warehouse = f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")
    catalog = load_catalog(uri=uri, warehouse=warehouse)
    catalog.create_namespace(("db",))
    props = {
        "format-version": "4",
        "write.v4.root.max-inline-entries": "7",
        "write.v4.compaction.min-small-leaves": "3",
    }
    catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), True)), properties=props)
    rng = random.Random(20261122)
    done, kills, rounds = 0, 0, 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), *sys.path])}
    while done < COMMITS:
        rounds += 1
        assert rounds <= COMMITS, "the writer makes no progress"
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, uri, warehouse, str(COMMITS), "pause" if rounds == 1 else "run"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        child.stdout.readline()  # imports done, table loaded: from here on it commits
        # Progress does not depend on the machine's speed: every round waits for one commit
        # (or the end) before its random window, and the first round's child stops itself after
        # its first commit and is killed there, so at least one kill lands mid-sequence.
        child.stdout.readline()
        window = 0.0 if rounds == 1 else rng.uniform(0.01, 0.15)
        try:
            child.wait(timeout=window)
        except subprocess.TimeoutExpired:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            kills += 1
        assert child.returncode in (0, -signal.SIGKILL)
        now = _check(uri, warehouse)
        assert now >= done
        done = now
    assert done == COMMITS and kills >= 1
    table = load_catalog(uri=uri, warehouse=warehouse).load_table("db.t")
    for i, snap in enumerate(table.snapshots()):
        if i % 9 == 0 or i == COMMITS - 1:
            assert sorted(table.scan(snapshot_id=snap.snapshot_id).to_arrow()["id"].to_pylist()) == list(
                range(i + 1)
            )
    table.append(pa.table({"id": pa.array([COMMITS], pa.int64())}))
    assert _check(uri, warehouse) == COMMITS + 1
