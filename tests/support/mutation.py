"""Deterministic byte mutations of metadata and data files, for the fuzz suite (tests/fuzz/).

:func:`mutants` yields ``(label, bytes)`` pairs from a seeded ``random.Random``: the same seed and
file give the same mutants on every machine. Mutations:

- ``flip``: one bit flipped;
- ``byte``: one byte replaced by a boundary value (0x00, 0x01, 0x7F, 0x80, 0xFF);
- ``trunc``: the file cut at a random length;
- ``field``: a length or count field rewritten to 0, -1 or a huge value. Avro files: the record
  count or byte size of a data block, or a key/value length of the header (zig-zag varints);
  Parquet and Puffin files: the 4-byte little-endian footer length before the trailing magic;
  other files (JSON): a run of digits replaced.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

BOUNDARY_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF)
FIELD_VALUES = (0, -1, 2**31 - 1, 2**62, -(2**40))


def zigzag(value: int) -> bytes:
    """The Avro (zig-zag varint) encoding of a long."""
    acc = (value << 1) ^ (value >> 63)
    out = bytearray()
    while acc > 0x7F:
        out.append((acc & 0x7F) | 0x80)
        acc >>= 7
    out.append(acc)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = acc = 0
    while True:
        b = data[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            return (acc >> 1) ^ -(acc & 1), pos
        shift += 7


def avro_fields(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` byte spans of the varint length/count fields of a well-formed Avro file."""
    spans: list[tuple[int, int]] = []
    pos = 4
    while True:  # header map blocks
        start = pos
        count, pos = _read_varint(data, pos)
        spans.append((start, pos))
        if count == 0:
            break
        for _ in range(abs(count)):
            for _part in range(2):
                start = pos
                length, pos = _read_varint(data, pos)
                spans.append((start, pos))
                pos += length
    pos += 16
    while pos < len(data):  # data blocks: count, size, bytes, sync
        start = pos
        _, pos = _read_varint(data, pos)
        spans.append((start, pos))
        start = pos
        size, pos = _read_varint(data, pos)
        spans.append((start, pos))
        pos += size + 16
    return spans


def _field_mutant(data: bytes, rng: random.Random) -> bytes:
    value = rng.choice(FIELD_VALUES)
    if data[:4] == b"Obj\x01":
        start, end = rng.choice(avro_fields(data))
        return data[:start] + zigzag(value) + data[end:]
    if data[-4:] in (b"PAR1", b"PFA1") and len(data) > 12:
        at = len(data) - 8 if data[-4:] == b"PAR1" else len(data) - 12
        raw = (value & 0xFFFFFFFF).to_bytes(4, "little")
        return data[:at] + raw + data[at + 4 :]
    numbers = [m.span() for m in re.finditer(rb"-?\d+", data)]
    if not numbers:
        return data
    start, end = rng.choice(numbers)
    return data[:start] + str(value).encode() + data[end:]


def mutant(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutant of ``data`` and a label saying what changed."""
    kind = rng.choice(("flip", "flip", "byte", "byte", "trunc", "field", "field"))
    if kind == "flip":
        at = rng.randrange(len(data))
        bit = rng.randrange(8)
        return f"flip byte {at} bit {bit}", data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1 :]
    if kind == "byte":
        at = rng.randrange(len(data))
        value = rng.choice(BOUNDARY_BYTES)
        return f"byte {at} = {value:#04x}", data[:at] + bytes([value]) + data[at + 1 :]
    if kind == "trunc":
        at = rng.randrange(len(data))
        return f"truncate at {at}", data[:at]
    return "length/count field", _field_mutant(data, rng)


def mutants(data: bytes, seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    """``count`` mutants of ``data`` (never the original bytes), reproducible from ``seed``."""
    rng = random.Random(seed)
    made = 0
    while made < count:
        label, out = mutant(data, rng)
        if out != data:
            made += 1
            yield label, out
