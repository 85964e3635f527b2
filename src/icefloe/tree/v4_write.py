"""The v4 half of the write seam: one new root per commit, leaves only when the change is large.

A commit that only adds data files and stays inline is first offered to the fast append
(:mod:`icefloe.tree.v4_fast_append`), which writes the same root from the parent's Arrow rows;
everything else (and anything it declines) takes the general path below.

Given the parent's live tree (``v4_upgrade.parent_tree``: references + inline root entries, or a
v1–v3 snapshot's manifests as format_version 0 references) and a ``TreeChange``:

1. **inline entries** — a removed inline entry becomes a DELETED root row (facts §4.1 rule 8:
   ``snapshot_id`` = new snapshot, sequence numbers and ``first_row_id`` kept); a new deletion
   vector for an inline file becomes a REPLACED row (prior DV, stamped with the new snapshot)
   plus a MODIFIED row (new DV, ``dv_snapshot_id`` = new snapshot, original ``snapshot_id``,
   facts Q5);
2. **files in leaves** — found by a columnar scan of the candidate leaves' ``location`` column.
   Per leaf (``v4_policy``): when its live entries stay at or above
   ``write.v4.leaf.min-live-ratio`` the reference gets a cumulative manifest DV with this
   snapshot's delta in ``deleted_positions`` / ``replaced_positions``, status MODIFIED,
   ``dv_snapshot_id`` = new snapshot and its original tracking (Q5); a file getting a new DV
   then lives on as a MODIFIED root-level entry. Otherwise the leaf is rewritten (removed rows
   DELETED, REPLACED + MODIFIED pairs for new DVs, other live rows EXISTING with materialised
   tracking). Legacy (format_version 0) manifests cannot carry MDVs and are always rewritten;
3. **added files** — ADDED entries (a file born with a DV carries it, ``dv_snapshot_id`` = new
   snapshot). Root-level entries stay inline while they fit ``write.v4.root.max-inline-entries``
   (a single-file commit); otherwise all of them are flushed into new leaves. Equality delete
   files always go to leaves; position delete files are refused (v4 DVs are colocated);
4. **compaction** — once the root references ``write.v4.compaction.min-small-leaves`` small
   leaves of one content, their live rows are merged (EXISTING, materialised tracking) into the
   new leaves of this commit;
5. **row ids** — in root order, references without ``first_row_id`` and inline DATA entries
   without one get ranges from the snapshot's ``first-row-id`` counter; ``added-rows`` is the
   counter's advance;
6. **DELETED rows (facts §4.1 rule 8)** — every reference of the parent root that the new root
   no longer carries (rewritten, compacted or emptied leaf) is written once more with status
   DELETED: ``snapshot_id`` = new snapshot, sequence numbers and ``first_row_id`` copied, physical
   counts unchanged. An emptied leaf's reference keeps this snapshot's cumulative manifest DV and
   its ``deleted_positions`` / ``replaced_positions``, so the removed files are recorded exactly
   once, as for a live MODIFIED reference; a rewritten or compacted leaf's removals are the
   DELETED rows of the leaf that replaces it, so its DELETED reference carries no deltas. A
   DELETED reference is never a source of inheritance for live rows. Files removed from a leaf
   that stays (manifest DV) get no separate DELETED row: the reference's ``deleted_positions``
   is that record (facts §4.4). The next root drops every non-live row (``parent_tree`` keeps
   only live ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.errors import IcefloeError, ValidationError
from icefloe.formats.puffin.roaring64 import PositionBitmap
from icefloe.formats.v4.bitmaps import manifest_dv_codec
from icefloe.formats.v4.content_entry import ContentRow
from icefloe.formats.v4.content_stats import ContentStats, StatsLayout
from icefloe.spec.content import (
    ColumnFile,
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    deletion_vector_file,
    stack_column_files,
)
from icefloe.spec.schema import nested_field_ids
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import v3_read
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.summary import snapshot_summary
from icefloe.tree.v4_fast_append import fast_append
from icefloe.tree.v4_leaves import TreeFiles, materialised
from icefloe.tree.v4_policy import MODIFIED_KEEPS_SNAPSHOT_ID, V4Policy, manifest_dv_encoding
from icefloe.tree.v4_read import leaf_rows, live_leaf_entries, locate, positions
from icefloe.tree.v4_upgrade import ParentTree, parent_tree

BOUNDS_PRUNING_LIMIT = 1000
"""Removals of more files than this look in every leaf of the right content and spec."""


@dataclass
class _Commit:
    """The state of one v4 commit attempt while the new root is assembled."""

    files: TreeFiles
    removed: dict[str, ManifestEntry]  # by path: where to look (v3 DVs of one Puffin file share it)
    dvs: dict[str, DeletionVectorRef]
    column_files: dict[str, ColumnFile] = field(default_factory=dict)  # new column file by data file path
    refs: list[ManifestFile] = field(default_factory=list)  # carried / MDV / rewritten references
    new_refs: list[ManifestFile] = field(default_factory=list)  # leaves written by this commit
    root_live: list[ManifestEntry] = field(default_factory=list)  # live root-level entries
    root_replaced: list[ManifestEntry] = field(default_factory=list)  # REPLACED root rows
    root_deleted: list[ManifestEntry] = field(default_factory=list)  # DELETED root rows
    dropped: dict[str, ManifestFile] = field(default_factory=dict)  # parent refs not carried on
    parent_has_root: bool = True  # False: the parent is a v1–v3 snapshot (its manifests were no rows)
    found: list[ManifestEntry] = field(default_factory=list)  # removed entries as they were live
    superseded: list[ManifestEntry] = field(default_factory=list)  # DVs that stop applying
    done: set[str] = field(default_factory=set)  # removed / DV paths handled
    dv_targets: dict[str, DataFile] = field(default_factory=dict)  # existing files getting a new DV
    removing: set[tuple[str, int]] = field(default_factory=set)  # content keys not yet removed

    def removes(self, e: ManifestEntry) -> tuple[str, int] | None:
        """The key under which the live entry ``e`` is to be removed, or None to keep it.

        Removals are matched by content key, not path: legacy v3 deletion vectors of several data
        files share one Puffin file, and retiring one of them must leave the others live. A
        removal given without a blob offset matches its path, as files without blobs do.
        """
        key = e.data_file.content_key
        if key in self.removing:
            return key
        by_path = (key[0], -1)
        return by_path if by_path in self.removing else None

    def modifies(self, path: str) -> bool:
        """Whether the live file at ``path`` gets a new DV or a new column file in this commit."""
        return path in self.dvs or path in self.column_files

    @property
    def snapshot_id(self) -> int:
        """The new snapshot's id."""
        return self.files.snapshot_id


