"""Tests for the deletion-vector-v1 blob codec."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.errors import CorruptMetadata
from icefloe.formats.puffin.deletion_vector import DV_MAGIC, decode_dv_blob, encode_dv_blob
from icefloe.formats.puffin.files import read_blob, read_puffin_footer
from icefloe.formats.puffin.roaring64 import PositionBitmap

FIXTURES = Path("/work/shared/fixtures/iceberg-acceptance")
PUFFIN_FILE = "s3://warehouse/db/t/data/00000-1-deletes.puffin"


def test_exact_layout() -> None:
    bitmap = PositionBitmap([0, 5, (1 << 32) + 3])
    blob = encode_dv_blob(bitmap)
    vector = (
        struct.pack("<QI", 2, 0)
        + struct.pack("<IIHHI", 12346, 1, 0, 1, 16)
        + struct.pack("<HH", 0, 5)
        + struct.pack("<I", 1)
        + struct.pack("<IIHHI", 12346, 1, 0, 0, 16)
        + struct.pack("<H", 3)
    )
    assert vector == bitmap.serialize()
    length = struct.unpack(">I", blob[:4])[0]
    assert length == len(DV_MAGIC) + len(vector) == len(blob) - 8
    assert blob[4:8] == bytes.fromhex("D1D33964")
    assert blob[8:-4] == vector
    assert struct.unpack(">I", blob[-4:])[0] == zlib.crc32(DV_MAGIC + vector)
    assert decode_dv_blob(blob, source=PUFFIN_FILE, expected_cardinality=3) == bitmap


def test_empty_dv() -> None:
    blob = encode_dv_blob(PositionBitmap())
    assert len(blob) == 4 + 4 + 8 + 4
    assert decode_dv_blob(blob, source=PUFFIN_FILE, expected_cardinality=0).is_empty()


def _error(blob: bytes, **kwargs: object) -> str:
    with pytest.raises(CorruptMetadata) as info:
        decode_dv_blob(blob, source=PUFFIN_FILE, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert PUFFIN_FILE in message
    return message


def test_flipped_vector_byte_is_a_crc_mismatch() -> None:
    blob = bytearray(encode_dv_blob(PositionBitmap(range(100))))
    blob[20] ^= 0x01
    assert "CRC mismatch" in _error(bytes(blob))


def test_flipped_crc_byte_is_a_crc_mismatch() -> None:
    blob = bytearray(encode_dv_blob(PositionBitmap([1, 2])))
    blob[-1] ^= 0xFF
    assert "CRC mismatch" in _error(bytes(blob))


def test_bad_magic() -> None:
    blob = bytearray(encode_dv_blob(PositionBitmap([1])))
    blob[5] = 0
    assert "magic" in _error(bytes(blob))


def test_bad_length_field() -> None:
    blob = bytearray(encode_dv_blob(PositionBitmap([1])))
    blob[3] += 1
    assert "length" in _error(bytes(blob))


def test_truncated_blob() -> None:
    blob = encode_dv_blob(PositionBitmap([1, 2, 3]))
    assert "length" in _error(blob[:-1])
    assert "too short" in _error(blob[:10])


def test_cardinality_mismatch() -> None:
    blob = encode_dv_blob(PositionBitmap([1, 2, 3]))
    assert "cardinality" in _error(blob, expected_cardinality=4)


def test_offset_is_named() -> None:
    blob = bytearray(encode_dv_blob(PositionBitmap([1])))
    blob[-2] ^= 1
    assert "at offset 1234" in _error(bytes(blob), offset=1234)


def test_valid_crc_over_a_bad_vector_is_still_corrupt() -> None:
    body = DV_MAGIC + struct.pack("<QI", 1, 0x80000000) + struct.pack("<II", 12346, 0)
    blob = struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    assert "negative" in _error(blob)


def test_every_single_byte_flip_is_detected() -> None:
    blob = encode_dv_blob(PositionBitmap([0, 3, 70000, (1 << 32) + 9]))
    for index in range(len(blob)):
        corrupt = bytearray(blob)
        corrupt[index] ^= 0x10
        _error(bytes(corrupt))


@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(0, 2**40), max_size=200))
def test_round_trip(positions: set[int]) -> None:
    bitmap = PositionBitmap(positions)
    blob = encode_dv_blob(bitmap)
    decoded = decode_dv_blob(memoryview(blob), source=PUFFIN_FILE, expected_cardinality=len(positions))
    assert decoded.to_list() == sorted(positions)


def _java_puffin_files() -> list[Path]:
    return sorted(FIXTURES.glob("*/data/*.puffin")) if FIXTURES.is_dir() else []


@pytest.mark.skipif(not _java_puffin_files(), reason="acceptance fixtures not available")
def test_java_written_blobs_decode_and_re_encode_identically() -> None:
    count = 0
    for path in _java_puffin_files():
        data = path.read_bytes()
        for blob in read_puffin_footer(data, len(data), str(path)).blobs:
            raw = read_blob(data, blob, str(path))
            bitmap = decode_dv_blob(
                raw, source=str(path), expected_cardinality=int(blob.properties["cardinality"])
            )
            assert encode_dv_blob(bitmap) == raw
            count += 1
    assert count > 0
