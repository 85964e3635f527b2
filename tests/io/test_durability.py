"""The durability barrier: fresh-named local writes defer their fsync to one concurrent sync."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from icefloe.errors import AlreadyExists
from icefloe.io.durability import DurabilityBarrier, current_barrier, durability_barrier, sync_pending
from icefloe.io.fileio import FileIO


class RecordingBarrier(DurabilityBarrier):
    """A real barrier that also remembers every path it fsynced."""

    def __init__(self) -> None:
        super().__init__()
        self.synced: list[str] = []
        self._record = threading.Lock()

    def fsync_path(self, path: str) -> None:
        super().fsync_path(path)
        with self._record:
            self.synced.append(path)


def test_outside_a_barrier_nothing_is_deferred(tmp_path: Path) -> None:
    assert current_barrier() is None
    FileIO().new_output(str(tmp_path / "a.bin"), fresh_name=True).write_bytes(b"x")
    sync_pending()  # no barrier: nothing to do
    assert (tmp_path / "a.bin").read_bytes() == b"x"


def test_fresh_files_wait_for_the_barrier_and_are_synced_with_their_directories(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    io = FileIO()
    with durability_barrier(barrier):
        io.new_output(str(tmp_path / "data" / "d.parquet"), fresh_name=True).write_bytes(b"d")
        io.new_output(str(tmp_path / "metadata" / "m.avro"), fresh_name=True).write_bytes(b"m")
        assert (tmp_path / "data" / "d.parquet").read_bytes() == b"d"  # visible at once
        assert barrier.synced == []  # ... but not fsynced yet
        written = {str(tmp_path / "data" / "d.parquet"), str(tmp_path / "metadata" / "m.avro")}
        assert set(barrier.pending) == written
        sync_pending()
        assert sorted(barrier.synced) == sorted(
            [
                str(tmp_path / "data" / "d.parquet"),
                str(tmp_path / "metadata" / "m.avro"),
                str(tmp_path / "data"),
                str(tmp_path / "metadata"),
            ]
        )
        assert barrier.pending == ()
    assert current_barrier() is None


def test_reused_names_are_never_deferred(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    with durability_barrier(barrier):
        # a reused name (Hadoop's vN.metadata.json) may itself be the commit: fsynced on close
        FileIO().new_output(str(tmp_path / "v1.metadata.json")).write_bytes(b"{}")
        assert barrier.pending == ()


def test_nested_blocks_join_the_outer_barrier_and_the_outermost_syncs_on_exit(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    target = str(tmp_path / "f")
    with durability_barrier(barrier) as outer:
        with durability_barrier() as inner:
            assert inner is outer is barrier
            FileIO().new_output(target, fresh_name=True).write_bytes(b"1")
        assert barrier.pending == (target,)  # leaving the inner block synced nothing
    assert barrier.pending == ()
    assert target in barrier.synced


def test_leaving_by_an_exception_still_syncs(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    target = str(tmp_path / "f")
    with pytest.raises(RuntimeError, match="boom"), durability_barrier(barrier):
        FileIO().new_output(target, fresh_name=True).write_bytes(b"1")
        raise RuntimeError("boom")
    assert target in barrier.synced


def test_a_deleted_file_is_skipped(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    io = FileIO()
    with durability_barrier(barrier):
        io.new_output(str(tmp_path / "gone"), fresh_name=True).write_bytes(b"1")
        io.new_output(str(tmp_path / "kept"), fresh_name=True).write_bytes(b"2")
        io.delete(str(tmp_path / "gone"))  # an abandoned attempt's file, cleaned up
        sync_pending()
    assert str(tmp_path / "kept") in barrier.synced


def test_other_threads_do_not_inherit_the_barrier(tmp_path: Path) -> None:
    barrier = RecordingBarrier()
    seen: list[DurabilityBarrier | None] = []

    def write() -> None:
        seen.append(current_barrier())
        FileIO().new_output(str(tmp_path / "t"), fresh_name=True).write_bytes(b"1")

    with durability_barrier(barrier):
        thread = threading.Thread(target=write)
        thread.start()
        thread.join()
        assert barrier.pending == ()  # written with its own fsync
    assert seen == [None]
    assert os.path.exists(tmp_path / "t")


def test_a_fresh_name_in_a_barrier_is_written_in_place_and_still_exclusive(tmp_path: Path) -> None:
    """No temporary file beside it; an existing file is refused and left alone; a failed or
    unclosed write deletes what it wrote; a missing directory is made."""
    io = FileIO()
    target = tmp_path / "new" / "dir" / "m.avro"
    with durability_barrier(RecordingBarrier()):
        stream = io.new_output(str(target), fresh_name=True).create()
        stream.write(b"abc")
        assert os.listdir(target.parent) == ["m.avro"]  # in place, no temporary name
        stream.close()
        with pytest.raises(AlreadyExists):
            io.new_output(str(target), fresh_name=True).write_bytes(b"other")
        assert target.read_bytes() == b"abc"
        failed = tmp_path / "new" / "dir" / "failed.avro"
        with pytest.raises(RuntimeError), io.new_output(str(failed), fresh_name=True).create() as out:
            out.write(b"partial")
            raise RuntimeError("boom")
        unclosed = io.new_output(str(tmp_path / "new" / "dir" / "unclosed.avro"), fresh_name=True).create()
        unclosed.write(b"partial")
        del unclosed
    assert os.listdir(target.parent) == ["m.avro"]