def _retire_dv(c: _Commit, e: ManifestEntry) -> None:
    """Count the DV of an entry that is removed or gets a new DV as removed."""
    dv = e.data_file.deletion_vector
    if dv is not None:
        as_file = deletion_vector_file(e.data_file, dv)
        c.superseded.append(e.with_changes(status=EntryStatus.DELETED, data_file=as_file))


def _modified_pair(c: _Commit, e: ManifestEntry) -> tuple[ManifestEntry, ManifestEntry]:
    """REPLACED (as it was) and MODIFIED rows for a live entry getting a new DV and/or column file.

    A new column file also moves the entry's data sequence number to this commit's (its rows
    changed now), records this snapshot in ``latest_column_file_snapshot_id`` and drops the stats
    of the columns it replaces (the base file's bounds no longer hold for them).
    """
    path = e.data_file.file_path
    replaced = e.with_changes(status=EntryStatus.REPLACED, snapshot_id=c.snapshot_id)
    changes: dict[str, Any] = {
        "status": EntryStatus.MODIFIED,
        "snapshot_id": e.snapshot_id if MODIFIED_KEEPS_SNAPSHOT_ID else c.snapshot_id,
    }
    df = e.data_file
    dv = c.dvs.get(path)
    if dv is not None:
        _retire_dv(c, e)
        df = df.with_changes(deletion_vector=dv)
        changes["dv_snapshot_id"] = c.snapshot_id
        c.dv_targets[path] = e.data_file
    column_file = c.column_files.get(path)
    if column_file is not None:
        stale = nested_field_ids(c.files.md.schema(), column_file.field_ids)
        df = df.without_metrics(stale).with_changes(
            column_files=stack_column_files(df.column_files, column_file)
        )
        changes["sequence_number"] = c.files.seq
        changes["latest_column_file_snapshot_id"] = c.snapshot_id
    c.done.add(path)
    return replaced, e.with_changes(data_file=df, **changes)


