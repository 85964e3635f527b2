"""Avro container framing: header lengths, block counts and sizes, recorded block checksums, schemas.

Every defect is a CorruptMetadata naming the file, raised before any decoder (fastavro,
DataFusion) sees the bytes; none may loop.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.avro import columnar as ac
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.container import WriterSchema, container_bytes
from icefloe.formats.avro.manifest import read_manifest
from icefloe.io.fileio import FileIO
from icefloe.spec.content import ManifestContent
from tests.formats.avro.test_columnar import SPEC, VALUES, _entries, _write
from tests.support.mutation import avro_fields, zigzag

SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "a", "type": "long"}, {"name": "xs", "type": {"type": "array", "items": "long"}}],
}


def _file(n: int = 30, checksums: bool = True) -> bytes:
    records = [{"a": i, "xs": [i, i + 1]} for i in range(n)]
    if checksums:
        return container_bytes(WriterSchema.of(SCHEMA), records, {}, "deflate")
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(SCHEMA), records, codec="deflate")
    return buf.getvalue()


def _records(data: bytes) -> list[dict]:
    return list(avs.open_avro(data, "f.avro")[2])


@pytest.mark.parametrize(
    "data",
    [
        b"Obj\x01\x02\x05",  # negative key length: used to loop forever
        b"Obj\x01\x02" + zigzag(3) + b"abc" + zigzag(-7),  # negative value length
        b"Obj\x01" + zigzag(2**40),  # a map of more entries than bytes
        b"Obj\x01\x02\x08ab",  # key longer than the file
        b"Obj\x01" + b"\xff" * 12,  # a varint longer than a long
        b"Obj\x01\x00",  # no sync marker
    ],
)
def test_malformed_headers_are_corrupt_not_endless(data: bytes) -> None:
    with pytest.raises(CorruptMetadata, match=r"f\.avro") as err:
        avs.open_avro(data, "f.avro")
    assert err.value.location == "f.avro" or "f.avro" in str(err.value)


@pytest.mark.parametrize("value", [0, -1, -(2**40), 2**40])
def test_block_counts_and_sizes_that_cannot_be_right_are_corrupt(value: int) -> None:
    data = _file(checksums=False)
    _, sync_at = avs._parse_header(data, "f.avro")
    count_at, size_at = [span for span in avro_fields(data) if span[0] >= sync_at + 16][:2]
    for start, end in (count_at, size_at):
        mutated = data[:start] + zigzag(value) + data[end:]
        if value > 0 and (start, end) == count_at:
            continue  # a larger count within a well-framed block is found by decoding (below)
        with pytest.raises(CorruptMetadata, match=r"f\.avro.*block"):
            avs.open_avro(mutated, "f.avro")


def test_a_count_larger_than_the_block_holds_fails_when_decoding() -> None:
    data = _file(checksums=False)
    _, sync_at = avs._parse_header(data, "f.avro")
    start, end = next(span for span in avro_fields(data) if span[0] >= sync_at + 16)
    mutated = data[:start] + zigzag(31) + data[end:]
    with pytest.raises(CorruptMetadata, match=r"f\.avro"):
        _records(mutated)


def test_written_files_carry_block_checksums_that_are_verified() -> None:
    data = _file()
    meta, _ = avs._parse_header(data, "f.avro")
    assert avs.BLOCK_CRC_KEY in meta
    assert [r["a"] for r in _records(data)] == list(range(30))
    assert [r["a"] for r in fastavro.reader(io.BytesIO(data))] == list(range(30))  # others ignore it
    at = len(data) - 40  # inside the (only) block
    flipped = data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]
    with pytest.raises(CorruptMetadata, match="checksum"):
        avs.open_avro(flipped, "f.avro")


def test_a_block_count_of_zero_never_reaches_datafusion(tmp_path: Path) -> None:
    """DataFusion's Avro reader spins, uninterruptibly, on a block count of 0."""
    path = _write(tmp_path, "m.avro", _entries(20, 2, VALUES), SPEC, 2, ManifestContent.DATA)
    data = Path(path).read_bytes()
    _, sync_at = avs._parse_header(data, "m.avro")
    start, end = next(span for span in avro_fields(data) if span[0] >= sync_at + 16)
    Path(path).write_bytes(data[:start] + zigzag(0) + data[end:])
    with pytest.raises(CorruptMetadata, match=r"m\.avro.*record count 0"):
        ac.read_manifest_columns(FileIO(), path, {SPEC.spec_id: SPEC})


def _one_block(meta: dict[str, bytes]) -> bytes:
    body = b"\x02" + zigzag(2**40)  # union branch 1, then an array block of 2**40 items
    sync = b"S" * 16
    return avs.encode_header(meta) + sync + zigzag(1) + zigzag(len(body)) + body + sync


def test_arrays_of_zero_byte_items_are_refused() -> None:
    """A record without fields as array items made fastavro loop on a corrupt count."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "xs", "type": ["null", {"type": "array", "items": {"type": "record", "name": "e"}}]}
        ],
    }
    meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": b"null"}
    data = _one_block(meta)
    with pytest.raises(CorruptMetadata, match="no valid fields list"):
        read_manifest(data)
    empty = {"type": "record", "name": "e", "fields": []}
    schema["fields"][0]["type"][1]["items"] = empty  # type: ignore[index]
    meta["avro.schema"] = json.dumps(schema).encode()
    data = _one_block(meta)
    with pytest.raises(CorruptMetadata, match="may take no bytes"):
        read_manifest(data)
