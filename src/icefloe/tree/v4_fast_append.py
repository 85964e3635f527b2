"""The v4 fast append: a commit that only adds data files, built from its parent root's Arrow rows.

A small append to a v4 table writes one root: the parent's live rows carried on, plus one ADDED
row per new file. The general path (:mod:`icefloe.tree.v4_write`) decodes the parent's rows into
objects and encodes them all again; for a root of a hundred inline rows that was most of a
commit's CPU, on the client and again on a REST server rebasing a stale append. Here the parent's
rows stay Arrow from end to end: the table this process encoded the parent from (kept by
``TreeFiles.write_root_table``) or the parent's file read with pyarrow and widened to the
encoder's types (:mod:`icefloe.formats.v4.stored_tables`). Only the new rows are encoded from
objects.

What the general path does to a carried row is done with Arrow compute, and nothing else:

- rows that are not live (DELETED references, REPLACED / DELETED entries) are dropped;
- a live reference becomes EXISTING and loses its one-snapshot ``deleted_positions`` /
  ``replaced_positions`` (``v4_upgrade.carried``); its manifest DV, counts, ``first_row_id`` and
  aggregated stats stay as they are;
- a live inline entry becomes EXISTING; its tracking is explicit in a root already;
- references come first, then the carried inline entries, then the new rows (the general
  path's root order); row ids go to the new DATA rows from ``first-row-id`` on.

The fast path is taken only when the result is the general path's, byte for byte
(``tests/tree/test_v4_fast_append.py`` compares the two roots over many table shapes): the
change only adds data files (no removal, DV, column file, delete file or explicit data sequence
number); the parent is a v4 root whose stored rows have the encoder's exact Arrow types, whose
bitmaps are in the commit's encoding and whose rows the decoder would not change before encoding
them again (a DV without ``dv_snapshot_id``, a location written absolute under the table, a
reference whose file sequence number differs from its sequence number, ...); the new root's DATA
entries still fit ``write.v4.root.max-inline-entries``; and no leaf compaction is due. Anything
else returns None and the caller takes the general path.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.bitmaps import manifest_dv_codec
from icefloe.formats.v4.content_entry import ROOT_CONTENT, manifest_file_format, relativize_location
from icefloe.formats.v4.content_entry_schema import (
    ContentEntrySchema,
    content_entry_schema,
    resolve_location,
    resolve_table_locations,
    single_array,
)
from icefloe.formats.v4.stored_tables import read_stored_file, read_stored_table, widen_table
from icefloe.io.fileio import FileIO
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import StoredAdditions, TreeResult, TreeWriteRequest
from icefloe.tree.summary import ADDED_DATA_FILES, ADDED_DELETE_FILES, snapshot_summary
from icefloe.tree.v4_leaves import TreeFiles
from icefloe.tree.v4_policy import V4Policy, manifest_dv_encoding
from icefloe.tree.v4_read import RootTableKey, decode_inline_entries, read_root, root_table, table_location
from icefloe.tree.v4_root_checks import MDV_ENCODING_KEY

_LIVE = tuple(int(s) for s in EntryStatus if s.is_live)
_REFERENCES = (int(FileContent.DATA_MANIFEST), int(FileContent.DELETE_MANIFEST))
_REF_CONTENT = {
    int(FileContent.DATA_MANIFEST): ManifestContent.DATA,
    int(FileContent.DELETE_MANIFEST): ManifestContent.DELETES,
}


@dataclass
class FastAppendCounts:
    """How many v4 append-only commits took the fast path, and how many the general one."""

    taken: int = 0
    general: int = 0
    stored_rows: int = 0  # new rows taken as another root stored them (not encoded again)


FAST_APPENDS = FastAppendCounts()
_switch = threading.local()


@contextmanager
def general_path_only() -> Iterator[None]:
    """Within this block this thread's v4 commits take the general path (tests compare the two)."""
    before = getattr(_switch, "off", False)
    _switch.off = True
    try:
        yield
    finally:
        _switch.off = before


