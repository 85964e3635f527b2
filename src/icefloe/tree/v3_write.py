"""v1–v3 trees, write side: a parent snapshot plus a change become Avro manifests and a manifest list.

1. added data and delete files go to new manifests, one group per partition spec and content
   (data / deletes), rolled at ``commit.manifest.target-size-bytes``; entries are ADDED with
   sequence numbers and first row ids left null for inheritance;
2. parent manifests holding removed files are rewritten: removed files become DELETED entries
   stamped with the new snapshot id (sequence numbers and first row ids kept), other live files
   become EXISTING with their inherited values written out, old DELETED entries are dropped;
   parent manifests that no longer hold live files are dropped; the rest are reused as they are;
3. with merging on (merge append), small manifests of the same spec and content are bin-packed
   into merged manifests once there are ``commit.manifest.min-count-to-merge`` of them;
4. the manifest list is written: unassigned sequence numbers get the snapshot's, and v3 data
   manifests without a ``first_row_id`` get one (the snapshot's ``added-rows``).

The result also carries the standard snapshot summary counters. The write seam
(:mod:`icefloe.tree.write_seam`) sends v1–v3 tables here, v4 tables to :mod:`icefloe.tree.v4_write`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from io import BytesIO
from typing import Any

from icefloe.errors import IcefloeError, ValidationError
from icefloe.formats.avro.manifest import write_manifest
from icefloe.formats.avro.manifest_list import write_manifest_list
from icefloe.io.fileio import FileIO
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.conversions import from_bytes
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.properties import checked_int_property
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import StructType
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.summary import snapshot_summary
from icefloe.tree.v3_read import (
    manifest_refs,
    may_have_live_entries,
    read_entries,
    read_entries_many,
    remember_written_list,
    with_counts,
    written_lists,
)

logger = logging.getLogger(__name__)

MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
DEFAULT_MANIFEST_TARGET_SIZE = 8 * 1024 * 1024
DEFAULT_MIN_MERGE_COUNT = 100


class _Writer:
    """Writes the manifests of one commit attempt and remembers what it wrote."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        snapshot_id: int,
        locations: LocationProvider,
        target_size: int,
    ) -> None:
        self.io = io
        self.md = metadata
        self.snapshot_id = snapshot_id
        self.locations = locations
        self.target_size = target_size
        self.specs = metadata.specs_by_id()
        self.schema = metadata.schema()
        self.written: list[str] = []
        self.entries: dict[str, list[ManifestEntry]] = {}  # entries of manifests written here
        self._ptypes: dict[int, StructType] = {}

    def spec(self, spec_id: int) -> PartitionSpec:
        spec = self.specs.get(spec_id)
        if spec is None:
            raise ValidationError(f"partition spec {spec_id} is not in the table metadata")
        return spec

    def ptype(self, spec_id: int) -> StructType:
        if spec_id not in self._ptypes:
            self._ptypes[spec_id] = self.md.partition_type(self.spec(spec_id))
        return self._ptypes[spec_id]

    def write(self, entries: list[ManifestEntry], spec_id: int, content: ManifestContent) -> ManifestFile:
        path = self.locations.new_manifest_path()
        mf = write_manifest(
            self.io.new_output(path, fresh_name=True),
            entries,
            self.spec(spec_id),
            self.schema,
            self.md.format_version,
            content,
            self.snapshot_id,
            path=path,
            partition_type=self.ptype(spec_id),
        )
        self.written.append(path)
        self.entries[path] = entries
        return mf

    def write_rolling(
        self, entries: list[ManifestEntry], spec_id: int, content: ManifestContent
    ) -> list[ManifestFile]:
        """Write entries into as many manifests as the target size asks for."""
        out: list[ManifestFile] = []
        chunk: list[ManifestEntry] = []
        size = 0
        for e in entries:
            est = _estimated_size(e.data_file)
            if chunk and size + est > self.target_size:
                out.append(self.write(chunk, spec_id, content))
                chunk, size = [], 0
            chunk.append(e)
            size += est
        if chunk:
            out.append(self.write(chunk, spec_id, content))
        return out

    def entries_of(self, manifest: ManifestFile) -> list[ManifestEntry]:
        own = self.entries.get(manifest.manifest_path)
        return own if own is not None else read_entries(self.io, self.md, manifest)

    def discard(self, manifest: ManifestFile) -> None:
        """Delete a manifest written by this attempt that the final tree does not use."""
        path = manifest.manifest_path
        if path in self.written:
            self.written.remove(path)
            self.entries.pop(path, None)
            try:
                self.io.delete(path)
            except Exception as exc:  # best effort: an orphan manifest is harmless
                logger.warning("could not delete unused manifest %s: %s", path, exc)


def _estimated_size(f: DataFile) -> int:
    """Rough uncompressed Avro size of one manifest entry, for rolling manifests."""
    size = 60 + len(f.file_path) + 12 * len(f.partition)
    for m in (f.column_sizes, f.value_counts, f.null_value_counts, f.nan_value_counts):
        if m:
            size += 8 * len(m)
    for b in (f.lower_bounds, f.upper_bounds):
        if b:
            size += sum(6 + len(v) for v in b.values())
    return size


