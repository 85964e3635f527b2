"""The Arrow rows of recent content-entry encodings, found again by row object identity.

A v4 commit's root carries its parent's inline rows on as the same objects (the parent root as
this process wrote it, :mod:`icefloe.tree.v4_written_root`). Encoding a root converted every
carried row again: building its struct value, turning the values into Arrow and filling required
members was most of the CPU of writing a small append's root, which a REST server rebasing
stale appends does once per commit. The encoder keeps the Arrow rows of its last few small
encodings; a row met again (the same object, or one registered with :meth:`EncodedRows.alias` as
encoding identically) is sliced from there, and only the rows not seen are encoded.

Rows are immutable (frozen dataclasses). An encoding holds its rows strongly, so an identity stays
unique while it is cached, and every lookup also checks the object itself.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

Row = TypeVar("Row")

MAX_ENCODINGS = 8
"""Encodings kept (a few tables committing at once in one process each find their parent's)."""

MAX_ROWS = 4096
"""Larger encodings (leaves) are not kept: their rows are rarely encoded again as the same objects."""


@dataclass
class _Encoding:
    key: tuple[Hashable, ...]
    array: pa.Array
    objects: dict[int, tuple[object, int]]  # id(row) -> (row, position in array)

    def position(self, row: object) -> int | None:
        found = self.objects.get(id(row))
        return found[1] if found is not None and found[0] is row else None


class EncodedRows:
    """Recent encodings of rows to Arrow struct arrays, by an encoder key (see the module doc)."""

    def __init__(self, max_encodings: int = MAX_ENCODINGS, max_rows: int = MAX_ROWS) -> None:
        self._recent: deque[_Encoding] = deque(maxlen=max_encodings)
        self._max_rows = max_rows
        self._lock = threading.Lock()

    def encode(
        self,
        key: tuple[Hashable, ...],
        rows: Sequence[Row],
        encode: Callable[[list[Row]], pa.Array],
    ) -> pa.Array:
        """``encode(rows)``, reusing the Arrow rows of earlier encodings under the same ``key``.

        ``key`` names everything the encoding depends on besides the row (compared with ``==``,
        which compares identical objects as equal without calling their ``__eq__``).
        """
        if not rows or len(rows) > self._max_rows:
            return encode(list(rows))
        with self._lock:
            candidates = [e for e in reversed(self._recent) if e.key == key]
        found: list[tuple[_Encoding, int] | None] = []
        for row in rows:
            hit = None
            for enc in candidates:
                pos = enc.position(row)
                if pos is not None:
                    hit = (enc, pos)
                    break
            found.append(hit)
        new_rows = [row for row, hit in zip(rows, found, strict=True) if hit is None]
        encoded_new = encode(new_rows) if new_rows else None
        array = _assemble(found, encoded_new)
        objects: dict[int, tuple[object, int]] = {id(row): (row, i) for i, row in enumerate(rows)}
        with self._lock:
            self._recent.append(_Encoding(key, array, objects))
        return array

    def alias(self, pairs: Iterable[tuple[object, object]]) -> None:
        """Register each ``(row, same)``: ``same`` encodes exactly as ``row`` does, wherever ``row``
        was encoded recently (e.g. a row and the form a reader decodes it to)."""
        with self._lock:
            for row, same in pairs:
                for enc in self._recent:
                    pos = enc.position(row)
                    if pos is not None:
                        enc.objects[id(same)] = (same, pos)

    def clear(self) -> None:
        """Forget every encoding."""
        with self._lock:
            self._recent.clear()


def _assemble(found: list[tuple[_Encoding, int] | None], encoded_new: pa.Array | None) -> pa.Array:
    """The rows in order: runs of consecutive cached positions as slices, new rows from ``encoded_new``."""
    pieces: list[pa.Array] = []
    run_source: pa.Array | None = None
    run_start = run_end = 0
    next_new = 0
    for hit in found:
        if hit is None:
            assert encoded_new is not None
            source, pos = encoded_new, next_new
            next_new += 1
        else:
            source, pos = hit[0].array, hit[1]
        if source is run_source and pos == run_end:
            run_end += 1
            continue
        if run_source is not None:
            pieces.append(run_source.slice(run_start, run_end - run_start))
        run_source, run_start, run_end = source, pos, pos + 1
    if run_source is not None:
        pieces.append(run_source.slice(run_start, run_end - run_start))
    if len(pieces) == 1:
        return pieces[0]
    return pa.concat_arrays(pieces)


ENCODED_ROWS = EncodedRows()
"""The process's cache, used by :func:`icefloe.formats.v4.content_entry.encode_content_entries`."""