def fast_append(request: TreeWriteRequest, policy: V4Policy) -> TreeResult | None:
    """The tree of an append-only v4 commit built by the fast path, or None for the general path.

    ``policy`` is the commit's (from ``request.effective_properties``). None when the commit or
    its parent is not one the fast path writes exactly as the general path (see the module doc).
    """
    if not _append_only(request, policy):
        return None
    md, parent = request.metadata, cast(Snapshot, request.parent)
    files = TreeFiles(request.io, md, request.locations, request.snapshot_id, request.sequence_number, policy)
    key = files.entry_key
    parent_rows = _parent_rows(request.io, cast(str, parent.root_manifest), key)
    n_added = len(request.change.added_data_files)
    carried = None
    if parent_rows is not None:
        carried = _carried(parent_rows[0], parent_rows[1], policy, n_added, key)
    if carried is None:
        FAST_APPENDS.general += 1
        return None
    start = request.first_row_id if request.first_row_id is not None else (md.next_row_id or 0)
    added, end = _added_entries(request, start)
    try:
        new_rows = _stored_new_rows(request, key, added)
        if new_rows is None:
            new_rows = files.root_table(added)
        # one chunk per column: the next commit's parent, not a chain of one chunk per commit
        table = pa.concat_tables([carried, new_rows]).combine_chunks()
        path, _ = files.write_root_table(table, parent.snapshot_id, request.attempt, keep_bytes=True)
    except BaseException:
        files.cleanup()
        raise
    FAST_APPENDS.taken += 1
    return TreeResult(
        manifest_list_location=None,
        root_manifest_location=path,
        manifests=_NewRootReferences(request.io, md, path),
        first_row_id=start,
        added_rows=end - start,
        summary=snapshot_summary(parent, list(request.change.added_data_files), [], []),
        written_files=list(files.written),
        removed_entries=[],
    )


class _NewRootReferences(Sequence[ManifestFile]):
    """The live references of a root just written, decoded from it when first asked for (the fast
    path carries them as Arrow rows; only maintenance reads them)."""

    def __init__(self, io: FileIO, metadata: TableMetadata, location: str) -> None:
        self._io, self._md, self._location = io, metadata, location
        self._refs: tuple[ManifestFile, ...] | None = None

    def _load(self) -> tuple[ManifestFile, ...]:
        if self._refs is None:
            root = read_root(self._io, self._md, self._location)
            self._refs = tuple(r for r in root.refs if r.status.is_live)
        return self._refs

    @overload
    def __getitem__(self, i: int) -> ManifestFile: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[ManifestFile]: ...
    def __getitem__(self, i: int | slice) -> ManifestFile | Sequence[ManifestFile]:
        return self._load()[i]

    def __len__(self) -> int:
        return len(self._load())


def _append_shape_ok(request: TreeWriteRequest) -> bool:
    change = request.change
    return not (
        change.removed_entries
        or change.added_delete_files
        or change.added_dvs
        or change.added_column_files
        or change.added_data_sequence_number is not None
        or any(f.content != FileContent.DATA for f in change.added_data_files)
    )


def _append_only(request: TreeWriteRequest, policy: V4Policy) -> bool:
    """Whether the commit only adds data files on a v4 root, all bitmaps in one encoding."""
    if getattr(_switch, "off", False):
        return False
    parent = request.parent
    if parent is None or parent.root_manifest is None or not _append_shape_ok(request):
        return False
    return manifest_dv_encoding(request.metadata.properties) == policy.mdv_encoding


def _parent_rows(io: FileIO, location: str, key: RootTableKey) -> tuple[pa.Table, bool] | None:
    """The parent root's rows in the encoder's types, and whether this process encoded them (else
    they were read from the file)."""
    table = root_table(location, key)
    if table is not None:
        return table, True
    schema, _, mdv_encoding = key
    stored = read_stored_table(io.new_input(location).read(), schema.write_arrow, source=location)
    if stored is None:
        return None
    table, footer = stored
    if footer.get("content") != ROOT_CONTENT or footer.get(MDV_ENCODING_KEY, mdv_encoding) != mdv_encoding:
        return None
    return table, False


@dataclass(frozen=True)
class _Layout:
    """Where an encoder-typed table (``ContentEntrySchema.write_arrow``) keeps what, by field id."""

    names: dict[int | None, str]  # top-level columns
    tracking_index: dict[int | None, int]  # tracking members' positions
    tracking_ids: tuple[int | None, ...]  # tracking members' ids, in order
    members: dict[int | None, dict[int | None, int]]  # struct columns' members' positions


