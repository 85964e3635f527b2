"""Tests for the 64-bit position bitmap and its portable Roaring serialisation."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap, BitMap64

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.puffin.roaring64 import MAX_KEY, MAX_POSITION, PositionBitmap, portable32_extent

# -- an independent reference encoder for the portable 32-bit format (RoaringFormatSpec) --------


def _runs(values: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] + 1 == v:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((v, 0))
    return runs


def reference_portable32(values: set[int]) -> bytes:
    """Portable 32-bit Roaring bytes, choosing run containers when strictly smaller."""
    by_key: dict[int, list[int]] = {}
    for v in sorted(values):
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(by_key)
    containers: list[tuple[str, bytes]] = []
    for key in keys:
        lows = by_key[key]
        plain_size = 2 * len(lows) if len(lows) <= 4096 else 8192
        runs = _runs(lows)
        if 2 + 4 * len(runs) < plain_size:
            body = struct.pack("<H", len(runs)) + b"".join(struct.pack("<HH", s, n) for s, n in runs)
            containers.append(("run", body))
        elif len(lows) <= 4096:
            containers.append(("array", struct.pack(f"<{len(lows)}H", *lows)))
        else:
            words = [0] * 1024
            for low in lows:
                words[low // 64] |= 1 << (low % 64)
            containers.append(("bitset", struct.pack("<1024Q", *words)))
    count = len(keys)
    has_run = any(kind == "run" for kind, _ in containers)
    if has_run:
        flags = bytearray((count + 7) // 8)
        for i, (kind, _) in enumerate(containers):
            if kind == "run":
                flags[i // 8] |= 1 << (i % 8)
        head = struct.pack("<I", 12347 | ((count - 1) << 16)) + bytes(flags)
    else:
        head = struct.pack("<II", 12346, count)
    desc = b"".join(struct.pack("<HH", key, len(by_key[key]) - 1) for key in keys)
    with_offsets = not has_run or count >= 4
    start = len(head) + len(desc) + (4 * count if with_offsets else 0)
    offsets = b""
    if with_offsets:
        for _, body in containers:
            offsets += struct.pack("<I", start)
            start += len(body)
    return head + desc + offsets + b"".join(body for _, body in containers)


def reference_portable64(positions: set[int]) -> bytes:
    """Portable 64-bit Roaring bytes (non-empty keys only)."""
    by_key: dict[int, set[int]] = {}
    for p in positions:
        by_key.setdefault(p >> 32, set()).add(p & 0xFFFFFFFF)
    out = struct.pack("<Q", len(by_key))
    for key in sorted(by_key):
        out += struct.pack("<I", key) + reference_portable32(by_key[key])
    return out


def _optimized(values: set[int]) -> BitMap:
    bitmap = BitMap(values)
    bitmap.run_optimize()
    return bitmap


SHAPES = {
    "empty": set(),
    "array": {1, 2, 3, 100000},
    "bitset": set(range(0, 20000, 2)),
    "run": set(range(1000, 3000)),
    "mixed_3_containers_with_run": set(range(10, 500)) | {70000, 70002} | set(range(140000, 150000, 2)),
    "mixed_5_containers_with_run": set(range(0, 300))
    | {65536 + 7}
    | set(range(131072, 131072 + 9000, 2))
    | set(range(196608, 196608 + 70))
    | {4_000_000_000},
    "no_run_many_containers": {k * 65536 + 3 for k in range(10)},
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_pyroaring_32bit_serialisation_is_the_portable_format(shape: str) -> None:
    values = SHAPES[shape]
    data = _optimized(values).serialize()
    assert data == reference_portable32(values)
    assert struct.unpack_from("<I", data)[0] & 0xFFFF in (12346, 12347)
    assert portable32_extent(data + b"junk", 0) == len(data)


def test_cookie_values() -> None:
    assert _optimized({1, 2, 3}).serialize()[:4] == struct.pack("<I", 12346)
    assert _optimized(set(range(100))).serialize()[:2] == struct.pack("<H", 12347)
    assert BitMap().serialize() == struct.pack("<II", 12346, 0)


def test_exact_64bit_layout() -> None:
    bitmap = PositionBitmap([0, 5, (1 << 32) + 3])
    expected = (
        struct.pack("<Q", 2)
        + struct.pack("<I", 0)
        + struct.pack("<IIHHI", 12346, 1, 0, 1, 16)
        + struct.pack("<HH", 0, 5)
        + struct.pack("<I", 1)
        + struct.pack("<IIHHI", 12346, 1, 0, 0, 16)
        + struct.pack("<H", 3)
    )
    assert bitmap.serialize() == expected
    assert bitmap.serialize() == BitMap64([0, 5, (1 << 32) + 3]).serialize()
    assert PositionBitmap.deserialize(expected) == bitmap


def test_empty_bitmap_serialisation() -> None:
    assert PositionBitmap().serialize() == b"\0" * 8
    assert PositionBitmap.deserialize(b"\0" * 8).is_empty()


def test_reads_sparse_keys_and_empty_bitmaps() -> None:
    empty32 = struct.pack("<II", 12346, 0)
    # Java-style dense key range: keys 0..2 with empty bitmaps at 0 and 1
    java_style = (
        struct.pack("<Q", 3)
        + struct.pack("<I", 0)
        + empty32
        + struct.pack("<I", 1)
        + empty32
        + struct.pack("<I", 2)
        + BitMap([7]).serialize()
    )
    bitmap = PositionBitmap.deserialize(java_style)
    assert bitmap.to_list() == [(2 << 32) + 7]
    assert bitmap.keys() == [2]
    sparse = struct.pack("<Q", 2) + struct.pack("<I", 0) + BitMap([1]).serialize()
    sparse += struct.pack("<I", 9) + BitMap([2]).serialize()
    assert PositionBitmap.deserialize(sparse).to_list() == [1, (9 << 32) + 2]


def test_reads_run_array_and_bitset_containers() -> None:
    values = SHAPES["mixed_5_containers_with_run"]
    data = struct.pack("<QI", 1, 0) + reference_portable32(values)
    assert PositionBitmap.deserialize(data).to_list() == sorted(values)


@pytest.mark.parametrize(
    ("key", "message"),
    [(0x80000000, "negative"), (0xFFFFFFFF, "negative"), (2**31 - 1, "too large")],
)
def test_rejects_negative_and_oversized_keys(key: int, message: str) -> None:
    data = struct.pack("<QI", 1, key) + BitMap([1]).serialize()
    with pytest.raises(CorruptMetadata, match=message) as info:
        PositionBitmap.deserialize(data, source="s3://bucket/x.puffin")
    assert "s3://bucket/x.puffin" in str(info.value)


def test_accepts_the_largest_key() -> None:
    data = struct.pack("<QI", 1, MAX_KEY) + BitMap([0xFFFFFFFF]).serialize()
    assert PositionBitmap.deserialize(data).to_list() == [MAX_POSITION]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x01\0\0\0",
        struct.pack("<Q", 1),  # count 1, nothing follows
        struct.pack("<Q", 2**40) + b"\0" * 12,  # absurd count
        struct.pack("<QI", 1, 0) + struct.pack("<II", 99999, 0),  # bad cookie
        struct.pack("<QI", 1, 0) + BitMap([1, 2, 3]).serialize()[:-1],  # truncated container
        struct.pack("<QI", 1, 0) + BitMap([1]).serialize() + b"\0",  # trailing byte
        struct.pack("<QI", 2, 3) + BitMap([1]).serialize() + struct.pack("<I", 1) + BitMap([1]).serialize(),
        struct.pack("<QI", 1, 0) + struct.pack("<IIHHI", 12346, 1, 0, 1, 16) + struct.pack("<HH", 5, 3),
        struct.pack("<QI", 1, 0) + struct.pack("<II", 12346, 70000),
    ],
)
def test_rejects_corrupt_input(data: bytes) -> None:
    with pytest.raises(CorruptMetadata, match=r"f\.puffin"):
        PositionBitmap.deserialize(data, source="f.puffin")


def test_add_contains_cardinality_and_order() -> None:
    bitmap = PositionBitmap()
    for pos in [(3 << 32) + 1, 10, 2, (1 << 32), 10]:
        bitmap.add(pos)
    assert bitmap.cardinality() == len(bitmap) == 4
    assert list(bitmap) == [2, 10, 1 << 32, (3 << 32) + 1]
    assert bitmap.contains(10) and 10 in bitmap and (3 << 32) + 1 in bitmap
    assert not bitmap.contains(11) and -1 not in bitmap and (5 << 32) not in bitmap
    assert bitmap.max() == (3 << 32) + 1
    assert PositionBitmap().max() is None
    assert not PositionBitmap() and bitmap


def test_add_range_across_keys() -> None:
    start, stop = (1 << 32) - 3, (2 << 32) + 2
    bitmap = PositionBitmap.from_range(start, stop)
    assert bitmap.cardinality() == stop - start
    assert bitmap.keys() == [0, 1, 2]
    assert start in bitmap and stop - 1 in bitmap and stop not in bitmap and start - 1 not in bitmap
    empty = PositionBitmap()
    empty.add_range(5, 5)
    assert empty.is_empty()


def test_update_from_many_sources() -> None:
    expected = [1, 2, 3, (1 << 32) + 4, (7 << 32) + 9]
    for source in (
        expected,
        iter(expected),
        pa.array(expected, pa.int64()),
        pa.chunked_array([pa.array(expected[:2], pa.uint64()), pa.array(expected[2:], pa.uint64())]),
        PositionBitmap(expected),
    ):
        assert PositionBitmap(source).to_list() == expected
    assert PositionBitmap(range(5, 9)).to_list() == [5, 6, 7, 8]
    assert PositionBitmap(BitMap([4, 2])).to_list() == [2, 4]
    assert PositionBitmap(pa.array([3, 1, 2], pa.int32()).slice(1)).to_list() == [1, 2]


def test_update_from_numpy() -> None:
    np = pytest.importorskip("numpy")
    arr = np.array([5, 1, (2 << 32) + 1, 1], dtype=np.int64)
    bitmap = PositionBitmap(arr)
    assert bitmap.to_list() == [1, 5, (2 << 32) + 1]
    out = bitmap.to_numpy()
    assert out.dtype == np.int64 and out.tolist() == [1, 5, (2 << 32) + 1]


@pytest.mark.parametrize(
    "bad",
    [
        [-1],
        [MAX_POSITION + 1],
        [1.5],
        ["a"],
        [None],
        pa.array([1, None]),
        pa.array([1.5]),
        pa.array([-3], pa.int8()),
    ],
)
def test_update_rejects_bad_positions(bad: object) -> None:
    with pytest.raises(ValidationError):
        PositionBitmap(bad)


def test_add_rejects_bad_positions() -> None:
    with pytest.raises(ValidationError):
        PositionBitmap().add(-1)
    with pytest.raises(ValidationError):
        PositionBitmap().add_range(MAX_POSITION, MAX_POSITION + 2)


def test_union() -> None:
    a = PositionBitmap([1, 2, 1 << 33])
    b = PositionBitmap([2, 3, 1 << 34])
    c = a | b
    assert c.to_list() == [1, 2, 3, 1 << 33, 1 << 34]
    assert a.to_list() == [1, 2, 1 << 33]  # unchanged
    assert a.union(b) == c
    a |= b
    assert a == c
    a.union_update(PositionBitmap([0]))
    assert a.cardinality() == 6


def test_copy_is_independent_and_equality_ignores_empty_keys() -> None:
    a = PositionBitmap([1])
    b = a.copy()
    b.add(2)
    assert a.to_list() == [1]
    sparse = struct.pack("<Q", 2) + struct.pack("<I", 0) + BitMap([1]).serialize()
    sparse += struct.pack("<I", 1) + BitMap().serialize()
    assert PositionBitmap.deserialize(sparse) == a
    assert a != PositionBitmap([1, 2]) and a != "x"
    assert "cardinality=1" in repr(a)


def test_to_arrow() -> None:
    positions = [0, 7, (1 << 32) + 1, (5 << 32)]
    arr = PositionBitmap(positions).to_arrow()
    assert arr.type == pa.int64() and arr.to_pylist() == positions
    assert PositionBitmap().to_arrow().to_pylist() == []
    big = PositionBitmap.from_range(0, 1_000_000).to_arrow()
    assert len(big) == 1_000_000 and big[999_999].as_py() == 999_999


def test_serialize_uses_run_containers() -> None:
    bitmap = PositionBitmap.from_range(0, 100_000)
    assert len(bitmap.serialize()) < 100
    assert PositionBitmap.deserialize(bitmap.serialize()) == bitmap


positions_strategy = st.sets(
    st.one_of(
        st.integers(0, 300),
        st.integers(0, 2**20),
        st.integers(0, 2**33),
        st.integers(0, MAX_POSITION),
    ),
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(positions=positions_strategy, runs=st.lists(st.tuples(st.integers(0, 2**34), st.integers(0, 5000))))
def test_round_trip_property(positions: set[int], runs: list[tuple[int, int]]) -> None:
    bitmap = PositionBitmap(positions)
    expected = set(positions)
    for start, length in runs[:3]:
        bitmap.add_range(start, start + length)
        expected.update(range(start, start + length))
    data = bitmap.serialize()
    decoded = PositionBitmap.deserialize(data)
    assert decoded == bitmap
    assert decoded.to_list() == sorted(expected)
    assert decoded.cardinality() == len(expected)
    # CRoaring's own 64-bit portable reader agrees
    assert list(BitMap64.deserialize(data)) == sorted(expected)
    if not runs:
        assert data == reference_portable64(expected)
