"""v1–v3 trees, read side: a manifest list (or an old v1 snapshot's ``manifests``) of Avro manifests.

Entries come back with inheritance applied, so callers never see the tree's compression of
repeated values:

- ``snapshot_id`` null → the manifest's ``added_snapshot_id``;
- data / file sequence number null and status ADDED (or the manifest's sequence number is 0, as
  for v1 manifests) → the manifest's ``sequence_number``; v1 manifests → 0;
- ``first_row_id`` null on a non-deleted DATA entry → the manifest's ``first_row_id`` plus the
  record counts of the preceding such entries (deleted entries neither take nor advance the
  counter); a manifest without ``first_row_id`` leaves them null.

:func:`inherit_columns` applies the same rules to a manifest decoded to Arrow columns
(:mod:`icefloe.formats.avro.columnar`), for the columnar planner. v4 trees read the Avro
manifests they still reference (after an upgrade) through :func:`read_entries` here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import IcefloeError, reading
from icefloe.formats.avro import columnar as ac
from icefloe.formats.avro.manifest import read_manifest_with_header
from icefloe.formats.avro.manifest_list import read_manifest_list
from icefloe.io.fileio import FileIO, InputFile
from icefloe.lru import LockedLruCache
from icefloe.spec.content import (
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import EntrySelection
from icefloe.tree.integrity import (
    check_entry_counts,
    check_list_entries,
    check_list_totals,
    check_manifest_content,
    check_manifest_counts,
    check_manifest_version,
    entry_counts,
)
from icefloe.tree.recent_writes import RecentWrites

logger = logging.getLogger(__name__)

PARALLEL_MANIFESTS = 4
"""Read manifests with a thread pool once a snapshot has more than this many."""
MAX_READ_WORKERS = 8

T = TypeVar("T")


def manifest_refs(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests a v1–v3 snapshot references, in list order."""
    if snapshot.manifest_list is not None:
        manifests = _cached_manifest_list(io, snapshot.manifest_list, snapshot.snapshot_id)
        check_list_entries(snapshot, manifests, snapshot.manifest_list)
        check_list_totals(snapshot, manifests, snapshot.manifest_list)
        return manifests
    if snapshot.manifests is not None:
        return [_v1_manifest_ref(io, metadata, path, snapshot) for path in snapshot.manifests]
    return []


MANIFEST_LIST_CACHE_SIZE = 32
"""Manifest lists kept decoded (they never change once written: a new snapshot writes a new one)."""
_manifest_lists: LockedLruCache[tuple[str, int | None], tuple[ManifestFile, ...]] = LockedLruCache(
    MANIFEST_LIST_CACHE_SIZE
)
written_lists = RecentWrites()
"""Manifest lists this process has just written: the next commit's parent, read without a request."""
_WRITE_ONCE_LIST = re.compile(
    r"^snap-\d+-\d+-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.avro$"
)


def _is_write_once_list(location: str) -> bool:
    """Whether the list's name proves it is written once: ``snap-<snapshot id>-<attempt>-<uuid>.avro``,
    as icefloe, Iceberg Java and PyIceberg name lists (the UUID is the writer's own)."""
    return _WRITE_ONCE_LIST.match(location.rstrip("/").rsplit("/", 1)[-1]) is not None


def _list_key(location: str, length: int | None) -> tuple[str, int | None]:
    """How a decoded list is kept: a write-once name by location alone, so a kept list is served
    with no request, as v4 roots are (asking its size cost a HEAD per plan on an object store,
    before any manifest could be fetched); any other name by location and size, so a list
    rewritten in place is read again."""
    return (location, None) if _is_write_once_list(location) else (location, length)


def clear_manifest_list_cache() -> None:
    """Forget every decoded or remembered manifest list (tests that rewrite files in place need this)."""
    _manifest_lists.clear()
    written_lists.clear()


def remember_written_list(location: str, length: int, manifests: Sequence[ManifestFile]) -> None:
    """Keep the manifests of the list this process just wrote at ``location`` (``length`` bytes),
    as a reader decodes them (``ManifestListResult.as_read``): the next commit, whose parent is
    usually this snapshot, then reads its parent's list without decoding it. Keyed as decoded lists
    are (``_list_key``): a list written by anyone else has another location, so it is read."""
    _manifest_lists.put(_list_key(location, length), tuple(manifests))


def _cached_manifest_list(io: FileIO, location: str, snapshot_id: int) -> list[ManifestFile]:
    """``read_manifest_list``, remembered for repeated plans of a snapshot (``_list_key``)."""
    written = written_lists.take(location)
    source: InputFile | bytes
    length: int | None
    if written is not None:
        source, length = written, len(written)
    elif _is_write_once_list(location):
        source, length = io.new_input(location), None  # no request unless it must be read
    else:
        with reading(location, "read the manifest list", snapshot_id=snapshot_id):
            source = io.new_input(location)
            length = getattr(source, "length", None)
        if not isinstance(length, int):
            return _read_list(source, location, snapshot_id)
    key = _list_key(location, length)
    cached = _manifest_lists.get(key)
    if cached is not None:
        return list(cached)
    manifests = _read_list(source, location, snapshot_id)
    _manifest_lists.put(key, tuple(manifests))
    return manifests


