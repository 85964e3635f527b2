"""Delete files read once per scan and shared by the tasks they apply to.

A position delete file written by one row-level commit usually covers many data files, a Puffin
file holds the deletion vectors of every data file one commit touched, and an equality delete file
(what streaming writers such as Flink commit) applies to every older data file of its partition,
or of the whole table when it is global. Read task by task, each task fetched the whole delete
file again: N reads and N decoded copies of one file for a scan of N data files.
:class:`SharedDeletes` is made by a scan that holds its whole plan (``reader.read_tasks``,
``TableScan.to_arrow_batch_reader``). It counts the tasks that use each delete file, and for a
file more than one task uses:

- a position delete file is decoded once into positions per data file (8 bytes a row; its path
  column is dropped as soon as the file is grouped), each task taking its own data file's;
- a Puffin file is read once (from its start to the end of the last deletion vector the scan
  needs, up to :data:`MAX_SHARED_PUFFIN_BYTES`), each task decoding its own vector from those
  bytes: one size request and one read instead of one of each per task;
- an equality delete file is read once into its distinct keys on its equality columns, which
  every task anti-joins its rows with. The keys go by file *and* equality ids.

What is kept is released when the last task that needs it has taken its part, so a scan holds a
decoded file only while tasks for it remain (Iceberg Java's executor cache keeps decoded deletes
by size instead, for a process's later scans too), and at most ``max_held_bytes`` at once: the
streaming reader sets it, so its memory stays bounded whatever the order of its tasks. A file no
other task uses (or too large to keep) is read as before, narrowly: positions for one data file,
one deletion vector by its range. A Spark task shares the delete files of the scan tasks it was
given (``reader.read_each_task``), bounded as a stream is; nothing is kept across Spark tasks in
a reused Python worker (the worker cannot know which later tasks need a file, so it could only
keep files by size, for as long as the worker lives, as Java's executor cache does).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import pyarrow as pa

from icefloe.io.fileio import FileIO
from icefloe.scan.delete_readers import (
    read_dv_positions,
    read_equality_delete_keys,
    read_position_delete_positions,
    read_position_deletes_by_file,
    read_puffin_range,
)
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import Schema

MAX_SHARED_PUFFIN_BYTES = 16 * 1024 * 1024
"""Past this, a Puffin file is read blob by blob, as without sharing (the blobs between may be
of data files the scan does not read)."""

STREAM_MAX_HELD_BYTES = 256 * 1024 * 1024
"""What a streaming read (``to_arrow_batch_reader``) keeps of shared delete files at once: its
memory is bounded by a few data files, so what it shares must be bounded too."""

T = TypeVar("T")
_Key = tuple[str, int, tuple[int, ...]]
_NO_POSITIONS = np.empty(0, dtype=np.int64)


def _key(delete_file: DataFile) -> _Key:
    """Delete files are immutable: a location and size name one content. A deletion vector's
    Puffin file goes by location alone (a v4 entry records the blob's size, not the file's). An
    equality delete file goes with its equality ids too: what is kept is its keys on those columns,
    and two entries naming one file with different ids keep different keys."""
    if _is_puffin(delete_file):
        return delete_file.file_path, -1, ()
    ids = tuple(delete_file.equality_ids or ()) if delete_file.content == FileContent.EQUALITY_DELETES else ()
    return delete_file.file_path, delete_file.file_size_in_bytes, ids


def _is_puffin(delete_file: DataFile) -> bool:
    return delete_file.file_format.lower() == "puffin"


def _blob_end(dv_file: DataFile) -> int:
    return (dv_file.content_offset or 0) + (dv_file.content_size_in_bytes or 0)


def _positions_bytes(by_file: dict[str, np.ndarray]) -> int:
    return sum(positions.nbytes for positions in by_file.values())


class SharedDeletes:
    """The delete files of one scan's tasks, each read once for all the tasks that use it.

    Thread-safe: tasks read on a pool. A file is read by the first task that needs it while the
    others needing it wait, then each takes its part; when the last one has, the file is forgotten.
    A read that fails is not kept: the next task that needs the file reads it again.

    ``max_held_bytes`` bounds what is kept at once (None: no bound beyond the scan's own delete
    files). A file whose decoded size does not fit in what is left is not kept: the task that read
    it uses it, and every later task reads it as without sharing.
    """

    def __init__(self, io: FileIO, tasks: Iterable[FileScanTask], max_held_bytes: int | None = None) -> None:
        self._io = io
        self._max_held_bytes = max_held_bytes
        uses: Counter[_Key] = Counter()
        self._puffin_ends: dict[_Key, int] = {}
        """How much of each Puffin file the scan's deletion vectors need: up to the last one's end."""
        for task in tasks:
            for ref in task.deletes:
                f = ref.delete_file
                key = _key(f)
                uses[key] += 1
                if _is_puffin(f):
                    self._puffin_ends[key] = max(self._puffin_ends.get(key, 0), _blob_end(f))
        self._remaining = {k: n for k, n in uses.items() if n > 1}
        """Tasks still to take each shared file's part; a file not here is read task by task."""
        self._held: dict[_Key, tuple[object, int]] = {}
        """What is kept of each file read, with its size in bytes."""
        self._held_bytes = 0
        self._gates: dict[_Key, threading.Lock] = {}
        self._lock = threading.Lock()

    def position_deletes(self, delete_file: DataFile, data_path: str) -> np.ndarray:
        """Positions ``delete_file`` (Parquet, Avro or ORC) deletes from ``data_path`` (normalised)."""
        if not self._shares(delete_file):
            return read_position_delete_positions(self._io, delete_file, data_path)
        by_file = self._take(
            delete_file, lambda: read_position_deletes_by_file(self._io, delete_file), _positions_bytes
        )
        return by_file.get(data_path, _NO_POSITIONS)

    def dv_positions(self, dv_file: DataFile) -> np.ndarray:
        """Positions the deletion vector ``dv_file`` (a blob of a Puffin file) deletes.

        A Puffin file shared by tasks is read once, from its start up to the end of the last blob
        the scan needs (one request, as one blob's range would be), and each blob sliced from it.
        """
        needed = self._puffin_ends.get(_key(dv_file), 0)
        if not self._shares(dv_file) or needed > MAX_SHARED_PUFFIN_BYTES:
            return read_dv_positions(self._io, dv_file)
        head = self._take(dv_file, lambda: read_puffin_range(self._io, dv_file, 0, needed), len)
        return read_dv_positions(self._io, dv_file, puffin=head)

    def equality_keys(self, delete_file: DataFile, schema: Schema) -> pa.Table:
        """The distinct keys of the equality delete file (``read_equality_delete_keys``).

        ``schema`` is the scan's table schema, the same for all its tasks: a file's keys are
        kept by file and equality ids, not by schema.
        """
        if not self._shares(delete_file):
            return read_equality_delete_keys(self._io, delete_file, schema)
        return self._take(
            delete_file, lambda: read_equality_delete_keys(self._io, delete_file, schema), lambda t: t.nbytes
        )

    def holds(self, delete_file: DataFile) -> bool:
        """Whether ``delete_file`` is read and kept for tasks still to take their part."""
        with self._lock:
            return _key(delete_file) in self._held

    @property
    def held_bytes(self) -> int:
        """Bytes kept now for tasks still to take their part."""
        with self._lock:
            return self._held_bytes

    def _shares(self, delete_file: DataFile) -> bool:
        with self._lock:
            return _key(delete_file) in self._remaining

    def _take(self, delete_file: DataFile, load: Callable[[], T], size: Callable[[T], int]) -> T:
        """``load()``'s value for ``delete_file``, loaded by the first of its tasks and kept (when it
        fits) for the others; the last one to take it releases it."""
        key = _key(delete_file)
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:  # one task loads; the others needing the file wait for it, not read it too
            with self._lock:
                held = self._held.get(key)
            try:
                if held is not None:
                    return held[0]  # type: ignore[return-value]
                value = load()
                self._keep(key, value, size(value))
                return value
            finally:  # taken, or failed: either way this task will not ask again
                self._taken(key)

    def _keep(self, key: _Key, value: object, size: int) -> None:
        with self._lock:
            if key not in self._remaining or self._remaining[key] <= 1:
                return  # no task after this one needs it
            if self._max_held_bytes is not None and self._held_bytes + size > self._max_held_bytes:
                del self._remaining[key]  # too large to keep now: later tasks read it themselves
                return
            self._held[key] = (value, size)
            self._held_bytes += size

    def _taken(self, key: _Key) -> None:
        with self._lock:
            if key not in self._remaining:
                return
            self._remaining[key] -= 1
            if self._remaining[key] <= 0:  # the last task that needs it
                del self._remaining[key]
                self._gates.pop(key, None)
                _, size = self._held.pop(key, (None, 0))
                self._held_bytes -= size
