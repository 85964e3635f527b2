"""Mumbling v1 bitmaps (``format/mumbling-spec.md``), the v4 manifest deletion-vector encoding.

Layout (all integers unsigned little-endian):

* header: version ``0x01`` (1 byte), cardinality (3 bytes), container count (2 bytes);
* the descriptor array, one byte per 256-position container, PFOR-encoded;
* the containers, concatenated. A descriptor with bit 5 clear is a *sparse* container whose
  low 5 bits are its length: that many ascending offset bytes (< 32 positions). Bit 5 set is a
  *dense* container: 32 bytes, MSB-first (position 0 = bit 7 of byte 0). Bits 7-6 are reserved.

Positions are limited to ``[0, 2**21)`` (8,192 containers of 256 bits).

PFOR (Appendix A) packs the descriptor array in chunks of 256 values: a 3-byte header
(``b1`` low nibble / ``b2`` high nibble, exception count ``e``, subtracted constant ``m``),
the low ``b1`` bits of every value packed MSB-first, ``e`` exception offsets (1 byte each)
and the high ``b2`` bits of each exception packed MSB-first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import pairwise

from pyroaring import BitMap

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.puffin.roaring64 import PositionBitmap

__all__ = [
    "HEADER_SIZE",
    "MAX_CONTAINERS",
    "MAX_POSITION",
    "VERSION",
    "cardinality_of",
    "decode",
    "decode_bitmap",
    "encode",
    "pfor_decode",
    "pfor_encode",
]

VERSION = 1
HEADER_SIZE = 6
MAX_CONTAINERS = 8192
MAX_POSITION = MAX_CONTAINERS * 256 - 1  # 2**21 - 1
CHUNK = 256

_DENSE = 0x20
_SPARSE_LEN = 0x1F
_DENSE_MIN = 32
_DENSE_BYTES = 32

#: For each byte value, the in-byte offsets of its set bits, MSB first (bit 7 -> offset 0).
_MSB_OFFSETS: tuple[tuple[int, ...], ...] = tuple(
    tuple(k for k in range(8) if byte & (0x80 >> k)) for byte in range(256)
)

Bytes = bytes | bytearray | memoryview


def _fail(source: str | None, message: str) -> CorruptMetadata:
    prefix = f"{source}: " if source else ""
    return CorruptMetadata(f"{prefix}invalid Mumbling bitmap: {message}")


# -- bit packing --------------------------------------------------------------------------


def _pack_msb(values: Sequence[int], width: int) -> bytes:
    """Pack ``width``-bit values MSB-first, zero-padded to a whole byte."""
    if width == 0 or not values:
        return b""
    acc = 0
    for value in values:
        acc = (acc << width) | value
    bits = len(values) * width
    pad = -bits % 8
    return (acc << pad).to_bytes((bits + pad) // 8, "big")


def _unpack_msb(data: bytes, count: int, width: int) -> list[int]:
    """Inverse of ``_pack_msb``."""
    if width == 0:
        return [0] * count
    acc = int.from_bytes(data, "big")
    total = len(data) * 8
    mask = (1 << width) - 1
    return [(acc >> (total - (i + 1) * width)) & mask for i in range(count)]


# -- PFOR ---------------------------------------------------------------------------------


def _choose_width(counts: list[int], n: int, max_width: int) -> int:
    """The ``b1`` minimising primary + exception bytes (ties: the smallest ``b1``)."""
    best_width, best_size = max_width, -1
    for width in range(max_width + 1):
        exceptions = sum(counts[width + 1 :])
        if exceptions > 255:
            continue
        b2 = max_width - width
        size = (n * width + 7) // 8 + exceptions + (exceptions * b2 + 7) // 8
        if best_size < 0 or size < best_size:
            best_width, best_size = width, size
    return best_width


def _encode_chunk(chunk: Sequence[int], out: bytearray) -> None:
    n = len(chunk)
    base = min(chunk)
    normalized = [v - base for v in chunk]
    widths = [v.bit_length() for v in normalized]
    max_width = max(widths)
    counts = [0] * 9
    for w in widths:
        counts[w] += 1
    b1 = _choose_width(counts, n, max_width)
    if b1 == 8:  # values stored as-is, no exceptions
        out += bytes((8, 0, 0))
        out += bytes(chunk)
        return
    b2 = max_width - b1
    low_mask = (1 << b1) - 1
    exceptions = [i for i, w in enumerate(widths) if w > b1]
    out += bytes(((b2 << 4) | b1, len(exceptions), base))
    out += _pack_msb([v & low_mask for v in normalized], b1)
    out += bytes(exceptions)
    out += _pack_msb([normalized[i] >> b1 for i in exceptions], b2)


def pfor_encode(values: Sequence[int]) -> bytes:
    """PFOR-encode unsigned bytes in chunks of 256 (Mumbling spec, Appendix A)."""
    if any(not 0 <= v <= 255 for v in values):
        raise ValidationError("PFOR values must be unsigned bytes (0-255)")
    out = bytearray()
    for start in range(0, len(values), CHUNK):
        _encode_chunk(values[start : start + CHUNK], out)
    return bytes(out)


def _decode_chunk(data: bytes, pos: int, n: int, source: str | None) -> tuple[list[int], int]:
    if pos + 3 > len(data):
        raise _fail(source, f"PFOR chunk header truncated at byte {pos}")
    widths, e, m = data[pos], data[pos + 1], data[pos + 2]
    b1, b2 = widths & 0x0F, widths >> 4
    if b1 > 8 or b2 > 8 - b1:
        raise _fail(source, f"PFOR chunk at byte {pos} has bad bit widths b1={b1}, b2={b2}")
    if e > n or (b1 == 8 and e):
        raise _fail(source, f"PFOR chunk at byte {pos} has {e} exceptions for {n} values")
    pos += 3
    primary_len = (n * b1 + 7) // 8
    exc_len = (e * b2 + 7) // 8
    end = pos + primary_len + e + exc_len
    if end > len(data):
        raise _fail(source, f"PFOR chunk starting near byte {pos - 3} is truncated")
    values = _unpack_msb(data[pos : pos + primary_len], n, b1)
    pos += primary_len
    offsets = data[pos : pos + e]
    pos += e
    highs = _unpack_msb(data[pos : pos + exc_len], e, b2)
    for offset, high in zip(offsets, highs, strict=True):
        if offset >= n:
            raise _fail(source, f"PFOR exception offset {offset} out of range for a chunk of {n}")
        values[offset] |= high << b1
    if m:
        values = [v + m for v in values]
        if max(values) > 255:
            raise _fail(source, "PFOR value overflows a byte")
    return values, end


def _pfor_decode_at(data: bytes, pos: int, count: int, source: str | None) -> tuple[list[int], int]:
    values: list[int] = []
    while len(values) < count:
        chunk, pos = _decode_chunk(data, pos, min(CHUNK, count - len(values)), source)
        values.extend(chunk)
    return values, pos


def pfor_decode(data: Bytes, count: int, *, source: str | None = None) -> list[int]:
    """Decode exactly ``count`` PFOR-encoded bytes from ``data`` (which must hold nothing else)."""
    raw = bytes(data)
    values, end = _pfor_decode_at(raw, 0, count, source)
    if end != len(raw):
        raise _fail(source, f"{len(raw) - end} trailing bytes after the PFOR array")
    return values


# -- bitmaps ------------------------------------------------------------------------------


def _sorted_positions(positions: Iterable[int]) -> list[int]:
    if isinstance(positions, PositionBitmap):
        top = positions.max()
        if top is not None and top > MAX_POSITION:
            return [top]  # rejected by the range check, without materialising the bitmap
        return positions.to_list()
    if isinstance(positions, BitMap):
        return positions.to_array().tolist()
    return sorted(set(positions))


def encode(positions: Iterable[int]) -> bytes:
    """Encode a set of row positions (each in ``[0, 2**21)``) as a Mumbling v1 bitmap."""
    values = _sorted_positions(positions)
    if values and (values[0] < 0 or values[-1] > MAX_POSITION):
        bad = values[0] if values[0] < 0 else values[-1]
        raise ValidationError(
            f"Position {bad} cannot be stored in a Mumbling bitmap: positions must be in [0, {MAX_POSITION}]"
        )
    count = (values[-1] >> 8) + 1 if values else 0
    descriptors = bytearray(count)
    body = bytearray()
    i, n = 0, len(values)
    while i < n:
        container = values[i] >> 8
        j = bisect_left(values, (container + 1) << 8, i)
        if j - i < _DENSE_MIN:
            descriptors[container] = j - i
            body += bytes(v & 0xFF for v in values[i:j])
        else:
            descriptors[container] = _DENSE
            block = bytearray(_DENSE_BYTES)
            for v in values[i:j]:
                block[(v & 0xFF) >> 3] |= 0x80 >> (v & 7)
            body += block
        i = j
    header = bytes((VERSION,)) + n.to_bytes(3, "little") + count.to_bytes(2, "little")
    return header + pfor_encode(descriptors) + bytes(body)


def _read_header(raw: bytes, source: str | None) -> tuple[int, int]:
    if len(raw) < HEADER_SIZE:
        raise _fail(source, f"truncated header ({len(raw)} bytes, need {HEADER_SIZE})")
    if raw[0] != VERSION:
        raise _fail(source, f"unsupported version byte 0x{raw[0]:02x} (expected 0x01)")
    cardinality = int.from_bytes(raw[1:4], "little")
    count = int.from_bytes(raw[4:6], "little")
    if count > MAX_CONTAINERS:
        raise _fail(source, f"container count {count} exceeds {MAX_CONTAINERS}")
    if cardinality > count * 256:
        raise _fail(source, f"cardinality {cardinality} exceeds the capacity of {count} containers")
    return cardinality, count


def cardinality_of(data: Bytes, *, source: str | None = None) -> int:
    """The number of set positions, read from the header only."""
    return _read_header(bytes(data[:HEADER_SIZE]), source)[0]


def decode(data: Bytes, *, source: str | None = None) -> list[int]:
    """Decode a Mumbling v1 bitmap into its ascending list of positions."""
    raw = bytes(data)
    cardinality, count = _read_header(raw, source)
    descriptors, pos = _pfor_decode_at(raw, HEADER_SIZE, count, source)
    size = len(raw)
    out: list[int] = []
    for container, descriptor in enumerate(descriptors):
        base = container << 8
        if descriptor & _DENSE:
            if pos + _DENSE_BYTES > size:
                raise _fail(source, f"dense container {container} truncated")
            for index in range(_DENSE_BYTES):
                byte = raw[pos + index]
                if byte:
                    start = base + (index << 3)
                    out.extend(start + k for k in _MSB_OFFSETS[byte])
            pos += _DENSE_BYTES
        else:
            length = descriptor & _SPARSE_LEN
            if not length:
                continue
            chunk = raw[pos : pos + length]
            if len(chunk) != length:
                raise _fail(source, f"sparse container {container} truncated")
            if any(a >= b for a, b in pairwise(chunk)):
                raise _fail(source, f"sparse container {container} is not strictly ascending")
            out.extend(base + b for b in chunk)
            pos += length
    if pos != size:
        raise _fail(source, f"{size - pos} trailing bytes after the containers")
    if len(out) != cardinality:
        raise _fail(source, f"header cardinality {cardinality} but containers hold {len(out)} positions")
    return out


def decode_bitmap(data: Bytes, *, source: str | None = None) -> PositionBitmap:
    """Decode a Mumbling v1 bitmap into a PositionBitmap."""
    bitmap = PositionBitmap()
    positions = decode(data, source=source)
    if positions:
        bitmap.update(BitMap(positions))
    return bitmap
