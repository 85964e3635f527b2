"""Table updates and requirements (the REST commit vocabulary) as pure functions on TableMetadata.

A commit is a list of requirements (checked against the metadata the commit is applied to; a
failed check raises ``CommitConflict``; defined in ``spec.requirements``, re-exported here) and a list
of updates applied by ``apply_updates``.
``new_table_metadata`` builds the metadata of a new table with fresh column and partition ids.
"""

from __future__ import annotations

import time
import uuid as uuid_module
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.errors import CommitConflict, Unsupported, ValidationError
from icefloe.spec.partitioning import UNPARTITIONED, PartitionSpec
from icefloe.spec.properties import check_numeric_properties
from icefloe.spec.requirements import (  # re-exported: requirements used to live here
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
    validate_requirements,
)
from icefloe.spec.schema import Schema, assign_fresh_ids, check_format_version
from icefloe.spec.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.sort_order import UNSORTED, SortOrder
from icefloe.spec.table_metadata import SUPPORTED_FORMAT_VERSIONS, TableMetadata

__all__ = [  # noqa: RUF022 - grouped: updates, requirements, functions
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssignUUID",
    "RemoveProperties",
    "RemoveSchemas",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "RemoveStatistics",
    "AddEncryptionKey",
    "RemoveEncryptionKey",
    "SetPartitionStatistics",
    "RemovePartitionSpecs",
    "RemovePartitionStatistics",
    "TableUpdate",
    "UpgradeFormatVersion",
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "TableRequirement",
    "validate_requirements",
    "LAST_ADDED",
    "FORMAT_VERSION_PROPERTY",
    "apply_updates",
    "new_table_metadata",
]

LAST_ADDED = -1
DEFAULT_FORMAT_VERSION = 2  # of a new table without a format-version property
FORMAT_VERSION_PROPERTY = "format-version"
_RESERVED_PROPERTIES = frozenset({FORMAT_VERSION_PROPERTY})


# ---------------------------------------------------------------------------------------------
# updates


@dataclass(frozen=True)
class AssignUUID:
    """Set the table UUID."""

    uuid: str


@dataclass(frozen=True)
class UpgradeFormatVersion:
    """Raise the table's format version (never lowers it)."""

    format_version: int


@dataclass(frozen=True)
class AddSchema:
    """Add a schema; an identical existing schema is reused, otherwise it gets the next id."""

    schema: Schema
    last_column_id: int | None = None


@dataclass(frozen=True)
class SetCurrentSchema:
    """Make a schema current; -1 means the schema added last in this commit."""

    schema_id: int


@dataclass(frozen=True)
class AddPartitionSpec:
    """Add a partition spec; a compatible existing spec is reused, otherwise it gets the next id."""

    spec: PartitionSpec


@dataclass(frozen=True)
class SetDefaultSpec:
    """Make a spec the default; -1 means the spec added last in this commit."""

    spec_id: int


@dataclass(frozen=True)
class AddSortOrder:
    """Add a sort order; an equal existing order is reused, otherwise it gets the next id."""

    sort_order: SortOrder


@dataclass(frozen=True)
class SetDefaultSortOrder:
    """Make a sort order the default; -1 means the order added last in this commit."""

    sort_order_id: int


@dataclass(frozen=True)
class AddSnapshot:
    """Add a snapshot (does not move any ref)."""

    snapshot: Snapshot


@dataclass(frozen=True)
class SetSnapshotRef:
    """Create or move a branch or tag; moving ``main`` changes the current snapshot."""

    ref_name: str
    snapshot_id: int
    ref_type: RefType = RefType.BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None


@dataclass(frozen=True)
class RemoveSnapshots:
    """Remove snapshots (and refs, log entries and statistics that point at them)."""

    snapshot_ids: tuple[int, ...]


@dataclass(frozen=True)
class RemoveSnapshotRef:
    """Remove a branch or tag; removing ``main`` leaves the table without a current snapshot."""

    ref_name: str


@dataclass(frozen=True)
class SetProperties:
    """Set table properties."""

    updates: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoveProperties:
    """Remove table properties (missing keys are ignored)."""

    removals: tuple[str, ...] = ()


