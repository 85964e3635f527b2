"""Table metadata: the immutable state a metadata.json file holds.

CONTRACT: JSON read/write per format version lives in ``icefloe.spec.json_codec``
(``table_metadata_from_json(text_or_dict)``, ``table_metadata_to_json(md) -> str``);
pure update functions live in ``icefloe.spec.updates``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from icefloe.errors import IcefloeError, NotFound, ValidationError
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.properties import checked_int_property
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import (
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.types import StructType

_SNAPSHOT_ID = attrgetter("snapshot_id")

SUPPORTED_FORMAT_VERSIONS = (1, 2, 3, 4)


@dataclass(frozen=True)
class TableMetadata:
    """Everything in a table's metadata.json. Unknown JSON keys are kept in ``extra``."""

    format_version: int
    table_uuid: str
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    last_sequence_number: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: dict[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[dict[str, Any], ...] = ()
    partition_statistics: tuple[dict[str, Any], ...] = ()
    next_row_id: int | None = None
    encryption_keys: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def schema(self) -> Schema:
        """The current schema."""
        return self.schema_by_id(self.current_schema_id)

    def schema_by_id(self, schema_id: int) -> Schema:
        """A schema by id."""
        for s in self.schemas:
            if s.schema_id == schema_id:
                return s
        raise NotFound(f"schema {schema_id} not found in table metadata")

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        return self.spec_by_id(self.default_spec_id)

    def spec_by_id(self, spec_id: int) -> PartitionSpec:
        """A partition spec by id."""
        for s in self.partition_specs:
            if s.spec_id == spec_id:
                return s
        raise NotFound(f"partition spec {spec_id} not found in table metadata")

    def specs_by_id(self) -> dict[int, PartitionSpec]:
        """All partition specs keyed by id."""
        return {s.spec_id: s for s in self.partition_specs}

    def partition_type(self, spec: PartitionSpec) -> StructType:
        """A spec's partition type, bound to the current schema or (for dropped sources) an older one.

        Schemas are tried current first, then newest to oldest; ValidationError when none binds.
        """
        error: Exception | None = None
        current = self.current_schema_id
        for schema in sorted(self.schemas, key=lambda s: (s.schema_id != current, -s.schema_id)):
            try:
                return spec.partition_type(schema)
            except IcefloeError as exc:
                error = exc
        raise ValidationError(f"cannot derive the partition type of spec {spec.spec_id}: {error}")

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        for s in self.sort_orders:
            if s.order_id == self.default_sort_order_id:
                return s
        raise NotFound(f"sort order {self.default_sort_order_id} not found in table metadata")

    def statistics_paths(self) -> tuple[str, ...]:
        """The statistics and partition-statistics files the metadata names."""
        stats = (*self.statistics, *self.partition_statistics)
        return tuple(p for s in stats if isinstance(p := s.get("statistics-path"), str))

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        """A snapshot by id."""
        for s in self.snapshots:
            if s.snapshot_id == snapshot_id:
                return s
        raise NotFound(f"snapshot {snapshot_id} not found (it may have been expired)")

    def has_snapshot(self, snapshot_id: int) -> bool:
        """Whether the table holds a snapshot with this id. Each commit asks, of days of snapshots:
        the newest (a commit's branch usually moves to the snapshot it has just added) is looked at
        first, then the ids are compared in C."""
        snapshots = self.snapshots
        if snapshots and snapshots[-1].snapshot_id == snapshot_id:
            return True
        return snapshot_id in map(_SNAPSHOT_ID, snapshots)

    def current_snapshot(self) -> Snapshot | None:
        """The head of main, or None for an empty table."""
        if self.current_snapshot_id is None or self.current_snapshot_id == -1:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def snapshot_for_ref(self, ref_name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at (None for an empty main)."""
        ref = self.refs.get(ref_name)
        if ref is None:
            if ref_name == MAIN_BRANCH:
                return self.current_snapshot()
            raise NotFound(f"no branch or tag named {ref_name!r}")
        return self.snapshot_by_id(ref.snapshot_id)

    def snapshot_as_of(self, timestamp_ms: int) -> Snapshot:
        """The snapshot that was current on main at a point in time (from the snapshot log)."""
        candidate: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                candidate = entry.snapshot_id
        if candidate is None:
            raise NotFound(f"no snapshot was current at or before timestamp {timestamp_ms}")
        return self.snapshot_by_id(candidate)

    def property(self, key: str, default: str | None = None) -> str | None:
        """A table property."""
        return self.properties.get(key, default)

    def int_property(self, key: str, default: int) -> int:
        """A table property parsed as an int (ValidationError naming it when it is not a usable one)."""
        return checked_int_property(self.properties, key, default)

    def with_changes(self, **changes: Any) -> TableMetadata:
        """A copy with some fields changed."""
        return replace(self, **changes)
