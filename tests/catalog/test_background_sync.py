"""The SQL catalog's swap runs its statements while the commit's files are fsynced, and commits
only once they are durable (``catalog.background_sync``).

The barrier is a real one whose fsyncs can be held until the swap's ``UPDATE`` has run: a swap
that synced first and ran its statements afterwards would never see its fsyncs released.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import event

from icefloe.errors import CommitConflict
from icefloe.formats.metadata.files import write_table_metadata
from icefloe.io.durability import DurabilityBarrier, durability_barrier
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.swap_commits import SwapCommitWatchingCatalog, opened

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
GATE_TIMEOUT_S = 10.0


def _rows(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})


class GatedBarrier(DurabilityBarrier):
    """A real barrier whose fsyncs start only once ``release`` is set (or the gate times out), and
    which remembers, per path, whether the gate was open and when the fsync had ended."""

    def __init__(self, release: threading.Event, failing: str | None = None) -> None:
        super().__init__()
        self.release = release
        self.failing = failing
        self.released: dict[str, bool] = {}
        self.synced: set[str] = set()
        self._record = threading.Lock()

    def fsync_path(self, path: str) -> None:
        released = self.release.wait(GATE_TIMEOUT_S)
        with self._record:
            self.released[path] = released
        if path == self.failing:
            raise OSError(5, "simulated I/O error", path)
        super().fsync_path(path)
        with self._record:
            self.synced.add(path)


class WatchingCatalog(SwapCommitWatchingCatalog):
    """Opens ``update_ran`` when the swap's UPDATE has run; records what was durable at its COMMIT."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.update_ran = threading.Event()
        self.barrier: GatedBarrier | None = None
        self.synced_at_commit: list[set[str]] = []
        super().__init__(*args, **kwargs)

        @event.listens_for(self.engine, "after_cursor_execute")
        def _after(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            if self.swapping and statement.lstrip().upper().startswith("UPDATE"):
                self.update_ran.set()

    def at_swap_commit(self) -> None:
        if self.barrier is not None:
            self.synced_at_commit.append(set(self.barrier.synced))


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[WatchingCatalog]:
    with opened(WatchingCatalog, tmp_path) as catalog:
        yield catalog


def _new_files(root: Path, before: set[str]) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file() and not p.name.endswith(".tmp")} - before


def test_the_fsyncs_run_during_the_swap_statements_and_end_before_its_commit(
    watched: WatchingCatalog, tmp_path: Path
) -> None:
    table = watched.create_table("db.t", SCHEMA)
    root = tmp_path / "wh"
    before = _new_files(root, set())
    barrier = watched.barrier = GatedBarrier(watched.update_ran)
    with durability_barrier(barrier):
        table.append(_rows(10))
    written = _new_files(root, before)
    directories = {str(Path(f).parent) for f in written}
    assert any(f.endswith(".metadata.json") for f in written) and len(written) >= 4
    # every fsync was held until the swap's UPDATE had run, and was released by it (no time-out)
    assert set(barrier.released) == written | directories
    assert all(barrier.released.values()), "a file was fsynced before the swap's statements ran"
    (synced,) = watched.synced_at_commit
    assert written | directories <= synced, "the swap committed before the files were durable"
    assert table.refresh().scan().to_arrow().num_rows == 10


def test_a_failed_fsync_leaves_the_pointer_where_it_was(watched: WatchingCatalog, tmp_path: Path) -> None:
    table = watched.create_table("db.t", SCHEMA)
    table.append(_rows(3))
    before = watched.load_table("db.t").metadata_location
    release = threading.Event()
    release.set()
    metadata_dir = str(tmp_path / "wh" / "db" / "t" / "metadata")
    watched.barrier = GatedBarrier(release, failing=metadata_dir)
    with pytest.raises(OSError, match="simulated I/O error"), durability_barrier(watched.barrier):
        table.append(_rows(10))
    assert watched.synced_at_commit == []  # the swap never committed
    assert watched.load_table("db.t").metadata_location == before
    assert watched.load_table("db.t").scan().to_arrow().num_rows == 3


def test_a_lost_swap_waits_for_its_fsyncs_before_it_reports(watched: WatchingCatalog, tmp_path: Path) -> None:
    table = watched.create_table("db.t", SCHEMA)
    stale_location, stale = table.metadata_location, table.metadata
    table.append(_rows(1))  # the pointer moves on: a commit from the stale base loses the swap
    release = threading.Event()
    release.set()
    barrier = GatedBarrier(release)
    io = watched._file_io(None, stale_location)
    with pytest.raises(CommitConflict), durability_barrier(barrier):
        extra = write_table_metadata(io, stale.location, stale, previous_location=stale_location)
        changed = stale.with_changes(last_updated_ms=1)
        watched.commit_table("db.t", stale_location, changed, base_metadata=stale)
    # both files the swap had pending (its own metadata file and the extra one) were fsynced
    # before the conflict was reported, not left running behind it
    synced_files = {p for p in barrier.synced if p.endswith(".metadata.json")}
    assert extra.removeprefix("file://") in synced_files and len(synced_files) == 2
    assert watched.synced_at_commit == []
