"""The read seam: the live content entries of a snapshot, whatever shape its metadata tree has.

v1–v3: a manifest list (or, in old v1 tables, the snapshot's ``manifests`` list) of Avro
manifests. Entries come back with inheritance applied, so callers never see the tree's
compression of repeated values:

- ``snapshot_id`` null → the manifest's ``added_snapshot_id``;
- data / file sequence number null and status ADDED (or the manifest's sequence number is 0, as
  for v1 manifests) → the manifest's ``sequence_number``; v1 manifests → 0;
- ``first_row_id`` null on a non-deleted DATA entry → the manifest's ``first_row_id`` plus the
  record counts of the preceding such entries (deleted entries neither take nor advance the
  counter); a manifest without ``first_row_id`` leaves them null.

v4 snapshots (``root-manifest``) and v4 leaf references are handled by
:mod:`icefloe.tree.v4_read` behind the same three functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from icefloe.formats.avro_manifest import read_manifest_with_header
from icefloe.formats.avro_manifest_list import read_manifest_list
from icefloe.spec.content import (
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import v4_read

PARALLEL_MANIFESTS = 4
"""Read manifests with a thread pool once a snapshot has more than this many."""
MAX_READ_WORKERS = 8

ManifestFilter = Callable[[ManifestFile], bool]
EntryFilter = Callable[[ManifestEntry], bool]


def manifest_refs(io: Any, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests a snapshot references, in list order."""
    if snapshot.root_manifest is not None:
        return v4_read.manifest_refs(io, metadata, snapshot)
    if snapshot.manifest_list is not None:
        return read_manifest_list(io.new_input(snapshot.manifest_list))
    if snapshot.manifests is not None:
        return [_v1_manifest_ref(io, metadata, path, snapshot) for path in snapshot.manifests]
    return []


def _v1_manifest_ref(io: Any, metadata: TableMetadata, path: str, snapshot: Snapshot) -> ManifestFile:
    """A manifest listed directly in an old v1 snapshot: counts come from reading it."""
    data = io.new_input(path).read()
    header, entries = read_manifest_with_header(data, metadata.specs_by_id())
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


def read_entries(io: Any, metadata: TableMetadata, manifest_file: ManifestFile) -> list[ManifestEntry]:
    """Every entry of one manifest (deleted ones included), with inheritance applied."""
    if manifest_file.format_version >= 4:
        return v4_read.read_entries(io, metadata, manifest_file)
    header, entries = read_manifest_with_header(
        io.new_input(manifest_file.manifest_path), metadata.specs_by_id(), manifest_file=manifest_file
    )
    return inherit(entries, manifest_file, header.format_version)


def read_entries_many(
    io: Any, metadata: TableMetadata, manifests: Sequence[ManifestFile]
) -> Iterator[list[ManifestEntry]]:
    """``read_entries`` of several manifests, in order, on a thread pool when there are many."""
    if len(manifests) <= PARALLEL_MANIFESTS:
        for m in manifests:
            yield read_entries(io, metadata, m)
        return
    with ThreadPoolExecutor(max_workers=min(MAX_READ_WORKERS, len(manifests))) as pool:
        yield from pool.map(lambda m: read_entries(io, metadata, m), manifests)


def may_have_live_entries(manifest: ManifestFile) -> bool:
    """False only when the counts say the manifest holds no ADDED or EXISTING entries."""
    return manifest.has_added_files() or manifest.has_existing_files()


def live_entries(
    io: Any,
    metadata: TableMetadata,
    snapshot: Snapshot,
    manifest_filter: ManifestFilter | None = None,
    entry_filter: EntryFilter | None = None,
    content: ManifestContent | None = None,
) -> Iterator[ManifestEntry]:
    """The live (ADDED/EXISTING) entries of a snapshot, with inheritance applied.

    ``content`` keeps only data or delete manifests; ``manifest_filter`` can skip manifests (e.g. on
    partition summaries) and ``entry_filter`` entries.
    """
    if snapshot.root_manifest is not None:
        yield from v4_read.live_entries(io, metadata, snapshot, manifest_filter, entry_filter, content)
        return
    refs = [
        m
        for m in manifest_refs(io, metadata, snapshot)
        if (content is None or m.content == content)
        and may_have_live_entries(m)
        and (manifest_filter is None or manifest_filter(m))
    ]
    for entries in read_entries_many(io, metadata, refs):
        for e in entries:
            if e.status.is_live and (entry_filter is None or entry_filter(e)):
                yield e
