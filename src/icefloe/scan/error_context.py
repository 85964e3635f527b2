"""Where a scan error came from: the snapshot, metadata file and tree files that led to the bad file.

A corrupt path or count in a parent file shows up as a missing or inconsistent child (a data file
that does not exist, a manifest whose entries disagree with its list entry). The child is named by
its reader; :func:`with_scan_context` adds the parents, found again on the error path only: the
snapshot, its metadata file, its manifest list or v4 root, and the manifest (or leaf) that lists
the file the error names.
"""

from __future__ import annotations

from typing import Any

from icefloe.errors import CorruptMetadata, IcefloeError, NotFound, UnsupportedLocation
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.read_seam import live_manifest_refs, read_entries


def listing_manifest(io: Any, md: TableMetadata, snapshot: Snapshot, path: str) -> str | None:
    """The manifest (or v4 leaf / root) of ``snapshot`` that lists ``path`` (a content or DV file)."""
    try:
        for ref in live_manifest_refs(io, md, snapshot):
            for e in read_entries(io, md, ref):
                f = e.data_file
                dv = f.deletion_vector
                if f.file_path == path or (dv is not None and dv.location == path):
                    return ref.manifest_path
    except IcefloeError:  # the tree is corrupt in more ways than one: say what is known
        return None
    return None


def with_scan_context(
    exc: CorruptMetadata | NotFound | UnsupportedLocation,
    io: Any,
    md: TableMetadata,
    snapshot: Snapshot | None,
    where: str,
) -> IcefloeError:
    """``exc`` again (same kind, location and snapshot) with the files that led to it in its message."""
    parts = [f"metadata file {where}"]
    location = getattr(exc, "location", None)
    if snapshot is not None:
        parts.insert(0, f"snapshot {snapshot.snapshot_id}")
        tree = snapshot.manifest_list or snapshot.root_manifest
        if tree:
            parts.append(f"{'manifest list' if snapshot.manifest_list else 'root manifest'} {tree}")
        if location:
            listed_in = listing_manifest(io, md, snapshot, location)
            if listed_in is not None and listed_in != location:
                parts.append(f"{location} listed in {listed_in}")
    message = f"{exc} (reading {', '.join(parts)})"
    if isinstance(exc, CorruptMetadata):
        sid = exc.snapshot_id if exc.snapshot_id is not None else (snapshot.snapshot_id if snapshot else None)
        return CorruptMetadata(message, location=exc.location or where, snapshot_id=sid)
    out: NotFound | UnsupportedLocation = (
        UnsupportedLocation(message) if isinstance(exc, UnsupportedLocation) else NotFound(message)
    )
    out.location = location
    return out
