"""What changed between two versions of a table's metadata, as REST requirements + updates.

A REST client commits by sending the changes it made, not the new metadata file. icefloe's
transactions compute the new ``TableMetadata`` locally (``apply_updates`` over the actions'
updates), so the client turns ``base -> new`` back into the update list here, and derives the
requirements the way Iceberg Java's ``UpdateRequirements`` does: the table UUID always, the base
of every ref it moves, and the ids a schema / spec / sort-order change depends on.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableUpdate,
    UpgradeFormatVersion,
    ref_updates,
)


@dataclass(frozen=True)
class MetadataChanges:
    """The requirements and updates that turn ``base`` into ``new`` on a catalog server."""

    requirements: list[TableRequirement]
    updates: list[TableUpdate]

    def added_snapshot_ids(self) -> list[int]:
        """Ids of the snapshots this change adds (how a client recognises its commit later)."""
        return [u.snapshot.snapshot_id for u in self.updates if isinstance(u, AddSnapshot)]


def _schema_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    known = {s.schema_id for s in base.schemas}
    updates: list[TableUpdate] = []
    added = [s for s in new.schemas if s.schema_id not in known]
    for schema in added:
        updates.append(AddSchema(schema, new.last_column_id))
    if new.current_schema_id != base.current_schema_id:
        last = added[-1].schema_id if added else None
        schema_id = new.current_schema_id
        updates.append(SetCurrentSchema(LAST_ADDED if schema_id == last else schema_id))
    return updates


def _spec_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    known = {s.spec_id for s in base.partition_specs}
    added = [s for s in new.partition_specs if s.spec_id not in known]
    updates: list[TableUpdate] = [AddPartitionSpec(spec) for spec in added]
    if new.default_spec_id != base.default_spec_id:
        last = added[-1].spec_id if added else None
        updates.append(SetDefaultSpec(LAST_ADDED if new.default_spec_id == last else new.default_spec_id))
    return updates


def _sort_order_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    known = {o.order_id for o in base.sort_orders}
    added = [o for o in new.sort_orders if o.order_id not in known]
    updates: list[TableUpdate] = [AddSortOrder(order) for order in added]
    if new.default_sort_order_id != base.default_sort_order_id:
        last = added[-1].order_id if added else None
        order_id = new.default_sort_order_id
        updates.append(SetDefaultSortOrder(LAST_ADDED if order_id == last else order_id))
    return updates


def _snapshot_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    base_ids = {s.snapshot_id for s in base.snapshots}
    new_ids = {s.snapshot_id for s in new.snapshots}
    updates: list[TableUpdate] = [AddSnapshot(s) for s in new.snapshots if s.snapshot_id not in base_ids]
    removed = tuple(s.snapshot_id for s in base.snapshots if s.snapshot_id not in new_ids)
    if removed:
        updates.append(RemoveSnapshots(removed))
    return updates + ref_updates(base.refs, new.refs)


def _property_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    updates: list[TableUpdate] = []
    removed = tuple(k for k in base.properties if k not in new.properties)
    if removed:
        updates.append(RemoveProperties(removed))
    changed = {k: v for k, v in new.properties.items() if base.properties.get(k) != v}
    if changed:
        updates.append(SetProperties(changed))
    return updates


def _statistics_changes(base: TableMetadata, new: TableMetadata) -> list[TableUpdate]:
    """Statistics and partition statistics files registered, replaced or forgotten (by snapshot
    id; those of removed snapshots go with them)."""
    live = {s.snapshot_id for s in new.snapshots}
    updates: list[TableUpdate] = []
    for before_list, after_list, set_update, remove_update in (
        (base.statistics, new.statistics, SetStatistics, RemoveStatistics),
        (
            base.partition_statistics,
            new.partition_statistics,
            SetPartitionStatistics,
            RemovePartitionStatistics,
        ),
    ):
        before = {s.get("snapshot-id"): s for s in before_list}
        after = {s.get("snapshot-id"): s for s in after_list}
        updates += [remove_update(sid) for sid in before if sid not in after and sid in live]
        updates += [set_update(dict(s)) for sid, s in after.items() if before.get(sid) != s]
    return updates


def metadata_changes(base: TableMetadata, new: TableMetadata) -> MetadataChanges:
    """Requirements + updates that a catalog applies to ``base`` to obtain ``new``.

    Snapshots are added before refs move (a ref may point at a new snapshot); the order of the
    other updates follows Iceberg Java's ``TableMetadata.Builder`` change list.
    """
    updates: list[TableUpdate] = []
    if new.format_version != base.format_version:
        updates.append(UpgradeFormatVersion(new.format_version))
    updates += _schema_changes(base, new)
    updates += _spec_changes(base, new)
    updates += _sort_order_changes(base, new)
    updates += _property_changes(base, new)
    if new.location != base.location:
        updates.append(SetLocation(new.location))
    updates += _snapshot_changes(base, new)
    updates += _statistics_changes(base, new)
    return MetadataChanges(requirements_for(base, updates), updates)


def requirements_for(base: TableMetadata, updates: list[TableUpdate]) -> list[TableRequirement]:
    """What must still hold on the server for ``updates`` to mean what they meant on ``base``."""
    requirements: list[TableRequirement] = [AssertTableUUID(base.table_uuid)]
    seen: set[object] = set()

    def need(requirement: TableRequirement) -> None:
        if requirement not in seen:
            seen.add(requirement)
            requirements.append(requirement)

    for update in updates:
        match update:
            case AddSchema():
                need(AssertLastAssignedFieldId(base.last_column_id))
            case SetCurrentSchema():
                need(AssertCurrentSchemaId(base.current_schema_id))
            case AddPartitionSpec():
                need(AssertLastAssignedPartitionId(base.last_partition_id))
            case SetDefaultSpec():
                need(AssertDefaultSpecId(base.default_spec_id))
            case SetDefaultSortOrder():
                need(AssertDefaultSortOrderId(base.default_sort_order_id))
            case SetSnapshotRef(ref_name=name) | RemoveSnapshotRef(ref_name=name):
                ref = base.refs.get(name)
                need(AssertRefSnapshotId(name, ref.snapshot_id if ref is not None else None))
    return requirements


def creation_changes(md: TableMetadata) -> MetadataChanges:
    """``assert-create`` plus the updates that build ``md`` from nothing (a staged create)."""
    updates: list[TableUpdate] = [AssignUUID(md.table_uuid), UpgradeFormatVersion(md.format_version)]
    updates += [AddSchema(s, md.last_column_id) for s in md.schemas]
    updates.append(SetCurrentSchema(md.current_schema_id))
    updates += [AddPartitionSpec(s) for s in md.partition_specs]
    updates.append(SetDefaultSpec(md.default_spec_id))
    updates += [AddSortOrder(o) for o in md.sort_orders]
    updates.append(SetDefaultSortOrder(md.default_sort_order_id))
    updates.append(SetLocation(md.location))
    if md.properties:
        updates.append(SetProperties(dict(md.properties)))
    empty = TableMetadata(
        format_version=md.format_version,
        table_uuid=md.table_uuid,
        location=md.location,
        last_updated_ms=0,
        last_column_id=md.last_column_id,
        schemas=md.schemas,
        current_schema_id=md.current_schema_id,
        partition_specs=md.partition_specs,
        default_spec_id=md.default_spec_id,
        last_partition_id=md.last_partition_id,
        sort_orders=md.sort_orders,
        default_sort_order_id=md.default_sort_order_id,
        properties=md.properties,
    )
    updates += _snapshot_changes(empty, md)
    return MetadataChanges([AssertCreate()], updates)


__all__ = ["MetadataChanges", "creation_changes", "metadata_changes", "requirements_for"]
