"""The parent tree of a v4 commit, including the first commit after an upgrade from v1–v3.

``UpgradeFormatVersion(4)`` only changes table metadata; existing snapshots keep their manifest
lists. The first v4 commit on top of such a snapshot writes a root whose references point at the
v1–v3 Avro manifests (``format_version`` 0): ``spec_id`` from the manifest list entry, tracking
copied from it (``snapshot_id`` = ``added_snapshot_id``, both sequence numbers = the manifest's
sequence number, ``first_row_id`` kept; v2 data manifests without one get a fresh range when the
root is written, like a v2 → v3 upgrade), counts from the list (or from reading v1 manifests).
Manifests without live entries are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.io.fileio import FileIO
from icefloe.spec.content import EntryStatus, ManifestEntry, ManifestFile
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import v3_read
from icefloe.tree.v4_read import read_root


@dataclass
class ParentTree:
    """What a v4 commit starts from: live references and live inline entries of the parent root."""

    refs: list[ManifestFile] = field(default_factory=list)
    inline: list[ManifestEntry] = field(default_factory=list)


def legacy_references(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests of a v1–v3 snapshot as root references (format_version 0, tracking copied)."""
    out: list[ManifestFile] = []
    for m in v3_read.manifest_refs(io, metadata, snapshot):
        m = v3_read.with_counts(m, lambda ref: v3_read.read_entries(io, metadata, ref))
        if not (m.added_files_count or m.existing_files_count):
            continue
        out.append(
            m.with_changes(
                status=EntryStatus.EXISTING,
                format_version=min(m.format_version, 3) or 0,
                partition_spec_id=max(m.partition_spec_id, 0),
                record_count=(m.added_files_count or 0)
                + (m.existing_files_count or 0)
                + (m.deleted_files_count or 0),
                partitions=None,
                mdv=None,
                dv_snapshot_id=None,
                deleted_positions=None,
                replaced_positions=None,
            )
        )
    return out


def carried(ref: ManifestFile) -> ManifestFile:
    """A parent reference as the next root carries it: EXISTING, one-snapshot deltas cleared."""
    if (
        ref.status == EntryStatus.EXISTING
        and ref.deleted_positions is None
        and ref.replaced_positions is None
    ):
        return ref
    return ref.with_changes(status=EntryStatus.EXISTING, deleted_positions=None, replaced_positions=None)


def parent_tree(io: FileIO, metadata: TableMetadata, parent: Snapshot | None) -> ParentTree:
    """The live part of the parent's tree, as the new root will carry it."""
    if parent is None:
        return ParentTree()
    if parent.root_manifest is None:
        return ParentTree(refs=legacy_references(io, metadata, parent))
    root = read_root(io, metadata, parent.root_manifest)
    refs = [carried(r) for r in root.refs if r.status.is_live]
    inline = [
        e if e.status == EntryStatus.EXISTING else e.with_changes(status=EntryStatus.EXISTING)
        for e in root.inline
        if e.is_live
    ]
    return ParentTree(refs=refs, inline=inline)
