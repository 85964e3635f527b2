"""Crash safety of the server's batches: ``icefloe serve`` killed while appenders keep it busy.

Eight icefloe clients append one-row batches (distinct ids) to one v4 table through a server
process, so the coalescer runs batches of queued and rebased appends; the test SIGKILLs the
server at a random moment, several times. After every kill the table must load and read as a
committed state (every snapshot's rows present once, the row count its summary says), and every
append a client was told had committed must be there.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pyarrow as pa
from bench.bench_rest import serve

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

WRITERS = 8
KILLS = 3
WAIT_S = 60.0


def _check_committed_state(catalog: SqlCatalog, acknowledged: set[int]) -> None:
    table = catalog.load_table("db.t")
    ids = table.scan().to_arrow()["id"].to_pylist()
    assert len(ids) == len(set(ids)), "a row appears twice"
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert int(snapshot.summary["total-records"]) == len(ids)
    assert len(table.snapshots()) == len(ids)  # one row per append, one append per snapshot
    assert acknowledged <= set(ids), f"acknowledged appends lost: {sorted(acknowledged - set(ids))[:5]}"


def test_a_server_killed_mid_batch_leaves_a_committed_state(tmp_path: Path) -> None:
    # the catalog `icefloe serve` serves in bench_rest's child process (named as the CLI names it)
    catalog = SqlCatalog("default", uri=f"sqlite:///{tmp_path}/served.db", warehouse=f"{tmp_path}/served")
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    catalog.create_table("db.t", schema, properties={"format-version": "4"})
    acknowledged: set[int] = set()
    guard = threading.Lock()
    rng = random.Random(16)
    next_id = iter(range(10**9))
    for _ in range(KILLS):
        with serve(str(tmp_path)) as served:
            base = served.uri
            stop = threading.Event()

            def append(worker: int, base: str = base, stop: threading.Event = stop) -> None:
                client = RestCatalog(f"w{worker}", uri=base, **{"rest.retry.attempts": "1"})
                table = client.load_table("db.t")
                while not stop.is_set():
                    with guard:
                        row = next(next_id)
                    try:
                        table.append(pa.table({"id": pa.array([row], pa.int64())}))
                    except Exception:  # the server is gone (or the outcome is unknown): stop
                        return
                    with guard:
                        acknowledged.add(row)
                client.close()

            before = len(acknowledged)
            writers = [threading.Thread(target=append, args=(w,)) for w in range(WRITERS)]
            for w in writers:
                w.start()
            deadline = time.monotonic() + WAIT_S
            while len(acknowledged) < before + WRITERS and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(served.pid, signal.SIGKILL)
            stop.set()
            for w in writers:
                w.join(WAIT_S)
        _check_committed_state(catalog, acknowledged)
    assert len(acknowledged) >= KILLS * WRITERS
    catalog.close()
