"""The v4 half of the read seam: root manifest + Parquet leaves (+ manifest DVs, + inline entries).

A v4 snapshot's ``root-manifest`` is a content-entry file holding references to leaf manifests
(DATA_MANIFEST / DELETE_MANIFEST rows: v4 Parquet leaves, or legacy v1–v3 Avro manifests with
``format_version`` 0 after an upgrade) and, for small commits, DATA entries inline. This module
presents it through the same three calls as v1–v3 (``manifest_refs``, ``read_entries``,
``live_entries``) and the same objects:

- live references (EXISTING / ADDED / MODIFIED) come back as ``ManifestFile`` rows; the inline
  entries of a root appear as one synthetic ``ManifestFile`` per content whose
  ``manifest_path`` is the root itself (``read_entries`` recognises it by the file's footer);
- leaf rows inherit from their reference (facts §5.4): ``snapshot_id`` when null; both sequence
  numbers when null and ADDED; ``first_row_id`` = reference ``first_row_id`` + record counts of
  the earlier non-deleted DATA rows that also lacked one; a colocated DV without
  ``dv_snapshot_id`` falls back to the row's snapshot id (Q6);
- a reference's manifest DV hides the leaf rows whose position bit is set. ``read_entries`` shows
  the rows removed *by the reference's own snapshot* (``deleted_positions`` /
  ``replaced_positions``) as DELETED / REPLACED stamped with ``dv_snapshot_id``, as a v1–v3
  manifest shows its snapshot's deletions; older masked rows are omitted;
- legacy references go to the v1–v3 Avro reader with the reference's tracking values.

``stats_manifest_filter`` lets scan planning skip whole leaves on their aggregated
``content_stats`` (loose bounds under an MDV are still valid may-match bounds, facts Q15).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeAlias, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata, IcefloeError, reading
from icefloe.expressions.ast import Expression
from icefloe.expressions.evaluators import InclusiveMetricsEvaluator
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.bitmaps import ManifestDVCodec, manifest_dv_codec
from icefloe.formats.v4.content_entry import (
    ROOT_CONTENT,
    read_content_entries,
    read_footer_metadata,
)
from icefloe.formats.v4.content_entry_schema import (
    POS_COLUMN,
    ContentEntrySchema,
    column_by_field_id,
    single_array,
    union_partition_type,
)
from icefloe.formats.v4.content_rows import to_positioned_rows
from icefloe.formats.v4.content_stats import (
    ContentStats,
    StatsLayout,
    content_stats_type,
    metrics_from_content_stats,
)
from icefloe.io.fileio import FileIO
from icefloe.lru import IdentityLruCache, LockedLruCache, LruCache
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import IcebergType, StructType
from icefloe.tree import v3_read
from icefloe.tree.changes import EntrySelection, ManifestFilter
from icefloe.tree.integrity import check_manifest_counts, entry_counts
from icefloe.tree.recent_writes import RecentWrites
from icefloe.tree.summary import ADDED_DATA_FILES, ADDED_DELETE_FILES
from icefloe.tree.v4_columnar import decode_leaf_rows
from icefloe.tree.v4_leaf_columns import LeafColumns
from icefloe.tree.v4_policy import manifest_dv_encoding
from icefloe.tree.v4_root_checks import (
    check_deletion_vectors,
    checked_references,
    recorded_cardinalities,
    root_codec,
)

PARALLEL_LEAVES = 2
_ROOT_CACHE_SIZE = 16
_LIVE_STATUSES = pa.array([int(s) for s in EntryStatus if s.is_live], pa.int32())
_REFERENCE_CONTENTS = pa.array([int(FileContent.DATA_MANIFEST), int(FileContent.DELETE_MANIFEST)], pa.int32())
_INLINE_CONTENT = {
    ManifestContent.DATA: FileContent.DATA,
    ManifestContent.DELETES: FileContent.EQUALITY_DELETES,
}


@dataclass(frozen=True)
class RootContents:
    """Every row of a root manifest, in file order (raw explicit values, nothing filtered)."""

    location: str
    length: int
    refs: tuple[ManifestFile, ...]
    inline: tuple[ManifestEntry, ...]
    footer: dict[str, str]


_cache: LruCache[tuple[str, str, int, int, str], RootContents] = LruCache(_ROOT_CACHE_SIZE)
written_roots = RecentWrites()
"""Roots this process has just written: the next commit's parent, read back without a request."""
_layouts: LruCache[tuple[str, int, int], StatsLayout] = LruCache(_ROOT_CACHE_SIZE)
_partition_type_cache: LruCache[tuple[str, int, int], dict[int, IcebergType]] = LruCache(_ROOT_CACHE_SIZE)
"""Both kept in the order first made (a hit does not refresh): a schema's layout and types are
asked for on every decode, by the few tables a process works on."""
_cache_lock = threading.Lock()  # the four caches here
_DECODED_ROWS_KEPT = 4096
_decoded_rows: IdentityLruCache[ManifestEntry, StructType] = IdentityLruCache(_DECODED_ROWS_KEPT)
"""Inline rows of roots decoded lately, by identity, with the content-stats type they were decoded
with (see :func:`decoded_stats_types`)."""


