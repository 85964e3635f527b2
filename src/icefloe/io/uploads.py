"""A commit's small objects uploaded in the background, while the commit builds its next file.

On an object store every file is one PUT, one round trip (tens of ms on S3), and a commit writes
several in sequence (data file, manifest and manifest list or v4 root, metadata file). None of them
is needed before the catalog pointer moves to the new metadata, the rule the durability barrier
(``io.durability``) already keeps for local fsyncs. So inside a barrier a fresh-named object is
written into memory, and when its writer closes the PUT is handed to a small pool; the barrier
records the upload, and whatever moves a pointer waits for every recorded upload first (the SQL
catalog before its COMMIT, the REST client before any mutation). A failed upload fails that wait,
so no pointer ever names an object that was not uploaded.

Only objects up to ``DEFERRED_UPLOAD_MAX_BYTES`` are deferred: bigger ones (data files of a large
write) switch to pyarrow's streaming upload as soon as they outgrow the buffer, and their writer's
close waits for the upload as before. Objects waiting in memory are bounded in total
(``IN_FLIGHT_MAX_BYTES``): a writer that would exceed it waits for earlier uploads to finish.

Reading an object whose upload is still running (the same commit reading back what it wrote) waits
for that upload: ``FileIO`` asks ``wait_for_upload`` before it hands out the path, so the read sees
the object exactly as any other reader will, with the same requests.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

import pyarrow.fs as pafs

from icefloe.io.durability import DurabilityBarrier
from icefloe.io.thread_pools import LazyPool
from icefloe.io.writers import PublishingWriter

DEFERRED_UPLOAD_MAX_BYTES = 8 << 20
"""Largest object uploaded in the background. Iceberg's manifest target size
(``commit.manifest.target-size-bytes``, 8 MiB): every manifest, manifest list, v4 root or leaf and
metadata file of ordinary size fits, as do the data files of small appends; a bigger file is a bulk
write, where one more round trip is noise and memory is better spent elsewhere."""

IN_FLIGHT_MAX_BYTES = 64 << 20
"""Bytes of deferred objects held in memory at once, across the process, until uploaded."""

UPLOAD_WORKERS = 8
"""PUTs in flight at once (they wait on the network, not on the GIL)."""


class UploadFailed(OSError):
    """A deferred upload failed: the object does not exist, and no commit may name it."""

    def __init__(self, location: str, cause: BaseException) -> None:
        super().__init__(f"upload of {location} failed, so the commit naming it cannot happen: {cause}")
        self.location = location


class StreamingWriter(Protocol):
    """What a deferred writer turns into when the object outgrows its buffer (``fileio``'s remote writer)."""

    def write(self, data: Any) -> int: ...
    def tell(self) -> int: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class DeferredUploadWriter(PublishingWriter):
    """Buffers a fresh-named object; on close its PUT runs on the upload pool, recorded in ``barrier``.

    ``stream`` opens the ordinary streaming upload, used instead once the object grows past
    ``max_bytes``. Leaving a ``with`` block by an exception (or never closing) uploads nothing.
    """

    def __init__(
        self,
        fs: pafs.FileSystem,
        path: str,
        location: str,
        barrier: DurabilityBarrier,
        stream: Callable[[], StreamingWriter],
        max_bytes: int = DEFERRED_UPLOAD_MAX_BYTES,
    ) -> None:
        super().__init__()
        self._fs = fs
        self._path = path
        self._location = location
        self._barrier = barrier
        self._open_stream = stream
        self._max_bytes = max_bytes
        self._buffer: io.BytesIO | None = io.BytesIO()
        self._streaming: StreamingWriter | None = None
        self._done = False

    def write(self, data: Any) -> int:
        if self._streaming is not None:
            return self._streaming.write(data)
        assert self._buffer is not None
        if self._buffer.tell() + memoryview(data).nbytes > self._max_bytes:
            self._streaming = self._open_stream()
            self._streaming.write(self._buffer.getvalue())
            self._buffer = None
            return self._streaming.write(data)
        return self._buffer.write(data)

    def tell(self) -> int:
        if self._streaming is not None:
            return self._streaming.tell()
        assert self._buffer is not None
        return self._buffer.tell()

    def flush(self) -> None:
        """Nothing to flush: the bytes go out when the writer closes."""

    def abort(self) -> None:
        """Discard the object: nothing is uploaded (or the streaming upload is removed)."""
        if self._done:
            return
        self._done = True
        if self._streaming is not None:
            self._streaming.abort()
        self._buffer = None
        super().close()

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            if self._streaming is not None:
                self._streaming.close()  # a large object: uploaded now, as outside a barrier
            elif self._buffer is not None:
                data = self._buffer.getvalue()
                self._buffer = None
                upload = start_upload(self._fs, self._path, self._location, data)
                self._barrier.defer_upload(self._location, upload)
        finally:
            super().close()


def start_upload(fs: pafs.FileSystem, path: str, location: str, data: bytes) -> Future[None]:
    """PUT ``data`` at ``path`` on the upload pool; the future fails with ``UploadFailed``.

    Waits first while the objects already waiting to be uploaded hold ``IN_FLIGHT_MAX_BYTES``.
    """
    _budget.acquire(len(data))
    try:
        future = _pool.get().submit(_put, fs, path, location, data)
    except BaseException:
        _budget.release(len(data))
        raise
    with _uploads_lock:
        _uploads[path] = future
    future.add_done_callback(lambda _: _finished(path, len(data)))
    return future


def wait_for_upload(path: str) -> None:
    """Return once no upload to ``path`` (a file-system path, ``bucket/key``) is running.

    Its outcome does not matter here: a failed upload leaves no object, which the caller's own
    request then finds. Keyed by path alone, so a reader of another store's same ``bucket/key``
    may wait needlessly, never wrongly.
    """
    if not _uploads:  # the common case, without the lock
        return
    with _uploads_lock:
        future = _uploads.get(path)
    if future is not None:
        with contextlib.suppress(BaseException):
            future.result()


def _put(fs: pafs.FileSystem, path: str, location: str, data: bytes) -> None:
    try:
        # pyarrow's delayed open (``fileio.s3_options``) sends an object this small as one PutObject
        with fs.open_output_stream(path) as out:
            out.write(data)
    except Exception as exc:
        raise UploadFailed(location, exc) from exc


def _finished(path: str, size: int) -> None:
    with _uploads_lock:
        _uploads.pop(path, None)
    _budget.release(size)


class _ByteBudget:
    """At most ``limit`` bytes held at once; one holder may exceed it alone (nothing else held)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._changed = threading.Condition()

    def acquire(self, size: int) -> None:
        with self._changed:
            while self._held and self._held + size > self.limit:
                self._changed.wait()
            self._held += size

    def release(self, size: int) -> None:
        with self._changed:
            self._held -= size
            self._changed.notify_all()


_budget = _ByteBudget(IN_FLIGHT_MAX_BYTES)
_uploads: dict[str, Future[None]] = {}
_uploads_lock = threading.Lock()
_pool = LazyPool(UPLOAD_WORKERS, "icefloe-upload")


def _forget_after_fork() -> None:
    # A forked child (Spark's Python workers) inherits these objects but none of the uploads (the
    # pool forgets its own threads).
    global _uploads_lock, _budget
    _uploads_lock = threading.Lock()
    _uploads.clear()
    _budget = _ByteBudget(IN_FLIGHT_MAX_BYTES)


os.register_at_fork(after_in_child=_forget_after_fork)