def _read_list(source: InputFile | bytes, location: str, snapshot_id: int) -> list[ManifestFile]:
    with reading(location, "read the manifest list", snapshot_id=snapshot_id):
        return read_manifest_list(source)


def _v1_manifest_ref(io: FileIO, metadata: TableMetadata, path: str, snapshot: Snapshot) -> ManifestFile:
    """A manifest listed directly in an old v1 snapshot: counts come from reading it."""
    data = io.new_input(path).read()
    try:
        header, entries = read_manifest_with_header(data, metadata.specs_by_id())
    except IcefloeError as exc:
        exc.with_context(location=path, snapshot_id=snapshot.snapshot_id)
        raise
    counts = {s: [0, 0] for s in EntryStatus}
    added_by: int | None = None
    for e in entries:
        c = counts[e.status]
        c[0] += 1
        c[1] += e.data_file.record_count
        if e.status == EntryStatus.ADDED and added_by is None:
            added_by = e.snapshot_id
    return ManifestFile(
        manifest_path=path,
        manifest_length=len(data),
        partition_spec_id=header.spec_id if header.spec_id is not None else 0,
        content=ManifestContent.DATA,
        sequence_number=0,
        min_sequence_number=0,
        added_snapshot_id=added_by if added_by is not None else snapshot.snapshot_id,
        added_files_count=counts[EntryStatus.ADDED][0],
        existing_files_count=counts[EntryStatus.EXISTING][0],
        deleted_files_count=counts[EntryStatus.DELETED][0],
        added_rows_count=counts[EntryStatus.ADDED][1],
        existing_rows_count=counts[EntryStatus.EXISTING][1],
        deleted_rows_count=counts[EntryStatus.DELETED][1],
        format_version=header.format_version,
    )


def inherit(
    entries: Sequence[ManifestEntry], manifest: ManifestFile, format_version: int
) -> list[ManifestEntry]:
    """Apply snapshot-id, sequence-number and first-row-id inheritance from a manifest's list entry.

    ``format_version`` is the manifest file's own version (v1 manifests carry no sequence numbers:
    they all become 0).
    """
    snap = manifest.added_snapshot_id
    seq = 0 if format_version == 1 else manifest.sequence_number
    seq_for_all = format_version == 1 or seq == 0
    next_row_id = manifest.first_row_id if manifest.content == ManifestContent.DATA else None
    added, deleted, data = EntryStatus.ADDED, EntryStatus.DELETED, FileContent.DATA
    out: list[ManifestEntry] = []
    append = out.append
    for e in entries:
        sid, dseq, fseq, df = e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file
        changed = False
        if sid is None:
            sid, changed = snap, True
        if dseq is None and (seq_for_all or e.status == added):
            dseq, changed = seq, True
        if fseq is None and (seq_for_all or e.status == added):
            fseq, changed = seq, True
        if next_row_id is not None and df.content == data and e.status != deleted and df.first_row_id is None:
            df = df.with_changes(first_row_id=next_row_id)
            next_row_id += df.record_count
            changed = True
        append(ManifestEntry(e.status, sid, dseq, fseq, df, e.dv_snapshot_id) if changed else e)
    return out


def inherit_columns(columns: ac.ManifestColumns, manifest: ManifestFile) -> ac.ManifestColumns:
    """:func:`inherit` on a manifest decoded to Arrow columns: the same rules, a column at a time."""
    n = columns.num_rows
    status = columns.column(ac.STATUS)
    if status is None:
        return columns
    seq = 0 if columns.header.format_version == 1 else manifest.sequence_number
    seq_for_all = columns.header.format_version == 1 or seq == 0
    added = pc.equal(status, int(EntryStatus.ADDED))
    changes: dict[int, pa.Array] = {
        ac.SNAPSHOT_ID: _filled(columns.column(ac.SNAPSHOT_ID), manifest.added_snapshot_id, n, None)
    }
    for fid in (ac.SEQUENCE_NUMBER, ac.FILE_SEQUENCE_NUMBER):
        changes[fid] = _filled(columns.column(fid), seq, n, None if seq_for_all else added)
    if manifest.content == ManifestContent.DATA and manifest.first_row_id is not None:
        changes[ac.FIRST_ROW_ID] = _inherited_first_row_ids(columns, manifest.first_row_id)
    return columns.with_columns(changes)


def _filled(arr: pa.Array | None, value: int, n: int, only_where: pa.Array | None) -> pa.Array:
    """``arr`` (all null when missing), nulls replaced by ``value`` (only where ``only_where`` holds)."""
    if arr is None:
        arr = pa.nulls(n, pa.int64())
    if only_where is None:
        return pc.fill_null(arr, pa.scalar(value, pa.int64()))
    fill = pc.and_(pc.is_null(arr), only_where)
    return pc.if_else(fill, pa.scalar(value, pa.int64()), arr)