def _remove(c: _Commit, e: ManifestEntry) -> ManifestEntry:
    """Record a removal; returns the DELETED row a rewritten leaf keeps for it."""
    c.found.append(e)
    c.done.add(e.data_file.file_path)
    c.removing.discard(c.removes(e) or e.data_file.content_key)
    _retire_dv(c, e)
    return e.with_changes(status=EntryStatus.DELETED, snapshot_id=c.snapshot_id)


def _apply_to_inline(c: _Commit, inline: list[ManifestEntry]) -> None:
    for e in inline:
        path = e.data_file.file_path
        if c.removes(e):
            c.root_deleted.append(_remove(c, e))
        elif c.modifies(path) and path not in c.done:
            replaced, modified = _modified_pair(c, e)
            c.root_replaced.append(replaced)
            c.root_live.append(modified)
        else:
            c.root_live.append(e)


def _live_count(ref: ManifestFile, mdv: set[int]) -> int:
    live = (ref.added_files_count or 0) + (ref.existing_files_count or 0) + ref.modified_files_count
    return live - len(mdv)


def _loose(stats: dict[int, Any] | None) -> dict[int, Any] | None:
    """Aggregated stats under a manifest DV: still valid bounds, no longer tight (facts Q15)."""
    if not stats:
        return stats
    out: ContentStats = {}
    for fid, cs in stats.items():
        bounded = cs.lower_bound is not None or cs.upper_bound is not None
        out[fid] = replace(cs, tight_bounds=False) if bounded and cs.tight_bounds is not False else cs
    return out


def _locate_all(c: _Commit, refs: list[ManifestFile], pending: set[str]) -> dict[str, dict[str, int]]:
    """For each candidate reference, the pending paths it holds live (leaf position or index)."""
    io, md = c.files.io, c.files.md
    out: dict[str, dict[str, int]] = {}
    keys_by_path: dict[str, set[tuple[str, int]]] = {}
    for key in c.removing:
        keys_by_path.setdefault(key[0], set()).add(key)
    shared = {p: keys for p, keys in keys_by_path.items() if len(keys) > 1}
    for ref in refs:
        if not pending:
            break
        if ref.format_version < 4:
            live = [e for e in v3_read.read_entries(io, md, ref) if e.is_live]
            hits = {e.data_file.file_path: i for i, e in enumerate(live) if e.data_file.file_path in pending}
            seen = {e.data_file.content_key for e in live}
            # a Puffin file's other DVs may sit in another legacy manifest: keep looking for them
            found = {p for p in hits if not any(k[0] == p and k not in seen for k in shared.get(p, ()))}
        else:
            hits = locate(io, md, ref, pending)
            found = set(hits)
        if hits:
            out[ref.manifest_path] = hits
            pending -= found
    return out


def _may_hold(ref: ManifestFile, f: DataFile, layout: StatsLayout) -> bool:
    """False when the reference's aggregated bounds exclude one of the file's own bounds."""
    stats = ref.content_stats
    if not stats or not f.lower_bounds or not f.upper_bounds:
        return True
    for col, cs in stats.items():
        lo_b, hi_b = f.lower_bounds.get(col), f.upper_bounds.get(col)
        if lo_b is None or hi_b is None or cs.lower_bound is None or cs.upper_bound is None:
            continue
        if col not in layout.codecs:
            continue
        decode = layout.codecs[col][0]
        try:
            if decode(hi_b) < cs.lower_bound or decode(lo_b) > cs.upper_bound:
                return False
        except (TypeError, ValueError, IcefloeError):
            continue
    return True


