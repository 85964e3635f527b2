"""Standard snapshot summary counters (``added-data-files``, ``total-records``, ...).

Change counters are written only when non-zero, ``changed-partition-count`` always, and each
``total-*`` counter is the parent's total plus this change (0 for the first snapshot; left out
when the parent's summary lacks it, as Iceberg Java does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from icefloe.errors import ValidationError
from icefloe.spec.content import DataFile, FileContent, ManifestEntry
from icefloe.spec.snapshots import Snapshot

ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILES_SIZE = "added-files-size"
REMOVED_FILES_SIZE = "removed-files-size"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_POS_DELETE_FILES = "added-position-delete-files"
REMOVED_POS_DELETE_FILES = "removed-position-delete-files"
ADDED_EQ_DELETE_FILES = "added-equality-delete-files"
REMOVED_EQ_DELETE_FILES = "removed-equality-delete-files"
ADDED_DVS = "added-dvs"
REMOVED_DVS = "removed-dvs"
ADDED_POS_DELETES = "added-position-deletes"
REMOVED_POS_DELETES = "removed-position-deletes"
ADDED_EQ_DELETES = "added-equality-deletes"
REMOVED_EQ_DELETES = "removed-equality-deletes"
CHANGED_PARTITION_COUNT = "changed-partition-count"
TOTAL_RECORDS = "total-records"
TOTAL_FILES_SIZE = "total-files-size"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_DELETE_FILES = "total-delete-files"
TOTAL_POS_DELETES = "total-position-deletes"
TOTAL_EQ_DELETES = "total-equality-deletes"
OPERATION = "operation"

# Keys a summary writer produces (icefloe's counters above, and those Iceberg Java's
# SnapshotSummary.Builder and snapshot producers add): ``snapshot_properties`` may not set them,
# because readers and maintenance trust them (``total-records``, ``operation``, ...).
RESERVED_SUMMARY_KEYS = frozenset(
    {
        OPERATION,
        ADDED_DATA_FILES, DELETED_DATA_FILES, ADDED_RECORDS, DELETED_RECORDS, ADDED_FILES_SIZE,
        REMOVED_FILES_SIZE, ADDED_DELETE_FILES, REMOVED_DELETE_FILES, ADDED_POS_DELETE_FILES,
        REMOVED_POS_DELETE_FILES, ADDED_EQ_DELETE_FILES, REMOVED_EQ_DELETE_FILES, ADDED_DVS, REMOVED_DVS,
        ADDED_POS_DELETES, REMOVED_POS_DELETES, ADDED_EQ_DELETES, REMOVED_EQ_DELETES,
        CHANGED_PARTITION_COUNT, TOTAL_RECORDS, TOTAL_FILES_SIZE, TOTAL_DATA_FILES, TOTAL_DELETE_FILES,
        TOTAL_POS_DELETES, TOTAL_EQ_DELETES,
        "deleted-duplicate-files", "partition-summaries-included", "manifests-created",
        "manifests-kept", "manifests-replaced", "entries-processed", "replace-partitions",
        "first-row-id", "added-rows",
    }
)  # fmt: skip
RESERVED_SUMMARY_PREFIXES = ("partitions.",)  # Java's per-partition summaries


def check_snapshot_properties(properties: dict[str, str]) -> None:
    """Refuse user snapshot properties that would override what the summary writer records."""
    for key in properties:
        if not isinstance(key, str) or not key.strip():
            raise ValidationError(f"invalid snapshot property key {key!r}: expected a non-empty string")
        if key in RESERVED_SUMMARY_KEYS or key.startswith(RESERVED_SUMMARY_PREFIXES):
            raise ValidationError(
                f"snapshot property {key!r} is reserved: the snapshot summary writer sets it"
            )


def is_dv(f: DataFile) -> bool:
    """A deletion vector: a position delete entry pointing into a Puffin file."""
    return f.content == FileContent.POSITION_DELETES and (
        f.file_format.lower() == "puffin" or f.content_offset is not None
    )


def _count(files: Iterable[DataFile], prefix: str) -> dict[str, int]:
    """Counters of a set of added (prefix ``added``) or removed files."""
    added = prefix == "added"
    c = {
        ADDED_DATA_FILES if added else DELETED_DATA_FILES: 0,
        ADDED_RECORDS if added else DELETED_RECORDS: 0,
        ADDED_FILES_SIZE if added else REMOVED_FILES_SIZE: 0,
        ADDED_DELETE_FILES if added else REMOVED_DELETE_FILES: 0,
        ADDED_POS_DELETE_FILES if added else REMOVED_POS_DELETE_FILES: 0,
        ADDED_EQ_DELETE_FILES if added else REMOVED_EQ_DELETE_FILES: 0,
        ADDED_DVS if added else REMOVED_DVS: 0,
        ADDED_POS_DELETES if added else REMOVED_POS_DELETES: 0,
        ADDED_EQ_DELETES if added else REMOVED_EQ_DELETES: 0,
    }
    keys = list(c)
    for f in files:
        c[keys[2]] += f.file_size_in_bytes
        if f.content == FileContent.DATA:
            c[keys[0]] += 1
            c[keys[1]] += f.record_count
            continue
        c[keys[3]] += 1
        if f.content == FileContent.POSITION_DELETES:
            c[keys[6] if is_dv(f) else keys[4]] += 1
            c[keys[7]] += f.record_count
        else:
            c[keys[5]] += 1
            c[keys[8]] += f.record_count
    return c


def _parent_total(parent: Snapshot | None, key: str) -> int | None:
    return 0 if parent is None else summary_count(parent.summary, key)


def summary_count(summary: Mapping[str, str], key: str) -> int | None:
    """A snapshot-summary counter; None when it is absent or not a whole number."""
    value = summary.get(key)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def snapshot_summary(
    parent: Snapshot | None,
    added_data: Sequence[DataFile],
    added_deletes: Sequence[DataFile],
    removed: Sequence[ManifestEntry],
) -> dict[str, str]:
    """The counters of a snapshot that adds and removes these files on top of ``parent``."""
    add = _count([*added_data, *added_deletes], "added")
    rem = _count([e.data_file for e in removed], "removed")
    out: dict[str, str] = {k: str(v) for k, v in {**add, **rem}.items() if v}
    partitions: set[tuple[int, tuple[Any, ...]]] = set()
    for f in (*added_data, *added_deletes, *(e.data_file for e in removed)):
        partitions.add((f.spec_id, f.partition))
    out[CHANGED_PARTITION_COUNT] = str(len(partitions))
    totals = {
        TOTAL_RECORDS: add[ADDED_RECORDS] - rem[DELETED_RECORDS],
        TOTAL_FILES_SIZE: add[ADDED_FILES_SIZE] - rem[REMOVED_FILES_SIZE],
        TOTAL_DATA_FILES: add[ADDED_DATA_FILES] - rem[DELETED_DATA_FILES],
        TOTAL_DELETE_FILES: add[ADDED_DELETE_FILES] - rem[REMOVED_DELETE_FILES],
        TOTAL_POS_DELETES: add[ADDED_POS_DELETES] - rem[REMOVED_POS_DELETES],
        TOTAL_EQ_DELETES: add[ADDED_EQ_DELETES] - rem[REMOVED_EQ_DELETES],
    }
    for key, delta in totals.items():
        base = _parent_total(parent, key)
        if base is not None:
            out[key] = str(max(0, base + delta))
    return out