@functools.lru_cache(maxsize=64)
def _layout(schema: ContentEntrySchema) -> _Layout:
    """The layout of ``schema``'s encoder tables (worked out once per entry schema: reading field
    ids from Arrow field metadata was a few hundred calls per rebased commit)."""
    names = {field_id_of(f): f.name for f in schema.write_arrow}
    tracking = schema.write_arrow.field(names[ce.TRACKING]).type
    ids = tuple(field_id_of(f) for f in tracking)
    members = {
        field_id_of(f): {field_id_of(m): i for i, m in enumerate(f.type)}
        for f in schema.write_arrow
        if pa.types.is_struct(f.type)
    }
    return _Layout(names, {fid: i for i, fid in enumerate(ids)}, ids, members)


class _Columns:
    """Top-level columns and tracking members of an encoder-typed table, by field id."""

    def __init__(self, table: pa.Table, layout: _Layout) -> None:
        """``layout``: that of the table's entry schema (the table has its ``write_arrow`` schema)."""
        self.table = table
        self.layout = layout
        self.names = layout.names
        self.tracking_index = layout.tracking_index
        tracking = table.column(self.names[ce.TRACKING])
        self.tracking = cast(pa.StructArray, single_array(tracking))

    def slice(self, offset: int, length: int | None) -> _Columns:
        """The columns of rows ``offset`` on (``length`` of them, None: all)."""
        return _Columns(self.table.slice(offset, length), self.layout)

    def column(self, fid: int) -> pa.Array:
        return single_array(self.table.column(self.names[fid]))

    def member(self, fid: int) -> pa.Array:
        return self.tracking.field(self.tracking_index[fid])

    def struct_member(self, fid: int, member: int) -> pa.Array:
        return cast(pa.StructArray, self.column(fid)).field(self.layout.members[fid][member])

    def with_tracking(self, changes: dict[int | None, pa.Array]) -> pa.Table:
        """The table with these tracking members replaced."""
        t = self.tracking
        children = [changes.get(fid, t.field(i)) for i, fid in enumerate(self.layout.tracking_ids)]
        tracking = pa.StructArray.from_arrays(children, fields=list(t.type))
        i = self.table.schema.get_field_index(self.names[ce.TRACKING])
        return self.table.set_column(i, self.table.schema.field(i), tracking)


def _any_of(values: np.ndarray, wanted: tuple[int, ...]) -> np.ndarray:
    """``np.isin(values, wanted)`` for a few wanted values (``isin`` sorts: slower on small roots)."""
    mask = np.zeros(len(values), bool)
    for w in wanted:
        mask |= values == w
    return mask


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(pc.fill_null(mask, False)).as_py()) if len(mask) else True


def _carried(
    parent: pa.Table, encoded_here: bool, policy: V4Policy, n_added: int, key: RootTableKey
) -> pa.Table | None:
    """The parent's live rows as the new root carries them (None: the general path decides).

    ``encoded_here``: the parent's rows are this process's encoder output (checked already).
    """
    cols = _Columns(parent, _layout(key[0]))
    content = cols.column(ce.CONTENT_TYPE).to_numpy(zero_copy_only=False)
    status = cols.member(ce.STATUS).to_numpy(zero_copy_only=False)
    is_ref = _any_of(content, _REFERENCES)
    live = _any_of(status, _LIVE)
    n_data = int(np.count_nonzero(live & (content == int(FileContent.DATA))))
    if not (policy.max_inline_entries > 0 and n_data + n_added <= policy.max_inline_entries):
        return None  # the root-level entries are flushed into leaves
    refs_first = np.concatenate([np.flatnonzero(live & is_ref), np.flatnonzero(live & ~is_ref)])
    n_refs = int(np.count_nonzero(live & is_ref))
    if len(refs_first) == parent.num_rows and bool((refs_first == np.arange(parent.num_rows)).all()):
        carried = cols
    else:
        carried = _Columns(parent.take(pa.array(refs_first, pa.int64())), cols.layout)
    refs, inline = carried.slice(0, n_refs), carried.slice(n_refs, None)
    if not encoded_here:
        if not (_entries_reencode_as_stored(inline) and _references_reencode_as_stored(refs, policy)):
            return None
        if not _locations_stay(carried, key[1]):
            return None
    if n_refs and _compaction_due(refs, inline, policy):
        return None
    n = carried.table.num_rows
    return carried.with_tracking(
        {
            ce.STATUS: pa.array(np.full(n, int(EntryStatus.EXISTING), np.int32)),
            ce.DELETED_POSITIONS: pa.nulls(n, pa.binary()),  # a reference's deltas: its snapshot's only
            ce.REPLACED_POSITIONS: pa.nulls(n, pa.binary()),
        }
    )