def _group_by_spec(files: Iterable[DataFile]) -> dict[int, list[DataFile]]:
    groups: dict[int, list[DataFile]] = {}
    for f in files:
        groups.setdefault(f.spec_id, []).append(f)
    return groups


def _validate_added(md: TableMetadata, change: TreeChange) -> None:
    change.check_contents()
    if change.added_delete_files and md.format_version < 2:
        raise ValidationError(f"format version {md.format_version} tables cannot hold delete files")


def _new_manifests(w: _Writer, change: TreeChange) -> list[ManifestFile]:
    out: list[ManifestFile] = []
    seq = change.added_data_sequence_number
    for content, files in (
        (ManifestContent.DATA, change.added_data_files),
        (ManifestContent.DELETES, change.added_delete_files),
    ):
        for spec_id, group in _group_by_spec(files).items():
            entries = []
            for f in group:
                if f.first_row_id is not None and (
                    content == ManifestContent.DELETES or w.md.format_version < 3
                ):
                    f = f.with_changes(first_row_id=None)
                entries.append(ManifestEntry(EntryStatus.ADDED, w.snapshot_id, seq, None, f))
            out += w.write_rolling(entries, spec_id, content)
    return out


def _summary_may_hold(manifest: ManifestFile, ptype: StructType, partitions: list[tuple[Any, ...]]) -> bool:
    """Whether the manifest's partition summaries admit any of the partition tuples."""
    parts = manifest.partitions
    if not parts or len(parts) != len(ptype.fields):
        return True
    bounds: list[tuple[Any, Any]] = []
    for s, f in zip(parts, ptype.fields, strict=True):
        try:
            lo = None if s.lower_bound is None else from_bytes(f.field_type, s.lower_bound)
            hi = None if s.upper_bound is None else from_bytes(f.field_type, s.upper_bound)
        except IcefloeError:
            lo = hi = None
        bounds.append((lo, hi))
    for values in partitions:
        if len(values) != len(parts) or all(
            _value_may_be_in(v, s, lo, hi) for v, s, (lo, hi) in zip(values, parts, bounds, strict=True)
        ):
            return True
    return False


def _value_may_be_in(value: Any, summary: Any, lo: Any, hi: Any) -> bool:
    if value is None:
        return bool(summary.contains_null)
    if isinstance(value, float) and math.isnan(value):
        return summary.contains_nan is not False
    if lo is None or hi is None:  # missing bounds mean "unknown", not "empty"
        return True
    try:
        return bool(lo <= value <= hi)
    except TypeError:
        return True


def _remove(
    w: _Writer, parents: list[ManifestFile], removed: Sequence[ManifestEntry]
) -> tuple[list[ManifestFile], list[ManifestEntry], set[tuple[str, int]]]:
    """Rewrite the parent manifests holding removed files; returns (manifests, removed, paths)."""
    # Keyed by content_key: several DVs share one Puffin file and differ only by blob offset.
    wanted: dict[tuple[str, int], ManifestEntry] = {e.data_file.content_key: e for e in removed}
    by_key: dict[tuple[ManifestContent, int], list[tuple[Any, ...]]] = {}
    for e in removed:
        key = (
            ManifestContent.DATA if e.data_file.content == FileContent.DATA else ManifestContent.DELETES,
            e.data_file.spec_id,
        )
        by_key.setdefault(key, []).append(e.data_file.partition)

    def candidate(m: ManifestFile) -> bool:
        tuples = by_key.get((m.content, m.partition_spec_id))
        if not tuples or not may_have_live_entries(m):
            return False
        try:
            ptype = w.ptype(m.partition_spec_id)
        except ValidationError:
            return True
        return _summary_may_hold(m, ptype, tuples)

    candidates = [m for m in parents if wanted and candidate(m)]
    rewritten: dict[str, ManifestFile] = {}
    found: list[ManifestEntry] = []
    found_paths: set[tuple[str, int]] = set()
    for m, entries in zip(candidates, read_entries_many(w.io, w.md, candidates), strict=True):
        if not any(e.status.is_live and e.data_file.content_key in wanted for e in entries):
            continue
        new_entries: list[ManifestEntry] = []
        for e in entries:
            if not e.status.is_live:
                continue
            path = e.data_file.content_key
            if path in wanted:
                new_entries.append(e.with_changes(status=EntryStatus.DELETED, snapshot_id=w.snapshot_id))
                found.append(e)
                found_paths.add(path)
            else:
                new_entries.append(e.with_changes(status=EntryStatus.EXISTING))
        rewritten[m.manifest_path] = w.write(new_entries, m.partition_spec_id, m.content)
    out = []
    for m in parents:
        if m.manifest_path in rewritten:
            out.append(rewritten[m.manifest_path])
        elif may_have_live_entries(m):
            out.append(m)
    return out, found, found_paths


