"""Small fresh-named objects written inside a durability barrier are uploaded in the background, and
the barrier's sync waits for them (``io.uploads``), on the tests' real S3-compatible server."""

from __future__ import annotations

from concurrent.futures import wait

import pytest

from icefloe.catalog.background_sync import start_pending_sync
from icefloe.errors import nothing_committed
from icefloe.io.durability import DurabilityBarrier, current_barrier, durability_barrier, sync_pending
from icefloe.io.fileio import FileIO
from icefloe.io.uploads import DEFERRED_UPLOAD_MAX_BYTES, UploadFailed
from tests.support.s3server import S3Server


def _io(s3: S3Server, retries: int = 5) -> FileIO:
    return FileIO({**s3.properties, "s3.retry.num-retries": str(retries)})


def _write(io: FileIO, location: str, data: bytes) -> None:
    io.new_output(location, fresh_name=True).write_bytes(data)


def test_uploads_of_a_barrier_are_in_flight_together(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    files = {f"{s3_warehouse}/f{i}.bin": bytes([i]) * (100 + i) for i in range(3)}
    s3.gather_next_puts(3)  # each PUT is held until all three are in flight
    with durability_barrier() as barrier:
        for location, data in files.items():
            _write(io, location, data)
        assert sorted(barrier.pending_uploads) == sorted(files)  # closed, but not waited for
        sync_pending()
        assert barrier.pending_uploads == {}
    assert s3.gathered_puts() == 3
    assert s3.counts() == {"PUT": 3}
    assert {loc: io.new_input(loc).read() for loc in files} == files


def test_outside_a_barrier_the_object_exists_when_its_writer_closes(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    assert current_barrier() is None
    location = f"{s3_warehouse}/plain.bin"
    _write(io, location, b"written at once")
    assert s3.counts() == {"PUT": 1}
    assert io.new_input(location).read() == b"written at once"


def test_a_reused_name_is_written_at_once_inside_a_barrier(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    location = f"{s3_warehouse}/reused.bin"
    with durability_barrier() as barrier:
        io.new_output(location).write_bytes(b"checked, then written")
        assert barrier.pending_uploads == {}
    assert s3.counts() == {"HEAD": 1, "PUT": 1}
    assert io.new_input(location).read() == b"checked, then written"


def test_an_object_read_back_before_the_sync_is_the_one_written(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    with durability_barrier() as barrier:
        for i in range(5):
            location = f"{s3_warehouse}/again-{i}.bin"
            _write(io, location, f"content {i}".encode())
            assert io.new_input(location).read() == f"content {i}".encode()  # waits for the upload
            assert io.exists(location)
        assert len(barrier.pending_uploads) == 5
    assert s3.counts() == {"PUT": 5, "HEAD": 10, "GET": 5}  # a read is HEAD + GET


def test_a_large_object_is_uploaded_when_its_writer_closes(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    location = f"{s3_warehouse}/large.bin"
    data = bytes(range(256)) * (DEFERRED_UPLOAD_MAX_BYTES // 256 + 1)
    with durability_barrier() as barrier:
        with io.new_output(location, fresh_name=True).create() as stream:
            for start in range(0, len(data), 1 << 20):
                stream.write(data[start : start + (1 << 20)])
            assert stream.tell() == len(data)
        assert barrier.pending_uploads == {}
        assert io.new_input(location).read() == data


def test_a_failed_upload_fails_the_sync_after_every_upload_ended(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3, retries=0)
    good, bad = f"{s3_warehouse}/good.bin", f"{s3_warehouse}/bad.bin"
    barrier = DurabilityBarrier()
    with pytest.raises(UploadFailed), durability_barrier(barrier):  # leaving it syncs: fails again
        s3.fail_next_puts(1, status=403)
        _write(io, bad, b"refused")
        wait([barrier.pending_uploads[bad]])  # its PUT reached the server before the fault is cleared
        s3.clear_faults()
        _write(io, good, b"accepted")
        uploads = barrier.pending_uploads
        with pytest.raises(UploadFailed, match=r"bad\.bin") as raised:
            sync_pending()
        assert all(upload.done() for upload in uploads.values())
    assert raised.value.location == bad
    assert nothing_committed(raised.value)  # raised before any pointer moved
    assert not io.exists(bad)
    assert io.new_input(good).read() == b"accepted"


def test_an_aborted_writer_uploads_nothing(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3)
    location = f"{s3_warehouse}/aborted.bin"
    with durability_barrier() as barrier:
        with pytest.raises(RuntimeError), io.new_output(location, fresh_name=True).create() as stream:
            stream.write(b"half")
            raise RuntimeError("writer failed")
        assert barrier.pending_uploads == {}
    assert s3.counts() == {}


def test_a_failed_upload_is_not_forgotten_when_a_swap_gave_up_first(s3: S3Server, s3_warehouse: str) -> None:
    io = _io(s3, retries=0)
    location = f"{s3_warehouse}/data-file.bin"
    barrier = DurabilityBarrier()
    with pytest.raises(UploadFailed), durability_barrier(barrier):  # and so does leaving the barrier
        s3.fail_next_puts(1, status=403)
        _write(io, location, b"named by every attempt")
        wait([barrier.pending_uploads[location]])
        s3.clear_faults()
        swap = start_pending_sync()  # a swap that then lost its compare-and-swap: errors ignored
        assert swap is not None
        swap.settle()
        assert barrier.pending_uploads == {}
        with pytest.raises(UploadFailed, match=r"data-file\.bin"):
            sync_pending()  # the retry's swap must not name the object
        with pytest.raises(UploadFailed):
            barrier.sync()
    assert not io.exists(location)


def test_a_writer_collected_unclosed_publishes_nothing(s3: S3Server, s3_warehouse: str) -> None:
    """Outside a barrier (pyarrow's streaming upload) and inside one (deferred): a writer dropped
    without ``close`` aborts, as a local one does, instead of completing the object."""
    io = _io(s3)
    streamed, deferred = f"{s3_warehouse}/unclosed-streamed.bin", f"{s3_warehouse}/unclosed-deferred.bin"
    stream = io.new_output(streamed, fresh_name=True).create()
    stream.write(b"half of it")
    del stream
    with durability_barrier() as barrier:
        stream = io.new_output(deferred, fresh_name=True).create()
        stream.write(b"half of it")
        del stream
        assert barrier.pending_uploads == {}
    assert not io.exists(streamed) and not io.exists(deferred)
