"""Gzip for metadata files that recompresses only what changed since the table's last write.

A metadata file of a table with a long history is mostly its snapshot array and snapshot-log,
and one commit only appends to them. The gzip member written here is one ordinary deflate
stream (any gzip reader decompresses it) built from independently produced segments, each
ending on a byte boundary with a sync flush:

- the text between the long arrays is compressed afresh every time (it is small);
- the body of a long array (``json_codec.table_metadata_json_chunks``) is compressed by a
  compressor kept from the previous write when the old body is a prefix of the new one: a copy of
  that compressor compresses just the appended text, whose back-references stay inside the
  array. Otherwise, or when the appended segments have grown past a quarter of the array's
  compressed size (short sync-flushed blocks compress less well), the array is compressed anew.

The stream ends with an empty final block; the gzip trailer carries the CRC-32 and length of
the whole text, as RFC 1952 requires.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.lru import LockedLruCache

LEVEL = 6  # java.util.zip.GZIPOutputStream's default (Deflater.DEFAULT_COMPRESSION)
INCREMENTAL_MIN_BYTES = 16 * 1024
"""Array bodies shorter than this are compressed afresh each time (nothing worth keeping)."""
REBUILD_FRACTION = 4
"""Recompress an array once its appended segments exceed 1/REBUILD_FRACTION of its base."""
_TABLES = 8
# gzip header: magic, deflate, no flags, mtime 0, no extra flags, OS "unknown" (as gzip.compress)
_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_FINAL_EMPTY_BLOCK = zlib.compressobj(LEVEL, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)


@dataclass(frozen=True)
class _Compressed:
    """A compressed array body and the compressor state after its last sync flush."""

    raw: bytes  # the body's UTF-8
    data: bytes
    compressor: Any  # zlib.Compress, positioned after ``raw``
    base_size: int  # compressed size when the body was last compressed from scratch


_state: LockedLruCache[str, list[_Compressed | None]] = LockedLruCache(_TABLES)
"""Each table's compressed array bodies, by the last ``_TABLES`` tables written (a read of them
does not refresh them; the lists are never changed once kept)."""


def gzip_chunks(chunks: Sequence[bytes], table_key: str) -> bytes:
    """Gzip the concatenation of ``chunks`` (odd ones: growing array bodies) for table ``table_key``."""
    previous = _state.peek(table_key) or []
    kept: list[_Compressed | None] = []
    out = [_HEADER]
    crc = 0
    size = 0
    for i, raw in enumerate(chunks):
        crc = zlib.crc32(raw, crc)
        size += len(raw)
        if i % 2 == 1 and len(raw) >= INCREMENTAL_MIN_BYTES:
            ordinal = i // 2
            last = previous[ordinal] if ordinal < len(previous) else None
            compressed = _compress_array(raw, last)
            kept.append(compressed)
            out.append(compressed.data)
        else:
            if i % 2 == 1:
                kept.append(None)
            out.append(_segment(raw))
    out += (_FINAL_EMPTY_BLOCK, struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))
    _state.put(table_key, kept)
    return b"".join(out)


def _segment(raw: bytes) -> bytes:
    """A self-contained deflate segment of ``raw`` ending with a sync flush."""
    c = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush(zlib.Z_SYNC_FLUSH)


def _compress_array(raw: bytes, last: _Compressed | None) -> _Compressed:
    """Extend ``last`` when its text is a prefix of ``raw``; otherwise compress from scratch."""
    if last is not None and len(raw) >= len(last.raw) and raw.startswith(last.raw):
        if len(raw) == len(last.raw):
            return last
        c = last.compressor.copy()
        tail = raw[len(last.raw) :]
        data = last.data + c.compress(tail) + c.flush(zlib.Z_SYNC_FLUSH)
        if (len(data) - last.base_size) * REBUILD_FRACTION <= last.base_size:
            return _Compressed(raw, data, c, last.base_size)
    c = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    data = c.compress(raw) + c.flush(zlib.Z_SYNC_FLUSH)
    return _Compressed(raw, data, c, len(data))


def clear_gzip_state() -> None:
    """Forget the kept compressors (the next write of every table compresses from scratch)."""
    _state.clear()