def _entries_reencode_as_stored(inline: _Columns) -> bool:
    """Whether decoding the inline entries and encoding them again gives their stored values.

    Checked with numpy and a Python pass over the file formats: an append's root has a few rows
    to check, where each Arrow compute call costs more than the check itself.
    """
    if not inline.table.num_rows:
        return True
    content = _int_values(inline.column(ce.CONTENT_TYPE), -1)
    is_data = content == int(FileContent.DATA)
    if not (is_data | (content == int(FileContent.EQUALITY_DELETES))).all():
        return False
    if not np.array_equal(is_data, _valid(inline.member(ce.FIRST_ROW_ID))):
        return False  # DATA rows carry row ids, others none
    if not all(f is not None and f == f.lower() for f in inline.column(ce.FILE_FORMAT).to_pylist()):
        return False  # the encoder writes a file format in lower case
    # the reader dates a DV (column files) without its snapshot id from the row's snapshot
    if not np.array_equal(
        _valid(inline.column(ce.DELETION_VECTOR)), _valid(inline.member(ce.DV_SNAPSHOT_ID))
    ):
        return False
    column_files = inline.column(ce.COLUMN_FILES)
    if column_files.null_count == len(column_files):
        return True
    lengths = pc.fill_null(pc.list_value_length(column_files), 1)  # an empty list is written as null
    latest = inline.member(ce.LATEST_COLUMN_FILE_SNAPSHOT_ID)
    return _all(pc.greater(lengths, 0)) and np.array_equal(_valid(column_files), _valid(latest))


def _valid(arr: pa.Array) -> np.ndarray:
    """Which values of ``arr`` are set (no compute call when all or none are)."""
    n = len(arr)
    if not arr.null_count:
        return np.ones(n, bool)
    if arr.null_count == n:
        return np.zeros(n, bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)


def _references_reencode_as_stored(refs: _Columns, policy: V4Policy) -> bool:
    """Whether decoding the references and encoding them again gives their stored values."""
    n = refs.table.num_rows
    if not n:
        return True
    seq = refs.member(ce.SEQUENCE_NUMBER)
    if not np.array_equal(_valid(seq), _valid(refs.member(ce.FILE_SEQUENCE_NUMBER))):
        return False
    if not _all(pc.equal(pc.fill_null(seq, -1), pc.fill_null(refs.member(ce.FILE_SEQUENCE_NUMBER), -1))):
        return False
    codec = manifest_dv_codec(policy.mdv_encoding)
    content = refs.column(ce.CONTENT_TYPE).to_pylist()
    version = refs.column(ce.FORMAT_VERSION).to_pylist()
    location = refs.column(ce.LOCATION).to_pylist()
    file_format = refs.column(ce.FILE_FORMAT).to_pylist()
    first_row_id = refs.member(ce.FIRST_ROW_ID).to_pylist()
    dv_snapshot_id = refs.member(ce.DV_SNAPSHOT_ID).to_pylist()
    mdv = refs.struct_member(ce.MANIFEST_INFO, ce.MDV).to_pylist()
    cardinality = refs.struct_member(ce.MANIFEST_INFO, ce.MDV_CARDINALITY).to_pylist()
    for i in range(n):
        legacy = version[i] != 4
        if version[i] not in (0, 4) or file_format[i] != manifest_file_format(location[i], legacy):
            return False
        if (first_row_id[i] is not None) != (content[i] == int(FileContent.DATA_MANIFEST)):
            return False
        if (mdv[i] is None) != (dv_snapshot_id[i] is None) or (mdv[i] is not None and legacy):
            return False
        if mdv[i] is not None and cardinality[i] != codec.cardinality(mdv[i], source=location[i]):
            return False
    return True


