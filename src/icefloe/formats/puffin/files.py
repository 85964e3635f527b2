"""Puffin files: write blobs + JSON footer to a binary stream, read the footer and blobs back.

Layout: ``Magic Blob_1 ... Blob_n Footer`` with ``Footer = Magic FooterPayload
FooterPayloadSize Flags Magic``; Magic = ``PFA1``; FooterPayloadSize is a little-endian
signed 32-bit int; Flags byte 0 bit 0 = payload is one LZ4 frame. The payload is the UTF-8
JSON ``FileMetadata`` (``blobs`` + optional ``properties``). Blobs may be stored raw or as a
single ``lz4`` / ``zstd`` frame with the content size present.

Everything here works on bytes or seekable binary streams, so it does not depend on FileIO.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import lz4.frame
import zstandard

from icefloe import __version__
from icefloe.errors import CorruptMetadata, Unsupported, ValidationError, reading
from icefloe.formats.puffin.deletion_vector import DV_BLOB_TYPE, POS_FIELD_ID, decode_dv_blob, encode_dv_blob
from icefloe.formats.puffin.roaring64 import PositionBitmap

__all__ = [
    "CREATED_BY",
    "PUFFIN_MAGIC",
    "BlobMetadata",
    "DVBlobRef",
    "DVWriteResult",
    "FileMetadata",
    "PuffinWriteResult",
    "PuffinWriter",
    "read_blob",
    "read_deletion_vector",
    "read_deletion_vectors",
    "read_puffin_footer",
    "with_footer",
    "write_deletion_vectors",
]

PUFFIN_MAGIC = b"PFA1"
CREATED_BY = f"icefloe {__version__}"
CODECS = ("lz4", "zstd")

_FOOTER_STRUCT = struct.Struct("<i4s4s")  # payload size, flags, magic
_FOOTER_OVERHEAD = len(PUFFIN_MAGIC) + _FOOTER_STRUCT.size  # 16
_FLAG_FOOTER_LZ4 = 0x01
_MIN_FILE_SIZE = len(PUFFIN_MAGIC) + _FOOTER_OVERHEAD

Source = bytes | bytearray | memoryview | IO[bytes]


# -- model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlobMetadata:
    """One footer entry: where a blob is, what it is and how it is compressed."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The footer JSON object (optional keys omitted when unset, like Iceberg Java)."""
        obj: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec is not None:
            obj["compression-codec"] = self.compression_codec
        if self.properties:
            obj["properties"] = dict(self.properties)
        return obj

    @classmethod
    def from_json(cls, obj: Any, *, source: str = "<puffin file>", index: int = 0) -> BlobMetadata:
        """Parse one footer blob entry, raising CorruptMetadata naming ``source`` on bad input."""
        where = f"{source}: footer blob #{index}"
        if not isinstance(obj, dict):
            raise CorruptMetadata(f"{where} is not a JSON object")
        fields = obj.get("fields")
        if not isinstance(fields, list) or not all(_is_int(f) for f in fields):
            raise CorruptMetadata(f"{where}: 'fields' must be a list of ints")
        codec = obj.get("compression-codec")
        if codec is not None and not isinstance(codec, str):
            raise CorruptMetadata(f"{where}: 'compression-codec' must be a string")
        return cls(
            type=_require(obj, "type", str, where),
            fields=tuple(fields),
            snapshot_id=_require(obj, "snapshot-id", int, where),
            sequence_number=_require(obj, "sequence-number", int, where),
            offset=_require(obj, "offset", int, where),
            length=_require(obj, "length", int, where),
            compression_codec=codec,
            properties=_string_map(obj.get("properties"), f"{where}: 'properties'"),
        )


