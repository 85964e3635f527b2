"""Manifest rewrite: the live data entries of the branch head's data manifests, re-packed into fewer
manifests (one group per partition spec, rolled at ``commit.manifest.target-size-bytes``), committed
as a ``replace`` snapshot that changes no table content.

Entries keep their snapshot ids, data and file sequence numbers and first row ids (written out as
EXISTING entries); delete manifests are kept as they are. A v4 tree is re-packed by the write
seam's own compaction instead (``maintenance.rewrite_leaves``): its root's inline entries and small
leaves become leaves.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from icefloe.errors import Unsupported, ValidationError
from icefloe.formats.avro.manifest import write_manifest
from icefloe.formats.avro.manifest_list import write_manifest_list
from icefloe.maintenance.rewrite_leaves import repack_leaves
from icefloe.spec.content import EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.properties import checked_int_property
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.summary import snapshot_summary
from icefloe.tree.v3_read import manifest_refs, read_entries, read_entries_many, with_counts
from icefloe.tree.v3_write import DEFAULT_MANIFEST_TARGET_SIZE, MANIFEST_TARGET_SIZE
from icefloe.txn.handle import TableHandle, commit_action
from icefloe.txn.producers import SnapshotProducer, branch_head
from icefloe.txn.transaction import AttemptContext

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RewriteManifestsResult:
    """How many data manifests were replaced and how many were written in their place."""

    rewritten_manifests: int
    added_manifests: int


@dataclass
class RewriteManifests(SnapshotProducer):
    """A ``replace`` snapshot whose data manifests are those of the parent, re-packed."""

    operation: Operation = Operation.REPLACE
    spec_id: int | None = None  # only the data manifests of this partition spec (None: all)
    sort_by: tuple[str, ...] = ()  # partition fields whose values order the entries (Iceberg's sort_by)
    rewritten: list[ManifestFile] = field(default_factory=list)
    added: list[ManifestFile] = field(default_factory=list)

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """No file is added or removed."""
        if current.format_version >= 4:
            raise Unsupported("rewrite_manifests: v4 tables have no manifests to re-pack")
        if parent is None:
            raise ValidationError("rewrite_manifests: the branch has no snapshot")
        return TreeChange()

    def selects(self, m: ManifestFile) -> bool:
        """Whether this rewrite re-packs the manifest."""
        return m.content == ManifestContent.DATA and self.spec_id in (None, m.partition_spec_id)

    def write_tree(self, ctx: AttemptContext, request: TreeWriteRequest) -> TreeResult:
        """Write the re-packed data manifests and a manifest list with the kept delete manifests."""
        io, md, parent = request.io, request.metadata, request.parent
        assert parent is not None
        target = checked_int_property(
            request.effective_properties, MANIFEST_TARGET_SIZE, DEFAULT_MANIFEST_TARGET_SIZE
        )
        refs = manifest_refs(io, md, parent)
        data = [m for m in refs if self.selects(m)]
        kept = [m for m in refs if not self.selects(m)]
        written: list[str] = []
        new: list[ManifestFile] = []
        specs = md.specs_by_id()
        try:
            by_spec: dict[int, list[ManifestEntry]] = {}
            for entries in read_entries_many(io, md, data):
                for e in entries:
                    if e.status.is_live:
                        by_spec.setdefault(e.data_file.spec_id, []).append(
                            e.with_changes(status=EntryStatus.EXISTING)
                        )
            for spec_id, entries in sorted(by_spec.items()):
                entries = _clustered(entries, specs[spec_id], self.sort_by)
                for chunk in _chunks(entries, sum(m.manifest_length for m in data), target):
                    path = request.locations.new_manifest_path()
                    written.append(path)
                    new.append(
                        write_manifest(
                            io.new_output(path, fresh_name=True),
                            chunk,
                            specs[spec_id],
                            md.schema(),
                            md.format_version,
                            ManifestContent.DATA,
                            request.snapshot_id,
                            path=path,
                            partition_type=md.partition_type(specs[spec_id]),
                        )
                    )
            manifests = new + kept
            if md.format_version >= 2:
                manifests = [with_counts(m, lambda x: read_entries(io, md, x)) for m in manifests]
            list_path = request.locations.new_manifest_list_path(request.snapshot_id, request.attempt)
            written.append(list_path)
            listed = write_manifest_list(
                io.new_output(list_path, fresh_name=True),
                manifests,
                md.format_version,
                request.snapshot_id,
                parent.snapshot_id,
                request.sequence_number,
                (md.next_row_id or 0) if md.format_version >= 3 else None,
            )
        except BaseException:
            for path in written:
                try:
                    io.delete(path)
                except Exception as exc:  # best effort cleanup of an attempt that never committed
                    logger.warning("could not delete %s after a failed manifest rewrite: %s", path, exc)
            raise
        self.rewritten, self.added = data, new
        summary = snapshot_summary(parent, [], [], [])
        summary.pop("changed-partition-count", None)
        summary.update(
            {
                "manifests-created": str(len(new)),
                "manifests-replaced": str(len(data)),
                "manifests-kept": str(len(kept)),
                "entries-processed": str(sum(len(v) for v in by_spec.values())),
            }
        )
        return TreeResult.of_manifest_list(list_path, listed, summary, written)


def _clustered(
    entries: list[ManifestEntry], spec: PartitionSpec, sort_by: tuple[str, ...]
) -> list[ManifestEntry]:
    """Entries ordered by the values of the ``sort_by`` partition fields (nulls first), so that each
    manifest covers a narrow range of them; a field the spec lacks orders nothing."""
    positions = [i for name in sort_by for i, f in enumerate(spec.fields) if f.name == name]
    if not positions:
        return entries

    def key(e: ManifestEntry) -> list[tuple[bool, Any]]:
        values = e.data_file.partition
        return [(values[i] is not None, values[i]) for i in positions]

    return sorted(entries, key=key)


def _chunks(entries: list[ManifestEntry], total_bytes: int, target: int) -> list[list[ManifestEntry]]:
    """Split entries evenly into as many manifests as the old manifests' bytes over the target."""
    count = max(1, -(-total_bytes // max(target, 1)))
    size = -(-len(entries) // count)
    return [entries[i : i + size] for i in range(0, len(entries), size)]


def rewrite_manifests(
    table: TableHandle,
    branch: str = MAIN_BRANCH,
    spec_id: int | None = None,
    sort_by: tuple[str, ...] | list[str] = (),
) -> RewriteManifestsResult:
    """Re-pack the data manifests (of partition spec ``spec_id``, default all) of ``branch``'s head,
    their entries ordered by the partition fields ``sort_by``; a no-op when there is at most one."""
    md = table.metadata
    if md.format_version >= 4:
        if spec_id is not None or sort_by:
            raise Unsupported("rewrite_manifests on a v4 table: spec_id and sort_by (leaves hold every spec)")
        return RewriteManifestsResult(*repack_leaves(table, branch))
    head = branch_head(md, branch)
    if head is None:
        return RewriteManifestsResult(0, 0)
    names = {f.name for spec in md.specs_by_id().values() for f in spec.fields}
    unknown = [name for name in sort_by if name not in names]
    if unknown:
        raise ValidationError(f"rewrite_manifests: sort_by names no partition field: {', '.join(unknown)}")
    producer = RewriteManifests(branch=branch, spec_id=spec_id, sort_by=tuple(sort_by))
    data = [m for m in manifest_refs(table.io, md, head) if producer.selects(m)]
    if len(data) <= 1:
        return RewriteManifestsResult(0, 0)
    commit_action(table, producer)
    return RewriteManifestsResult(len(producer.rewritten), len(producer.added))
