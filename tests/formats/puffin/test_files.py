"""Tests for Puffin files: writing, footer parsing, blob reading and deletion-vector helpers."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import fastavro
import lz4.frame
import pytest

from icefloe.errors import CorruptMetadata, Unsupported, ValidationError
from icefloe.formats.puffin.deletion_vector import decode_dv_blob, encode_dv_blob
from icefloe.formats.puffin.files import (
    CREATED_BY,
    PUFFIN_MAGIC,
    BlobMetadata,
    FileMetadata,
    PuffinWriter,
    PuffinWriteResult,
    read_blob,
    read_deletion_vector,
    read_deletion_vectors,
    read_puffin_footer,
    write_deletion_vectors,
)
from icefloe.formats.puffin.roaring64 import PositionBitmap

FIXTURES = Path("/work/shared/fixtures/iceberg-acceptance")
FIXTURE_PREFIX = "file:/tmp/iceberg-acceptance/"
NAME = "file:/warehouse/t/data/deletes-1.puffin"


def _write(
    blobs: list[tuple[bytes, str | None]], *, compress_footer: bool = False
) -> tuple[bytes, PuffinWriteResult]:
    out = io.BytesIO()
    with PuffinWriter(out, compress_footer=compress_footer, properties={"k": "v"}) as writer:
        for data, codec in blobs:
            writer.add_blob(
                "some-blob-v1", data, fields=[1, 2], snapshot_id=7, sequence_number=3, codec=codec
            )
    assert writer.result is not None
    return out.getvalue(), writer.result


def test_layout_of_a_written_file() -> None:
    data, result = _write([(b"hello", None), (b"world!", None)])
    assert data[:4] == PUFFIN_MAGIC == b"PFA1"
    assert data[4:9] == b"hello" and data[9:15] == b"world!"
    assert result.file_size == len(data)
    footer_size = result.footer_size
    footer = data[-footer_size:]
    assert footer[:4] == PUFFIN_MAGIC and footer[-4:] == PUFFIN_MAGIC
    payload_size, flags = struct.unpack("<i4s", footer[-12:-4])
    assert flags == b"\0\0\0\0"
    assert footer_size == payload_size + 16
    payload = json.loads(footer[4 : 4 + payload_size])
    assert payload == {
        "blobs": [
            {
                "type": "some-blob-v1",
                "fields": [1, 2],
                "snapshot-id": 7,
                "sequence-number": 3,
                "offset": 4,
                "length": 5,
            },
            {
                "type": "some-blob-v1",
                "fields": [1, 2],
                "snapshot-id": 7,
                "sequence-number": 3,
                "offset": 9,
                "length": 6,
            },
        ],
        "properties": {"created-by": CREATED_BY, "k": "v"},
    }
    assert CREATED_BY.startswith("icefloe ")


def test_round_trip_with_codecs_bytes_and_streams(tmp_path: Path) -> None:
    contents = [(b"a" * 1000, None), (b"b" * 1000, "zstd"), (b"c" * 1000, "lz4"), (b"", None)]
    data, result = _write(contents)
    blobs = result.blobs
    assert [b.compression_codec for b in blobs] == [None, "zstd", "lz4", None]
    assert blobs[1].length < 1000 and blobs[2].length < 1000
    path = tmp_path / "f.puffin"
    path.write_bytes(data)
    with path.open("rb") as stream:
        for src in (data, bytearray(data), memoryview(data), io.BytesIO(data), stream):
            size = None if isinstance(src, io.IOBase) else len(data)
            metadata = read_puffin_footer(src, size, NAME)
            assert list(metadata.blobs) == blobs
            assert metadata.properties["k"] == "v"
            assert [read_blob(src, b, NAME) for b in metadata.blobs] == [c for c, _ in contents]


def test_empty_file() -> None:
    out = io.BytesIO()
    result = PuffinWriter(out).finish()
    data = out.getvalue()
    assert result.blobs == [] and result.file_size == len(data) == 4 + result.footer_size
    assert read_puffin_footer(data, len(data), NAME).blobs == ()


def test_lz4_footer_written_and_read() -> None:
    data, result = _write([(b"xyz", None)], compress_footer=True)
    assert data[-8] == 0x01  # flags byte 0, bit 0
    metadata = read_puffin_footer(data, len(data), NAME)
    assert list(metadata.blobs) == result.blobs


def test_hand_made_lz4_footer() -> None:
    blob = {"type": "t", "fields": [], "snapshot-id": 1, "sequence-number": 2, "offset": 4, "length": 2}
    meta = {"blobs": [blob]}
    payload = lz4.frame.compress(json.dumps(meta).encode(), store_size=True)
    data = PUFFIN_MAGIC + b"zz" + PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\x01\0\0\0"
    data += PUFFIN_MAGIC
    metadata = read_puffin_footer(data, len(data), NAME)
    assert metadata.blobs[0].type == "t" and metadata.properties == {}
    assert read_blob(data, metadata.blobs[0], NAME) == b"zz"


def test_footer_size_check() -> None:
    data, result = _write([(b"x", None)])
    footer_size = result.footer_size
    assert read_puffin_footer(data, len(data), NAME, footer_size=footer_size).blobs
    with pytest.raises(CorruptMetadata, match="footer"):
        read_puffin_footer(data, len(data), NAME, footer_size=footer_size + 1)


def _corrupt(data: bytes) -> str:
    with pytest.raises(CorruptMetadata) as info:
        read_puffin_footer(data, len(data), NAME)
    assert NAME in str(info.value)
    return str(info.value)


def _footer(payload: bytes, flags: bytes = b"\0\0\0\0", size: int | None = None) -> bytes:
    size = len(payload) if size is None else size
    return PUFFIN_MAGIC + payload + struct.pack("<i", size) + flags + PUFFIN_MAGIC


def test_bad_footer_magic_names_the_file() -> None:
    data, _ = _write([(b"abc", None)])
    assert "footer magic" in _corrupt(data[:-1] + b"X")


def test_bad_footer_start_magic() -> None:
    data, result = _write([(b"abc", None)])
    start = len(data) - result.footer_size
    assert "start magic" in _corrupt(data[:start] + b"XXXX" + data[start + 4 :])


def test_bad_file_magic() -> None:
    data, _ = _write([(b"abc", None)])
    assert "file magic" in _corrupt(b"PAR1" + data[4:])


def test_too_small_and_truncated() -> None:
    assert "not a Puffin file" in _corrupt(b"PFA1")
    data, _ = _write([(b"abc", None)])
    assert "payload size" in _corrupt(PUFFIN_MAGIC + data[-20:])


@pytest.mark.parametrize("size", [-1, 10_000])
def test_bad_payload_size(size: int) -> None:
    assert "payload size" in _corrupt(PUFFIN_MAGIC + _footer(b'{"blobs":[]}', size=size))


def test_unknown_flags() -> None:
    assert "flags" in _corrupt(PUFFIN_MAGIC + _footer(b'{"blobs":[]}', flags=b"\x02\0\0\0"))
    assert "flags" in _corrupt(PUFFIN_MAGIC + _footer(b'{"blobs":[]}', flags=b"\0\0\x01\0"))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"not json", "JSON"),
        (b"\xff\xfe", "UTF-8"),
        (b"[]", "not a JSON object"),
        (b'{"properties":{}}', "blobs"),
        (b'{"blobs":[1]}', "not a JSON object"),
        (b'{"blobs":[{"type":"t","fields":[],"snapshot-id":1,"sequence-number":1,"offset":4}]}', "length"),
        (
            b'{"blobs":[{"type":"t","fields":["a"],"snapshot-id":1,"sequence-number":1,"offset":4,"length":0}]}',
            "fields",
        ),
        (
            b'{"blobs":[{"type":"t","fields":[],"snapshot-id":true,"sequence-number":1,"offset":4,"length":0}]}',
            "snapshot-id",
        ),
        (
            b'{"blobs":[{"type":"t","fields":[],"snapshot-id":1,"sequence-number":1,"offset":4,"length":99}]}',
            "outside",
        ),
        (b'{"blobs":[],"properties":{"a":1}}', "properties"),
    ],
)
def test_bad_footer_payload(payload: bytes, message: str) -> None:
    assert message in _corrupt(PUFFIN_MAGIC + _footer(payload))


def test_lz4_flag_on_garbage_payload() -> None:
    assert "lz4" in _corrupt(PUFFIN_MAGIC + _footer(b"garbage", flags=b"\x01\0\0\0"))


def test_blob_errors() -> None:
    data, result = _write([(b"q" * 100, "zstd")])
    blob = result.blobs[0]
    broken = data[: blob.offset] + b"\0" * blob.length + data[blob.offset + blob.length :]
    with pytest.raises(CorruptMetadata, match="zstd"):
        read_blob(broken, blob, NAME)
    odd = BlobMetadata("t", (), -1, -1, blob.offset, blob.length, compression_codec="snappy")
    with pytest.raises(Unsupported, match="snappy"):
        read_blob(data, odd, NAME)
    with pytest.raises(CorruptMetadata, match="truncated"):
        read_blob(data[:10], blob, NAME)


def test_writer_rejects_unknown_codec_and_late_blobs() -> None:
    writer = PuffinWriter(io.BytesIO())
    with pytest.raises(ValidationError):
        writer.add_blob("t", b"x", fields=[], codec="gzip")
    first = writer.finish()
    assert writer.finish() is first
    with pytest.raises(ValidationError):
        writer.add_blob("t", b"x", fields=[])


def test_metadata_json_round_trip() -> None:
    meta = FileMetadata(
        blobs=(BlobMetadata("t", (1,), 5, 6, 4, 10, "zstd", {"a": "b"}),), properties={"created-by": "me"}
    )
    assert FileMetadata.from_json(json.loads(json.dumps(meta.to_json()))) == meta


# -- deletion vectors ------------------------------------------------------------------------


def test_write_and_read_deletion_vectors() -> None:
    dvs = [
        ("s3://b/t/data/a.parquet", PositionBitmap([0, 5, (1 << 32) + 3])),
        ("s3://b/t/data/b.parquet", PositionBitmap(range(1000))),
    ]
    out = io.BytesIO()
    written = write_deletion_vectors(out, dvs)
    data = out.getvalue()
    assert written.file_size == len(data)
    assert [ref.referenced_data_file for ref in written.refs] == [name for name, _ in dvs]
    assert [ref.cardinality for ref in written.refs] == [3, 1000]
    assert written.refs[0].offset == 4
    assert written.refs[1].offset == written.refs[0].offset + written.refs[0].length
    metadata = read_puffin_footer(data, len(data), NAME, footer_size=written.footer_size)
    first = metadata.blobs[0].to_json()
    assert first == {
        "type": "deletion-vector-v1",
        "fields": [2147483645],
        "snapshot-id": -1,
        "sequence-number": -1,
        "offset": 4,
        "length": written.refs[0].length,
        "properties": {"referenced-data-file": "s3://b/t/data/a.parquet", "cardinality": "3"},
    }
    assert metadata.properties["created-by"] == CREATED_BY
    decoded = read_deletion_vectors(data, source=NAME)
    assert decoded == dict(dvs)
    for ref, (_, bitmap) in zip(written.refs, dvs, strict=True):
        got = read_deletion_vector(
            io.BytesIO(data), ref.offset, ref.length, source=NAME, expected_cardinality=ref.cardinality
        )
        assert got == bitmap


def test_duplicate_deletion_vector_is_rejected() -> None:
    dvs = [("a.parquet", PositionBitmap([1])), ("a.parquet", PositionBitmap())]
    with pytest.raises(ValidationError, match=r"a\.parquet"):
        write_deletion_vectors(io.BytesIO(), dvs)


def test_flipped_byte_in_a_dv_blob_names_the_file() -> None:
    out = io.BytesIO()
    written = write_deletion_vectors(out, [("a.parquet", PositionBitmap(range(50)))])
    data = bytearray(out.getvalue())
    data[written.refs[0].offset + 12] ^= 0x40
    with pytest.raises(CorruptMetadata, match="CRC mismatch") as info:
        read_deletion_vectors(bytes(data), source=NAME)
    assert NAME in str(info.value)
    with pytest.raises(CorruptMetadata, match=NAME):
        read_deletion_vector(bytes(data), written.refs[0].offset, written.refs[0].length, source=NAME)


def test_dv_cardinality_property_mismatch() -> None:
    out = io.BytesIO()
    writer = PuffinWriter(out)
    writer.add_blob(
        "deletion-vector-v1",
        encode_dv_blob(PositionBitmap([1, 2])),
        fields=[2147483645],
        properties={"referenced-data-file": "a.parquet", "cardinality": "3"},
    )
    writer.finish()
    with pytest.raises(CorruptMetadata, match="cardinality"):
        read_deletion_vectors(out.getvalue(), source=NAME)


# -- files written by Iceberg Java ------------------------------------------------------------


def _fixture_puffins() -> list[Path]:
    return sorted(FIXTURES.glob("*/data/*.puffin")) if FIXTURES.is_dir() else []


needs_fixtures = pytest.mark.skipif(not _fixture_puffins(), reason="acceptance fixtures not available")


@needs_fixtures
def test_java_puffin_files_decode_with_footer_cardinalities() -> None:
    for path in _fixture_puffins():
        data = path.read_bytes()
        metadata = read_puffin_footer(io.BytesIO(data), None, str(path))
        assert metadata.properties["created-by"].startswith("Apache Iceberg")
        assert metadata.blobs
        for blob in metadata.blobs:
            assert blob.type == "deletion-vector-v1" and blob.fields == (2147483645,)
            assert blob.snapshot_id == -1 and blob.sequence_number == -1
            bitmap = decode_dv_blob(read_blob(data, blob, str(path)), source=str(path))
            assert bitmap.cardinality() == int(blob.properties["cardinality"])
        by_file = read_deletion_vectors(data, len(data), str(path))
        assert set(by_file) == {b.properties["referenced-data-file"] for b in metadata.blobs}


@needs_fixtures
def test_java_manifest_dv_entries_resolve_to_blobs() -> None:
    checked = 0
    for manifest in sorted(FIXTURES.glob("*/metadata/*-m*.avro")):
        with manifest.open("rb") as handle:
            for entry in fastavro.reader(handle):
                assert isinstance(entry, dict)
                data_file: dict[str, Any] = entry["data_file"]
                if str(data_file["file_format"]).upper() != "PUFFIN":
                    continue
                local = FIXTURES / data_file["file_path"].removeprefix(FIXTURE_PREFIX)
                with local.open("rb") as stream:
                    bitmap = read_deletion_vector(
                        stream,
                        data_file["content_offset"],
                        data_file["content_size_in_bytes"],
                        source=str(local),
                        expected_cardinality=data_file["record_count"],
                    )
                assert bitmap.cardinality() == data_file["record_count"]
                checked += 1
    assert checked > 0
