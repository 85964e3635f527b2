"""Rewriting the records of an Avro container file in place of their writer: same schema, same header.

Copying a table to another location changes a few strings (paths) and lengths in its manifests
and manifest lists and nothing else. Going through ``ManifestEntry`` objects and the manifest
writer would re-derive what another writer chose (its field names, optional fields, partition
encoding, header keys); here each record is decoded raw with the file's own schema, handed to a
function that changes what it must, and encoded again with that schema, so every other byte of
meaning is kept. The records are encoded against the schema without logical types (the values are
raw, as :func:`~icefloe.formats.avro.schemas.open_avro` decodes them) and the header then names
the writer's own schema text: logical types do not change an encoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.container import WriterSchema, container_bytes

Record = dict[str, Any]


def rewrite_records(
    data: bytes, location: str, change_for: Callable[[dict], Callable[[Record], Record]]
) -> bytes:
    """The Avro file ``data`` with every record replaced by ``change(record)``, where ``change``
    is ``change_for(writer_schema)`` (it finds its fields by id in the file's own schema).

    The writer schema, codec and header metadata are kept (the block checksums are recomputed);
    CorruptMetadata naming ``location`` when ``data`` is not a readable Avro file.
    """
    writer_schema, _, records = avs.open_avro(data, location)
    change = change_for(writer_schema)
    header, _ = avs.parse_header(data, location)
    codec = header.get("avro.codec", b"null").decode("ascii")
    plain = WriterSchema.of(avs.without_logical_types(writer_schema))
    written = container_bytes(plain, (change(r) for r in records), {}, codec)
    meta, sync_at = avs.parse_header(written, location)
    for key, value in header.items():
        if key != avs.BLOCK_CRC_KEY and key != "avro.codec":
            meta[key] = value  # the writer's schema text and every metadata key, binary ones too
    return avs.encode_header(meta) + written[sync_at:]


def field_names(record_schema: dict) -> dict[int, str]:
    """Field id -> field name of an Avro record schema (names differ between writers, ids do not)."""
    return {fid: f["name"] for fid, f in avs.fields_by_id(record_schema).items()}