def _inherited_first_row_ids(columns: ac.ManifestColumns, first_row_id: int) -> pa.Array:
    """First row ids of a data manifest's live DATA entries that have none, counted from the manifest's."""
    frid = columns.column(ac.FIRST_ROW_ID)
    n = columns.num_rows
    if frid is None:
        frid = pa.nulls(n, pa.int64())
    status = columns.numpy(ac.STATUS, -1)
    content = columns.numpy(ac.CONTENT, int(FileContent.DATA))
    missing = pc.is_null(frid).to_numpy(zero_copy_only=False)
    assign = (content == int(FileContent.DATA)) & (status != int(EntryStatus.DELETED)) & missing
    if not assign.any():
        return frid
    counts = np.where(assign, columns.numpy(ac.RECORD_COUNT, 0), 0)
    before = np.cumsum(counts) - counts
    return pc.if_else(pa.array(assign), pa.array(before + first_row_id, pa.int64()), frid)


def read_entries(io: FileIO, metadata: TableMetadata, manifest_file: ManifestFile) -> list[ManifestEntry]:
    """Every entry of one Avro manifest (deleted ones included), with inheritance applied."""
    location = manifest_file.manifest_path
    with reading(location, "read the manifest"):
        header, entries = read_manifest_with_header(
            io.new_input(location), metadata.specs_by_id(), manifest_file=manifest_file
        )
    check_manifest_version(header.format_version, metadata.format_version, location)
    check_manifest_content(header.content, manifest_file)
    check_entry_counts(manifest_file, entries)
    return inherit(entries, manifest_file, header.format_version)


def read_live_columns(
    io: FileIO, metadata: TableMetadata, manifest_file: ManifestFile
) -> ac.ManifestColumns | None:
    """One Avro manifest's entries as Arrow columns with inheritance applied (DataFusion decoder).

    None when the Arrow decoder cannot (or must not) read this manifest: read it as objects
    (:func:`read_entries`) instead.
    """
    where = manifest_file.manifest_path
    with reading(where, "read the manifest"):
        try:
            columns = ac.read_manifest_columns(
                io, where, metadata.specs_by_id(), spec_id=manifest_file.partition_spec_id
            )
        except ac.ColumnarUnsupported as exc:  # an internal signal, not a corrupt file
            logger.debug("reading %s as objects: %s", where, exc)
            return None
    check_manifest_version(columns.header.format_version, metadata.format_version, where)
    check_manifest_content(columns.header.content, manifest_file)
    check_manifest_counts(manifest_file, columns.numpy(ac.STATUS, -1), columns.record_counts())
    return inherit_columns(columns, manifest_file)


def map_manifests(
    read: Callable[[ManifestFile], T], manifests: Sequence[ManifestFile], parallel_above: int | None = None
) -> Iterator[T]:
    """``read`` of each manifest, in order, on a thread pool when there are more than
    ``parallel_above`` of them (default ``PARALLEL_MANIFESTS``)."""
    limit = PARALLEL_MANIFESTS if parallel_above is None else parallel_above
    if len(manifests) <= limit:
        for m in manifests:
            yield read(m)
        return
    with ThreadPoolExecutor(max_workers=min(MAX_READ_WORKERS, len(manifests))) as pool:
        yield from pool.map(read, manifests)


def read_entries_many(
    io: FileIO, metadata: TableMetadata, manifests: Sequence[ManifestFile]
) -> Iterator[list[ManifestEntry]]:
    """:func:`read_entries` of several Avro manifests, in order, on a thread pool when there are many."""
    return map_manifests(lambda m: read_entries(io, metadata, m), manifests)


def with_counts(
    manifest: ManifestFile, entries_of: Callable[[ManifestFile], Sequence[ManifestEntry]]
) -> ManifestFile:
    """The manifest with every file/row count set: v1 manifest lists may lack them, v2+ lists and
    v4 root references require them. Missing counts are counted from ``entries_of(manifest)``."""
    if None not in (
        manifest.added_files_count,
        manifest.existing_files_count,
        manifest.deleted_files_count,
        manifest.added_rows_count,
        manifest.existing_rows_count,
        manifest.deleted_rows_count,
    ):
        return manifest
    return manifest.with_changes(**entry_counts(entries_of(manifest), v4=False))


def may_have_live_entries(manifest: ManifestFile) -> bool:
    """False only when the counts say the manifest holds no ADDED or EXISTING entries."""
    return manifest.has_added_files() or manifest.has_existing_files()


def live_manifest_refs(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, selection: EntrySelection
) -> list[ManifestFile]:
    """The manifests that may hold live entries (by their counts) and that ``selection`` keeps."""
    refs = manifest_refs(io, metadata, snapshot)
    return [m for m in refs if may_have_live_entries(m) and selection.keeps_manifest(m)]


def live_entries(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, selection: EntrySelection
) -> Iterator[ManifestEntry]:
    """The live (ADDED/EXISTING) entries of a v1–v3 snapshot, with inheritance applied."""
    refs = live_manifest_refs(io, metadata, snapshot, selection)
    try:
        for entries in read_entries_many(io, metadata, refs):
            for e in entries:
                if e.status.is_live and selection.keeps_entry(e):
                    yield e
    except IcefloeError as exc:
        exc.with_context(snapshot_id=snapshot.snapshot_id)
        raise
