"""The read seam: the live content entries of a snapshot, whatever shape its metadata tree has.

This module only dispatches: v1–v3 snapshots (a manifest list of Avro manifests) go to
:mod:`icefloe.tree.v3_read`, v4 snapshots (``root-manifest``) to :mod:`icefloe.tree.v4_read`; a
single manifest goes by its own format version (a v4 root may still reference v1–v3 Avro
manifests after an upgrade: ``format_version`` < 4). Either way entries come back with
inheritance applied, as the same ``ManifestFile`` / ``ManifestEntry`` objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import v3_read, v4_fast_append, v4_read
from icefloe.tree.changes import EntryFilter, EntrySelection, ManifestFilter, StoredAdditions
from icefloe.tree.entry_columns import EntryColumns


def manifest_refs(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestFile]:
    """The manifests a snapshot references, in list order (v4: live references, then inline entries)."""
    if snapshot.root_manifest is not None:
        return v4_read.manifest_refs(io, metadata, snapshot)
    return v3_read.manifest_refs(io, metadata, snapshot)


def read_entries(io: FileIO, metadata: TableMetadata, manifest_file: ManifestFile) -> list[ManifestEntry]:
    """Every entry of one manifest (deleted ones included), with inheritance applied."""
    if manifest_file.format_version >= 4:
        return v4_read.read_entries(io, metadata, manifest_file)
    return v3_read.read_entries(io, metadata, manifest_file)


def read_live_columns(
    io: FileIO, metadata: TableMetadata, manifest_file: ManifestFile
) -> EntryColumns | None:
    """One manifest's entries as columns with inheritance applied, for columnar planning.

    v1–v3 Avro manifests (also legacy ones referenced from a v4 root) are decoded by DataFusion,
    v4 leaves by pyarrow (manifest DV applied by ``live_mask``). None when the manifest must be
    read as objects instead (:func:`read_entries`): the Arrow decoder cannot read it, or it is a
    v4 root's inline entries.
    """
    if manifest_file.format_version >= 4:
        return v4_read.leaf_columns(io, metadata, manifest_file)
    return v3_read.read_live_columns(io, metadata, manifest_file)


def read_entries_many(
    io: FileIO, metadata: TableMetadata, manifests: Sequence[ManifestFile]
) -> Iterator[list[ManifestEntry]]:
    """:func:`read_entries` of several manifests, in order, on a thread pool when there are many."""
    return v3_read.map_manifests(lambda m: read_entries(io, metadata, m), manifests)


def dropped_entries(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestEntry]:
    """Entries a v4 snapshot removed from the leaves it dropped from its tree ([] for v1–v3).

    See :func:`icefloe.tree.v4_read.dropped_entries`; scans never need them.
    """
    if snapshot.root_manifest is None:
        return []
    return v4_read.dropped_entries(io, metadata, snapshot)


def live_manifest_refs(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    manifest_filter: ManifestFilter | None = None,
    content: ManifestContent | None = None,
) -> list[ManifestFile]:
    """The manifests :func:`live_entries` reads: those that may hold live entries and pass the filter.

    v1–v3 manifests whose counts say they hold no live entry are skipped; v4 references are all
    live already (``manifest_refs`` keeps only live references and inline entries).
    """
    selection = EntrySelection(manifest_filter, None, content)
    if snapshot.root_manifest is not None:
        return v4_read.live_manifest_refs(io, metadata, snapshot, selection)
    return v3_read.live_manifest_refs(io, metadata, snapshot, selection)


def live_entries(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    manifest_filter: ManifestFilter | None = None,
    entry_filter: EntryFilter | None = None,
    content: ManifestContent | None = None,
) -> Iterator[ManifestEntry]:
    """The live (ADDED/EXISTING, v4 also MODIFIED) entries of a snapshot, with inheritance applied.

    ``content`` keeps only data or delete manifests; ``manifest_filter`` can skip manifests (e.g. on
    partition summaries) and ``entry_filter`` entries.
    """
    selection = EntrySelection(manifest_filter, entry_filter, content)
    if snapshot.root_manifest is not None:
        return v4_read.live_entries(io, metadata, snapshot, selection)
    return v3_read.live_entries(io, metadata, snapshot, selection)


def entries_added_by(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> list[ManifestEntry]:
    """The live entries ``snapshot`` added itself (status ADDED, tracked to it), with inheritance.

    A v4 snapshot whose added files all sit inline in its root is answered from those root rows
    alone (:func:`icefloe.tree.v4_read.inline_entries_added`); otherwise the snapshot's own
    manifests are read.
    """
    if snapshot.root_manifest is not None:
        inline = v4_read.inline_entries_added(io, metadata, snapshot)
        if inline is not None:
            return inline
    snapshot_id = snapshot.snapshot_id
    return list(
        live_entries(
            io,
            metadata,
            snapshot,
            manifest_filter=lambda m: m.added_snapshot_id == snapshot_id,
            entry_filter=lambda e: e.snapshot_id == snapshot_id and e.status == EntryStatus.ADDED,
        )
    )


def stored_additions_of(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot
) -> tuple[list[DataFile], StoredAdditions] | None:
    """The data files an append-only ``snapshot`` added (row ids unset), with the rows its tree
    stored them in, for a writer re-applying the append on another head (a REST server rebasing a
    stale append); None when its tree does not keep them so (v1–v3, files in leaves): then
    :func:`entries_added_by` gives the files."""
    if snapshot.root_manifest is None:
        return None
    return v4_fast_append.stored_additions(io, metadata, snapshot)


def clear_caches() -> None:
    """Forget the decoded manifest lists and roots kept for repeated plans (files are immutable, so
    only a test or a tool that rewrites a file in place needs this)."""
    v3_read.clear_manifest_list_cache()
    v4_read.clear_root_cache()