RootTableKey: TypeAlias = tuple[ContentEntrySchema, str | None, str]
"""What a root's Arrow rows depend on besides the rows: entry schema, table location, MDV encoding."""

MAX_ROOT_TABLES = 8
"""Root tables kept (a few tables committing at once in one process each find their parent's)."""

_root_tables: LockedLruCache[str, tuple[RootTableKey, pa.Table]] = LockedLruCache(MAX_ROOT_TABLES)
"""By location; the last written first out (a read does not refresh)."""


def remember_root_table(location: str, key: RootTableKey, table: pa.Table) -> None:
    """Keep the encoder's Arrow table of the root just written at ``location`` (small roots only)."""
    if table.num_rows > _DECODED_ROWS_KEPT:
        return
    _root_tables.put(location, (key, table))


def root_table(location: str, key: RootTableKey) -> pa.Table | None:
    """The Arrow table this process wrote the root at ``location`` from, under ``key`` (else None)."""
    hit = _root_tables.peek(location)
    if hit is None or hit[0][0] is not key[0] or hit[0][1:] != key[1:]:
        return None
    return hit[1]


def table_location(metadata: TableMetadata) -> str | None:
    """The location relative paths in the tree are resolved against (None: all absolute)."""
    return metadata.location or None


def dv_codec(metadata: TableMetadata) -> ManifestDVCodec:
    """The manifest-DV codec the table uses (``write.v4.manifest-dv.encoding``)."""
    return manifest_dv_codec(manifest_dv_encoding(metadata.properties))


def positions(codec: ManifestDVCodec, data: bytes | None, source: str) -> set[int]:
    """The positions a manifest-DV style bitmap holds (empty for None)."""
    if not data:
        return set()
    return set(codec.decode(data, source=source).to_list())


def clear_root_cache() -> None:
    """Forget every decoded or remembered root manifest (tests that rewrite files in place need this)."""
    with _cache_lock:
        _cache.clear()
        _decoded_rows.clear()
    _root_tables.clear()
    written_roots.clear()


def decoded_stats_types(entries: Sequence[ManifestEntry]) -> list[StructType | None]:
    """For each entry, the content-stats type it was decoded with when it is an inline row of a
    root this process decoded lately, else None.

    A decoded row holds what its root stores, and only that: written again with the same stats
    layout, it is stored as it is (``tree.v4_written_root`` keeps it without converting it again;
    ``tests/tree/test_v4_written_root.py`` checks roots carried on from decoded parents).
    """
    with _cache_lock:
        return _decoded_rows.peek_many(entries)


