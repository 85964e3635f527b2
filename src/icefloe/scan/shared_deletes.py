"""Delete files read once per scan and shared by the tasks they apply to.

A position delete file written by one row-level commit usually covers many data files, and a
Puffin file holds the deletion vectors of every data file one commit touched. Read task by task,
each task fetched the whole delete file again (and, for a Puffin file, asked the store for its
size again): eight reads of one file for a scan of eight data files. :class:`SharedDeletes` is
made by a scan that holds its whole plan (``reader.read_tasks``). It counts the tasks that use each
delete file, and for a file more than one task uses:

- a position delete file is decoded once into positions per data file (8 bytes a row; its path
  column is dropped as soon as the file is grouped), each task taking its own data file's;
- a Puffin file is read once (from its start to the end of the last deletion vector the scan
  needs, up to :data:`MAX_SHARED_PUFFIN_BYTES`), each task decoding its own vector from those
  bytes: one size request and one read instead of one of each per task.

What is kept is released when the last task that needs it has taken its part, so a scan holds a
decoded file only while tasks for it remain (Iceberg Java's executor cache keeps decoded deletes
by size instead, for a process's later scans too). A file no other task uses is read as before,
narrowly: positions for one data file, one deletion vector by its range. Spark executors read
their own task with no ``SharedDeletes``: each reads only what its data file needs.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

from icefloe.io.fileio import FileIO
from icefloe.scan.delete_readers import (
    read_dv_positions,
    read_position_delete_positions,
    read_position_deletes_by_file,
    read_puffin_range,
)
from icefloe.scan.tasks import FileScanTask
from icefloe.spec.content import DataFile, FileContent

MAX_SHARED_PUFFIN_BYTES = 16 * 1024 * 1024
"""Past this, a Puffin file is read blob by blob, as without sharing (the blobs between may be
of data files the scan does not read)."""

T = TypeVar("T")
_Key = tuple[str, int]
_NO_POSITIONS = np.empty(0, dtype=np.int64)


def _key(delete_file: DataFile) -> _Key:
    """Delete files are immutable: a location and size name one content. A deletion vector's
    Puffin file goes by location alone (a v4 entry records the blob's size, not the file's)."""
    if _is_puffin(delete_file):
        return delete_file.file_path, -1
    return delete_file.file_path, delete_file.file_size_in_bytes


def _is_puffin(delete_file: DataFile) -> bool:
    return delete_file.file_format.lower() == "puffin"


def _blob_end(dv_file: DataFile) -> int:
    return (dv_file.content_offset or 0) + (dv_file.content_size_in_bytes or 0)


class SharedDeletes:
    """The delete files of one scan's tasks, each read once for all the tasks that use it.

    Thread-safe: tasks read on a pool. A file is read by the first task that needs it while the
    others needing it wait, then each takes its part; when the last one has, the file is forgotten.
    """

    def __init__(self, io: FileIO, tasks: Iterable[FileScanTask]) -> None:
        self._io = io
        uses: Counter[_Key] = Counter()
        self._puffin_ends: dict[_Key, int] = {}
        """How much of each Puffin file the scan's deletion vectors need: up to the last one's end."""
        for task in tasks:
            for ref in task.deletes:
                f = ref.delete_file
                if f.content != FileContent.POSITION_DELETES:
                    continue
                key = _key(f)
                uses[key] += 1
                if _is_puffin(f):
                    self._puffin_ends[key] = max(self._puffin_ends.get(key, 0), _blob_end(f))
        self._remaining = {k: n for k, n in uses.items() if n > 1}
        self._held: dict[_Key, object] = {}
        self._gates: dict[_Key, threading.Lock] = {}
        self._lock = threading.Lock()

    def position_deletes(self, delete_file: DataFile, data_path: str) -> np.ndarray:
        """Positions ``delete_file`` (Parquet, Avro or ORC) deletes from ``data_path`` (normalised)."""
        if _key(delete_file) not in self._remaining:
            return read_position_delete_positions(self._io, delete_file, data_path)
        by_file = self._take(delete_file, lambda: read_position_deletes_by_file(self._io, delete_file))
        return by_file.get(data_path, _NO_POSITIONS)

    def dv_positions(self, dv_file: DataFile) -> np.ndarray:
        """Positions the deletion vector ``dv_file`` (a blob of a Puffin file) deletes.

        A Puffin file shared by tasks is read once, from its start up to the end of the last blob
        the scan needs (one request, as one blob's range would be), and each blob sliced from it.
        """
        key = _key(dv_file)
        needed = self._puffin_ends.get(key, 0)
        if key not in self._remaining or needed > MAX_SHARED_PUFFIN_BYTES:
            return read_dv_positions(self._io, dv_file)
        head = self._take(dv_file, lambda: read_puffin_range(self._io, dv_file, 0, needed))
        return read_dv_positions(self._io, dv_file, puffin=head)

    def holds(self, delete_file: DataFile) -> bool:
        """Whether ``delete_file`` is read and kept for tasks still to take their part."""
        with self._lock:
            return _key(delete_file) in self._held

    def _take(self, delete_file: DataFile, load: Callable[[], T]) -> T:
        """``load()``'s value for ``delete_file``, loaded by the first of its tasks; the last one to
        take it releases it."""
        key = _key(delete_file)
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:  # one task loads; the others needing the file wait for it, not read it too
            with self._lock:
                found = key in self._held
                value = self._held.get(key)
            if not found:
                value = load()
                with self._lock:
                    self._held[key] = value
            with self._lock:
                self._remaining[key] -= 1
                if self._remaining[key] <= 0:  # the last task that needs it
                    self._held.pop(key, None)
        return value  # type: ignore[return-value]