@dataclass(frozen=True)
class FileMetadata:
    """The footer payload: the blobs of the file and file-level properties."""

    blobs: tuple[BlobMetadata, ...]
    properties: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The footer JSON object."""
        obj: dict[str, Any] = {"blobs": [blob.to_json() for blob in self.blobs]}
        if self.properties:
            obj["properties"] = dict(self.properties)
        return obj

    @classmethod
    def from_json(cls, obj: Any, *, source: str = "<puffin file>") -> FileMetadata:
        """Parse the footer JSON object, raising CorruptMetadata naming ``source`` on bad input."""
        if not isinstance(obj, dict):
            raise CorruptMetadata(f"{source}: Puffin footer payload is not a JSON object", location=source)
        blobs = obj.get("blobs")
        if not isinstance(blobs, list):
            raise CorruptMetadata(f"{source}: Puffin footer has no 'blobs' list", location=source)
        return cls(
            blobs=tuple(BlobMetadata.from_json(b, source=source, index=i) for i, b in enumerate(blobs)),
            properties=_string_map(obj.get("properties"), f"{source}: footer 'properties'"),
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if value is None:
        raise CorruptMetadata(f"{where}: missing required field '{key}'")
    if (kind is int and not _is_int(value)) or not isinstance(value, kind):
        raise CorruptMetadata(f"{where}: field '{key}' must be {kind.__name__}, got {value!r}")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise CorruptMetadata(f"{where} must be an object of string values")
    return dict(value)


# -- compression ------------------------------------------------------------------------


def _compress(codec: str | None, data: bytes) -> bytes:
    if codec is None:
        return data
    if codec == "lz4":
        return bytes(lz4.frame.compress(data, store_size=True))
    if codec == "zstd":
        return zstandard.ZstdCompressor(write_content_size=True).compress(data)
    raise ValidationError(f"Unknown Puffin compression codec {codec!r}; use one of {CODECS} or None")


def _decompress(codec: str | None, data: bytes, where: str) -> bytes:
    if codec is None:
        return data
    try:
        if codec == "lz4":
            return bytes(lz4.frame.decompress(data))
        if codec == "zstd":
            return zstandard.ZstdDecompressor().decompress(data)
    except (RuntimeError, zstandard.ZstdError, ValueError) as exc:
        raise CorruptMetadata(f"{where}: cannot decompress {codec} data: {exc}") from exc
    raise Unsupported(f"{where}: unsupported compression codec {codec!r} (supported: {', '.join(CODECS)})")


# -- writing ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PuffinWriteResult:
    """What a finished Puffin file holds: its blobs, total size and footer size."""

    blobs: list[BlobMetadata]
    file_size: int
    footer_size: int


class PuffinWriter:
    """Writes a Puffin file to a binary stream positioned at the start of an empty file."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        properties: Mapping[str, str] | None = None,
        compress_footer: bool = False,
        created_by: str = CREATED_BY,
    ) -> None:
        self._stream = stream
        self._properties = {"created-by": created_by, **(properties or {})}
        self._compress_footer = compress_footer
        self._blobs: list[BlobMetadata] = []
        self._pos = 0
        self._result: PuffinWriteResult | None = None
        self._write(PUFFIN_MAGIC)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._stream.write(view)
            if written is None:
                raise OSError("Stream did not accept Puffin bytes (non-blocking stream?)")
            view = view[written:]
        self._pos += len(data)

    @property
    def position(self) -> int:
        """Bytes written so far (the offset the next blob will get)."""
        return self._pos

    @property
    def result(self) -> PuffinWriteResult | None:
        """The result of ``finish()``, or None before it."""
        return self._result

    def add_blob(
        self,
        blob_type: str,
        data: bytes,
        *,
        fields: Sequence[int],
        snapshot_id: int = -1,
        sequence_number: int = -1,
        properties: Mapping[str, str] | None = None,
        codec: str | None = None,
    ) -> BlobMetadata:
        """Append one blob (compressed with ``codec`` if given) and return its metadata."""
        if self._result is not None:
            raise ValidationError("Cannot add a blob to a finished Puffin file")
        stored = _compress(codec, bytes(data))
        blob = BlobMetadata(
            type=blob_type,
            fields=tuple(fields),
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            offset=self._pos,
            length=len(stored),
            compression_codec=codec,
            properties=dict(properties or {}),
        )
        self._write(stored)
        self._blobs.append(blob)
        return blob

    def finish(self) -> PuffinWriteResult:
        """Write the footer; returns blobs, file size and footer size (idempotent)."""
        if self._result is not None:
            return self._result
        metadata = FileMetadata(blobs=tuple(self._blobs), properties=self._properties)
        footer = _footer_bytes(metadata, self._compress_footer)
        self._write(footer)
        self._result = PuffinWriteResult(list(self._blobs), self._pos, len(footer))
        return self._result

    def __enter__(self) -> PuffinWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()


def _footer_bytes(metadata: FileMetadata, compress: bool) -> bytes:
    payload = json.dumps(metadata.to_json(), separators=(",", ":"), ensure_ascii=False).encode()
    flags = 0
    if compress:
        payload = _compress("lz4", payload)
        flags |= _FLAG_FOOTER_LZ4
    return PUFFIN_MAGIC + payload + _FOOTER_STRUCT.pack(len(payload), bytes([flags, 0, 0, 0]), PUFFIN_MAGIC)