@dataclass(frozen=True)
class SetLocation:
    """Change the table location."""

    location: str


@dataclass(frozen=True)
class SetStatistics:
    """Register a table statistics (Puffin) file of one snapshot, replacing that snapshot's former
    one: the metadata's ``statistics`` object (``snapshot-id``, ``statistics-path``,
    ``file-size-in-bytes``, ``file-footer-size-in-bytes``, ``blob-metadata``)."""

    statistics: dict[str, Any]


@dataclass(frozen=True)
class RemoveStatistics:
    """Forget the statistics file of a snapshot (the file itself is not deleted)."""

    snapshot_id: int


@dataclass(frozen=True)
class SetPartitionStatistics:
    """Register a partition statistics file of one snapshot, replacing that snapshot's former one:
    the metadata's ``partition-statistics`` object (``snapshot-id``, ``statistics-path``,
    ``file-size-in-bytes``)."""

    partition_statistics: dict[str, Any]


@dataclass(frozen=True)
class RemovePartitionStatistics:
    """Forget the partition statistics file of a snapshot (the file itself is not deleted)."""

    snapshot_id: int


@dataclass(frozen=True)
class RemovePartitionSpecs:
    """Forget partition specs no snapshot uses any more (Iceberg Java's expiry of unused specs);
    the default spec cannot go, unknown ids are ignored."""

    spec_ids: tuple[int, ...]


@dataclass(frozen=True)
class RemoveSchemas:
    """Forget schemas no snapshot uses any more; the current schema cannot go, unknown ids are
    ignored."""

    schema_ids: tuple[int, ...]


@dataclass(frozen=True)
class AddEncryptionKey:
    """Register one of the table's encrypted keys, the metadata's ``encryption-keys`` entry
    (``key-id``, base64 ``encrypted-key-metadata``, optional ``encrypted-by-id`` and
    ``properties``). A key id the table holds already keeps its key, as in Iceberg Java, whose
    clients (1.10 on) send this for tables they encrypt; icefloe keeps the keys, it does not
    encrypt."""

    key: dict[str, Any]


@dataclass(frozen=True)
class RemoveEncryptionKey:
    """Forget the encrypted key with this id (nothing when the table holds none)."""

    key_id: str


TableUpdate = (
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | AddSortOrder
    | SetDefaultSortOrder
    | AddSnapshot
    | SetSnapshotRef
    | RemoveSnapshots
    | RemoveSnapshotRef
    | SetProperties
    | RemoveProperties
    | SetLocation
    | SetStatistics
    | RemoveStatistics
    | SetPartitionStatistics
    | RemovePartitionStatistics
    | RemovePartitionSpecs
    | RemoveSchemas
    | AddEncryptionKey
    | RemoveEncryptionKey
)


# ---------------------------------------------------------------------------------------------
# applying updates


@dataclass
class _State:
    md: TableMetadata
    now_ms: int
    last_added_schema_id: int | None = None
    last_added_spec_id: int | None = None
    last_added_order_id: int | None = None
    added_snapshots: dict[int, Snapshot] = field(default_factory=dict)


def ref_updates(before: Mapping[str, SnapshotRef], after: Mapping[str, SnapshotRef]) -> list[TableUpdate]:
    """The updates that turn the refs ``before`` into ``after``: removals first, then set refs."""
    updates: list[TableUpdate] = [RemoveSnapshotRef(name) for name in before if name not in after]
    for name, ref in after.items():
        if before.get(name) != ref:
            updates.append(
                SetSnapshotRef(
                    name,
                    ref.snapshot_id,
                    ref.ref_type,
                    ref.min_snapshots_to_keep,
                    ref.max_snapshot_age_ms,
                    ref.max_ref_age_ms,
                )
            )
    return updates


def _set(state: _State, **changes: Any) -> None:
    state.md = replace(state.md, **changes)


def _apply_upgrade(state: _State, u: UpgradeFormatVersion) -> None:
    md = state.md
    if u.format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise Unsupported(f"format-version {u.format_version} is not supported (supported: 1 to 4)")
    if u.format_version < md.format_version:
        raise ValidationError(
            f"cannot downgrade format-version from {md.format_version} to {u.format_version}"
        )
    if u.format_version == md.format_version:
        return
    changes: dict[str, Any] = {"format_version": u.format_version}
    if u.format_version >= 3 and md.next_row_id is None:
        changes["next_row_id"] = 0
    _set(state, **changes)


