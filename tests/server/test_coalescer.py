"""Commit coalescing: commits queued while a batch runs are applied as the next batch, each on its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.server.coalescer import CommitCoalescer
from icefloe.server.commits import TableLocks
from icefloe.server.context import ServerState
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import SetProperties
from icefloe.table.table import Table
from icefloe.tree.read_seam import entries_added_by
from icefloe.tree.v4_fast_append import FAST_APPENDS

KEY = (("db",), "t")
WAIT_S = 60.0


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the server did not get there"
        time.sleep(0.005)


def _start(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target)
    thread.start()
    return thread


def _queue_behind_a_batch(
    state: ServerState, first: Callable[[], None], queued: list[Callable[[], None]]
) -> None:
    """Run ``first`` as a batch held at the table's lock, queue the others behind it one by one
    (so they form the next batch, in this order), let the batch go and wait for all."""
    with state.locks.lock(KEY):  # the first commit leads a batch that waits here
        threads = [_start(first)]
        _wait_until(lambda: state.coalescer.running(KEY))
        for target in queued:
            count = state.coalescer.queued(KEY)
            threads.append(_start(target))
            _wait_until(lambda q=count: state.coalescer.queued(KEY) == q + 1)  # type: ignore[misc]
    for thread in threads:
        thread.join(WAIT_S)


def test_commits_queued_behind_a_batch_land_together_and_a_conflict_alone_is_refused(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    backing_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    backing_catalog.create_table("db.t", schema, properties={"format-version": "4"})
    state: ServerState = rest_server.app.state.icefloe
    clients = [RestCatalog(f"c{i}", uri=rest_server.uri) for i in range(3)]
    tables: list[Table] = [c.load_table("db.t") for c in clients]  # all from the same (empty) head
    metadata_files_before = len(backing_catalog.load_table("db.t").metadata.metadata_log)
    refused: list[int] = []

    def append(i: int) -> Callable[[], None]:
        return lambda: tables[i].append(pa.table({"id": pa.array([i], pa.int64())}))

    def stale_schema_change() -> None:
        body = {
            "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 99}],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
        }
        reply = requests.post(rest_server.uri + "/v1/namespaces/db/tables/t", json=body, timeout=WAIT_S)
        refused.append(reply.status_code)

    stored_rows = FAST_APPENDS.stored_rows
    _queue_behind_a_batch(state, append(0), [append(1), stale_schema_change, append(2)])
    assert refused == [409]
    assert state.coalescer.batches == 2  # [append 0], then [append 1, schema change, append 2]
    assert state.coalescer.rebased == 2  # appends 1 and 2 were made on the old head
    assert FAST_APPENDS.stored_rows == stored_rows + 2  # their rows taken from the clients' roots

    md = backing_catalog.load_table("db.t").metadata
    assert "k" not in md.properties
    assert len(md.metadata_log) == metadata_files_before + 2  # one metadata file per batch
    io = backing_catalog._file_io(md.properties, md.location)
    assert len({s.root_manifest for s in md.snapshots}) == 3  # every commit its own snapshot and root
    added_by = {}  # snapshot id -> the row id its one added file holds
    for snapshot in md.snapshots:
        (entry,) = entries_added_by(io, md, snapshot)
        rows = backing_catalog.load_table("db.t").scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        before = set()
        if snapshot.parent_snapshot_id is not None:
            parent = backing_catalog.load_table("db.t").scan(snapshot_id=snapshot.parent_snapshot_id)
            before = set(parent.to_arrow()["id"].to_pylist())
        (added_by[snapshot.snapshot_id],) = set(rows["id"].to_pylist()) - before
        assert entry.data_file.record_count == 1
    assert sorted(added_by.values()) == [0, 1, 2]
    for i, table in enumerate(tables):  # each client was answered with metadata holding its snapshot
        own = next(sid for sid, row in added_by.items() if row == i)
        assert own in {s.snapshot_id for s in table.metadata.snapshots}
    for client in clients:
        client.close()


def test_a_commit_pointing_outside_the_warehouse_is_refused_inside_a_batch_of_appends(
    rest_server: RunningServer, backing_catalog: SqlCatalog, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The batch checks locations again whenever a commit changes the table's properties, also
    between appends whose checks it skips."""
    backing_catalog.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    backing_catalog.create_table("db.t", schema, properties={"format-version": "4"})
    state: ServerState = rest_server.app.state.icefloe
    clients = [RestCatalog(f"c{i}", uri=rest_server.uri) for i in range(3)]
    tables: list[Table] = [c.load_table("db.t") for c in clients]
    outside = str(tmp_path_factory.mktemp("outside"))
    replies: list[int] = []

    def append(i: int) -> Callable[[], None]:
        return lambda: tables[i].append(pa.table({"id": pa.array([i], pa.int64())}))

    def write_elsewhere() -> None:
        body = {"updates": [{"action": "set-properties", "updates": {"write.data.path": outside}}]}
        reply = requests.post(rest_server.uri + "/v1/namespaces/db/tables/t", json=body, timeout=WAIT_S)
        replies.append(reply.status_code)

    _queue_behind_a_batch(state, append(0), [append(1), write_elsewhere, append(2)])
    assert replies == [400]
    assert state.coalescer.batches == 2
    md = backing_catalog.load_table("db.t").metadata
    assert "write.data.path" not in md.properties
    assert sorted(backing_catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [0, 1, 2]
    for client in clients:
        client.close()


class _SwapThreads(SqlCatalog):
    """A real SqlCatalog that remembers which thread swapped each pointer."""

    swapped_by: list[str]

    def _swap_metadata_location(self, namespace: tuple[str, ...], name: str, expected: str, new: str) -> None:
        self.swapped_by.append(threading.current_thread().name)
        super()._swap_metadata_location(namespace, name, expected, new)


class _GateLock:
    """A table lock that holds its first taker until ``go`` is set, then fails it (as an interrupt
    while waiting for the lock would); later takers get a real lock."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.taken = 0
        self._real = threading.Lock()

    def __enter__(self) -> None:
        self.taken += 1
        if self.taken == 1:
            self.go.wait(WAIT_S)
            raise RuntimeError("interrupted while waiting for the table lock")
        self._real.acquire()

    def __exit__(self, *exc: object) -> None:
        self._real.release()


def _property_commit(
    coalescer: CommitCoalescer, value: str, outcomes: dict[str, object]
) -> Callable[[], None]:
    def run() -> None:
        try:
            _, md = coalescer.commit(KEY, [], [SetProperties({value: value})])
            outcomes[threading.current_thread().name] = md.properties
        except Exception as exc:
            outcomes[threading.current_thread().name] = exc

    return run


def _named(name: str, target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, name=name)
    thread.start()
    return thread


def test_the_lead_passes_to_the_first_commit_queued_behind_the_batch(tmp_path: Path) -> None:
    catalog = _SwapThreads("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), required=True)))
    catalog.swapped_by = []
    locks = TableLocks()
    coalescer = CommitCoalescer(catalog, locks.lock, retries=0)
    outcomes: dict[str, object] = {}
    with locks.lock(KEY):  # the first batch waits here while the others queue behind it
        threads = [_named("first", _property_commit(coalescer, "a", outcomes))]
        _wait_until(lambda: coalescer.running(KEY) and coalescer.queued(KEY) == 0)
        for i, name in enumerate(("second", "third", "fourth")):
            threads.append(_named(name, _property_commit(coalescer, name, outcomes)))
            _wait_until(lambda n=i: coalescer.queued(KEY) == n + 1)  # type: ignore[misc]
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(t.is_alive() for t in threads)
    assert catalog.swapped_by == ["first", "second"]  # the second batch ran on the first queued thread
    assert coalescer.batches == 2 and not coalescer.running(KEY)
    assert set(outcomes["fourth"]) >= {"a", "second", "third", "fourth"}  # type: ignore[arg-type]
    catalog.close()


def test_a_leader_that_fails_before_its_batch_still_hands_the_lead_on(tmp_path: Path) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), required=True)))
    gate = _GateLock()
    coalescer = CommitCoalescer(catalog, lambda key: gate, retries=0)  # type: ignore[arg-type,return-value]
    outcomes: dict[str, object] = {}
    threads = [_named("first", _property_commit(coalescer, "a", outcomes))]
    _wait_until(lambda: gate.taken == 1)
    for i, name in enumerate(("second", "third")):
        threads.append(_named(name, _property_commit(coalescer, name, outcomes)))
        _wait_until(lambda n=i: coalescer.queued(KEY) == n + 1)  # type: ignore[misc]
    gate.go.set()
    for thread in threads:
        thread.join(WAIT_S)
    assert not any(t.is_alive() for t in threads), "a queued commit was left waiting"
    assert isinstance(outcomes["first"], RuntimeError)
    third = outcomes["third"]
    assert isinstance(third, dict) and {"second", "third"} <= set(third) and "a" not in third
    assert coalescer.batches == 1 and not coalescer.running(KEY)
    assert set(catalog.load_table("db.t").metadata.properties) >= {"second", "third"}
    catalog.close()
