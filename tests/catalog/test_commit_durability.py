"""One durability barrier per commit: every file a commit wrote is fsynced before the pointer moves.

The catalog below is a real SqlCatalog whose compare-and-swap, at the moment its transaction
commits (when the new pointer becomes visible and durable), looks at the disk: which files
appeared under the warehouse since the test began, and which of them (and of their directories)
the barrier had fsynced by then. The barrier is a real one that also records what it fsynced.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.io.durability import DurabilityBarrier, current_barrier, durability_barrier
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.swap_commits import SwapCommitWatchingCatalog, opened


class RecordingBarrier(DurabilityBarrier):
    """A real barrier that also remembers every path it fsynced."""

    def __init__(self) -> None:
        super().__init__()
        self.synced: set[str] = set()
        self._record = threading.Lock()

    def fsync_path(self, path: str) -> None:
        super().fsync_path(path)
        with self._record:
            self.synced.add(path)


@dataclass
class SwapSeen:
    """What was on disk and durable when the catalog moved a pointer."""

    new_files: set[str]
    synced: set[str]
    swapping_thread_barrier: DurabilityBarrier | None
    pending_in_swapping_thread: tuple[str, ...]


class SwapWatchingCatalog(SwapCommitWatchingCatalog):
    """A SqlCatalog that records, as each compare-and-swap commits, the files written since ``watch``."""

    def watch(self, root: Path, barrier: RecordingBarrier) -> None:
        self.root, self.barrier = root, barrier
        self.existing = _files(root)
        self.swaps: list[SwapSeen] = []

    def at_swap_commit(self) -> None:
        barrier = current_barrier()
        self.swaps.append(
            SwapSeen(
                new_files=_files(self.root) - self.existing,
                synced=set(self.barrier.synced),
                swapping_thread_barrier=barrier,
                pending_in_swapping_thread=barrier.pending if barrier is not None else (),
            )
        )


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file() and not p.name.endswith(".tmp")}


SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))


def _rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[SwapWatchingCatalog]:
    with opened(SwapWatchingCatalog, tmp_path) as catalog:
        yield catalog


@pytest.mark.parametrize("format_version", ["2", "4"])
def test_every_file_of_a_direct_append_is_durable_before_the_swap(
    watched: SwapWatchingCatalog, tmp_path: Path, format_version: str
) -> None:
    table = watched.create_table("db.t", SCHEMA, properties={"format-version": format_version})
    barrier = RecordingBarrier()
    watched.watch(tmp_path / "wh", barrier)
    with durability_barrier(barrier):  # Table.append joins it instead of opening its own
        table.append(_rows(10))
    (swap,) = watched.swaps
    kinds = {Path(f).parent.name for f in swap.new_files}
    assert kinds == {"data", "metadata"}  # data file, manifests / root, metadata file
    assert len(swap.new_files) >= 3
    assert swap.new_files <= swap.synced, "a file was not fsynced before the pointer moved"
    assert {str(Path(f).parent) for f in swap.new_files} <= swap.synced, "a directory entry was not durable"
    assert swap.swapping_thread_barrier is barrier
    assert swap.pending_in_swapping_thread == ()
    assert table.refresh().scan().to_arrow().num_rows == 10


def test_the_rest_client_syncs_before_it_sends_and_the_server_before_it_swaps(
    watched: SwapWatchingCatalog, tmp_path: Path
) -> None:
    from icefloe.catalog.rest import RestCatalog
    from icefloe.server import ServerConfig, start_server

    server = start_server(ServerConfig(watched))
    client = RestCatalog("rest", uri=server.uri)
    try:
        table = client.create_table("db.t", SCHEMA, properties={"format-version": "4"})
        barrier = RecordingBarrier()
        watched.watch(tmp_path / "wh", barrier)
        with durability_barrier(barrier):
            table.append(_rows(10))
        (swap,) = watched.swaps
        written_by_client = {f for f in swap.new_files if not f.endswith(".metadata.json")}
        assert {Path(f).parent.name for f in written_by_client} == {"data", "metadata"}  # data file, root
        assert written_by_client <= swap.synced, "the client sent its commit before its files were durable"
        # the server's own barrier (its thread's) held the metadata file and had synced it
        assert any(f.endswith(".metadata.json") for f in swap.new_files)
        assert swap.swapping_thread_barrier is not None and swap.swapping_thread_barrier is not barrier
        assert swap.pending_in_swapping_thread == ()
        assert table.refresh().scan().to_arrow().num_rows == 10
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize("format_version", ["2", "4"])
def test_the_rest_client_sends_its_commit_only_once_its_files_are_durable(
    watched: SwapWatchingCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format_version: str
) -> None:
    """At the moment the client's commit request leaves, every file the append wrote (and its
    directory) is fsynced: the server may make what the request names visible at once."""
    from icefloe.catalog.rest import RestCatalog
    from icefloe.catalog.rest.transport import Transport
    from icefloe.server import ServerConfig, start_server

    server = start_server(ServerConfig(watched))
    client = RestCatalog("rest", uri=server.uri)
    sent: list[tuple[str, str, set[str]]] = []
    send = Transport.send

    def recording(self: Transport, method: str, url: str, *args: object) -> object:
        sent.append((method, url, set(barrier.synced)))
        return send(self, method, url, *args)  # type: ignore[arg-type]

    try:
        table = client.create_table("db.t", SCHEMA, properties={"format-version": format_version})
        barrier = RecordingBarrier()
        watched.watch(tmp_path / "wh", barrier)
        monkeypatch.setattr(Transport, "send", recording)
        with durability_barrier(barrier):
            table.append(_rows(10))
        (commit,) = sent  # an append on a loaded table is one request: its commit
        assert commit[:2] == ("POST", f"{server.uri}/v1/namespaces/db/tables/t")
        written_by_client = _files(tmp_path / "wh") - watched.existing
        written_by_client = {f for f in written_by_client if not f.endswith(".metadata.json")}
        assert len(written_by_client) == (3 if format_version == "2" else 2)  # data, manifest(s), list/root
        assert written_by_client | {str(Path(f).parent) for f in written_by_client} <= commit[2]
    finally:
        client.close()
        server.stop()


def test_a_rest_commit_whose_fsync_fails_is_not_sent(
    watched: SwapWatchingCatalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed fsync fails the append before its request goes out: the table does not move."""
    from icefloe.catalog.rest import RestCatalog
    from icefloe.catalog.rest.transport import Transport
    from icefloe.errors import nothing_committed

    class FailingBarrier(DurabilityBarrier):
        def fsync_path(self, path: str) -> None:
            if path.endswith(".parquet"):
                raise OSError(5, "Input/output error", path)
            super().fsync_path(path)

    from icefloe.server import ServerConfig, start_server

    server = start_server(ServerConfig(watched))
    client = RestCatalog("rest", uri=server.uri)
    posts: list[str] = []
    send = Transport.send

    def recording(self: Transport, method: str, url: str, *args: object) -> object:
        if method == "POST":
            posts.append(url)
        return send(self, method, url, *args)  # type: ignore[arg-type]

    try:
        table = client.create_table("db.t", SCHEMA, properties={"format-version": "2"})
        monkeypatch.setattr(Transport, "send", recording)
        failing = FailingBarrier()
        with pytest.raises(OSError, match="Input/output error") as raised, durability_barrier(failing):
            table.append(_rows(10))
        assert nothing_committed(raised.value)
        assert posts == []
        assert client.load_table("db.t").current_snapshot() is None
    finally:
        client.close()
        server.stop()