def _apply_add_schema(state: _State, u: AddSchema) -> None:
    md = state.md
    check_format_version(u.schema, md.format_version)
    for existing in md.schemas:
        if (
            existing.fields == u.schema.fields
            and existing.identifier_field_ids == u.schema.identifier_field_ids
        ):
            state.last_added_schema_id = existing.schema_id
            return
    new_id = max((s.schema_id for s in md.schemas), default=-1) + 1
    schema = Schema(*u.schema.fields, schema_id=new_id, identifier_field_ids=u.schema.identifier_field_ids)
    last_column_id = max(md.last_column_id, schema.highest_field_id, u.last_column_id or 0)
    _set(state, schemas=(*md.schemas, schema), last_column_id=last_column_id)
    state.last_added_schema_id = new_id


def _resolve_last(value: int, last: int | None, what: str) -> int:
    if value != LAST_ADDED:
        return value
    if last is None:
        raise ValidationError(
            f"cannot use -1 ('last added') for the {what}: no {what} was added in this commit"
        )
    return last


def _apply_set_current_schema(state: _State, u: SetCurrentSchema) -> None:
    schema_id = _resolve_last(u.schema_id, state.last_added_schema_id, "schema")
    if not any(s.schema_id == schema_id for s in state.md.schemas):
        raise ValidationError(f"cannot set current schema to unknown schema id {schema_id}")
    _set(state, current_schema_id=schema_id)


def _apply_add_spec(state: _State, u: AddPartitionSpec) -> None:
    md = state.md
    u.spec.check_against(md.schema())
    for existing in md.partition_specs:
        if existing.compatible_with(u.spec):
            state.last_added_spec_id = existing.spec_id
            return
    new_id = max((s.spec_id for s in md.partition_specs), default=-1) + 1
    spec = PartitionSpec(*u.spec.fields, spec_id=new_id)
    last_partition_id = max(md.last_partition_id, spec.last_assigned_field_id)
    _set(state, partition_specs=(*md.partition_specs, spec), last_partition_id=last_partition_id)
    state.last_added_spec_id = new_id


def _apply_set_default_spec(state: _State, u: SetDefaultSpec) -> None:
    spec_id = _resolve_last(u.spec_id, state.last_added_spec_id, "partition spec")
    if not any(s.spec_id == spec_id for s in state.md.partition_specs):
        raise ValidationError(f"cannot set default partition spec to unknown spec id {spec_id}")
    _set(state, default_spec_id=spec_id)


def _apply_add_sort_order(state: _State, u: AddSortOrder) -> None:
    md = state.md
    u.sort_order.check_against(md.schema())
    for existing in md.sort_orders:
        if existing.fields == u.sort_order.fields:
            state.last_added_order_id = existing.order_id
            return
    new_id = 0 if u.sort_order.is_unsorted else max([0, *(o.order_id for o in md.sort_orders)]) + 1
    order = SortOrder(*u.sort_order.fields, order_id=new_id)
    _set(state, sort_orders=(*md.sort_orders, order))
    state.last_added_order_id = new_id


def _apply_set_default_sort_order(state: _State, u: SetDefaultSortOrder) -> None:
    order_id = _resolve_last(u.sort_order_id, state.last_added_order_id, "sort order")
    if not any(o.order_id == order_id for o in state.md.sort_orders):
        raise ValidationError(f"cannot set default sort order to unknown order id {order_id}")
    _set(state, default_sort_order_id=order_id)


