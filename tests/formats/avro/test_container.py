"""Avro container files written by ``formats.avro.container``: the files framed here (small, one
block) and those written by fastavro (large, or other codecs) hold the same records and header
keys, read back by fastavro itself, by icefloe's checked reader and by the columnar reader."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.container import (
    FRAMED_HERE_MAX_RECORDS,
    WriterSchema,
    container_bytes,
    manifest_entry_writer,
    manifest_list_writer,
)
from icefloe.spec.types import IntegerType, NestedField, StructType

SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "a", "type": "long", "field-id": 1},
        {"name": "s", "type": ["null", "string"], "default": None, "field-id": 2},
        {"name": "xs", "type": {"type": "array", "items": "long", "element-id": 4}, "field-id": 3},
    ],
}


def _records(n: int) -> list[dict]:
    return [{"a": i, "s": None if i % 3 else f"s{i}", "xs": list(range(i % 4))} for i in range(n)]


@pytest.mark.parametrize("codec", ["deflate", "null", "bzip2"])  # bzip2: always through fastavro
@pytest.mark.parametrize("n", [0, 1, FRAMED_HERE_MAX_RECORDS, FRAMED_HERE_MAX_RECORDS + 1, 3000])
def test_every_path_gives_the_same_records_and_header(n: int, codec: str) -> None:
    data = container_bytes(
        WriterSchema.of(SCHEMA), iter(_records(n)), {"k": "v", "format-version": "2"}, codec
    )
    reader = fastavro.reader(io.BytesIO(data))
    assert list(reader) == _records(n)
    assert reader.metadata["k"] == "v" and reader.metadata["avro.codec"] == codec
    assert reader.writer_schema["name"] == "r"
    schema, metadata, records = avs.open_avro(data, "f.avro")  # checksums and framing verified
    assert schema == SCHEMA
    assert metadata["k"] == "v" and avs.BLOCK_CRC_KEY in metadata
    assert list(records) == _records(n)


def test_a_small_file_is_one_block_with_its_checksum() -> None:
    data = container_bytes(WriterSchema.of(SCHEMA), _records(5), {}, "deflate")
    meta, sync_at = avs._parse_header(data, "f.avro")
    assert avs.block_record_count(data, sync_at, "f.avro", meta) == 5
    assert len(meta[avs.BLOCK_CRC_KEY].split(b",")) == 1


def test_a_corrupted_block_of_a_framed_file_is_caught() -> None:
    data = bytearray(container_bytes(WriterSchema.of(SCHEMA), _records(20), {}, "deflate"))
    data[-20] ^= 0xFF  # inside the block, before the closing sync marker
    with pytest.raises(CorruptMetadata, match=r"f\.avro.*checksum"):
        list(avs.open_avro(bytes(data), "f.avro")[2])


def test_prepared_manifest_schemas_are_made_once_and_match_the_spec_schemas() -> None:
    ptype = StructType(NestedField(1000, "b", IntegerType(), required=False))
    same = StructType(NestedField(1000, "b", IntegerType(), required=False))
    assert manifest_entry_writer(2, ptype) is manifest_entry_writer(2, same)
    assert manifest_entry_writer(2, ptype).schema == avs.manifest_entry_schema(2, ptype)
    assert manifest_entry_writer(3, ptype) is not manifest_entry_writer(2, ptype)
    assert manifest_list_writer(3) is manifest_list_writer(3)
    assert manifest_list_writer(1).schema == avs.manifest_list_schema(1)


def test_a_checked_writer_schema_is_reused_and_reads_the_same() -> None:
    data = container_bytes(WriterSchema.of(SCHEMA), _records(7), {}, "deflate")
    first_schema, _, first = avs.open_avro(data, "a.avro")
    again_schema, _, again = avs.open_avro(data, "b.avro")
    assert again_schema is first_schema  # parsed, rewritten and checked once
    assert list(first) == list(again) == _records(7)


def test_a_refused_writer_schema_is_refused_every_time() -> None:
    no_fields = {"type": "record", "name": "e", "fields": []}
    empty_items = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "xs", "type": {"type": "array", "items": no_fields}}],
    }
    meta = {"avro.schema": json.dumps(empty_items).encode(), "avro.codec": b"null"}
    data = avs.encode_header(meta) + b"S" * 16
    for location in ("first.avro", "second.avro"):  # a refusal is never remembered as checked
        with pytest.raises(CorruptMetadata, match=rf"{location}: Avro array of items that may take no bytes"):
            avs.open_avro(data, location)