def _note_decoded(entries: Sequence[ManifestEntry], stats_type: StructType) -> None:
    with _cache_lock:
        _decoded_rows.put_many(entries, stats_type)


def _root_key(metadata: TableMetadata, location: str) -> tuple[str, str, int, int, str]:
    """What a decoded root depends on besides its bytes: the table's schema, specs and bitmap codec."""
    return (
        location,
        metadata.table_uuid or "",
        metadata.current_schema_id,
        len(metadata.partition_specs),
        dv_codec(metadata).name,
    )


def _keep(key: tuple[str, str, int, int, str], root: RootContents) -> None:
    with _cache_lock:
        _cache.put(key, root)


def remember_written_root(metadata: TableMetadata, root: RootContents) -> None:
    """Keep a root this process has just written, as ``read_root`` would decode it under ``metadata``.

    The writer builds ``root`` from the rows it encoded (:mod:`icefloe.tree.v4_written_root`), so
    the next commit starts from its parent without decoding the parent's bytes. A reader whose
    metadata differs in what decoding depends on (schema, specs, bitmap codec) decodes the file.
    """
    _keep(_root_key(metadata, root.location), root)


def read_root(io: FileIO, metadata: TableMetadata, location: str) -> RootContents:
    """The rows of a root manifest (cached: root files are immutable)."""
    key = _root_key(metadata, location)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    written = written_roots.take(location)
    with reading(location, "read the root manifest"):
        data = io.new_input(location).read() if written is None else written
        root = _parse_root(metadata, location, data)
    _keep(key, root)
    return root


def _root_at(io: FileIO, metadata: TableMetadata, location: str) -> RootContents | bytes:
    """The decoded root at ``location`` when the file a reference names is one, else the leaf's bytes.

    A root's inline entries are planned through a synthetic reference naming the root itself, so a
    reference may name either kind of file. A root this process holds decoded is answered from the
    root cache without a request; otherwise the file is read once, and a root among what was read
    is decoded from those bytes and kept, not fetched again by ``read_root``.
    """
    key = _root_key(metadata, location)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    data = io.new_input(location).read()
    if read_footer_metadata(data, source=location).get("content") != ROOT_CONTENT:
        return data
    with reading(location, "read the root manifest"):
        root = _parse_root(metadata, location, data)
    _keep(key, root)
    return root


def _parse_root(metadata: TableMetadata, location: str, data: bytes) -> RootContents:
    """Decode a root: references as objects, inline entries through the columnar leaf decoder.

    Inline entries are decoded exactly as leaf rows are (one decoder for entries of every
    origin), which is also ~10% faster than the row decoder on a 110-row root.
    """
    specs = metadata.specs_by_id()
    table = read_content_entries(
        data,
        table_schema=metadata.schema(),
        specs=specs,
        table_location=table_location(metadata),
        source=location,
        kind="root",
    )
    check_deletion_vectors(table, location)
    content = _column(table, ce.CONTENT_TYPE)
    is_ref = pc.is_in(content, value_set=_REFERENCE_CONTENTS.cast(content.type))
    ref_rows = table.filter(is_ref)
    rows = [row for _, row in to_positioned_rows(ref_rows, specs=specs, source=location)]
    footer = read_footer_metadata(data, source=location)
    stored = root_codec(footer, manifest_dv_encoding(metadata.properties), location)
    refs = checked_references(  # bitmaps checked against the root, re-encoded to the table's codec
        cast(list[ManifestFile], rows), recorded_cardinalities(ref_rows), stored, dv_codec(metadata), location
    )
    inline_rows = _decode(table.filter(pc.invert(is_ref)), metadata, location)
    inline = tuple(_dv_snapshot_fallback(e) for _, e in inline_rows)
    _note_decoded(inline, _layout(metadata).stats_type)
    return RootContents(location, len(data), tuple(refs), inline, footer)