def _apply_add_snapshot(state: _State, u: AddSnapshot) -> None:
    md, snap = state.md, u.snapshot
    if md.has_snapshot(snap.snapshot_id):
        raise CommitConflict(f"snapshot {snap.snapshot_id} already exists in the table")
    changes: dict[str, Any] = {"snapshots": (*md.snapshots, snap)}
    if md.format_version >= 2:
        if snap.sequence_number <= md.last_sequence_number:
            raise CommitConflict(
                f"snapshot {snap.snapshot_id} has sequence number {snap.sequence_number}, not above the "
                f"table's last sequence number {md.last_sequence_number} (another commit happened)"
            )
        changes["last_sequence_number"] = snap.sequence_number
    if md.format_version >= 3:
        next_row_id = md.next_row_id or 0
        if snap.first_row_id is None or snap.added_rows is None:
            raise ValidationError(
                f"snapshot {snap.snapshot_id} needs first-row-id and added-rows in a format-version "
                f"{md.format_version} table"
            )
        if snap.first_row_id < next_row_id:
            raise CommitConflict(
                f"snapshot {snap.snapshot_id} has first-row-id {snap.first_row_id}, behind the table's "
                f"next-row-id {next_row_id} (another commit assigned those row ids)"
            )
        changes["next_row_id"] = next_row_id + snap.added_rows
    _set(state, **changes)
    state.added_snapshots[snap.snapshot_id] = snap


def _apply_set_ref(state: _State, u: SetSnapshotRef) -> None:
    md = state.md
    if not md.has_snapshot(u.snapshot_id):
        raise ValidationError(f"cannot point ref {u.ref_name!r} at unknown snapshot {u.snapshot_id}")
    if u.ref_name == MAIN_BRANCH and u.ref_type != RefType.BRANCH:
        raise ValidationError("'main' must be a branch, not a tag")
    ref = SnapshotRef(
        u.snapshot_id, u.ref_type, u.min_snapshots_to_keep, u.max_snapshot_age_ms, u.max_ref_age_ms
    )
    if md.refs.get(u.ref_name) == ref:
        return
    changes: dict[str, Any] = {"refs": {**md.refs, u.ref_name: ref}}
    if u.ref_name == MAIN_BRANCH:
        added = state.added_snapshots.get(u.snapshot_id)
        log_ts = added.timestamp_ms if added is not None else state.now_ms
        changes["current_snapshot_id"] = u.snapshot_id
        changes["snapshot_log"] = (*md.snapshot_log, SnapshotLogEntry(log_ts, u.snapshot_id))
    _set(state, **changes)


def _apply_remove_snapshots(state: _State, u: RemoveSnapshots) -> None:
    md = state.md
    removed = set(u.snapshot_ids)
    if not removed:
        return
    snapshots = tuple(s for s in md.snapshots if s.snapshot_id not in removed)
    live = {s.snapshot_id for s in snapshots}
    refs = {name: r for name, r in md.refs.items() if r.snapshot_id in live}
    current = md.current_snapshot_id if md.current_snapshot_id in live else None
    # a gap in the history makes the entries before it meaningless: keep the suffix after the last gap
    log: list[SnapshotLogEntry] = []
    for entry in md.snapshot_log:
        if entry.snapshot_id in live:
            log.append(entry)
        else:
            log.clear()
    _set(
        state,
        snapshots=snapshots,
        refs=refs,
        current_snapshot_id=current,
        snapshot_log=tuple(log),
        statistics=tuple(s for s in md.statistics if s.get("snapshot-id") not in removed),
        partition_statistics=tuple(s for s in md.partition_statistics if s.get("snapshot-id") not in removed),
    )


def _apply_remove_ref(state: _State, u: RemoveSnapshotRef) -> None:
    md = state.md
    if u.ref_name not in md.refs:
        return
    refs = {name: r for name, r in md.refs.items() if name != u.ref_name}
    changes: dict[str, Any] = {"refs": refs}
    if u.ref_name == MAIN_BRANCH:
        changes["current_snapshot_id"] = None
    _set(state, **changes)


def _apply_set_properties(state: _State, u: SetProperties) -> None:
    reserved = _RESERVED_PROPERTIES.intersection(u.updates)
    if reserved:
        raise ValidationError(
            f"table properties {sorted(reserved)} are reserved; use UpgradeFormatVersion to change the format"
        )
    updates = {str(k): str(v) for k, v in u.updates.items()}
    check_numeric_properties(updates)
    _set(state, properties={**state.md.properties, **updates})


def _apply_remove_properties(state: _State, u: RemoveProperties) -> None:
    removals = set(u.removals)
    _set(state, properties={k: v for k, v in state.md.properties.items() if k not in removals})


