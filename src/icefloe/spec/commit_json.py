"""The REST commit vocabulary as JSON: table updates and requirements (``{"action": ...}`` /
``{"type": ...}`` objects of the Iceberg REST OpenAPI spec) to and from ``spec.updates`` objects.

Schemas, specs, sort orders, snapshots and refs reuse ``spec.json_codec`` / ``json_structures``;
nothing here re-implements the metadata JSON. Malformed input raises ``ValidationError`` naming
the offending object, so a server can answer 400.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from icefloe.errors import CorruptMetadata, Unsupported, ValidationError
from icefloe.spec.json_snapshots import resolve_location, snapshot_from_dict, snapshot_to_dict
from icefloe.spec.json_structures import (
    schema_from_dict,
    schema_to_dict,
    sort_order_from_dict,
    sort_order_to_dict,
    spec_from_dict,
    spec_to_dict,
)
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
from icefloe.spec.snapshots import RefType
from icefloe.spec.updates import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemovePartitionStatistics,
    RemoveProperties,
    RemoveSchemas,
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
)

# ---------------------------------------------------------------------------------------------
# updates -> JSON


def update_to_dict(update: TableUpdate) -> dict[str, Any]:
    """The REST JSON object of one table update (snapshot locations stay absolute)."""
    match update:
        case AssignUUID(uuid=uuid):
            return {"action": "assign-uuid", "uuid": uuid}
        case UpgradeFormatVersion(format_version=version):
            return {"action": "upgrade-format-version", "format-version": version}
        case AddSchema(schema=schema, last_column_id=last):
            out: dict[str, Any] = {"action": "add-schema", "schema": schema_to_dict(schema)}
            if last is not None:
                out["last-column-id"] = last
            return out
        case SetCurrentSchema(schema_id=schema_id):
            return {"action": "set-current-schema", "schema-id": schema_id}
        case AddPartitionSpec(spec=spec):
            return {"action": "add-spec", "spec": spec_to_dict(spec)}
        case SetDefaultSpec(spec_id=spec_id):
            return {"action": "set-default-spec", "spec-id": spec_id}
        case AddSortOrder(sort_order=order):
            return {"action": "add-sort-order", "sort-order": sort_order_to_dict(order)}
        case SetDefaultSortOrder(sort_order_id=order_id):
            return {"action": "set-default-sort-order", "sort-order-id": order_id}
        case AddSnapshot(snapshot=snapshot):
            return {"action": "add-snapshot", "snapshot": snapshot_to_dict(snapshot, 4, "")}
        case SetSnapshotRef():
            return _ref_update_to_dict(update)
        case RemoveSnapshots(snapshot_ids=ids):
            return {"action": "remove-snapshots", "snapshot-ids": list(ids)}
        case RemoveSnapshotRef(ref_name=name):
            return {"action": "remove-snapshot-ref", "ref-name": name}
        case SetProperties(updates=updates):
            return {"action": "set-properties", "updates": dict(updates)}
        case RemoveProperties(removals=removals):
            return {"action": "remove-properties", "removals": list(removals)}
        case SetLocation(location=location):
            return {"action": "set-location", "location": location}
        case SetStatistics(statistics=stats):
            return {
                "action": "set-statistics",
                "snapshot-id": stats["snapshot-id"],
                "statistics": dict(stats),
            }
        case RemoveStatistics(snapshot_id=snapshot_id):
            return {"action": "remove-statistics", "snapshot-id": snapshot_id}
        case SetPartitionStatistics(partition_statistics=stats):
            return {"action": "set-partition-statistics", "partition-statistics": dict(stats)}
        case RemovePartitionStatistics(snapshot_id=snapshot_id):
            return {"action": "remove-partition-statistics", "snapshot-id": snapshot_id}
        case RemovePartitionSpecs(spec_ids=ids):
            return {"action": "remove-partition-specs", "spec-ids": list(ids)}
        case RemoveSchemas(schema_ids=ids):
            return {"action": "remove-schemas", "schema-ids": list(ids)}
        case AddEncryptionKey(key=key):
            return {"action": "add-encryption-key", "encryption-key": dict(key)}
        case RemoveEncryptionKey(key_id=key_id):
            return {"action": "remove-encryption-key", "key-id": key_id}
    raise Unsupported(f"no REST form for table update {update!r}")


def _ref_update_to_dict(update: SetSnapshotRef) -> dict[str, Any]:
    out: dict[str, Any] = {
        "action": "set-snapshot-ref",
        "ref-name": update.ref_name,
        "type": update.ref_type.value,
        "snapshot-id": update.snapshot_id,
    }
    for key, value in (
        ("min-snapshots-to-keep", update.min_snapshots_to_keep),
        ("max-snapshot-age-ms", update.max_snapshot_age_ms),
        ("max-ref-age-ms", update.max_ref_age_ms),
    ):
        if value is not None:
            out[key] = value
    return out


def requirement_to_dict(requirement: TableRequirement) -> dict[str, Any]:
    """The REST JSON object of one table requirement."""
    match requirement:
        case AssertCreate():
            return {"type": "assert-create"}
        case AssertTableUUID(uuid=uuid):
            return {"type": "assert-table-uuid", "uuid": uuid}
        case AssertRefSnapshotId(ref=ref, snapshot_id=snapshot_id):
            return {"type": "assert-ref-snapshot-id", "ref": ref, "snapshot-id": snapshot_id}
        case AssertLastAssignedFieldId(last_assigned_field_id=value):
            return {"type": "assert-last-assigned-field-id", "last-assigned-field-id": value}
        case AssertCurrentSchemaId(current_schema_id=value):
            return {"type": "assert-current-schema-id", "current-schema-id": value}
        case AssertLastAssignedPartitionId(last_assigned_partition_id=value):
            return {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": value}
        case AssertDefaultSpecId(default_spec_id=value):
            return {"type": "assert-default-spec-id", "default-spec-id": value}
        case AssertDefaultSortOrderId(default_sort_order_id=value):
            return {"type": "assert-default-sort-order-id", "default-sort-order-id": value}
    raise Unsupported(f"no REST form for table requirement {requirement!r}")


# ---------------------------------------------------------------------------------------------
# JSON -> updates


def _member(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in data:
        raise ValidationError(f"{what} needs {key!r}: {dict(data)!r}"[:300])
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ValidationError(f"{what}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _optional_int(data: Mapping[str, Any], key: str, what: str) -> int | None:
    if data.get(key) is None:
        return None
    return int(_member(data, key, int, what))


def _str_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValidationError(f"{what} must be an object of strings")
    return dict(value)


def _str_list(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValidationError(f"{what} must be a list of strings")
    return tuple(value)


def _int_tuple(value: list[Any], what: str) -> tuple[int, ...]:
    if not all(type(v) is int for v in value):
        raise ValidationError(f"{what} must be a list of integers")
    return tuple(value)


def _parsed(parse: Callable[[Any], Any], data: Any, what: str) -> Any:
    try:
        return parse(data)
    except (CorruptMetadata, ValidationError) as exc:
        raise ValidationError(f"invalid {what}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"invalid {what}: {exc!r}") from None


def _snapshot_update(data: Mapping[str, Any], table_location: str) -> AddSnapshot:
    snapshot = _parsed(snapshot_from_dict, _member(data, "snapshot", dict, "add-snapshot"), "snapshot")
    if snapshot.root_manifest is not None and table_location:
        snapshot = dataclasses.replace(
            snapshot, root_manifest=resolve_location(snapshot.root_manifest, table_location)
        )
    return AddSnapshot(snapshot)


def _ref_update(data: Mapping[str, Any]) -> SetSnapshotRef:
    what = "set-snapshot-ref"
    type_text = str(_member(data, "type", str, what)).lower()
    try:
        ref_type = RefType(type_text)
    except ValueError:
        raise ValidationError(f"{what}: unknown ref type {type_text!r}") from None
    return SetSnapshotRef(
        ref_name=_member(data, "ref-name", str, what),
        snapshot_id=_member(data, "snapshot-id", int, what),
        ref_type=ref_type,
        min_snapshots_to_keep=_optional_int(data, "min-snapshots-to-keep", what),
        max_snapshot_age_ms=_optional_int(data, "max-snapshot-age-ms", what),
        max_ref_age_ms=_optional_int(data, "max-ref-age-ms", what),
    )


def update_from_dict(data: Any, table_location: str = "") -> TableUpdate:
    """Parse one REST table update; relative v4 root manifests resolve against ``table_location``."""
    if not isinstance(data, Mapping):
        raise ValidationError(f"a table update must be an object, got {type(data).__name__}")
    action = _member(data, "action", str, "table update")
    what = action
    match action:
        case "assign-uuid":
            return AssignUUID(_member(data, "uuid", str, what))
        case "upgrade-format-version":
            return UpgradeFormatVersion(_member(data, "format-version", int, what))
        case "add-schema":
            schema = _parsed(schema_from_dict, _member(data, "schema", dict, what), "schema")
            return AddSchema(schema, _optional_int(data, "last-column-id", what))
        case "set-current-schema":
            return SetCurrentSchema(_member(data, "schema-id", int, what))
        case "add-spec":
            return AddPartitionSpec(_parsed(spec_from_dict, _member(data, "spec", dict, what), "spec"))
        case "set-default-spec":
            return SetDefaultSpec(_member(data, "spec-id", int, what))
        case "add-sort-order":
            order = _parsed(sort_order_from_dict, _member(data, "sort-order", dict, what), "sort order")
            return AddSortOrder(order)
        case "set-default-sort-order":
            return SetDefaultSortOrder(_member(data, "sort-order-id", int, what))
        case "add-snapshot":
            return _snapshot_update(data, table_location)
        case "set-snapshot-ref":
            return _ref_update(data)
        case "remove-snapshots":
            ids = _member(data, "snapshot-ids", list, what)
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
                raise ValidationError("remove-snapshots: snapshot-ids must be integers")
            return RemoveSnapshots(tuple(ids))
        case "remove-snapshot-ref":
            return RemoveSnapshotRef(_member(data, "ref-name", str, what))
        case "set-properties":  # "updated": the name early Iceberg Java clients sent
            updated = _member(data, "updates" if "updates" in data else "updated", dict, what)
            return SetProperties(_str_map(updated, "set-properties updates"))
        case "remove-properties":  # "removed": likewise
            removed = _member(data, "removals" if "removals" in data else "removed", list, what)
            return RemoveProperties(_str_list(removed, "removals"))
        case "set-location":
            return SetLocation(_member(data, "location", str, what))
        case "set-statistics":
            return SetStatistics(dict(_member(data, "statistics", dict, what)))
        case "remove-statistics":
            return RemoveStatistics(_member(data, "snapshot-id", int, what))
        case "set-partition-statistics":
            return SetPartitionStatistics(dict(_member(data, "partition-statistics", dict, what)))
        case "remove-partition-statistics":
            return RemovePartitionStatistics(_member(data, "snapshot-id", int, what))
        case "remove-partition-specs":
            return RemovePartitionSpecs(_int_tuple(_member(data, "spec-ids", list, what), "spec-ids"))
        case "remove-schemas":
            return RemoveSchemas(_int_tuple(_member(data, "schema-ids", list, what), "schema-ids"))
        case "add-encryption-key":
            return AddEncryptionKey(dict(_member(data, "encryption-key", Mapping, what)))
        case "remove-encryption-key":
            return RemoveEncryptionKey(_member(data, "key-id", str, what))
    raise ValidationError(f"unknown table update action {action!r}")


def requirement_from_dict(data: Any) -> TableRequirement:
    """Parse one REST table requirement."""
    if not isinstance(data, Mapping):
        raise ValidationError(f"a table requirement must be an object, got {type(data).__name__}")
    kind = _member(data, "type", str, "table requirement")
    match kind:
        case "assert-create":
            return AssertCreate()
        case "assert-table-uuid":
            return AssertTableUUID(_member(data, "uuid", str, kind))
        case "assert-ref-snapshot-id":
            snapshot_id = data.get("snapshot-id")
            if snapshot_id is not None and (type(snapshot_id) is not int):
                raise ValidationError(f"{kind}: snapshot-id must be an integer or null")
            return AssertRefSnapshotId(_member(data, "ref", str, kind), snapshot_id)
        case "assert-last-assigned-field-id":
            return AssertLastAssignedFieldId(_member(data, "last-assigned-field-id", int, kind))
        case "assert-current-schema-id":
            return AssertCurrentSchemaId(_member(data, "current-schema-id", int, kind))
        case "assert-last-assigned-partition-id":
            return AssertLastAssignedPartitionId(_member(data, "last-assigned-partition-id", int, kind))
        case "assert-default-spec-id":
            return AssertDefaultSpecId(_member(data, "default-spec-id", int, kind))
        case "assert-default-sort-order-id":
            return AssertDefaultSortOrderId(_member(data, "default-sort-order-id", int, kind))
    raise ValidationError(f"unknown table requirement {kind!r}")


def updates_from_list(data: Any, table_location: str = "") -> list[TableUpdate]:
    """Parse the ``updates`` array of a commit request."""
    if not isinstance(data, list):
        raise ValidationError("'updates' must be a list")
    return [update_from_dict(item, table_location) for item in data]


def requirements_from_list(data: Any) -> list[TableRequirement]:
    """Parse the ``requirements`` array of a commit request."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValidationError("'requirements' must be a list")
    return [requirement_from_dict(item) for item in data]


__all__ = [
    "requirement_from_dict",
    "requirement_to_dict",
    "requirements_from_list",
    "update_from_dict",
    "update_to_dict",
    "updates_from_list",
]
