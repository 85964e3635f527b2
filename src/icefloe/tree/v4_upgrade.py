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
from typing import Any

from icefloe.spec.content import EntryStatus, ManifestEntry, ManifestFile
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.v4_read import read_root


@dataclass
class ParentTree:
    """What a v4 commit starts from: live references and live inline entries of the parent root."""

    refs: list[ManifestFile] = field(default_factory=list)
    inline: list[ManifestEntry] = field(default_factory=list)


def _counted(io: Any, metadata: TableMetadata, m: ManifestFile) -> ManifestFile:
    """v1 manifest lists may lack counts, which root references require: count by reading."""
    counts = (
        m.added_files_count,
        m.existing_files_count,
        m.deleted_files_count,
        m.added_rows_count,
        m.existing_rows_count,
        m.deleted_rows_count,
    )
    if None not in counts:
        return m
    from icefloe.tree.read_seam import read_entries

    files = dict.fromkeys(EntryStatus, 0)
    rows = dict.fromkeys(EntryStatus, 0)
    for e in read_entries(io, metadata, m):
        files[e.status] += 1
        rows[e.status] += e.data_file.record_count
    return m.with_changes(
        added_files_count=files[EntryStatus.ADDED],
        existing_files_count=files[EntryStatus.EXISTING],
        deleted_files_count=files[EntryStatus.DELETED],
        added_rows_count=rows[EntryStatus.ADDED],
        existing_rows_count=rows[EntryStatus.EXISTING],
        deleted_rows_count=rows[EntryStatus.DELETED],
    )


def legacy_references(io: Any, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests of a v1–v3 snapshot as root references (format_version 0, tracking copied)."""
    from icefloe.tree.read_seam import manifest_refs

    out: list[ManifestFile] = []
    for m in manifest_refs(io, metadata, snapshot):
        m = _counted(io, metadata, m)
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


def parent_tree(io: Any, metadata: TableMetadata, parent: Snapshot | None) -> ParentTree:
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