def inline_entries_added(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot
) -> list[ManifestEntry] | None:
    """The inline root rows a v4 snapshot added (ADDED, tracked to it), decoding only those rows.

    Rebasing a stale append needs just the files the snapshot added; the rows its root carried
    from its parent (most of a small append's root) and its references are not decoded. The root
    is not kept in the root cache (a rebased client root is never read again). None when the
    snapshot's summary counts files that are not among these rows (files placed in leaves, delete
    files): the caller reads the whole tree instead.
    """
    assert snapshot.root_manifest is not None
    location = snapshot.root_manifest
    with _cache_lock:
        cached = _cache.peek(_root_key(metadata, location))
    if cached is not None:
        found = [e for e in cached.inline if _added_by(e, snapshot.snapshot_id)]
    else:
        with reading(location, "read the root manifest"):
            data = io.new_input(location).read()
            read = partial(
                read_content_entries,
                data,
                table_schema=metadata.schema(),
                specs=metadata.specs_by_id(),
                table_location=table_location(metadata),
                source=location,
                kind="root",
            )
            # the rows carried from the parent (most of a root over a long head) are not projected
            table = read(rows=partial(_added_positions, snapshot_id=snapshot.snapshot_id))
            check_deletion_vectors(table, location)  # the rows taken; the others are never read
            rows = _decode(table, metadata, location)
        found = [_dv_snapshot_fallback(e) for _, e in rows]
    summary = snapshot.summary
    data_files = [e for e in found if e.data_file.content == FileContent.DATA]
    complete = (
        len(data_files) == len(found)
        and str(len(found)) == summary.get(ADDED_DATA_FILES, "")
        and summary.get(ADDED_DELETE_FILES, "0") == "0"
    )
    return found if complete else None


def _added_positions(table: pa.Table, snapshot_id: int) -> list[int]:
    """Positions of the rows of a root's table that are inline entries ADDED by the snapshot."""
    content = _column(table, ce.CONTENT_TYPE)
    status = _tracking_member(table, ce.STATUS)
    tracked_to = _tracking_member(table, ce.SNAPSHOT_ID)
    keep = pc.and_(
        pc.invert(pc.is_in(content, value_set=_REFERENCE_CONTENTS.cast(content.type))),
        pc.and_(
            pc.equal(status, pa.scalar(int(EntryStatus.ADDED), status.type)),
            pc.equal(tracked_to, pa.scalar(snapshot_id, tracked_to.type)),
        ),
    )
    return np.flatnonzero(pc.fill_null(keep, False).to_numpy(zero_copy_only=False)).tolist()


def _added_by(e: ManifestEntry, snapshot_id: int) -> bool:
    return e.status == EntryStatus.ADDED and e.snapshot_id == snapshot_id


def _dv_snapshot_fallback(e: ManifestEntry) -> ManifestEntry:
    """Facts Q6: a DV without ``dv_snapshot_id`` dates from the row's snapshot."""
    if e.data_file.deletion_vector is not None and e.dv_snapshot_id is None:
        e = e.with_changes(dv_snapshot_id=e.snapshot_id)
    if e.data_file.column_files and e.latest_column_file_snapshot_id is None:
        e = e.with_changes(latest_column_file_snapshot_id=e.snapshot_id)
    return e


def inline_reference(root: RootContents, snapshot: Snapshot, content: ManifestContent) -> ManifestFile | None:
    """The synthetic reference standing for a root's inline entries of one content (None if none)."""
    want = _INLINE_CONTENT[content]
    rows = [e for e in root.inline if e.data_file.content == want]
    if not rows:
        return None
    live_seqs = [e.sequence_number for e in rows if e.is_live and e.sequence_number is not None]
    return counted_reference(
        rows,
        root.location,
        root.length,
        content,
        snapshot_id=snapshot.snapshot_id,
        sequence_number=snapshot.sequence_number,
        min_sequence_number=min(live_seqs, default=snapshot.sequence_number),
    )