def _candidates(c: _Commit, refs: list[ManifestFile], pending: set[str]) -> list[ManifestFile]:
    """References that may hold a pending path: right content, spec and (for removals) bounds.

    A file getting a new DV is known only by its path, so every data reference may hold it.
    """
    by_path = [c.removed[p].data_file if p in c.removed else None for p in pending]
    use_bounds = len(by_path) <= BOUNDS_PRUNING_LIMIT
    out = []
    for ref in refs:
        data_ref = ref.content == ManifestContent.DATA
        for f in by_path:
            if f is None:
                if data_ref:
                    break
                continue
            if (f.content == FileContent.DATA) != data_ref:
                continue
            if ref.partition_spec_id >= 0 and ref.partition_spec_id != f.spec_id:
                continue
            if not use_bounds or _may_hold(ref, f, c.files.layout):
                break
        else:
            continue
        out.append(ref)
    return out


def _apply_to_leaves(c: _Commit, parent: ParentTree) -> None:
    pending = {p for p in (*c.removed, *c.dvs, *c.column_files) if p not in c.done}
    if not pending:
        c.refs = list(parent.refs)
        return
    hits = _locate_all(c, _candidates(c, parent.refs, pending), set(pending))
    codec = manifest_dv_codec(c.files.policy.mdv_encoding)
    for ref in parent.refs:
        here = hits.get(ref.manifest_path)
        if not here:
            c.refs.append(ref)
            continue
        if ref.format_version < 4:
            _rewrite(c, ref, set(), legacy=True)
            continue
        mdv = positions(codec, ref.mdv, ref.manifest_path)
        live_after = _live_count(ref, mdv) - len(here)
        ratio = live_after / ref.record_count if ref.record_count else 0.0
        if live_after > 0 and ratio < c.files.policy.min_live_ratio:
            _rewrite(c, ref, mdv, legacy=False)
        else:
            _mark(c, ref, here, mdv, drop=live_after <= 0)


def _mark(c: _Commit, ref: ManifestFile, here: dict[str, int], mdv: set[int], drop: bool) -> None:
    """Remove / replace leaf rows through the reference's manifest DV (or drop a dead leaf)."""
    deleted = {pos for path, pos in here.items() if path in c.removed}
    replaced = {pos for path, pos in here.items() if path not in c.removed}
    for path in here:
        if path in c.removed:
            _remove(c, c.removed[path])
    if replaced:
        files = c.files
        for pos, e in leaf_rows(files.io, files.md, ref):
            if pos in replaced:
                c.root_live.append(_modified_pair(c, e)[1])
    codec = manifest_dv_codec(c.files.policy.mdv_encoding)
    marked = ref.with_changes(
        mdv=codec.encode(PositionBitmap(sorted(mdv | deleted | replaced))),
        deleted_positions=codec.encode(PositionBitmap(sorted(deleted))) if deleted else None,
        replaced_positions=codec.encode(PositionBitmap(sorted(replaced))) if replaced else None,
        dv_snapshot_id=c.snapshot_id,
        content_stats=_loose(ref.content_stats),
    )
    if drop:  # no live row left: the DELETED reference records this snapshot's removals
        c.dropped[ref.manifest_path] = marked
    else:
        c.refs.append(marked.with_changes(status=EntryStatus.MODIFIED))


