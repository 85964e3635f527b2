"""Metadata JSON and Puffin footers that parse badly (deep nesting, huge numbers, broken gzip) are
CorruptMetadata naming the file: no RecursionError, ValueError or zlib.error escapes."""

from __future__ import annotations

import gzip
import struct

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.metadata.files import decode_table_metadata
from icefloe.formats.puffin.files import PUFFIN_MAGIC, read_puffin_footer

HOSTILE_JSON = [
    b'{"format-version": ' + b"9" * 5000 + b"}",  # beyond Python's int digit limit
    b"[" * 100_000 + b"]" * 100_000,  # deeper than the recursion limit
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"format-version": 2, "table-uuid": 7}',  # valid JSON, not table metadata
    b'{"format-version": 2.5}',
    b"\xff\xfe{}",
]


@pytest.mark.parametrize("data", HOSTILE_JSON)
def test_hostile_metadata_json_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptMetadata, match=r"m\.metadata\.json") as err:
        decode_table_metadata(data, "m.metadata.json")
    assert err.value.location == "m.metadata.json"


@pytest.mark.parametrize(
    "data",
    [gzip.compress(b"{}", mtime=0)[:-3], b"\x1f\x8b" + b"x" * 20, gzip.compress(HOSTILE_JSON[1], mtime=0)],
)
def test_hostile_gzip_metadata_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptMetadata, match=r"m\.gz\.metadata\.json"):
        decode_table_metadata(data, "m.gz.metadata.json")


def _puffin(payload: bytes) -> bytes:
    footer = PUFFIN_MAGIC + payload + struct.pack("<i", len(payload)) + b"\x00\x00\x00\x00" + PUFFIN_MAGIC
    return PUFFIN_MAGIC + footer


@pytest.mark.parametrize(
    "payload",
    [
        b'{"blobs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"blobs": [{"type": "t", "fields": [1], "snapshot-id": ' + b"9" * 5000 + b"}]}",
        b'{"blobs": [{"type": 3}]}',
        b"\xff" * 10,
    ],
)
def test_hostile_puffin_footers_are_corrupt(payload: bytes) -> None:
    with pytest.raises(CorruptMetadata, match=r"d\.puffin"):
        read_puffin_footer(_puffin(payload), source="d.puffin")
