"""Writing Avro object container files: each schema prepared once, small files framed here.

``fastavro.writer`` prepares its schema again for every file (``parse_schema``, the header's JSON
text: ~0.3 ms), and icefloe then parsed the written header once more to add the block checksums.
A commit writes two small files (a one-entry manifest and the manifest list), so that fixed cost
was most of their encoding time. Here a :class:`WriterSchema` holds the parsed schema and its
header text, made once per schema (the manifest schemas per format version and partition type
are cached), and a file of up to :data:`FRAMED_HERE_MAX_RECORDS` records is framed here: the
records encoded in one ``schemaless_writer`` call (as an Avro array, whose encoding is the
records between an item count and a 0), compressed, and written as one block with the header
(schema, codec, metadata, :data:`~icefloe.formats.avro.schemas.BLOCK_CRC_KEY`) and a random sync
marker. Larger files (several blocks of ~16 KB, as fastavro makes them) and codecs other than
``null`` and ``deflate`` go through ``fastavro.writer``. Both give the same records and
header keys; the bytes differ only in the sync marker and block boundaries.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from icefloe.formats.avro import schemas as avs
from icefloe.spec.types import StructType

FRAMED_HERE_MAX_RECORDS = 256
"""Files of at most this many records are framed here (one block); larger ones by fastavro."""

_FRAMED_CODECS = ("null", "deflate")


@dataclass(frozen=True, eq=False)
class WriterSchema:
    """An Avro schema ready for writing: the schema, fastavro's parsed form, the header's text."""

    schema: dict
    parsed: Any
    header_text: bytes
    parsed_array: Any
    """An array of the records: its encoding is one block's records between a count and a 0."""

    @classmethod
    def of(cls, schema: dict) -> WriterSchema:
        """Prepare ``schema`` (the caller must not change it afterwards)."""
        parsed = fastavro.parse_schema(schema)
        array = fastavro.parse_schema({"type": "array", "items": schema})
        return cls(schema, parsed, json.dumps(schema).encode("utf-8"), array)


def manifest_entry_writer(format_version: int, partition_type: StructType) -> WriterSchema:
    """The prepared ``manifest_entry`` schema of a format version and partition type."""
    try:
        return _manifest_entry_writer(format_version, partition_type)
    except TypeError:  # a field value that cannot be hashed (not one Iceberg partitions have)
        return WriterSchema.of(avs.manifest_entry_schema(format_version, partition_type))


@lru_cache(maxsize=256)
def _manifest_entry_writer(format_version: int, partition_type: StructType) -> WriterSchema:
    return WriterSchema.of(avs.manifest_entry_schema(format_version, partition_type))


@lru_cache(maxsize=8)
def manifest_list_writer(format_version: int) -> WriterSchema:
    """The prepared ``manifest_file`` schema of a format version."""
    return WriterSchema.of(avs.manifest_list_schema(format_version))


def container_bytes(
    writer: WriterSchema, records: Iterable[dict], metadata: Mapping[str, str], codec: str
) -> bytes:
    """An Avro object container file holding ``records``, with block checksums in its header."""
    records = iter(records)
    head = list(itertools.islice(records, FRAMED_HERE_MAX_RECORDS + 1))
    if len(head) > FRAMED_HERE_MAX_RECORDS or codec not in _FRAMED_CODECS:
        buf = io.BytesIO()
        everything = itertools.chain(head, records)
        fastavro.writer(buf, writer.parsed, everything, codec=codec, metadata=dict(metadata))
        return avs.with_block_checksums(buf.getvalue())
    return _framed(writer, head, metadata, codec)


def can_frame(count: int, codec: str) -> bool:
    """Whether a file of ``count`` records in ``codec`` is framed here (one block)."""
    return count <= FRAMED_HERE_MAX_RECORDS and codec in _FRAMED_CODECS


def encode_record(writer: WriterSchema, record: dict) -> bytes:
    """One record's Avro encoding: a block's records are these, one after another."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, writer.parsed, record)
    return buf.getvalue()


def framed_bytes(
    writer: WriterSchema, encoded: list[bytes], metadata: Mapping[str, str], codec: str
) -> bytes:
    """The file ``container_bytes`` writes for records already encoded one by one
    (:func:`encode_record`); only for files :func:`can_frame` allows."""
    if not can_frame(len(encoded), codec):
        raise ValueError(f"{len(encoded)} records in {codec} are not framed in one block")
    return _frame(writer, len(encoded), b"".join(encoded), metadata, codec)


def _framed(writer: WriterSchema, records: list[dict], metadata: Mapping[str, str], codec: str) -> bytes:
    if not records:
        return _frame(writer, 0, b"", metadata, codec)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, writer.parsed_array, records)  # count, records, 0
    count = avs.encode_long(len(records))
    return _frame(writer, len(records), buf.getbuffer()[len(count) : -1].tobytes(), metadata, codec)


def _frame(writer: WriterSchema, count: int, block: bytes, metadata: Mapping[str, str], codec: str) -> bytes:
    meta: dict[str, bytes] = {"avro.schema": writer.header_text, "avro.codec": codec.encode("ascii")}
    meta.update((k, v.encode("utf-8")) for k, v in metadata.items())
    sync = os.urandom(avs.SYNC_SIZE)
    if not count:
        meta[avs.BLOCK_CRC_KEY] = b""
        return avs.encode_header(meta) + sync
    if codec == "deflate":
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        block = compressor.compress(block) + compressor.flush()
    meta[avs.BLOCK_CRC_KEY] = f"{zlib.crc32(block):08x}".encode("ascii")
    framing = avs.encode_long(count) + avs.encode_long(len(block))
    return b"".join((avs.encode_header(meta), sync, framing, block, sync))