def _merge(w: _Writer, manifests: list[ManifestFile], min_count: int, target_size: int) -> list[ManifestFile]:
    """Bin-pack small manifests of the same spec and content once there are ``min_count`` of them."""
    groups: dict[tuple[ManifestContent, int], list[ManifestFile]] = {}
    for m in manifests:
        groups.setdefault((m.content, m.partition_spec_id), []).append(m)
    replacement: dict[str, ManifestFile | None] = {}
    for (content, spec_id), group in groups.items():
        small = [m for m in group if m.manifest_length < target_size]
        if len(small) < max(min_count, 2):
            continue
        bins: list[list[ManifestFile]] = [[]]
        size = 0
        for m in small:
            if bins[-1] and size + m.manifest_length > target_size:
                bins.append([])
                size = 0
            bins[-1].append(m)
            size += m.manifest_length
        for b in bins:
            if len(b) < 2:
                continue
            merged = w.write(_merged_entries(w, b), spec_id, content)
            replacement[b[0].manifest_path] = merged
            for m in b[1:]:
                replacement[m.manifest_path] = None
            for m in b:
                w.discard(m)
    out = []
    for m in manifests:
        if m.manifest_path not in replacement:
            out.append(m)
        elif (r := replacement[m.manifest_path]) is not None:
            out.append(r)
    return out


def _merged_entries(w: _Writer, manifests: list[ManifestFile]) -> list[ManifestEntry]:
    """Entries of a merged manifest: this snapshot's ADDED/DELETED stay, older live ones are EXISTING."""
    out: list[ManifestEntry] = []
    for m in manifests:
        for e in w.entries_of(m):
            mine = e.snapshot_id == w.snapshot_id
            if e.status == EntryStatus.DELETED:
                if mine:
                    out.append(e)
            elif e.status == EntryStatus.ADDED and mine:
                out.append(e)
            elif e.status.is_live:
                out.append(
                    e if e.status == EntryStatus.EXISTING else e.with_changes(status=EntryStatus.EXISTING)
                )
    return out


def _with_counts(w: _Writer, m: ManifestFile) -> ManifestFile:
    """Manifests from v1 lists may lack counts, which v2+ lists require: count by reading."""
    return with_counts(m, w.entries_of)


def write_v3_tree(request: TreeWriteRequest) -> TreeResult:
    """Write the metadata tree of a new v1–v3 snapshot: manifests and a manifest list.

    On failure, files already written are deleted.
    """
    io, metadata, parent, change = request.io, request.metadata, request.parent, request.change
    snapshot_id, first_row_id = request.snapshot_id, request.first_row_id
    fv = metadata.format_version
    if change.added_dvs:
        raise ValidationError(f"colocated deletion vectors need format version 4, not {fv}")
    if change.added_column_files or any(f.column_files for f in change.added_data_files):
        raise ValidationError(f"column files need format version 4, not {fv}")
    _validate_added(metadata, change)
    props = request.effective_properties
    target_size = checked_int_property(props, MANIFEST_TARGET_SIZE, DEFAULT_MANIFEST_TARGET_SIZE)
    min_count = checked_int_property(props, MANIFEST_MIN_MERGE_COUNT, DEFAULT_MIN_MERGE_COUNT)
    merge = request.merge and props.get(MANIFEST_MERGE_ENABLED, "true").strip().lower() != "false"
    locations = request.locations
    w = _Writer(io, metadata, snapshot_id, locations, target_size)
    try:
        parents = manifest_refs(io, metadata, parent) if parent is not None else []
        kept, removed, found_paths = _remove(w, parents, change.removed_entries)
        if change.fail_missing_removals:
            missing = [
                e.data_file.file_path
                for e in change.removed_entries
                if e.data_file.content_key not in found_paths
            ]
            if missing:
                raise ValidationError(
                    f"cannot remove {len(missing)} file(s) that are not live in the parent snapshot, "
                    f"e.g. {missing[0]}"
                )
        manifests = _new_manifests(w, change) + kept
        if merge:
            manifests = _merge(w, manifests, min_count, target_size)
        if fv >= 2:
            manifests = [_with_counts(w, m) for m in manifests]
        row_start = None
        if fv >= 3:
            row_start = first_row_id if first_row_id is not None else (metadata.next_row_id or 0)
        list_path = locations.new_manifest_list_path(snapshot_id, request.attempt)
        buffer = BytesIO()
        listed = write_manifest_list(
            buffer,
            manifests,
            fv,
            snapshot_id,
            parent.snapshot_id if parent is not None else None,
            request.sequence_number,
            row_start,
            decoded=parents if parent is not None and parent.manifest_list is not None else (),
        )
        io.new_output(list_path, fresh_name=True).write_bytes(buffer.getvalue())
        w.written.append(list_path)
        # the next commit's parent list: its bytes (a remote store is not asked) and its entries
        written_lists.remember(list_path, buffer.getvalue())
        remember_written_list(list_path, listed.length, listed.as_read)
    except BaseException:
        for path in w.written:
            try:
                io.delete(path)
            except Exception:  # best effort cleanup of an attempt that never committed
                logger.warning("could not delete %s after a failed tree write", path)
        raise
    summary = snapshot_summary(parent, change.added_data_files, change.added_delete_files, removed)
    return TreeResult.of_manifest_list(list_path, listed, summary, list(w.written), removed)