def _rewrite(c: _Commit, ref: ManifestFile, mdv: set[int], legacy: bool) -> None:
    """Copy-on-write a leaf: DELETED / REPLACED + MODIFIED rows for this commit, the rest EXISTING."""
    files = c.files
    c.dropped[ref.manifest_path] = ref
    if legacy:
        rows = list(enumerate(v3_read.read_entries(files.io, files.md, ref)))
    else:
        rows = leaf_rows(files.io, files.md, ref)
    out: list[ManifestEntry] = []
    for pos, e in rows:
        if not e.is_live or pos in mdv:
            continue
        path = e.data_file.file_path
        if c.removes(e):
            out.append(_remove(c, e))
        elif c.modifies(path) and path not in c.done:
            out.extend(_modified_pair(c, e))
        else:
            out.append(materialised(e))
    if not any(e.is_live for e in out):
        # only a legacy manifest gets here (an emptied v4 leaf is marked, not rewritten): its
        # removals become DELETED root rows where a content entry can hold them
        c.root_deleted.extend(e for e in out if _root_can_hold(e))
        return
    content = ManifestContent(ref.content)
    if any(e.data_file.content == FileContent.POSITION_DELETES for e in out):
        c.new_refs.append(files.write_legacy_deletes(out, ref.partition_spec_id))
    else:
        c.new_refs.extend(files.write_leaves(out, content))


def _added_entries(
    c: _Commit, added: list[DataFile], inline: bool, data_seq: int | None
) -> list[ManifestEntry]:
    """ADDED entries for new data files: explicit tracking inline, inherited in leaves."""
    seq = c.files.seq
    out = []
    for f in added:
        dv = c.dvs.get(f.file_path)
        if dv is not None:
            f = f.with_changes(deletion_vector=dv)
            c.done.add(f.file_path)
        dv_sid = c.snapshot_id if dv is not None else None
        if inline:
            out.append(ManifestEntry(EntryStatus.ADDED, c.snapshot_id, data_seq or seq, seq, f, dv_sid))
        else:
            out.append(ManifestEntry(EntryStatus.ADDED, None, data_seq, None, f, dv_sid))
    return out


def _small_tier(c: _Commit, ref: ManifestFile) -> int | None:
    """The size tier of a small leaf (``V4Policy.small_tier``; None when it cannot be merged)."""
    if ref.format_version < 4 and ref.content != ManifestContent.DATA:
        return None  # legacy delete manifests may hold position deletes, which leaves cannot
    policy = c.files.policy
    mdv = positions(manifest_dv_codec(policy.mdv_encoding), ref.mdv, ref.manifest_path)
    return policy.small_tier(_live_count(ref, mdv))


def _compact(c: _Commit, content: ManifestContent) -> list[ManifestEntry]:
    """Live rows of the small leaves merged away by this commit (their references are dropped)."""
    policy = c.files.policy
    if not policy.compaction_enabled:
        return []
    tiers: dict[int, list[ManifestFile]] = {}
    for ref in c.refs:
        if ref.content == content and (tier := _small_tier(c, ref)) is not None:
            tiers.setdefault(tier, []).append(ref)
    root_entries = any(_content_of(e) == content for e in c.root_live)
    chosen = policy.merged_tiers([t for t, group in tiers.items() for _ in group], root_entries)
    merged = [ref for t, group in tiers.items() if t in chosen for ref in group]
    if not merged:
        return []
    io, md = c.files.io, c.files.md
    rows: list[ManifestEntry] = []
    for ref in merged:
        if ref.format_version < 4:
            rows += [materialised(e) for e in v3_read.read_entries(io, md, ref) if e.is_live]
        else:
            rows += [materialised(e) for e in live_leaf_entries(io, md, ref)]
    for ref in merged:
        c.dropped[ref.manifest_path] = ref
    c.refs = [r for r in c.refs if r.manifest_path not in c.dropped]
    return rows


def _content_of(e: ManifestEntry) -> ManifestContent:
    """The kind of manifest an entry belongs in."""
    return ManifestContent.DATA if e.data_file.content == FileContent.DATA else ManifestContent.DELETES


def _root_can_hold(e: ManifestEntry) -> bool:
    """Whether a DELETED entry read from a legacy manifest can be written as a root row."""
    df = e.data_file
    if df.content == FileContent.POSITION_DELETES:
        return False  # v4 content entries cannot hold position deletes (or v3 DVs)
    if None in (e.snapshot_id, e.sequence_number, e.file_sequence_number):
        return False
    return df.content != FileContent.DATA or df.first_row_id is not None


