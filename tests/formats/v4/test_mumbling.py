"""Tests for Mumbling v1 bitmaps, their PFOR descriptor encoding and the manifest DV codecs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.formats.v4 import mumbling
from icefloe.formats.v4.bitmaps import (
    DEFAULT_MANIFEST_DV_ENCODING,
    MUMBLING_V1,
    PORTABLE_ROARING,
    MumblingV1Codec,
    PortableRoaringCodec,
    manifest_dv_codec,
)
from icefloe.formats.v4.mumbling import (
    MAX_POSITION,
    cardinality_of,
    decode,
    decode_bitmap,
    encode,
    pfor_decode,
    pfor_encode,
)

# -- PFOR (spec Appendix A) ------------------------------------------------------------------

SPEC_PFOR_VECTORS = [
    ("00 00 00", [0] * 256),
    ("00 00 05", [5] * 51),
    ("80 02 00 04 07 FF FE", [0, 0, 0, 0, 0xFF, 0, 0, 0xFE]),
    ("02 00 06 18", [6, 7, 8]),
    ("32 01 06 09 01 E0", [6, 34, 8, 7]),
]


@pytest.mark.parametrize(("hex_bytes", "values"), SPEC_PFOR_VECTORS)
def test_pfor_spec_vectors(hex_bytes: str, values: list[int]) -> None:
    data = bytes.fromhex(hex_bytes)
    assert pfor_decode(data, len(values)) == values
    assert pfor_encode(values) == data


def test_pfor_packing_example() -> None:
    # spec: with b = 2, [3, 2, 1, 2, 3] packs as E6 C0
    assert pfor_decode(bytes.fromhex("02 00 00 E6 C0"), 5) == [3, 2, 1, 2, 3]
    assert pfor_encode([3, 2, 1, 2, 3]) == bytes.fromhex("02 00 01 91 80")  # m = 1: [2, 1, 0, 1, 2]


def test_pfor_b1_of_8_stores_raw_values() -> None:
    values = [(i * 37) % 256 for i in range(256)]
    data = pfor_encode(values)
    assert data[:3] == bytes((8, 0, 0)) and data[3:] == bytes(values)
    assert pfor_decode(data, 256) == values


def test_pfor_multiple_chunks() -> None:
    values = [0] * 256 + [3] * 256 + [1, 2]
    data = pfor_encode(values)
    assert data[:6] == bytes.fromhex("00 00 00 00 00 03")
    assert pfor_decode(data, len(values)) == values
    assert pfor_encode([]) == b"" and pfor_decode(b"", 0) == []


def _best_size(chunk: list[int]) -> int:
    """Smallest chunk size over every legal b1 (brute force, independent of the encoder)."""
    base = min(chunk)
    norm = [v - base for v in chunk]
    top = max(v.bit_length() for v in norm)
    sizes = []
    for b in range(top + 1):
        exceptions = sum(1 for v in norm if v.bit_length() > b)
        if exceptions <= 255:
            sizes.append(3 + (len(chunk) * b + 7) // 8 + exceptions + (exceptions * (top - b) + 7) // 8)
    return min(sizes)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 255), max_size=700)
    | st.lists(st.sampled_from([0, 0, 0, 5, 32, 17]), max_size=600)
)
def test_pfor_round_trip_and_minimal_width(values: list[int]) -> None:
    data = pfor_encode(values)
    assert pfor_decode(data, len(values)) == values
    chunks = [values[i : i + 256] for i in range(0, len(values), 256)]
    assert len(data) == sum(_best_size(c) for c in chunks)


@pytest.mark.parametrize(
    ("hex_bytes", "count"),
    [
        ("02 00", 3),  # truncated header
        ("02 00 06", 3),  # missing primary array
        ("09 00 00", 1),  # b1 > 8
        ("72 00 00 00", 1),  # b2 > 8 - b1
        ("80 05 00 00 00 00 00 00 00 00", 2),  # more exceptions than values
        ("80 01 00 05 FF", 3),  # exception offset out of range
        ("01 00 FF 80", 1),  # m + value overflows a byte
        ("08 01 00 00 00", 1),  # b1 = 8 with exceptions
        ("00 00 00 00", 1),  # trailing byte
    ],
)
def test_pfor_rejects_corrupt_input(hex_bytes: str, count: int) -> None:
    with pytest.raises(CorruptMetadata, match=r"manifest\.parquet"):
        pfor_decode(bytes.fromhex(hex_bytes), count, source="manifest.parquet")


def test_pfor_rejects_non_bytes() -> None:
    with pytest.raises(ValidationError):
        pfor_encode([256])


# -- whole bitmaps ---------------------------------------------------------------------------


def _bitmap(cardinality: int, descriptors: list[int], containers: bytes) -> bytes:
    header = bytes((1,)) + cardinality.to_bytes(3, "little") + len(descriptors).to_bytes(2, "little")
    return header + pfor_encode(descriptors) + containers


def test_empty_bitmap() -> None:
    assert encode([]) == bytes.fromhex("01 000000 0000")
    assert decode(encode([])) == [] and cardinality_of(encode([])) == 0


def test_spec_sparse_container_example() -> None:
    data = encode([0, 34, 255])
    assert data == bytes.fromhex("01 030000 0100") + bytes.fromhex("00 00 03") + bytes.fromhex("00 22 FF")
    assert decode(data) == [0, 34, 255]
    full = encode(range(31))
    assert full[-31:] == bytes(range(31)) and decode(full) == list(range(31))


@pytest.mark.parametrize(
    ("container", "positions"),
    [
        (bytes.fromhex("FFFFFFFF") + bytes(28), list(range(32))),
        (bytes.fromhex("FFFFFFFF80") + bytes(27), list(range(33))),
        (bytes.fromhex("FFFF") + bytes(28) + bytes.fromhex("FFFF"), [*range(16), *range(240, 256)]),
        (bytes([0xAA]) * 32, list(range(0, 256, 2))),
    ],
)
def test_spec_dense_container_examples(container: bytes, positions: list[int]) -> None:
    data = _bitmap(len(positions), [0x20], container)
    assert decode(data) == positions
    assert encode(positions) == data


def test_multi_container_layout() -> None:
    positions = [3, 256 + 1, 256 + 2, *range(3 * 256, 3 * 256 + 40)]
    data = encode(positions)
    dense = bytes.fromhex("FFFFFFFFFF") + bytes(27)
    assert data == _bitmap(len(positions), [1, 2, 0, 0x20], bytes([3, 1, 2]) + dense)
    assert decode(data) == positions


def test_largest_position_and_full_bitmap() -> None:
    edge = encode([MAX_POSITION])
    assert int.from_bytes(edge[4:6], "little") == 8192
    assert decode(edge) == [MAX_POSITION] and cardinality_of(edge) == 1
    everything = encode(range(MAX_POSITION + 1))
    assert cardinality_of(everything) == 2**21
    assert everything[1:4] == (2**21).to_bytes(3, "little")
    assert decode(everything) == list(range(2**21))


@pytest.mark.parametrize("bad", [[2**21], [-1], [5, 2**22]])
def test_rejects_positions_out_of_range(bad: list[int]) -> None:
    with pytest.raises(ValidationError, match="Mumbling"):
        encode(bad)


def test_accepts_bitmaps_and_iterables() -> None:
    positions = [9, 1, 700, 1]
    expected = encode([1, 9, 700])
    assert encode(positions) == expected
    assert encode(PositionBitmap(positions)) == expected
    assert encode(iter(positions)) == expected
    assert decode_bitmap(expected) == PositionBitmap(positions)


def test_reserved_and_dense_low_bits_are_ignored() -> None:
    dense = bytes([0x80]) + bytes(31)
    assert decode(_bitmap(1, [0x20 | 0x05 | 0x40], dense)) == [0]
    assert decode(_bitmap(2, [0x82], bytes([4, 9]))) == [4, 9]


def _corrupt(data: bytes) -> str:
    with pytest.raises(CorruptMetadata) as info:
        decode(data, source="leaf-1.parquet")
    assert "leaf-1.parquet" in str(info.value)
    return str(info.value)


def test_rejects_wrong_version() -> None:
    data = bytearray(encode([1, 2, 3]))
    data[0] = 2
    assert "version" in _corrupt(bytes(data))
    with pytest.raises(CorruptMetadata, match="version"):
        cardinality_of(bytes(data))


def test_rejects_every_truncation() -> None:
    data = encode([1, 2, 300, *range(1024, 1100), 5000])
    for size in range(len(data)):
        _corrupt(data[:size])
    with pytest.raises(CorruptMetadata):
        cardinality_of(data[:5])


def test_rejects_inconsistent_bitmaps() -> None:
    assert "trailing" in _corrupt(encode([1, 2]) + b"\0")
    assert "cardinality" in _corrupt(_bitmap(3, [2], bytes([1, 2])))
    assert "ascending" in _corrupt(_bitmap(2, [2], bytes([2, 1])))
    assert "ascending" in _corrupt(_bitmap(2, [2], bytes([2, 2])))
    assert "container count" in _corrupt(bytes.fromhex("01 000000 0120"))
    assert "exceeds" in _corrupt(_bitmap(300, [0], b""))


positions_strategy = st.one_of(
    st.sets(st.integers(0, MAX_POSITION), max_size=400),
    st.sets(st.integers(0, 2000), max_size=1500),
    st.sets(st.integers(MAX_POSITION - 600, MAX_POSITION), max_size=500),
    st.lists(st.tuples(st.integers(0, MAX_POSITION), st.integers(1, 3000)), max_size=4).map(
        lambda runs: {p for start, n in runs for p in range(start, min(start + n, MAX_POSITION + 1))}
    ),
)


@settings(max_examples=200, deadline=None)
@given(positions_strategy)
def test_round_trip_property(positions: set[int]) -> None:
    data = encode(positions)
    assert decode(data) == sorted(positions)
    assert cardinality_of(data) == len(positions)
    assert decode_bitmap(data).to_list() == sorted(positions)


# -- the manifest DV codec abstraction -------------------------------------------------------


def test_codec_selection() -> None:
    assert DEFAULT_MANIFEST_DV_ENCODING == MUMBLING_V1
    assert isinstance(manifest_dv_codec(), MumblingV1Codec)
    assert isinstance(manifest_dv_codec(" Mumbling-V1 "), MumblingV1Codec)
    assert isinstance(manifest_dv_codec(PORTABLE_ROARING), PortableRoaringCodec)
    with pytest.raises(ValidationError, match="roaring"):
        manifest_dv_codec("bitset")


@pytest.mark.parametrize("name", [MUMBLING_V1, PORTABLE_ROARING])
def test_codecs_round_trip(name: str) -> None:
    codec = manifest_dv_codec(name)
    assert codec.name == name
    positions = [0, 17, 255, 256, *range(4000, 4100), MAX_POSITION]
    for source in (positions, PositionBitmap(positions)):
        data = codec.encode(source)
        assert codec.decode(data).to_list() == positions
        assert codec.cardinality(data) == len(positions)


def test_codecs_are_not_interchangeable() -> None:
    data = manifest_dv_codec(PORTABLE_ROARING).encode([1, 2, 3])
    with pytest.raises(CorruptMetadata, match=r"m\.parquet"):
        manifest_dv_codec(MUMBLING_V1).decode(data, source="m.parquet")
    data = manifest_dv_codec(MUMBLING_V1).encode([1, 2, 3])
    with pytest.raises(CorruptMetadata, match=r"m\.parquet"):
        manifest_dv_codec(PORTABLE_ROARING).decode(data, source="m.parquet")


def test_module_exports() -> None:
    assert mumbling.VERSION == 1 and mumbling.MAX_CONTAINERS == 8192