def _locations(rows: _Columns) -> Iterator[pa.Array]:
    yield rows.column(ce.LOCATION)
    if rows.column(ce.DELETION_VECTOR).null_count < rows.table.num_rows:
        yield rows.struct_member(ce.DELETION_VECTOR, ce.DV_LOCATION)
    column_files = cast(pa.ListArray, rows.column(ce.COLUMN_FILES))
    if column_files.null_count < len(column_files):
        elements = cast(pa.StructArray, column_files.flatten())
        yield next(elements.field(i) for i, f in enumerate(elements.type) if field_id_of(f) == ce.CF_LOCATION)


def _locations_stay(rows: _Columns, table_location: str | None) -> bool:
    """No stored location is one the encoder would write relative (one written absolute under the
    table's location)."""
    if not table_location or not rows.table.num_rows:
        return True
    prefix = table_location + "/"
    # in Python: a root's few hundred locations at most, where four compute calls cost more
    return not any(
        v is not None and v.startswith(prefix) for arr in _locations(rows) for v in arr.to_pylist()
    )


def _compaction_due(refs: _Columns, inline: _Columns, policy: V4Policy) -> bool:
    """Whether the general path would merge small leaves in this commit."""
    if not policy.compaction_enabled or not refs.table.num_rows:
        return False
    content = refs.column(ce.CONTENT_TYPE).to_pylist()
    version = refs.column(ce.FORMAT_VERSION).to_pylist()
    counts = [
        refs.struct_member(ce.MANIFEST_INFO, fid).to_pylist()
        for fid in (ce.FILE_COUNT_IDS[0], ce.FILE_COUNT_IDS[1], ce.FILE_COUNT_IDS[4])
    ]
    cardinality = refs.struct_member(ce.MANIFEST_INFO, ce.MDV_CARDINALITY).to_pylist()
    tiers: dict[ManifestContent, list[int]] = {ManifestContent.DATA: [], ManifestContent.DELETES: []}
    for i, c in enumerate(content):
        kind = _REF_CONTENT[c]
        if version[i] != 4 and kind != ManifestContent.DATA:
            continue  # legacy delete manifests may hold position deletes: never merged
        live = sum(col[i] or 0 for col in counts) - (cardinality[i] or 0)
        tier = policy.small_tier(live)
        if tier is not None:
            tiers[kind].append(tier)
    inline_content = set(inline.column(ce.CONTENT_TYPE).to_pylist())
    has_root = {
        ManifestContent.DATA: int(FileContent.DATA) in inline_content,
        ManifestContent.DELETES: int(FileContent.EQUALITY_DELETES) in inline_content,
    }
    return any(policy.merged_tiers(tiers[kind], has_root[kind]) for kind in tiers)


def _stored_new_rows(
    request: TreeWriteRequest, key: RootTableKey, added: list[ManifestEntry]
) -> pa.Table | None:
    """The new ADDED rows from ``change.stored_additions`` with this commit's tracking (None when
    there are none, or they are not stored for these files in this table's encoding)."""
    additions = request.change.stored_additions
    if additions is None or additions.schema is not key[0] or additions.table_location != key[1]:
        return None
    rows = _Columns(additions.rows, _layout(key[0]))
    paths = [relativize_location(e.data_file.file_path, key[1]) for e in added]
    if rows.column(ce.LOCATION).to_pylist() != paths:
        return None
    n = len(added)
    values: dict[int | None, list[Any]] = {
        ce.STATUS: [int(EntryStatus.ADDED)] * n,
        ce.SNAPSHOT_ID: [e.snapshot_id for e in added],
        ce.SEQUENCE_NUMBER: [e.sequence_number for e in added],
        ce.FILE_SEQUENCE_NUMBER: [e.file_sequence_number for e in added],
        ce.FIRST_ROW_ID: [e.data_file.first_row_id for e in added],
    }
    types = dict(zip(rows.layout.tracking_ids, (f.type for f in rows.tracking.type), strict=True))
    changes = {fid: pa.nulls(n, t) for fid, t in types.items() if fid != ce.STATUS}
    changes.update({fid: pa.array(v, types[fid]) for fid, v in values.items()})
    FAST_APPENDS.stored_rows += n
    return rows.with_tracking(changes)


