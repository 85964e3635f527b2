"""The files a set of snapshots is made of, whatever the shape of their metadata trees.

Snapshot expiry deletes the files only expired snapshots needed, and orphan-file removal keeps
every file some snapshot names; both ask this module:

- **tree files**: the manifest list (v1–v3) or root manifest (v4) of each snapshot, and every
  manifest it references — v1–v3 Avro manifests, v4 leaves, legacy manifests under a v4 root,
  and the leaves a v4 root still lists as DELETED references (its own record of what it dropped);
- **live content files**: data files, delete files and deletion-vector Puffin files that belong to
  at least one snapshot's contents. Liveness is the read seam's: entry status, and for a v4 leaf
  the referencing root's manifest DV, so a file masked in every view is not live even though its
  leaf row is still on disk.

Each distinct view of a manifest (path, content, manifest DV) is read once, on a thread pool,
through the read seam's columnar decoding (as planning does), objects only where it cannot;
``tree_views`` / ``live_files`` let a caller skip views it already knows the answer for.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icefloe.errors import CorruptMetadata
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, ManifestContent, ManifestFile
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import read_seam, v4_read

READ_WORKERS = 8

_ViewKey = tuple[str, ManifestContent, bytes | None]


@dataclass
class ReachableFiles:
    """Tree files and live content files of some snapshots (absolute locations)."""

    tree: set[str] = field(default_factory=set)
    live: set[str] = field(default_factory=set)


def snapshot_tree_location(snapshot: Snapshot) -> str | None:
    """The manifest list or root manifest of a snapshot (None for v1 ``manifests`` snapshots)."""
    return snapshot.root_manifest or snapshot.manifest_list


@dataclass(frozen=True)
class SnapshotParts:
    """One snapshot's manifests (with whether their entries belong to it) and inline live files."""

    references: tuple[tuple[ManifestFile, bool], ...]
    inline_live: frozenset[str]


def snapshot_parts(io: FileIO, metadata: TableMetadata, snapshot: Snapshot) -> SnapshotParts:
    """The manifests a snapshot references and, for a v4 root, the files its inline entries keep live.

    v4 roots: live and non-live (DELETED) references; inline rows are already decoded with the
    root, so their live files come straight from it. v1–v3: the manifest list, all live.
    """
    if snapshot.root_manifest is None:
        refs = read_seam.manifest_refs(io, metadata, snapshot)
        return SnapshotParts(tuple((ref, True) for ref in refs), frozenset())
    root = v4_read.read_root(io, metadata, snapshot.root_manifest)
    inline = frozenset(loc for e in root.inline if e.is_live for loc in content_locations(e.data_file))
    return SnapshotParts(tuple((ref, ref.status.is_live) for ref in root.refs), inline)


def content_locations(data_file: DataFile) -> tuple[str, ...]:
    """The files an entry's content lives in: the file itself, a v4 colocated DV's Puffin file and
    its v4 column files."""
    dv = data_file.deletion_vector
    out: tuple[str, ...] = (data_file.file_path,) if dv is None else (data_file.file_path, dv.location)
    if data_file.column_files:
        out += tuple(cf.location for cf in data_file.column_files)
    return out


@dataclass
class TreeViews:
    """What snapshots' trees name before any manifest is read: tree files, inline live files, views.

    ``views`` maps each distinct view of a manifest (path, content, manifest DV) whose entries
    belong to some of the snapshots to one reference standing for it; reading it gives the same
    live files whichever reference is read, so two sets of snapshots can share the reading.
    """

    tree: set[str] = field(default_factory=set)
    inline_live: set[str] = field(default_factory=set)
    views: dict[_ViewKey, ManifestFile] = field(default_factory=dict)


def tree_views(
    io: FileIO, metadata: TableMetadata, snapshots: Iterable[Snapshot], workers: int = READ_WORKERS
) -> TreeViews:
    """The tree files, inline live files and manifest views of ``snapshots`` (roots read in parallel)."""
    out = TreeViews()
    chosen = list(snapshots)
    with ThreadPoolExecutor(max_workers=_workers(workers, chosen)) as pool:
        parts = list(pool.map(lambda s: snapshot_parts(io, metadata, s), chosen))
    for snapshot, part in zip(chosen, parts, strict=True):
        tree_location = snapshot_tree_location(snapshot)
        if tree_location is not None:
            out.tree.add(tree_location)
        out.inline_live.update(part.inline_live)
        for ref, live in part.references:
            out.tree.add(ref.manifest_path)
            if live:  # a DELETED reference's rows belong to no snapshot: only its file is named
                out.views.setdefault((ref.manifest_path, ref.content, ref.mdv), ref)
    return out


def live_files(
    io: FileIO, metadata: TableMetadata, refs: Iterable[ManifestFile], workers: int = READ_WORKERS
) -> set[str]:
    """The content files live in some of the manifest views ``refs`` (read on a thread pool)."""
    chosen = list(refs)
    out: set[str] = set()
    with ThreadPoolExecutor(max_workers=_workers(workers, chosen)) as pool:
        for locations in pool.map(lambda ref: live_locations(io, metadata, ref), chosen):
            out.update(locations)
    return out


def reachable_files(
    io: FileIO, metadata: TableMetadata, snapshots: Iterable[Snapshot], workers: int = READ_WORKERS
) -> ReachableFiles:
    """The tree files and the live content files of ``snapshots``."""
    views = tree_views(io, metadata, snapshots, workers)
    live = views.inline_live | live_files(io, metadata, views.views.values(), workers)
    return ReachableFiles(views.tree, live)


def _workers(workers: int, items: list[Any]) -> int:
    return max(1, min(workers, len(items)))


def live_locations(io: FileIO, metadata: TableMetadata, ref: ManifestFile) -> list[str]:
    """The content files live in one manifest view: decoded as columns, else as entry objects."""
    try:
        columns = read_seam.read_live_columns(io, metadata, ref)
        live = columns.live_mask() if columns is not None else None
    except CorruptMetadata:
        columns = live = None  # a manifest the object reader must judge
    if columns is not None and live is not None:  # None: inline root entries or not decodable
        return columns.content_locations(np.flatnonzero(live))
    entries = read_seam.read_entries(io, metadata, ref)
    return [loc for e in entries if e.is_live for loc in content_locations(e.data_file)]
