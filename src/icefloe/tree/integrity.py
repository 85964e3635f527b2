"""Cross-checks of what a reader decoded against what the parent file says about it.

Corrupt bytes do not always fail to decode: an Avro block count rewritten to a smaller value, a
manifest list count rewritten to 0 or a dropped manifest DV still decode, into a table that is
silently smaller or bigger than the one written. Every file in an Iceberg tree is described by
its parent (the manifest list by the snapshot, a manifest by its manifest-list entry or v4
reference, a leaf's masked rows by the root's ``mdv_cardinality``), and these checks compare the
two, raising :class:`CorruptMetadata` that names the file whose bytes disagree:

- a manifest's entries by status (files and rows) against its list entry / v4 reference counts
  (counts a writer left out, ``None``, are not checked; v1 lists may omit them);
- a manifest's header ``format-version`` against the table's format version;
- a snapshot's live data files and records against its summary's ``total-data-files`` /
  ``total-records`` (checked only when the whole snapshot was planned and both totals are
  present: writers that cannot compute them leave them out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from icefloe.errors import CorruptMetadata
from icefloe.spec.content import EntryStatus, FileContent, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.snapshots import Snapshot
from icefloe.tree.summary import summary_count

_FILE_COUNTS = (
    (EntryStatus.ADDED, "added_files_count", "added_rows_count"),
    (EntryStatus.EXISTING, "existing_files_count", "existing_rows_count"),
    (EntryStatus.DELETED, "deleted_files_count", "deleted_rows_count"),
)
_V4_COUNTS = (
    (EntryStatus.REPLACED, "replaced_files_count", "replaced_rows_count"),
    (EntryStatus.MODIFIED, "modified_files_count", "modified_rows_count"),
)


def entry_counts(entries: Iterable[ManifestEntry], *, v4: bool) -> dict[str, int]:
    """The file and row counts of a manifest holding ``entries``, by ``ManifestFile`` field name.

    Added, existing and deleted; with ``v4`` also replaced and modified.
    """
    fields = {status: (files, rows) for status, files, rows in _FILE_COUNTS + (_V4_COUNTS if v4 else ())}
    counts = {name: 0 for pair in fields.values() for name in pair}
    for e in entries:
        pair = fields.get(e.status)
        if pair is not None:
            counts[pair[0]] += 1
            counts[pair[1]] += e.data_file.record_count
    return counts


def check_manifest_counts(
    manifest: ManifestFile,
    statuses: np.ndarray,
    record_counts: np.ndarray | None,
    *,
    location: str | None = None,
    snapshot_id: int | None = None,
) -> None:
    """Entries per status (and their records) must equal the counts the parent recorded.

    ``statuses`` holds the status code of every entry of the manifest (deleted ones included),
    ``record_counts`` each entry's record count (None: only file counts are checked). The file
    at fault is the manifest (``location``, default its path): its parent's counts were written
    from the entries, so when they disagree the manifest's bytes are the ones that changed.
    """
    where = location or manifest.manifest_path
    statuses = np.asarray(statuses, dtype=np.int64)
    counts = _FILE_COUNTS + (_V4_COUNTS if manifest.format_version >= 4 else ())
    for status, files_attr, rows_attr in counts:
        mask = statuses == int(status)
        expected_files = getattr(manifest, files_attr)
        if expected_files is not None and int(mask.sum()) != expected_files:
            raise CorruptMetadata(
                f"{where}: holds {int(mask.sum())} {status.name} entries, its parent says {expected_files}",
                location=where,
                snapshot_id=snapshot_id,
            )
        expected_rows = getattr(manifest, rows_attr)
        if record_counts is not None and expected_rows is not None:
            rows = int(np.asarray(record_counts, dtype=np.int64)[mask].sum())
            if rows != expected_rows:
                raise CorruptMetadata(
                    f"{where}: its {status.name} entries hold {rows} rows, its parent says {expected_rows}",
                    location=where,
                    snapshot_id=snapshot_id,
                )


def check_entry_counts(manifest: ManifestFile, entries: Iterable[ManifestEntry], **where: object) -> None:
    """:func:`check_manifest_counts` over decoded entry objects."""
    rows = list(entries)
    statuses = np.fromiter((int(e.status) for e in rows), dtype=np.int64, count=len(rows))
    records = np.fromiter((e.data_file.record_count or 0 for e in rows), dtype=np.int64, count=len(rows))
    check_manifest_counts(manifest, statuses, records, **where)  # type: ignore[arg-type]


def check_manifest_version(header_version: int, table_version: int, location: str) -> None:
    """A v1–v3 manifest's header version may be older than the table's (upgrades), never newer."""
    if not 1 <= header_version <= min(table_version, 3):
        raise CorruptMetadata(
            f"{location}: manifest header says format-version {header_version}, the table is "
            f"format version {table_version}",
            location=location,
        )


def check_snapshot_totals(snapshot: Snapshot, totals: Mapping[str, int]) -> None:
    """A fully planned snapshot's live files and records must match its summary totals.

    ``totals`` maps summary keys (``total-data-files``, ``total-records``, ``total-delete-files``,
    ``total-position-deletes``, ``total-equality-deletes``) to what the tree holds; keys the
    summary lacks are not checked.
    """
    summary: Mapping[str, str] = snapshot.summary or {}
    where = snapshot.manifest_list or snapshot.root_manifest or f"snapshot {snapshot.snapshot_id}"
    for key, found in totals.items():
        expected = summary_count(summary, key)
        if expected is not None and expected != found:
            raise CorruptMetadata(
                f"{where}: snapshot {snapshot.snapshot_id} holds {key} {found}, its summary says {expected}",
                location=where,
                snapshot_id=snapshot.snapshot_id,
            )


def check_list_entries(snapshot: Snapshot, manifests: Iterable[ManifestFile], location: str) -> None:
    """A v2+ manifest list: sequence numbers no newer than the snapshot's, exact for its own manifests."""
    for m in manifests:
        if m.format_version < 2 or snapshot.sequence_number <= 0:
            continue
        own = m.added_snapshot_id == snapshot.snapshot_id
        if m.sequence_number > snapshot.sequence_number or (
            own and m.sequence_number != snapshot.sequence_number
        ):
            raise CorruptMetadata(
                f"{location}: manifest {m.manifest_path} has sequence number {m.sequence_number}, "
                f"snapshot {snapshot.snapshot_id} has {snapshot.sequence_number}",
                location=location,
                snapshot_id=snapshot.snapshot_id,
            )
        if m.min_sequence_number > m.sequence_number:
            raise CorruptMetadata(
                f"{location}: manifest {m.manifest_path} has min sequence number {m.min_sequence_number} "
                f"above its sequence number {m.sequence_number}",
                location=location,
                snapshot_id=snapshot.snapshot_id,
            )