def with_footer(data: bytes, metadata: FileMetadata, source: str = "<puffin file>") -> bytes:
    """The Puffin file ``data`` with its footer replaced by ``metadata``'s (compressed as before).

    The blobs are kept byte for byte, so every blob keeps its offset: the footer follows them.
    Used to rewrite the ``referenced-data-file`` property of deletion-vector blobs when a table is
    copied to another location; ``metadata`` must describe the same blobs.
    """
    old = read_puffin_footer(data, len(data), source)
    if [(b.offset, b.length) for b in old.blobs] != [(b.offset, b.length) for b in metadata.blobs]:
        raise ValidationError(f"{source}: a new Puffin footer must describe the same blobs")
    payload_size, flags, _ = _FOOTER_STRUCT.unpack(data[-_FOOTER_STRUCT.size :])
    blob_area = data[: len(data) - _FOOTER_OVERHEAD - payload_size]
    return bytes(blob_area) + _footer_bytes(metadata, bool(flags[0] & _FLAG_FOOTER_LZ4))


# -- reading ----------------------------------------------------------------------------


def _total_size(src: Source) -> int:
    if isinstance(src, bytes | bytearray | memoryview):
        return len(src)
    return src.seek(0, 2)


def _read_range(src: Source, offset: int, length: int, source: str) -> bytes:
    """Exactly ``length`` bytes at ``offset`` of ``src``; CorruptMetadata if the file is short."""
    if isinstance(src, bytes | bytearray | memoryview):
        chunk = bytes(src[offset : offset + length])
    else:
        src.seek(offset)
        parts: list[bytes] = []
        remaining = length
        while remaining > 0:
            part = src.read(remaining)
            if not part:
                break
            parts.append(part)
            remaining -= len(part)
        chunk = b"".join(parts)
    if offset < 0 or len(chunk) != length:
        raise CorruptMetadata(
            f"{source}: file truncated: cannot read {length} bytes at offset {offset}", location=source
        )
    return chunk


def read_puffin_footer(
    data_or_stream: Source,
    file_size: int | None = None,
    source: str = "<puffin file>",
    *,
    footer_size: int | None = None,
) -> FileMetadata:
    """Read and validate the footer (magics, flags, payload size, JSON); errors name ``source``.

    Only IcefloeErrors escape (deep or huge JSON, a bad LZ4 frame: CorruptMetadata).
    """
    with reading(source, "read the Puffin footer"):
        return _read_footer(data_or_stream, file_size, source, footer_size)


def _read_footer(
    data_or_stream: Source, file_size: int | None, source: str, footer_size: int | None
) -> FileMetadata:
    size = _total_size(data_or_stream) if file_size is None else file_size
    if size < _MIN_FILE_SIZE:
        raise CorruptMetadata(
            f"{source}: not a Puffin file: {size} bytes is smaller than the minimum", location=source
        )
    head = _read_range(data_or_stream, 0, len(PUFFIN_MAGIC), source)
    if head != PUFFIN_MAGIC:
        raise CorruptMetadata(f"{source}: not a Puffin file: bad file magic {head.hex(' ')}", location=source)
    tail = _read_range(data_or_stream, size - _FOOTER_STRUCT.size, _FOOTER_STRUCT.size, source)
    payload_size, flags, end_magic = _FOOTER_STRUCT.unpack(tail)
    if end_magic != PUFFIN_MAGIC:
        raise CorruptMetadata(
            f"{source}: bad Puffin footer magic at end of file: {end_magic.hex(' ')}", location=source
        )
    footer_start = size - _FOOTER_OVERHEAD - payload_size
    if payload_size < 0 or footer_start < len(PUFFIN_MAGIC):
        raise CorruptMetadata(
            f"{source}: Puffin footer payload size {payload_size} does not fit in a {size}-byte file"
        )
    if footer_size is not None and footer_size != size - footer_start:
        raise CorruptMetadata(
            f"{source}: Puffin footer is {size - footer_start} bytes, but {footer_size} was expected"
        )
    if flags[0] & ~_FLAG_FOOTER_LZ4 or any(flags[1:]):
        raise CorruptMetadata(f"{source}: unknown Puffin footer flags {flags.hex(' ')}", location=source)
    footer = _read_range(data_or_stream, footer_start, len(PUFFIN_MAGIC) + payload_size, source)
    if footer[: len(PUFFIN_MAGIC)] != PUFFIN_MAGIC:
        raise CorruptMetadata(
            f"{source}: bad Puffin footer start magic at offset {footer_start}: {footer[:4].hex(' ')}"
        )
    payload = footer[len(PUFFIN_MAGIC) :]
    if flags[0] & _FLAG_FOOTER_LZ4:
        payload = _decompress("lz4", payload, f"{source}: Puffin footer")
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptMetadata(
            f"{source}: Puffin footer payload is not valid UTF-8 JSON: {exc}", location=source
        ) from exc
    metadata = FileMetadata.from_json(obj, source=source)
    for index, blob in enumerate(metadata.blobs):
        if blob.offset < len(PUFFIN_MAGIC) or blob.length < 0 or blob.offset + blob.length > footer_start:
            raise CorruptMetadata(
                f"{source}: footer blob #{index} ({blob.type}) at [{blob.offset}, "
                f"{blob.offset + blob.length}) lies outside the blob area [4, {footer_start})"
            )
    return metadata