def stored_additions(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot
) -> tuple[list[DataFile], StoredAdditions] | None:
    """The data files a v4 snapshot added inline to its root, with their stored rows.

    For a server rebasing a client's append: the client's root is read with pyarrow and widened
    to the encoder's types (column by column: the whole root costs what its added rows would),
    the rows ADDED by ``snapshot`` found, and only those checked and decoded (row ids unset: they
    are assigned again on the new head). None when the snapshot's summary counts files that are
    not among those rows, or when its rows would not encode back as stored (the caller reads them
    the general way).
    """
    location = snapshot.root_manifest
    if location is None:
        return None
    schema = content_entry_schema(metadata.schema(), metadata.specs_by_id())
    where = table_location(metadata)
    raw, footer = read_stored_file(io.new_input(location).read(), source=location)
    if footer.get("content") != ROOT_CONTENT:
        return None
    stored = widen_table(raw, schema.write_arrow)
    if stored is None:
        return None
    layout = _layout(schema)
    positions = _added_positions(_Columns(stored, layout), snapshot.snapshot_id)
    summary = snapshot.summary
    if str(len(positions)) != summary.get(ADDED_DATA_FILES, ""):
        return None
    if summary.get(ADDED_DELETE_FILES, "0") != "0":
        return None
    rows = _Columns(_rows_at(stored, positions), layout)  # a fast append's: the root's last rows
    if not (_entries_reencode_as_stored(rows) and _locations_stay(rows, where)):
        return None
    if rows.column(ce.DELETION_VECTOR).null_count != len(positions):
        return None  # an append adds no deletion vector
    return _added_files(rows, metadata, location, where), StoredAdditions(rows.table, schema, where)


def _added_files(rows: _Columns, metadata: TableMetadata, location: str, where: str | None) -> list[DataFile]:
    """The files of an append's encoder rows (no deletion vector), as the reader decodes them,
    row ids unset.

    The decoder reads manifest counts (whose read type differs) only of references, so the rows
    are decoded in the encoder's types; without column files the only stored location is each
    file's own, resolved here per file (an append's few rows) rather than by Arrow compute.
    """
    table = rows.table
    per_file = rows.column(ce.COLUMN_FILES).null_count == table.num_rows
    if where and not per_file:
        table = resolve_table_locations(table, where)
    files = []
    for e in decode_inline_entries(table, metadata, location):
        path = resolve_location(e.data_file.file_path, where) if per_file else e.data_file.file_path
        files.append(dataclasses.replace(e.data_file, file_path=path, first_row_id=None))
    return files


def _added_positions(root: _Columns, snapshot_id: int) -> np.ndarray:
    """Positions of the DATA rows a root stores as ADDED by ``snapshot_id``."""
    content = _int_values(root.column(ce.CONTENT_TYPE), -1)
    status = _int_values(root.member(ce.STATUS), -1)
    tracked_to = _int_values(root.member(ce.SNAPSHOT_ID), 0)
    mine = (content == int(FileContent.DATA)) & (status == int(EntryStatus.ADDED))
    return np.flatnonzero(mine & (tracked_to == snapshot_id))


def _int_values(arr: pa.Array, null: int) -> np.ndarray:
    """An integer array's values, nulls as ``null`` (no compute call when there is none)."""
    if arr.null_count:
        arr = arr.fill_null(null)
    return arr.to_numpy(zero_copy_only=False)


def _rows_at(table: pa.Table, positions: np.ndarray) -> pa.Table:
    """The rows at ``positions`` (ascending): a slice when they are consecutive."""
    if not len(positions):
        return table.slice(0, 0)
    first, n = int(positions[0]), len(positions)
    if int(positions[-1]) - first + 1 == n:
        return table.slice(first, n)
    return table.take(pa.array(positions, pa.int64()))


def _added_entries(request: TreeWriteRequest, start: int) -> tuple[list[ManifestEntry], int]:
    """The new files' ADDED root rows (row ids from ``start`` on) and the row-id counter after them."""
    sid, seq = request.snapshot_id, request.sequence_number
    counter = start
    out = []
    for f in request.change.added_data_files:
        if f.first_row_id is None:
            f = cast(DataFile, f.with_changes(first_row_id=counter))
            counter += f.record_count
        out.append(ManifestEntry(EntryStatus.ADDED, sid, seq, seq, f))
    return out, counter


__all__ = ["FAST_APPENDS", "FastAppendCounts", "fast_append", "general_path_only", "stored_additions"]