def counted_reference(
    rows: Sequence[ManifestEntry],
    location: str,
    length: int,
    content: ManifestContent,
    *,
    snapshot_id: int,
    sequence_number: int,
    min_sequence_number: int,
    partition_spec_id: int = -1,
    status: EntryStatus = EntryStatus.EXISTING,
    content_stats: ContentStats | None = None,
) -> ManifestFile:
    """A v4 reference to ``rows`` stored at ``location``, its files and rows counted by entry status."""
    reference = ManifestFile(
        manifest_path=location,
        manifest_length=length,
        partition_spec_id=partition_spec_id,
        content=content,
        sequence_number=sequence_number,
        min_sequence_number=min_sequence_number,
        added_snapshot_id=snapshot_id,
        format_version=4,
        status=status,
        record_count=len(rows),
        content_stats=content_stats,
    )
    return reference.with_changes(**entry_counts(rows, v4=True))


def manifest_refs(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """Live references of a v4 snapshot's root, then one synthetic reference per inline content."""
    assert snapshot.root_manifest is not None
    root = read_root(io, metadata, snapshot.root_manifest)
    out = [r for r in root.refs if r.status.is_live]
    for content in ManifestContent:
        ref = inline_reference(root, snapshot, content)
        if ref is not None:
            out.append(ref)
    return out


def _layout(metadata: TableMetadata) -> StatsLayout:
    """The content-stats layout leaf rows are decoded with (cached per schema)."""
    key = (metadata.table_uuid or "", metadata.current_schema_id, metadata.last_column_id)
    with _cache_lock:
        layout = _layouts.peek(key)
    if layout is None:
        layout = StatsLayout(content_stats_type(metadata.schema()))
        with _cache_lock:
            _layouts.put(key, layout, refresh=False)
    return layout


def _decode(table: pa.Table, metadata: TableMetadata, location: str) -> list[tuple[int, ManifestEntry]]:
    """``(position, entry)`` of content-entry rows, as stored (no inheritance, no MDV)."""
    return decode_leaf_rows(
        table, metadata.specs_by_id(), _layout(metadata), location, partition_types=_partition_types(metadata)
    )


def decode_inline_entries(table: pa.Table, metadata: TableMetadata, location: str) -> list[ManifestEntry]:
    """Inline entry rows of the root at ``location`` (as ``read_content_entries`` returns them)
    decoded as :func:`read_root` decodes them."""
    return [_dv_snapshot_fallback(e) for _, e in _decode(table, metadata, location)]


def _partition_types(metadata: TableMetadata) -> dict[int, IcebergType]:
    """Partition field id -> result type over all specs (types leaf partition values exactly)."""
    key = (metadata.table_uuid or "", metadata.current_schema_id, len(metadata.partition_specs))
    with _cache_lock:
        types = _partition_type_cache.peek(key)
    if types is None:
        union = union_partition_type(metadata.specs_by_id(), metadata.schema())
        types = {f.field_id: f.field_type for f in union.fields}
        with _cache_lock:
            _partition_type_cache.put(key, types, refresh=False)
    return types


def _read_leaf_table(
    io: FileIO, metadata: TableMetadata, ref: ManifestFile, columns: Any = None, data: bytes | None = None
) -> pa.Table:
    with reading(ref.manifest_path, "read the leaf manifest"):
        if data is None:
            data = io.new_input(ref.manifest_path).read()
        table = read_content_entries(
            data,
            table_schema=metadata.schema(),
            specs=metadata.specs_by_id(),
            table_location=table_location(metadata),
            source=ref.manifest_path,
            kind="leaf",
            columns=columns,
        )
        _check_leaf(table, ref)
        check_deletion_vectors(table, ref.manifest_path)
    return table


def _check_leaf(table: pa.Table, ref: ManifestFile) -> None:
    """The leaf's rows must be those its reference counts (rows, entries and records per status)."""
    where = ref.manifest_path
    if ref.record_count is not None and table.num_rows != ref.record_count:
        raise CorruptMetadata(
            f"{where}: holds {table.num_rows} entries, its reference says {ref.record_count}", location=where
        )
    statuses = _tracking_member(table, ce.STATUS).to_numpy(zero_copy_only=False)
    counts = column_by_field_id(table, ce.RECORD_COUNT)
    records = None if counts is None else pc.fill_null(counts, 0).to_numpy(zero_copy_only=False)
    check_manifest_counts(ref, statuses, records)


def _tracking_member(table: pa.Table, field_id: int) -> pa.Array:
    tracking = column_by_field_id(table, ce.TRACKING)
    if tracking is None:
        raise CorruptMetadata("content entries without a tracking column")
    arr = cast(pa.StructArray, tracking)
    for i in range(arr.type.num_fields):
        if field_id_of(arr.type.field(i)) == field_id:
            return pc.struct_field(arr, [i])
    raise CorruptMetadata(f"tracking struct without field {field_id}")


def _column(table: pa.Table, field_id: int) -> pa.Array:
    col = column_by_field_id(table, field_id)
    if col is None:
        raise CorruptMetadata(f"content entries without field {field_id}")
    return col


def inherited_first_row_ids(table: pa.Table, ref: ManifestFile) -> list[int | None]:
    """Each leaf row's first_row_id after inheritance (by row index; facts §5.4)."""
    explicit = _tracking_member(table, ce.FIRST_ROW_ID).to_pylist()
    base = ref.first_row_id if ref.content == ManifestContent.DATA else None
    if base is None or all(v is not None for v in explicit):
        return explicit
    status = _tracking_member(table, ce.STATUS).to_pylist()
    content = _column(table, ce.CONTENT_TYPE).to_pylist()
    counts = _column(table, ce.RECORD_COUNT).to_pylist()
    out: list[int | None] = []
    counter = base
    deleted, data = int(EntryStatus.DELETED), int(FileContent.DATA)
    for fr, st, ct, rc in zip(explicit, status, content, counts, strict=True):
        if fr is None and ct == data and st != deleted:
            out.append(counter)
            counter += rc
        else:
            out.append(fr)
    return out


def _inherit(e: ManifestEntry, ref: ManifestFile, first_row_id: int | None) -> ManifestEntry:
    sid = e.snapshot_id if e.snapshot_id is not None else ref.added_snapshot_id
    added = e.status == EntryStatus.ADDED
    seq = e.sequence_number if e.sequence_number is not None or not added else ref.sequence_number
    fseq = e.file_sequence_number
    if fseq is None and added:
        fseq = ref.sequence_number
    df = e.data_file
    if df.content == FileContent.DATA and df.first_row_id is None and first_row_id is not None:
        df = df.with_changes(first_row_id=first_row_id)
    dv_sid = e.dv_snapshot_id
    if dv_sid is None and df.deletion_vector is not None:
        dv_sid = sid
    cf_sid = e.latest_column_file_snapshot_id
    if cf_sid is None and df.column_files:
        cf_sid = sid
    return ManifestEntry(e.status, sid, seq, fseq, df, dv_sid, cf_sid)


def leaf_rows(
    io: FileIO, metadata: TableMetadata, ref: ManifestFile, data: bytes | None = None
) -> list[tuple[int, ManifestEntry]]:
    """``(position, entry)`` for every row of a v4 leaf, inheritance applied, MDV not applied."""
    table = _read_leaf_table(io, metadata, ref, data=data)
    first_ids = inherited_first_row_ids(table, ref)
    return [(pos, _inherit(e, ref, first_ids[pos])) for pos, e in _decode(table, metadata, ref.manifest_path)]


def read_entries(io: FileIO, metadata: TableMetadata, ref: ManifestFile) -> list[ManifestEntry]:
    """Every entry of a v4 leaf (or a root's inline entries), inheritance and MDV applied."""
    data = _root_at(io, metadata, ref.manifest_path)
    if isinstance(data, RootContents):
        want = _INLINE_CONTENT[ManifestContent(ref.content)]
        return [e for e in data.inline if e.data_file.content == want]
    codec = dv_codec(metadata)
    where = ref.manifest_path
    masked = positions(codec, ref.mdv, where)
    deleted = positions(codec, ref.deleted_positions, where)
    replaced = positions(codec, ref.replaced_positions, where)
    out: list[ManifestEntry] = []
    for pos, e in leaf_rows(io, metadata, ref, data):
        if pos in masked:
            if pos in deleted or pos in replaced:
                status = EntryStatus.DELETED if pos in deleted else EntryStatus.REPLACED
                out.append(e.with_changes(status=status, snapshot_id=ref.dv_snapshot_id))
            continue
        out.append(e)
    return out


def live_leaf_entries(io: FileIO, metadata: TableMetadata, ref: ManifestFile) -> list[ManifestEntry]:
    """The live rows of a v4 leaf: non-live statuses and MDV positions dropped before decoding."""
    table = _read_leaf_table(io, metadata, ref)
    first_ids = inherited_first_row_ids(table, ref)
    keep = pc.is_in(_tracking_member(table, ce.STATUS), value_set=_LIVE_STATUSES)
    masked = positions(dv_codec(metadata), ref.mdv, ref.manifest_path)
    if masked:
        drop = pa.array(sorted(masked), pa.int64())
        keep = pc.and_(keep, pc.invert(pc.is_in(table.column(POS_COLUMN), value_set=drop)))
    if not pc.all(keep).as_py():
        table = table.filter(keep)
    return [_inherit(e, ref, first_ids[pos]) for pos, e in _decode(table, metadata, ref.manifest_path)]


def leaf_columns(io: FileIO, metadata: TableMetadata, ref: ManifestFile) -> LeafColumns | None:
    """A v4 leaf as columns for planning (inheritance and MDV resolved); None for a root's inline entries."""
    data = _root_at(io, metadata, ref.manifest_path)
    if isinstance(data, RootContents):
        return None
    table = _read_leaf_table(io, metadata, ref, data=data)
    masked = positions(dv_codec(metadata), ref.mdv, ref.manifest_path)
    specs, types = metadata.specs_by_id(), _partition_types(metadata)
    return LeafColumns(table, ref, specs, _layout(metadata), masked, types)


def locate(io: FileIO, metadata: TableMetadata, ref: ManifestFile, paths: set[str]) -> dict[str, int]:
    """Leaf positions of the live, unmasked rows whose location is in ``paths`` (columnar)."""
    table = _read_leaf_table(io, metadata, ref, columns=(ce.LOCATION, ce.TRACKING))
    if not table.num_rows or not paths:
        return {}
    loc = _column(table, ce.LOCATION)
    hit = pc.and_(
        pc.is_in(loc, value_set=pa.array(sorted(paths), pa.string())),
        pc.is_in(_tracking_member(table, ce.STATUS), value_set=_LIVE_STATUSES),
    )
    pos = single_array(table.column(POS_COLUMN))
    found = dict(zip(loc.filter(hit).to_pylist(), pos.filter(hit).to_pylist(), strict=True))
    masked = positions(dv_codec(metadata), ref.mdv, ref.manifest_path)
    return {p: i for p, i in found.items() if i not in masked}


def _entries_of(
    io: FileIO, metadata: TableMetadata, ref: ManifestFile, root: RootContents
) -> list[ManifestEntry]:
    if ref.manifest_path == root.location:
        want = _INLINE_CONTENT[ManifestContent(ref.content)]
        return [e for e in root.inline if e.is_live and e.data_file.content == want]
    if ref.format_version < 4:
        return [e for e in v3_read.read_entries(io, metadata, ref) if e.is_live]
    return live_leaf_entries(io, metadata, ref)


def live_manifest_refs(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, selection: EntrySelection
) -> list[ManifestFile]:
    """The live references of a v4 snapshot (and its inline entries) that ``selection`` keeps."""
    return [m for m in manifest_refs(io, metadata, snapshot) if selection.keeps_manifest(m)]


def live_entries(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, selection: EntrySelection
) -> Iterator[ManifestEntry]:
    """The live entries of a v4 snapshot (leaf rows, legacy manifests and inline root entries)."""
    assert snapshot.root_manifest is not None
    root = read_root(io, metadata, snapshot.root_manifest)
    refs = live_manifest_refs(io, metadata, snapshot, selection)
    try:
        for entries in v3_read.map_manifests(
            lambda m: _entries_of(io, metadata, m, root), refs, parallel_above=PARALLEL_LEAVES
        ):
            for e in entries:
                if selection.keeps_entry(e):
                    yield e
    except IcefloeError as exc:
        exc.with_context(snapshot_id=snapshot.snapshot_id)
        raise


def dropped_entries(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestEntry]:
    """Entries a v4 snapshot removed from the leaves it dropped from its tree.

    A v4 root lists each leaf it no longer carries once more as a DELETED reference. When the leaf
    went because its last live rows were removed, the reference's ``deleted_positions`` /
    ``replaced_positions`` name them and ``read_entries`` shows them as DELETED / REPLACED rows
    stamped with the snapshot: those rows (and only those) are returned. Scans never need them.
    """
    assert snapshot.root_manifest is not None
    sid = snapshot.snapshot_id
    root = read_root(io, metadata, snapshot.root_manifest)
    out: list[ManifestEntry] = []
    for ref in root.refs:
        if ref.status.is_live or ref.dv_snapshot_id != sid:
            continue
        if ref.deleted_positions is None and ref.replaced_positions is None:
            continue
        rows = (
            v3_read.read_entries(io, metadata, ref)
            if ref.format_version < 4
            else read_entries(io, metadata, ref)
        )
        out += [e for e in rows if not e.is_live and e.snapshot_id == sid]
    return out


# -- leaf pruning on aggregated stats --------------------------------------------------------------


def reference_stats_file(ref: ManifestFile, layout: StatsLayout) -> DataFile | None:
    """A synthetic ``DataFile`` carrying a reference's aggregated stats (None without stats).

    Its record count is the leaf's live record count when written (ADDED + EXISTING + MODIFIED
    rows); under a manifest DV counts and bounds cover a superset of the live rows, so an
    inclusive (may-match) evaluation stays sound.
    """
    stats = cast(ContentStats | None, ref.content_stats)
    if not stats:
        return None
    rows = (ref.added_rows_count or 0) + (ref.existing_rows_count or 0) + ref.modified_rows_count
    maps = metrics_from_content_stats(stats, layout)
    return DataFile(
        file_path=ref.manifest_path,
        file_format="parquet",
        record_count=rows,
        file_size_in_bytes=ref.manifest_length,
        **maps.as_changes(),
    )


def stats_manifest_filter(
    schema: Schema, row_filter: Expression, case_sensitive: bool = True
) -> ManifestFilter:
    """A manifest filter for ``live_entries`` that skips v4 data leaves whose stats cannot match.

    References without aggregated ``content_stats`` (legacy manifests, inline entries, delete
    leaves) are always kept. Evaluates the stats with ``InclusiveMetricsEvaluator``.
    """
    evaluator = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive)
    layout = StatsLayout(content_stats_type(schema))

    def keep(ref: ManifestFile) -> bool:
        if ref.content != ManifestContent.DATA or not ref.content_stats:
            return True
        f = reference_stats_file(ref, layout)
        return f is None or evaluator.eval(f)

    return keep