def read_blob(data_or_stream: Source, blob: BlobMetadata, source: str = "<puffin file>") -> bytes:
    """The (decompressed) bytes of one blob."""
    raw = _read_range(data_or_stream, blob.offset, blob.length, source)
    return _decompress(blob.compression_codec, raw, f"{source}: blob {blob.type} at offset {blob.offset}")


# -- deletion vectors -------------------------------------------------------------------


@dataclass(frozen=True)
class DVBlobRef:
    """Where one deletion vector landed: what a v3 manifest DV entry needs."""

    referenced_data_file: str
    offset: int
    length: int
    cardinality: int


@dataclass(frozen=True)
class DVWriteResult:
    """The deletion vectors written to one Puffin file, plus the file and footer sizes."""

    refs: list[DVBlobRef]
    file_size: int
    footer_size: int


def write_deletion_vectors(
    stream: IO[bytes],
    dvs: Iterable[tuple[str, PositionBitmap]],
    snapshot_id: int = -1,
    sequence_number: int = -1,
    *,
    properties: Mapping[str, str] | None = None,
) -> DVWriteResult:
    """Write a Puffin file of ``deletion-vector-v1`` blobs, one per referenced data file."""
    writer = PuffinWriter(stream, properties=properties)
    refs: list[DVBlobRef] = []
    seen: set[str] = set()
    for data_file, bitmap in dvs:
        if data_file in seen:
            raise ValidationError(f"More than one deletion vector for data file {data_file}")
        seen.add(data_file)
        cardinality = bitmap.cardinality()
        blob = writer.add_blob(
            DV_BLOB_TYPE,
            encode_dv_blob(bitmap),
            fields=[POS_FIELD_ID],
            snapshot_id=snapshot_id,
            sequence_number=sequence_number,
            properties={"referenced-data-file": data_file, "cardinality": str(cardinality)},
        )
        refs.append(DVBlobRef(data_file, blob.offset, blob.length, cardinality))
    result = writer.finish()
    return DVWriteResult(refs, result.file_size, result.footer_size)


def read_deletion_vector(
    data_or_stream: Source,
    offset: int,
    length: int,
    *,
    source: str,
    expected_cardinality: int | None = None,
) -> PositionBitmap:
    """Decode the DV blob at ``offset``/``length`` (a manifest's content_offset / content_size)."""
    blob = _read_range(data_or_stream, offset, length, source)
    return decode_dv_blob(blob, source=source, expected_cardinality=expected_cardinality, offset=offset)


def read_deletion_vectors(
    data_or_stream: Source, file_size: int | None = None, source: str = "<puffin file>"
) -> dict[str, PositionBitmap]:
    """All DVs of a Puffin file by referenced data file, checked against their ``cardinality``."""
    metadata = read_puffin_footer(data_or_stream, file_size, source)
    result: dict[str, PositionBitmap] = {}
    for blob in metadata.blobs:
        if blob.type != DV_BLOB_TYPE:
            continue
        data_file = blob.properties.get("referenced-data-file")
        if data_file is None:
            raise CorruptMetadata(
                f"{source}: deletion vector at offset {blob.offset} has no 'referenced-data-file' property"
            )
        card = blob.properties.get("cardinality")
        try:
            expected = None if card is None else int(card)
        except ValueError as exc:
            raise CorruptMetadata(
                f"{source}: deletion vector at offset {blob.offset} has a bad cardinality {card!r}"
            ) from exc
        if blob.compression_codec is not None:
            raise CorruptMetadata(
                f"{source}: deletion vector at offset {blob.offset} must not be compressed "
                f"(compression-codec {blob.compression_codec!r})"
            )
        raw = read_blob(data_or_stream, blob, source)
        result[data_file] = decode_dv_blob(
            raw, source=source, expected_cardinality=expected, offset=blob.offset
        )
    return result
