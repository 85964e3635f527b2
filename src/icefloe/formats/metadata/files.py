"""Table metadata files: read and write ``<NNNNN>-<uuid>.metadata.json`` and keep the metadata-log.

File names follow Iceberg Java and PyIceberg: a zero-padded version number, one more than the
version of the file being replaced, then a random UUID. Files are created exclusively and never
overwritten. ``write.metadata.compression-codec=gzip`` writes ``*.gz.metadata.json`` (deflate
level 6, as Java's ``GZIPOutputStream``, recompressing only what changed since the table's last
write: ``metadata_gzip``); readers recognise gzip content by its magic bytes, whatever the name.

Parsed metadata is cached by location: a commit re-reads the file the same process has just
written or read, and a REST server loads the same few files over and over. Whether a cache hit
asks the file store first depends on the file's name (``is_write_once_name``):

- A name carrying a UUID (``00001-<uuid>.metadata.json``, ``<uuid>.metadata.json``, with
  ``.gz.metadata.json`` or ``.metadata.json.gz``; what icefloe, Iceberg Java and PyIceberg write)
  is written exactly once: the writer made the UUID just now, so no other writer can be creating
  it (locally the file is also created exclusively; an object store cannot be asked for a
  conditional write by pyarrow, and needs none for a fresh name, see ``io.fileio``), and nothing
  writes it again. A hit is served with no request at all: on S3 that saves one HEAD per table
  load, the whole cost of a load served from the cache. Iceberg Java does not check a location it
  holds either (a refresh that finds the catalog pointer unchanged keeps its metadata).
- Any other name (the Hadoop catalog's ``v<N>.metadata.json``, reused when a table is dropped and
  created again, and not created exclusively by every writer; files a user named) can be
  rewritten in place: a hit checks the file's size and modification time first (one ``stat`` or
  HEAD) and parses again when they changed.

What this changes: a cached write-once file deleted since (by another process, or by this one:
``write.metadata.delete-after-commit``, a purge) still loads. Whatever names it still, a catalog
pointer or a metadata-log, names the very content cached, and Iceberg Java keeps it the same
way; a file no catalog names any more is not loaded by a catalog at all. Where existence itself is
the question (registering a table, opening a static table by path) callers pass
``confirm_exists=True`` and get the check, and ``NotFound`` for a missing file, whatever the name.

The cache holds the most recently used files up to ``ICEFLOE_METADATA_CACHE_BYTES`` bytes of JSON
(default 32 MiB, 0 disables it; the newest file is always kept).

The bytes of the last few plain (not gzip) files this process wrote are kept too
(``written_metadata_bytes``): a REST server answers every commit of a batch with the metadata it
has just written, and embeds those bytes instead of encoding the metadata a second time.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
import zlib
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import pyarrow.fs as pafs

from icefloe.errors import AlreadyExists, CorruptMetadata, IcefloeError, NotFound, Unsupported
from icefloe.formats.metadata.incremental_gzip import gzip_chunks
from icefloe.io.fileio import FileIO, local_path
from icefloe.lru import LockedLruCache, LruCache
from icefloe.spec.json_codec import (
    table_metadata_from_json,
    table_metadata_json_bytes,
    table_metadata_json_chunks,
)
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
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_WRITE_ONCE_NAME = re.compile(
    rf"^(?:\d+-)?{_UUID}(?:\.metadata\.json|\.gz\.metadata\.json|\.metadata\.json\.gz)$"
)
_MAX_UUID_RETRIES = 3
CACHE_BYTES_ENV = "ICEFLOE_METADATA_CACHE_BYTES"
DEFAULT_CACHE_BYTES = 32 * 1024 * 1024


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


def is_write_once_name(metadata_location: str) -> bool:
    """Whether the file's name proves it is written exactly once: ``[<version>-]<uuid>`` then a
    metadata suffix, nothing else (see the module docstring)."""
    name = metadata_location.rstrip("/").rsplit("/", 1)[-1]
    return _WRITE_ONCE_NAME.match(name) is not None


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


def decode_metadata_document(data: bytes, location: str) -> dict[str, Any]:
    """Metadata file bytes (plain or gzip JSON) as their JSON object, every field kept; errors
    name ``location``: CorruptMetadata for bad gzip, bad JSON (including integers too long to
    parse and nesting too deep to recurse) and JSON that is not an object."""
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error, ValueError, MemoryError) as exc:
            raise CorruptMetadata(
                f"metadata file {location} is not valid gzip: {exc}", location=location
            ) from exc
    try:
        document: Any = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise CorruptMetadata(
            f"metadata file {location} is not valid JSON: {exc}", location=location
        ) from exc
    if not isinstance(document, dict):
        raise CorruptMetadata(f"metadata file {location} does not hold a JSON object", location=location)
    return document


def decode_table_metadata(data: bytes, location: str) -> TableMetadata:
    """Parse metadata file bytes (plain or gzip JSON); errors name ``location``.

    Whatever the bytes, only IcefloeErrors escape: CorruptMetadata (with ``location``) for bad
    gzip, bad JSON (including integers too long to parse and nesting too deep to recurse) and
    JSON that is not table metadata; Unsupported for a newer format version.
    """
    document = decode_metadata_document(data, location)
    try:
        return table_metadata_from_json(document)
    except CorruptMetadata as exc:
        raise CorruptMetadata(f"metadata file {location}: {exc}", location=location) from exc
    except Unsupported as exc:
        raise Unsupported(f"metadata file {location}: {exc}", location=location) from exc
    except IcefloeError:
        raise
    except Exception as exc:  # KeyError, TypeError, ValueError, RecursionError, OverflowError, ...
        raise CorruptMetadata(
            f"metadata file {location}: {type(exc).__name__}: {exc}", location=location
        ) from exc


def read_table_metadata(io: FileIO, location: str, *, confirm_exists: bool = False) -> TableMetadata:
    """Read and parse a metadata file; NotFound when it is missing, CorruptMetadata when unparsable.

    A file this process wrote or parsed before is not read again: a write-once name (UUID) with no
    request at all, any other name when its size and modification time are unchanged. With
    ``confirm_exists`` every name gets that check (see the module docstring).
    """
    trusted = _cache.enabled and not confirm_exists and is_write_once_name(location)
    stamp = _stamp(io, location) if _cache.enabled and not trusted else None
    if trusted or stamp is not None:
        hit = _cache.get(location, stamp)
        if hit is not None:
            return hit
    try:
        data = io.new_input(location).read()
    except FileNotFoundError as exc:
        raise NotFound(f"metadata file {location} does not exist", location=location) from exc
    except NotFound as exc:
        raise NotFound(f"metadata file {location} does not exist", location=location) from exc
    md = decode_table_metadata(data, location)
    if trusted and stamp is None:
        stamp = _Stamp(len(data), None)
    if stamp is not None and stamp.size == len(data):
        _cache.put(location, stamp, md)
    return md


def encode_table_metadata(md: TableMetadata) -> bytes:
    """The bytes of a metadata file for ``md`` (gzip when the table's codec property says so)."""
    return _encoded(md)[0]


def _encoded(md: TableMetadata) -> tuple[bytes, bool]:
    """The file's bytes, and whether they are the plain JSON text (not gzip)."""
    if _codec(md.properties) == "gzip":
        return gzip_chunks(table_metadata_json_chunks(md), md.table_uuid or md.location), False
    return table_metadata_json_bytes(md), True


def write_table_metadata(
    io: FileIO,
    table_location: str,
    md: TableMetadata,
    previous_location: str | None = None,
) -> str:
    """Write ``md`` to a new, never-before-used metadata file and return its location.

    The version number is one more than the version in ``previous_location``'s name (0 for a new
    table). The name carries a new UUID, so no other writer can be creating it: locally the file is
    created exclusively, an object store is not asked first (``OutputFile.fresh_name``).
    """
    previous_version = parse_metadata_version(previous_location)
    version = 0 if previous_version is None else previous_version + 1
    data, plain = _encoded(md)
    for attempt in range(_MAX_UUID_RETRIES):
        location = new_metadata_location(table_location, md.properties, version)
        try:
            io.new_output(location, fresh_name=True).write_bytes(data, overwrite=False)
        except (AlreadyExists, FileExistsError):
            if attempt == _MAX_UUID_RETRIES - 1:
                raise
            continue
        if _cache.enabled:
            stamp = _written_stamp(io, location, len(data))
            if stamp is not None:
                _cache.put(location, stamp, md)
        if plain:
            _written.put(location, (md, data))
        return location
    raise AssertionError("unreachable")  # pragma: no cover


_written: LockedLruCache[str, tuple[TableMetadata, bytes]] = LockedLruCache(4)
"""The bytes of the last few plain metadata files written, by location, with the object written
(the last written first out: reading them does not refresh them)."""


def written_metadata_bytes(location: str, md: TableMetadata) -> bytes | None:
    """The bytes this process wrote to ``location`` for this very ``md`` object (the UTF-8 of
    ``table_metadata_to_json(md)``), while it is among the last few plain files written; else None
    (another object, a gzip file, a file written elsewhere or long ago)."""
    found = _written.peek(location)
    return found[1] if found is not None and found[0] is md else None


# ---------------------------------------------------------------------------------------------
# the parsed-metadata cache


@dataclass(frozen=True)
class _Stamp:
    """What identifies one state of a file: its size and, where known, its modification time."""

    size: int
    mtime_ns: int | None


def _stamp(io: FileIO, location: str) -> _Stamp | None:
    """The file's current stamp (None: cannot tell, do not use the cache; NotFound when missing)."""
    try:
        fs, path = io.filesystem_and_path(location)
        info = fs.get_file_info(path)
    except Exception:  # no stamp means no caching; the read below reports real errors
        return None
    if info.type == pafs.FileType.NotFound:
        raise NotFound(f"metadata file {location} does not exist", location=location)
    if info.type != pafs.FileType.File or info.size is None:
        return None
    return _Stamp(int(info.size), info.mtime_ns)


def _written_stamp(io: FileIO, location: str, size: int) -> _Stamp | None:
    """The stamp of a file just written: a local ``stat``; elsewhere the size alone (no extra request)."""
    path = local_path(location)
    if path is None:
        return _Stamp(size, None)
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _Stamp(st.st_size, st.st_mtime_ns) if st.st_size == size else None


class _MetadataCache:
    """Parsed metadata by location, least recently used first out, bounded by the files' sizes."""

    def __init__(self, max_bytes: int) -> None:
        self._entries: LruCache[str, tuple[_Stamp, TableMetadata]] = LruCache(
            max_weight=max_bytes, weigh=_file_size
        )
        self._lock = threading.Lock()  # a hit's check and its drop or refresh are one step

    @property
    def max_bytes(self) -> int:
        """The bound on the cached files' total size (a lower one applies from the next ``put``)."""
        return self._entries.max_weight or 0

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._entries.max_weight = value

    @property
    def enabled(self) -> bool:
        """Whether anything is cached at all."""
        return self.max_bytes > 0

    def get(self, location: str, stamp: _Stamp | None) -> TableMetadata | None:
        """The cached metadata when the file still has ``stamp`` (a file without a known
        modification time matches on its size); ``None``: the name proves the content, no check."""
        with self._lock:
            entry = self._entries.peek(location)
            if entry is None:
                return None
            cached = entry[0]
            same = stamp is None or (
                cached.size == stamp.size
                and (cached.mtime_ns is None or stamp.mtime_ns is None or cached.mtime_ns == stamp.mtime_ns)
            )
            if not same:
                self._entries.pop(location)
                return None
            self._entries.get(location)  # refresh
            return entry[1]

    def put(self, location: str, stamp: _Stamp, md: TableMetadata) -> None:
        """Remember ``md`` as the content of ``location`` in state ``stamp`` (the newest file is
        kept even when it alone is larger than the bound)."""
        with self._lock:
            self._entries.put(location, (stamp, md))

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _file_size(entry: tuple[_Stamp, TableMetadata]) -> int:
    return entry[0].size


def _cache_limit_from_env() -> int:
    raw = os.environ.get(CACHE_BYTES_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_CACHE_BYTES
    except ValueError:
        return DEFAULT_CACHE_BYTES


_cache = _MetadataCache(_cache_limit_from_env())


def set_metadata_cache_limit(max_bytes: int) -> None:
    """Bound the parsed-metadata cache to ``max_bytes`` bytes of metadata files (0 turns it off)."""
    _cache.max_bytes = max(0, int(max_bytes))
    if _cache.max_bytes == 0:
        _cache.clear()


def clear_metadata_cache() -> None:
    """Forget every cached parsed metadata file."""
    _cache.clear()


def metadata_cache_size() -> int:
    """How many parsed metadata files are cached."""
    return len(_cache)


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