def _deleted_refs(c: _Commit) -> list[ManifestFile]:
    """DELETED rows for the parent references the new root drops (facts §4.1 rule 8).

    ``snapshot_id`` is the deleting snapshot; sequence numbers, ``first_row_id``, counts and the
    manifest DV are those of the reference as this commit last saw it (``deleted_positions`` /
    ``replaced_positions`` only when this commit emptied the leaf through them).
    """
    if not c.parent_has_root:
        return []  # the parent's manifests were listed by a manifest list, not by a root
    return [
        ref.with_changes(status=EntryStatus.DELETED, added_snapshot_id=c.snapshot_id)
        for ref in c.dropped.values()
    ]


def _validate(md: TableMetadata, change: TreeChange, dvs: Mapping[str, DeletionVectorRef]) -> None:
    change.check_contents()
    removed = {e.data_file.file_path for e in change.removed_entries}
    added = {f.file_path for f in change.added_data_files}
    for path, column_file in change.added_column_files.items():
        if path in removed or path in added:
            raise ValidationError(f"{path}: a column file is for a live data file the commit keeps")
        top_level = {f.field_id for f in md.schema().fields}
        unknown = [fid for fid in column_file.field_ids if fid not in top_level]
        if unknown or not column_file.field_ids:
            raise ValidationError(
                f"{column_file.location}: column files hold top-level columns of the table, not {unknown}"
            )
    for f in change.added_delete_files:
        if f.content == FileContent.POSITION_DELETES:
            raise ValidationError(
                f"{f.file_path}: format version 4 tables take deletion vectors through "
                "TreeChange.added_dvs (colocated with their data file), not position delete files"
            )
    both = set(dvs) & {e.data_file.file_path for e in change.removed_entries}
    if both:
        raise ValidationError(
            f"cannot both remove a data file and give it a deletion vector: {sorted(both)[0]}"
        )


def _assign_row_ids(
    c: _Commit, refs: list[ManifestFile], inline: list[ManifestEntry], start: int
) -> tuple[list[ManifestFile], list[ManifestEntry], int]:
    counter = start
    out_refs = []
    for ref in refs:
        if ref.content == ManifestContent.DATA and ref.first_row_id is None:
            if ref.manifest_path in c.files.unassigned:
                need = c.files.unassigned[ref.manifest_path]
            else:  # legacy v2 manifest (v3 rule: existing + added rows)
                need = (ref.added_rows_count or 0) + (ref.existing_rows_count or 0)
            ref = ref.with_changes(first_row_id=counter)
            counter += need
        out_refs.append(ref)
    out_inline = []
    for e in inline:
        df = e.data_file
        if df.content == FileContent.DATA and df.first_row_id is None:
            e = e.with_changes(data_file=df.with_changes(first_row_id=counter))
            counter += df.record_count
        out_inline.append(e)
    return out_refs, out_inline, counter


