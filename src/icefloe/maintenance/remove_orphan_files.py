"""Orphan-file removal: delete files under the table location that no table metadata names.

Orphans are what failed or killed writers leave behind (a data file written by a task whose job
never committed, the manifests of an abandoned commit attempt) and what an expiry could not
delete. A file is kept when any of these names it (locations compared in a canonical spelling,
``io.normalize_location``):

- the current metadata file, those in its metadata log, and the version hint;
- every snapshot's manifest list / root manifest and every manifest or leaf they reference
  (including the leaves a v4 root lists as DELETED references);
- every content file live in some snapshot — data files, delete files and the Puffin files of
  deletion vectors (``tree.reachable``); as in Iceberg Java, a file named only by DELETED entries
  (or masked by a manifest DV in every view) is read by no snapshot, so it is an orphan too;
- statistics and partition-statistics files.

A file under the location of another table of the catalog (a table nested in this one's directory
by an older catalog or another tool) is never an orphan of this table: it is skipped.

A file modified after ``older_than`` (default: three days ago, as Iceberg Java) is never deleted,
because it may belong to a write still in flight. ``dry_run`` only reports; deleting is refused
when ``gc.enabled`` is false (the files may be shared with other tables), as in Iceberg Java.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from icefloe.errors import ValidationError
from icefloe.io.fileio import ListedFile, normalize_location
from icefloe.maintenance.expire_snapshots import check_gc_enabled, to_epoch_ms
from icefloe.maintenance.orphan_matching import PrefixMatching, classify_orphans
from icefloe.tree.location_rules import under_any
from icefloe.tree.reachable import reachable_files
from icefloe.txn.handle import TableHandle

DEFAULT_ORPHAN_AGE_MS = 3 * 24 * 3600 * 1000
VERSION_HINT = "version-hint.text"


@dataclass(frozen=True)
class OrphanResult:
    """Orphan files found (and deleted unless it was a dry run)."""

    orphan_files: tuple[str, ...]
    deleted: bool
    failed_deletes: tuple[str, ...] = ()


def referenced_locations(table: TableHandle) -> set[str]:
    """Canonical locations of every file the table's current metadata names."""
    md = table.metadata
    reachable = reachable_files(table.io, md, md.snapshots)
    names: set[str] = set(reachable.tree) | reachable.live
    names.add(table.metadata_location)
    names.update(entry.metadata_file for entry in md.metadata_log)
    names.update(md.statistics_paths())
    return {normalize_location(n) for n in names}


def remove_orphan_files(
    table: TableHandle,
    *,
    older_than: datetime | int | None = None,
    location: str | None = None,
    dry_run: bool = False,
    matching: PrefixMatching | None = None,
    listing: Sequence[ListedFile] | None = None,
) -> OrphanResult:
    """Find, and unless ``dry_run`` delete, files under ``location`` (default: the table's) nothing names.

    ``matching`` says which schemes and authorities are equal and what a file whose path a named
    file has under another scheme or authority is (``maintenance.orphan_matching``). ``listing``
    replaces listing ``location`` (Iceberg's ``file_list_view``): the files to consider."""
    table.refresh()
    if not dry_run:
        check_gc_enabled(table, "remove orphan files (pass dry_run=True to list them)")
    cutoff = to_epoch_ms(older_than)
    if cutoff is None:
        cutoff = int(time.time() * 1000) - DEFAULT_ORPHAN_AGE_MS
    root = location or table.metadata.location
    table_root = normalize_location(table.metadata.location)  # canonical spelling has no trailing slash
    if not (normalize_location(root) + "/").startswith(table_root + "/"):
        raise ValidationError(f"{root} is not inside the table location {table.metadata.location}")
    keep = referenced_locations(table)
    others = table.other_table_roots()
    candidates = [
        f.location
        for f in (table.io.list_files(root) if listing is None else listing)
        if normalize_location(f.location) not in keep
        and not f.location.endswith("/" + VERSION_HINT)
        and f.modified_ms is not None
        and f.modified_ms < cutoff
        and not under_any(f.location, others)
    ]
    orphans = tuple(classify_orphans(candidates, keep, matching or PrefixMatching()))
    if dry_run or not orphans:
        return OrphanResult(orphans, deleted=False)
    failed = table.io.delete_many(orphans)
    return OrphanResult(orphans, deleted=True, failed_deletes=tuple(sorted(failed)))