def check_manifest_content(header_content: ManifestContent | None, manifest: ManifestFile) -> None:
    """A manifest's header ``content`` (data / deletes) must be what its list entry says."""
    if header_content is not None and header_content != manifest.content:
        where = manifest.manifest_path
        raise CorruptMetadata(
            f"{where}: header says {header_content.name} manifest, its parent says {manifest.content.name}",
            location=where,
        )


def tree_totals(data: Iterable[ManifestEntry], deletes: Iterable[ManifestEntry]) -> dict[str, int]:
    """The summary totals of a snapshot's live entries (v4 colocated DVs count as delete files)."""
    out = dict.fromkeys(
        ("total-data-files", "total-records", "total-delete-files", "total-position-deletes"), 0
    )
    out["total-equality-deletes"] = 0
    for e in data:
        f = e.data_file
        out["total-data-files"] += 1
        out["total-records"] += f.record_count
        if f.deletion_vector is not None:
            out["total-delete-files"] += 1
            out["total-position-deletes"] += f.deletion_vector.cardinality
    for e in deletes:
        f = e.data_file
        out["total-delete-files"] += 1
        key = (
            "total-equality-deletes"
            if f.content == FileContent.EQUALITY_DELETES
            else "total-position-deletes"
        )
        out[key] += f.record_count
    return out


def check_list_totals(snapshot: Snapshot, manifests: Iterable[ManifestFile], location: str) -> None:
    """A manifest list's live counts must add up to the snapshot summary's totals.

    Checked for every scan, filtered or not, before any manifest is skipped on its counts: a
    count rewritten to 0 would otherwise drop a manifest (and its rows) silently. Lists whose
    entries lack counts (allowed in v1) and summaries without totals are not checked.
    """
    sums = dict.fromkeys(("total-data-files", "total-records", "total-delete-files", "deletes"), 0)
    for m in manifests:
        live = (m.added_files_count, m.existing_files_count, m.added_rows_count, m.existing_rows_count)
        if any(v is None for v in live):
            return
        files, rows = (
            (m.added_files_count or 0) + (m.existing_files_count or 0),
            (m.added_rows_count or 0) + (m.existing_rows_count or 0),
        )
        if m.content == ManifestContent.DATA:
            sums["total-data-files"] += files
            sums["total-records"] += rows
        else:
            sums["total-delete-files"] += files
            sums["deletes"] += rows
    summary = snapshot.summary or {}
    pos = summary_count(summary, "total-position-deletes")
    eq = summary_count(summary, "total-equality-deletes")
    totals = {k: v for k, v in sums.items() if k != "deletes"}
    if pos is not None and eq is not None:
        totals["total-position-deletes + total-equality-deletes"] = sums["deletes"]
    for key, found in totals.items():
        expected = summary_count(summary, key)
        if "+" in key and pos is not None and eq is not None:
            expected = pos + eq
        if expected is not None and expected != found:
            raise CorruptMetadata(
                f"{location}: its manifests count {key} {found}, the summary of snapshot "
                f"{snapshot.snapshot_id} says {expected}",
                location=location,
                snapshot_id=snapshot.snapshot_id,
            )