def write_v4_tree(request: TreeWriteRequest) -> TreeResult:
    """Write the root (and any leaves) of a v4 snapshot.

    ``request.change.added_dvs`` maps data file paths to new colocated deletion vectors.
    ``request.merge`` is accepted for symmetry: v4 compaction is governed by
    ``write.v4.compaction.*``. On failure every file written by the attempt is deleted.
    """
    io, metadata, parent, change = request.io, request.metadata, request.parent, request.change
    snapshot_id, first_row_id = request.snapshot_id, request.first_row_id
    props = request.effective_properties
    policy = V4Policy.from_properties(props)
    manifest_dv_codec(policy.mdv_encoding)  # fail early on an unknown encoding
    if manifest_dv_encoding(props) != manifest_dv_encoding(metadata.properties):
        metadata = metadata.with_changes(properties=props)  # read the parent's bitmaps in the new encoding
    fast = fast_append(request, policy)  # only adds data files, inline: the parent's rows stay Arrow
    if fast is not None:
        return fast
    dvs = dict(change.added_dvs)
    _validate(metadata, change, dvs)
    files = TreeFiles(io, metadata, request.locations, snapshot_id, request.sequence_number, policy)
    removed = {e.data_file.file_path: e for e in change.removed_entries}
    c = _Commit(files, removed, dvs, dict(change.added_column_files))
    c.removing = {e.data_file.content_key for e in change.removed_entries}
    c.parent_has_root = parent is not None and parent.root_manifest is not None
    added_paths = {f.file_path for f in change.added_data_files}
    try:
        tree = parent_tree(io, metadata, parent)
        _apply_to_inline(c, tree.inline)
        _apply_to_leaves(c, tree)
        missing_dvs = [p for p in dvs if p not in c.done and p not in added_paths]
        if missing_dvs:
            raise ValidationError(f"cannot add a deletion vector for {missing_dvs[0]}: not a live data file")
        missing_columns = [p for p in c.column_files if p not in c.done]
        if missing_columns:
            raise ValidationError(f"cannot add a column file for {missing_columns[0]}: not a live data file")
        if change.fail_missing_removals:
            missing = sorted({path for path, _ in c.removing})
            if missing:
                raise ValidationError(
                    f"cannot remove {len(missing)} file(s) that are not live in the parent snapshot, "
                    f"e.g. {missing[0]}"
                )
        root_rows = _place(c, change)
        start = first_row_id if first_row_id is not None else (metadata.next_row_id or 0)
        refs, inline, end = _assign_row_ids(c, [*c.new_refs, *c.refs], root_rows, start)
        rows: list[ContentRow] = [*refs, *_deleted_refs(c), *c.root_replaced, *c.root_deleted, *inline]
        root_path = files.write_root(rows, parent.snapshot_id if parent else None, request.attempt)
    except BaseException:
        files.cleanup()
        raise
    summary = _summary(parent, change, c)
    return TreeResult(
        manifest_list_location=None,
        root_manifest_location=root_path,
        manifests=refs,
        first_row_id=start,
        added_rows=end - start,
        summary=summary,
        written_files=list(files.written),
        removed_entries=list(c.found),
    )


def _place(c: _Commit, change: TreeChange) -> list[ManifestEntry]:
    """Decide inline vs leaves for root-level entries, run compaction; returns the inline rows."""
    policy = c.files.policy
    data_seq = change.added_data_sequence_number
    n_data = sum(1 for e in c.root_live if e.data_file.content == FileContent.DATA) + len(
        change.added_data_files
    )
    inline = policy.max_inline_entries > 0 and n_data <= policy.max_inline_entries
    data_rows: list[ManifestEntry] = _compact(c, ManifestContent.DATA)
    delete_rows: list[ManifestEntry] = _compact(c, ManifestContent.DELETES)
    root: list[ManifestEntry] = []
    if inline and not data_rows:
        root = [*c.root_live, *_added_entries(c, list(change.added_data_files), True, data_seq)]
    else:
        for e in c.root_live:
            (data_rows if e.data_file.content == FileContent.DATA else delete_rows).append(
                materialised_row(e)
            )
        data_rows += _added_entries(c, list(change.added_data_files), False, data_seq)
    delete_rows += [
        ManifestEntry(EntryStatus.ADDED, None, data_seq, None, f) for f in change.added_delete_files
    ]
    if data_rows:
        c.new_refs.extend(c.files.write_leaves(data_rows, ManifestContent.DATA))
    if delete_rows:
        c.new_refs.extend(c.files.write_leaves(delete_rows, ManifestContent.DELETES))
    return root


def materialised_row(e: ManifestEntry) -> ManifestEntry:
    """A root-level entry moved into a leaf: MODIFIED rows of this commit stay MODIFIED."""
    return e if e.status == EntryStatus.MODIFIED else materialised(e)


def _summary(parent: Snapshot | None, change: TreeChange, c: _Commit) -> dict[str, str]:
    """Standard counters; colocated DVs count as DV delete files (added / superseded)."""
    targets = {f.file_path: f for f in change.added_data_files}
    targets.update(c.dv_targets)
    added_dvs = [deletion_vector_file(targets[path], dv) for path, dv in c.dvs.items() if path in targets]
    return snapshot_summary(
        parent,
        list(change.added_data_files),
        [*change.added_delete_files, *added_dvs],
        [*c.found, *c.superseded],
    )
