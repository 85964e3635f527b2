"""Table metadata files: read and write ``<NNNNN>-<uuid>.metadata.json`` and keep the metadata-log.

File names follow Iceberg Java and PyIceberg: a zero-padded version number, one more than the
version of the file being replaced, then a random UUID. Files are created exclusively and never
overwritten. ``write.metadata.compression-codec=gzip`` writes ``*.gz.metadata.json``; readers
recognise gzip content by its magic bytes, whatever the name.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from typing import Any
from uuid import uuid4

from icefloe.errors import AlreadyExists, CorruptMetadata, NotFound, Unsupported
from icefloe.io.fileio import FileIO
from icefloe.spec.json_codec import table_metadata_from_json, table_metadata_to_json
from icefloe.spec.snapshots import MetadataLogEntry
from icefloe.spec.table_metadata import TableMetadata

METADATA_PATH = "write.metadata.path"
METADATA_COMPRESSION = "write.metadata.compression-codec"
PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
PREVIOUS_VERSIONS_MAX_DEFAULT = 100
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"

_GZIP_MAGIC = b"\x1f\x8b"
_VERSIONED_NAME = re.compile(r"^(\d+)-.*\.metadata\.json$")
_HADOOP_NAME = re.compile(r"^v(\d+)(?:\.gz)?\.metadata\.json$")
_MAX_UUID_RETRIES = 3


def metadata_directory(table_location: str, properties: dict[str, str]) -> str:
    """Where metadata files of a table go: ``write.metadata.path`` or ``<location>/metadata``."""
    custom = properties.get(METADATA_PATH)
    if custom:
        return custom.rstrip("/")
    return f"{table_location.rstrip('/')}/metadata"


def parse_metadata_version(metadata_location: str | None) -> int | None:
    """The version number in a metadata file name (``00042-<uuid>.metadata.json`` -> 42), or None."""
    if not metadata_location:
        return None
    name = metadata_location.rstrip("/").rsplit("/", 1)[-1]
    match = _VERSIONED_NAME.match(name) or _HADOOP_NAME.match(name)
    return int(match.group(1)) if match else None


def new_metadata_location(table_location: str, properties: dict[str, str], version: int) -> str:
    """A fresh metadata file location for ``version`` (random UUID, codec suffix from properties)."""
    codec = _codec(properties)
    suffix = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    return f"{metadata_directory(table_location, properties)}/{version:05d}-{uuid4()}{suffix}"


def _codec(properties: dict[str, str]) -> str:
    codec = properties.get(METADATA_COMPRESSION, "none").strip().lower()
    if codec not in ("none", "gzip"):
        raise Unsupported(f"{METADATA_COMPRESSION}={codec!r} is not supported (use 'none' or 'gzip')")
    return codec


def decode_table_metadata(data: bytes, location: str) -> TableMetadata:
    """Parse metadata file bytes (plain or gzip JSON); errors name ``location``."""
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorruptMetadata(f"metadata file {location} is not valid gzip: {exc}") from exc
    try:
        document: Any = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptMetadata(f"metadata file {location} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise CorruptMetadata(f"metadata file {location} does not hold a JSON object")
    try:
        return table_metadata_from_json(document)
    except CorruptMetadata as exc:
        raise CorruptMetadata(f"metadata file {location}: {exc}") from exc
    except Unsupported as exc:
        raise Unsupported(f"metadata file {location}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadata(f"metadata file {location}: {type(exc).__name__}: {exc}") from exc


def read_table_metadata(io: FileIO, location: str) -> TableMetadata:
    """Read and parse a metadata file; NotFound when it is missing, CorruptMetadata when unparsable."""
    try:
        data = io.new_input(location).read()
    except FileNotFoundError as exc:
        raise NotFound(f"metadata file {location} does not exist") from exc
    except NotFound as exc:
        raise NotFound(f"metadata file {location} does not exist") from exc
    return decode_table_metadata(data, location)


def encode_table_metadata(md: TableMetadata) -> bytes:
    """The bytes of a metadata file for ``md`` (gzip when the table's codec property says so)."""
    data = table_metadata_to_json(md).encode("utf-8")
    if _codec(md.properties) == "gzip":
        data = gzip.compress(data, mtime=0)
    return data


def write_table_metadata(
    io: FileIO,
    table_location: str,
    md: TableMetadata,
    previous_location: str | None = None,
) -> str:
    """Write ``md`` to a new, never-before-used metadata file and return its location.

    The version number is one more than the version in ``previous_location``'s name (0 for a new
    table). The file is created exclusively: an existing file is never overwritten.
    """
    previous_version = parse_metadata_version(previous_location)
    version = 0 if previous_version is None else previous_version + 1
    data = encode_table_metadata(md)
    for attempt in range(_MAX_UUID_RETRIES):
        location = new_metadata_location(table_location, md.properties, version)
        try:
            io.new_output(location).write_bytes(data, overwrite=False)
            return location
        except (AlreadyExists, FileExistsError):
            if attempt == _MAX_UUID_RETRIES - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def previous_versions_max(md: TableMetadata) -> int:
    """How many previous metadata files the metadata-log keeps (at least 1)."""
    try:
        value = md.int_property(PREVIOUS_VERSIONS_MAX, PREVIOUS_VERSIONS_MAX_DEFAULT)
    except ValueError:
        value = PREVIOUS_VERSIONS_MAX_DEFAULT
    return max(1, value)


def new_metadata_with_log(
    md: TableMetadata,
    previous_location: str | None,
    previous_md: TableMetadata | None,
) -> TableMetadata:
    """``md`` with ``previous_location`` appended to its metadata-log, trimmed to the configured max.

    The entry's timestamp is ``previous_md.last_updated_ms`` (as Iceberg Java records it). Appending
    is idempotent: nothing is added when the log already ends with ``previous_location``.
    """
    entries = list(md.metadata_log)
    if previous_location is not None and (not entries or entries[-1].metadata_file != previous_location):
        timestamp = previous_md.last_updated_ms if previous_md is not None else md.last_updated_ms
        entries.append(MetadataLogEntry(timestamp_ms=timestamp, metadata_file=previous_location))
    limit = previous_versions_max(md)
    if len(entries) > limit:
        entries = entries[-limit:]
    if tuple(entries) == md.metadata_log:
        return md
    return md.with_changes(metadata_log=tuple(entries))


def removed_metadata_files(previous_md: TableMetadata, new_md: TableMetadata) -> list[str]:
    """Metadata files that were in ``previous_md``'s log and fell off ``new_md``'s log."""
    kept = {entry.metadata_file for entry in new_md.metadata_log}
    return [e.metadata_file for e in previous_md.metadata_log if e.metadata_file not in kept]
