"""Crash safety of the server's batches: ``icefloe serve`` killed while appenders keep it busy.

Eight icefloe clients append one-row batches (distinct ids) to one v4 table through a server
process, so the coalescer runs batches of queued and rebased appends; the test SIGKILLs the
server at a random moment, several times. After every kill the table must load and read as a
committed state (every snapshot's rows present once, the row count its summary says), and every
append a client was told had committed must be there.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import requests

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

WRITERS = 8
KILLS = 3
WAIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _server(uri: str, warehouse: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    command = [sys.executable, "-m", "icefloe.cli", "--uri", uri, "--warehouse", str(warehouse)]
    process = subprocess.Popen([*command, "serve", "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                requests.get(base + "/v1/config", timeout=5)
                break
            except requests.ConnectionError:
                assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        yield base, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(WAIT_S)


def _check_committed_state(catalog: SqlCatalog, acknowledged: set[int]) -> None:
    table = catalog.load_table("db.t")
    ids = table.scan().to_arrow()["id"].to_pylist()
    assert len(ids) == len(set(ids)), "a row appears twice"
    snapshot = table.current_snapshot()
    assert snapshot is not None
    assert int(snapshot.summary["total-records"]) == len(ids)
    assert len(table.snapshots()) == len(ids)  # one row per append, one append per snapshot
    assert acknowledged <= set(ids), f"acknowledged appends lost: {sorted(acknowledged - set(ids))[:5]}"


def test_a_server_killed_mid_batch_leaves_a_committed_state(sqlite_uri: str, warehouse: Path) -> None:
    catalog = SqlCatalog("default", uri=sqlite_uri, warehouse=str(warehouse))  # as `icefloe serve` names it
    catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    catalog.create_table("db.t", schema, properties={"format-version": "4"})
    acknowledged: set[int] = set()
    guard = threading.Lock()
    rng = random.Random(16)
    next_id = iter(range(10**9))
    for _ in range(KILLS):
        with _server(sqlite_uri, warehouse) as (base, process):
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
            process.send_signal(signal.SIGKILL)
            process.wait(WAIT_S)
            stop.set()
            for w in writers:
                w.join(WAIT_S)
        _check_committed_state(catalog, acknowledged)
    assert len(acknowledged) >= KILLS * WRITERS
    catalog.close()
