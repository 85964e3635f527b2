"""Snapshots, snapshot summaries, refs (branches and tags) and the snapshot/metadata logs."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

MAIN_BRANCH = "main"


class Operation(Enum):
    """Snapshot summary ``operation``."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One table state. ``summary`` holds ``operation`` and the counters, all as strings.

    v1–v3 snapshots point at a ``manifest_list`` (or, in old v1 tables, list ``manifests``);
    v4 snapshots point at a ``root_manifest``.
    """

    snapshot_id: int
    timestamp_ms: int
    summary: dict[str, str] = field(default_factory=dict)
    parent_snapshot_id: int | None = None
    sequence_number: int = 0
    manifest_list: str | None = None
    manifests: tuple[str, ...] | None = None
    root_manifest: str | None = None
    schema_id: int | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None

    @property
    def operation(self) -> str | None:
        """The summary's operation name."""
        return self.summary.get("operation")


class RefType(Enum):
    """Kind of a named ref."""

    BRANCH = "branch"
    TAG = "tag"


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    """A branch or tag pointing at a snapshot, with its retention settings."""

    snapshot_id: int
    ref_type: RefType = RefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    """When the current snapshot of main changed, and to what."""

    timestamp_ms: int
    snapshot_id: int


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    """A previous metadata file of the table."""

    timestamp_ms: int
    metadata_file: str
