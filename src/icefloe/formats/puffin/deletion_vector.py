"""The Iceberg v3 ``deletion-vector-v1`` Puffin blob.

Blob layout (the blob ``offset``/``length`` and a manifest's ``content_offset`` /
``content_size_in_bytes`` cover exactly these bytes):

=========  ======  ==================================================================
part       size    encoding
=========  ======  ==================================================================
length L   4       big-endian: byte length of magic + vector
magic      4       ``D1 D3 39 64``
vector     L - 4   portable 64-bit Roaring bitmap (little-endian, see ``roaring64``)
CRC        4       big-endian CRC-32 (zlib polynomial) of magic + vector
=========  ======  ==================================================================
"""

from __future__ import annotations

import struct
import zlib

from icefloe.errors import CorruptMetadata
from icefloe.formats.puffin.roaring64 import PositionBitmap

__all__ = [
    "DV_BLOB_TYPE",
    "DV_MAGIC",
    "POS_FIELD_ID",
    "decode_dv_blob",
    "encode_dv_blob",
]

#: Puffin blob type of a deletion vector.
DV_BLOB_TYPE = "deletion-vector-v1"
#: Magic bytes that follow the length prefix.
DV_MAGIC = b"\xd1\xd3\x39\x64"
#: Field id of the ``_pos`` metadata column; the ``fields`` of a DV blob.
POS_FIELD_ID = 2147483645

_BE32 = struct.Struct(">I")
_MIN_BLOB = 4 + len(DV_MAGIC) + 8 + 4  # length, magic, empty 64-bit bitmap, CRC


def encode_dv_blob(bitmap: PositionBitmap) -> bytes:
    """Serialise ``bitmap`` as a ``deletion-vector-v1`` blob (length, magic, vector, CRC)."""
    body = DV_MAGIC + bitmap.serialize()
    return _BE32.pack(len(body)) + body + _BE32.pack(zlib.crc32(body))


def _where(source: str, offset: int | None) -> str:
    return f"deletion vector in {source}" + ("" if offset is None else f" at offset {offset}")


def decode_dv_blob(
    data: bytes | bytearray | memoryview,
    *,
    source: str,
    expected_cardinality: int | None = None,
    offset: int | None = None,
) -> PositionBitmap:
    """Parse and validate a ``deletion-vector-v1`` blob; every defect raises CorruptMetadata.

    ``source`` (the Puffin file path) and ``offset`` (the blob offset, if known) are named in
    error messages. ``expected_cardinality`` (a manifest ``record_count`` or the blob's
    ``cardinality`` property) is checked against the decoded bitmap when given.
    """
    where = _where(source, offset)
    blob = bytes(data)
    if len(blob) < _MIN_BLOB:
        raise CorruptMetadata(f"Invalid {where}: blob too short ({len(blob)} bytes, need >= {_MIN_BLOB})")
    (length,) = _BE32.unpack_from(blob, 0)
    if length != len(blob) - 8:
        raise CorruptMetadata(
            f"Invalid {where}: length field {length} does not match blob size {len(blob)} "
            f"(expected {len(blob) - 8})"
        )
    body = blob[4 : 4 + length]
    if body[:4] != DV_MAGIC:
        raise CorruptMetadata(
            f"Invalid {where}: bad magic {body[:4].hex(' ')} (expected {DV_MAGIC.hex(' ')})"
        )
    (stored_crc,) = _BE32.unpack_from(blob, 4 + length)
    actual_crc = zlib.crc32(body)
    if stored_crc != actual_crc:
        raise CorruptMetadata(
            f"Invalid {where}: CRC mismatch (stored 0x{stored_crc:08x}, computed 0x{actual_crc:08x})"
        )
    bitmap = PositionBitmap.deserialize(body[4:], source=where)
    if expected_cardinality is not None:
        actual = bitmap.cardinality()
        if actual != expected_cardinality:
            raise CorruptMetadata(
                f"Invalid {where}: cardinality mismatch (expected {expected_cardinality}, "
                f"bitmap holds {actual})"
            )
    return bitmap