def _apply_set_location(state: _State, u: SetLocation) -> None:
    location = u.location.rstrip("/")
    if not location:
        raise ValidationError("table location cannot be empty")
    _set(state, location=location)


def _replacing(
    state: _State, current: tuple[dict[str, Any], ...], stats: dict[str, Any], action: str
) -> tuple[dict[str, Any], ...]:
    """``current`` with ``stats`` in place of the entry for the same snapshot."""
    snapshot_id = stats.get("snapshot-id")
    if not isinstance(snapshot_id, int) or not isinstance(stats.get("statistics-path"), str):
        raise ValidationError(f"{action} needs an object with snapshot-id and statistics-path")
    if not state.md.has_snapshot(snapshot_id):
        raise ValidationError(f"{action}: the table has no snapshot {snapshot_id}")
    return (*(s for s in current if s.get("snapshot-id") != snapshot_id), dict(stats))


def _apply_set_statistics(state: _State, u: SetStatistics) -> None:
    _set(state, statistics=_replacing(state, state.md.statistics, u.statistics, "set-statistics"))


def _apply_remove_statistics(state: _State, u: RemoveStatistics) -> None:
    _set(state, statistics=tuple(s for s in state.md.statistics if s.get("snapshot-id") != u.snapshot_id))


def _apply_set_partition_statistics(state: _State, u: SetPartitionStatistics) -> None:
    stats = _replacing(
        state, state.md.partition_statistics, u.partition_statistics, "set-partition-statistics"
    )
    _set(state, partition_statistics=stats)


def _apply_remove_partition_statistics(state: _State, u: RemovePartitionStatistics) -> None:
    kept = tuple(s for s in state.md.partition_statistics if s.get("snapshot-id") != u.snapshot_id)
    _set(state, partition_statistics=kept)


def _apply_add_encryption_key(state: _State, u: AddEncryptionKey) -> None:
    key_id = u.key.get("key-id")
    if not isinstance(key_id, str) or not isinstance(u.key.get("encrypted-key-metadata"), str):
        raise ValidationError("add-encryption-key needs key-id and encrypted-key-metadata strings")
    if any(key.get("key-id") == key_id for key in state.md.encryption_keys):
        return
    _set(state, encryption_keys=(*state.md.encryption_keys, dict(u.key)))


def _apply_remove_encryption_key(state: _State, u: RemoveEncryptionKey) -> None:
    kept = tuple(key for key in state.md.encryption_keys if key.get("key-id") != u.key_id)
    if len(kept) != len(state.md.encryption_keys):
        _set(state, encryption_keys=kept)


def _remove_unused(
    state: _State, attribute: str, id_name: str, ids: tuple[int, ...], in_use: int, what: str
) -> None:
    """Drop the metadata list items (``attribute``) whose ``id_name`` is in ``ids``; never ``in_use``."""
    if in_use in ids:
        raise ValidationError(f"cannot remove the {what} {in_use}")
    items = getattr(state.md, attribute)
    kept = tuple(item for item in items if getattr(item, id_name) not in ids)
    if len(kept) != len(items):
        _set(state, **{attribute: kept})


def _apply_remove_partition_specs(state: _State, u: RemovePartitionSpecs) -> None:
    _remove_unused(
        state, "partition_specs", "spec_id", u.spec_ids, state.md.default_spec_id, "default partition spec"
    )


def _apply_remove_schemas(state: _State, u: RemoveSchemas) -> None:
    _remove_unused(state, "schemas", "schema_id", u.schema_ids, state.md.current_schema_id, "current schema")


def _apply_assign_uuid(state: _State, u: AssignUUID) -> None:
    try:
        text = str(uuid_module.UUID(u.uuid))
    except ValueError:
        raise ValidationError(f"{u.uuid!r} is not a UUID") from None
    _set(state, table_uuid=text)


_HANDLERS: dict[type, Any] = {
    AssignUUID: _apply_assign_uuid,
    UpgradeFormatVersion: _apply_upgrade,
    AddSchema: _apply_add_schema,
    SetCurrentSchema: _apply_set_current_schema,
    AddPartitionSpec: _apply_add_spec,
    SetDefaultSpec: _apply_set_default_spec,
    AddSortOrder: _apply_add_sort_order,
    SetDefaultSortOrder: _apply_set_default_sort_order,
    AddSnapshot: _apply_add_snapshot,
    SetSnapshotRef: _apply_set_ref,
    RemoveSnapshots: _apply_remove_snapshots,
    RemoveSnapshotRef: _apply_remove_ref,
    SetProperties: _apply_set_properties,
    RemoveProperties: _apply_remove_properties,
    SetLocation: _apply_set_location,
    SetStatistics: _apply_set_statistics,
    RemoveStatistics: _apply_remove_statistics,
    SetPartitionStatistics: _apply_set_partition_statistics,
    RemovePartitionStatistics: _apply_remove_partition_statistics,
    RemovePartitionSpecs: _apply_remove_partition_specs,
    RemoveSchemas: _apply_remove_schemas,
    AddEncryptionKey: _apply_add_encryption_key,
    RemoveEncryptionKey: _apply_remove_encryption_key,
}


def apply_updates(
    md: TableMetadata, updates: list[TableUpdate] | tuple[TableUpdate, ...], now_ms: int | None = None
) -> TableMetadata:
    """Apply updates in order and return the new metadata (``md`` itself when nothing changed).

    ``last-updated-ms`` becomes the newest added snapshot's timestamp, else ``now_ms``.
    """
    if not updates:
        return md
    state = _State(md, int(time.time() * 1000) if now_ms is None else now_ms)
    for update in updates:
        handler = _HANDLERS.get(type(update))
        if handler is None:
            raise ValidationError(f"unknown table update {update!r}")
        handler(state, update)
    if state.md == md and state.md.extra == md.extra:
        return md
    if state.added_snapshots:
        last_updated = max(s.timestamp_ms for s in state.added_snapshots.values())
    else:
        last_updated = state.now_ms
    return replace(state.md, last_updated_ms=max(last_updated, md.last_updated_ms))


# ---------------------------------------------------------------------------------------------
# new tables


def new_table_metadata(
    schema: Schema,
    partition_spec: PartitionSpec | None,
    sort_order: SortOrder | None,
    location: str,
    properties: dict[str, str] | None = None,
    format_version: int = DEFAULT_FORMAT_VERSION,
    table_uuid: str | None = None,
    now_ms: int | None = None,
) -> TableMetadata:
    """Metadata of a new table: fresh column ids 1..n, partition field ids from 1000, spec id 0.

    No spec: unpartitioned; no sort order: unsorted. A ``format-version`` table property
    overrides ``format_version`` and is not stored.
    """
    partition_spec = UNPARTITIONED if partition_spec is None else partition_spec
    sort_order = UNSORTED if sort_order is None else sort_order
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    check_numeric_properties(props)
    requested = props.pop(FORMAT_VERSION_PROPERTY, None)
    if requested is not None:
        try:
            format_version = int(requested)
        except ValueError:
            raise ValidationError(
                f"table property format-version must be an integer, got {requested!r}"
            ) from None
    if format_version not in SUPPORTED_FORMAT_VERSIONS:
        raise ValidationError(f"format-version must be one of 1, 2, 3, 4; got {format_version}")
    check_format_version(schema, format_version)
    location = location.rstrip("/")
    if not location:
        raise ValidationError("a new table needs a location")
    fresh_schema, mapping = assign_fresh_ids(schema)
    spec = partition_spec.with_source_ids(mapping, spec_id=0, renumber=True)
    order = sort_order.with_source_ids(mapping, order_id=1 if sort_order.fields else 0)
    spec.check_against(fresh_schema)
    order.check_against(fresh_schema)
    return TableMetadata(
        format_version=format_version,
        table_uuid=str(uuid_module.UUID(table_uuid) if table_uuid else uuid_module.uuid4()),
        location=location,
        last_updated_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        last_column_id=fresh_schema.highest_field_id,
        schemas=(fresh_schema,),
        current_schema_id=0,
        partition_specs=(spec,),
        default_spec_id=0,
        last_partition_id=spec.last_assigned_field_id,
        sort_orders=(order,),
        default_sort_order_id=order.order_id,
        last_sequence_number=0,
        properties=props,
        next_row_id=0 if format_version >= 3 else None,
    )
