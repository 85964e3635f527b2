"""REST JSON of table updates and requirements: every kind round-trips; bad input is a ValidationError."""

from __future__ import annotations

import pytest

from icefloe.errors import ValidationError
from icefloe.spec.commit_json import (
    requirement_from_dict,
    requirement_to_dict,
    update_from_dict,
    update_to_dict,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
)
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import RefType, Snapshot
from icefloe.spec.sort_order import SortDirection, SortField, SortOrder
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import LongType, NestedField
from icefloe.spec.updates import (
    AddEncryptionKey,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemoveEncryptionKey,
    RemovePartitionSpecs,
    RemoveProperties,
    RemoveSchemas,
    RemoveSnapshotRef,
    RemoveSnapshots,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetProperties,
    SetSnapshotRef,
    UpgradeFormatVersion,
)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), schema_id=3)
UPDATES = [
    AssignUUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
    UpgradeFormatVersion(3),
    AddSchema(SCHEMA, 1),
    SetCurrentSchema(-1),
    AddPartitionSpec(PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket"), spec_id=1)),
    SetDefaultSpec(1),
    AddSortOrder(SortOrder(SortField(1, IdentityTransform(), SortDirection.DESC), order_id=2)),
    SetDefaultSortOrder(2),
    AddSnapshot(
        Snapshot(
            snapshot_id=7,
            parent_snapshot_id=6,
            sequence_number=4,
            timestamp_ms=1700000000000,
            manifest_list="file:///w/t/metadata/snap-7.avro",
            summary={"operation": "append"},
            schema_id=3,
            first_row_id=10,
            added_rows=5,
        )
    ),
    AddSnapshot(
        Snapshot(
            snapshot_id=8,
            parent_snapshot_id=7,
            sequence_number=5,
            timestamp_ms=1700000000001,
            root_manifest="file:///w/t/metadata/root-8.avro",
            summary={"operation": "append"},
            first_row_id=15,
            added_rows=1,
        )
    ),
    SetSnapshotRef("main", 7, RefType.BRANCH, 2, 1000, 5000),
    SetSnapshotRef("v1", 7, RefType.TAG),
    RemoveSnapshots((1, 2)),
    RemoveSnapshotRef("old"),
    SetProperties({"a": "1"}),
    RemoveProperties(("b",)),
    SetLocation("file:///w/t2"),
    RemovePartitionSpecs((0, 1)),
    RemoveSchemas((2,)),
    AddEncryptionKey({"key-id": "k1", "encrypted-key-metadata": "AAEC", "encrypted-by-id": "kek"}),
    RemoveEncryptionKey("k1"),
]
REQUIREMENTS = [
    AssertCreate(),
    AssertTableUUID("9c12d441-03fe-4693-9a96-a0705ddf69c1"),
    AssertRefSnapshotId("main", 5),
    AssertRefSnapshotId("branch", None),
    AssertLastAssignedFieldId(3),
    AssertCurrentSchemaId(1),
    AssertLastAssignedPartitionId(1000),
    AssertDefaultSpecId(0),
    AssertDefaultSortOrderId(0),
]


@pytest.mark.parametrize("update", UPDATES, ids=lambda u: type(u).__name__)
def test_update_round_trip(update: object) -> None:
    data = update_to_dict(update)  # type: ignore[arg-type]
    assert isinstance(data["action"], str)
    assert update_from_dict(data) == update


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda r: type(r).__name__)
def test_requirement_round_trip(requirement: object) -> None:
    assert requirement_from_dict(requirement_to_dict(requirement)) == requirement  # type: ignore[arg-type]


def test_known_wire_forms() -> None:
    """A few forms exactly as the OpenAPI spec spells them."""
    assert update_to_dict(SetCurrentSchema(-1)) == {"action": "set-current-schema", "schema-id": -1}
    assert requirement_to_dict(AssertRefSnapshotId("main", None)) == {
        "type": "assert-ref-snapshot-id",
        "ref": "main",
        "snapshot-id": None,
    }
    ref = update_to_dict(SetSnapshotRef("v1", 7, RefType.TAG))
    assert ref == {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 7}


def test_early_java_property_keys_are_read() -> None:
    """Iceberg Java reads (and once wrote) "updated" / "removed" for the spec's "updates" / "removals"."""
    assert update_from_dict({"action": "set-properties", "updated": {"a": "1"}}) == SetProperties({"a": "1"})
    assert update_from_dict({"action": "remove-properties", "removed": ["b"]}) == RemoveProperties(("b",))


def test_relative_v4_root_manifest_resolves_against_the_table() -> None:
    data = update_to_dict(UPDATES[9])
    data["snapshot"]["root-manifest"] = "metadata/root-8.avro"
    parsed = update_from_dict(data, "file:///w/t")
    assert isinstance(parsed, AddSnapshot)
    assert parsed.snapshot.root_manifest == "file:///w/t/metadata/root-8.avro"


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"action": 3},
        {"action": "set-current-schema"},
        {"action": "set-current-schema", "schema-id": "1"},
        {"action": "set-current-schema", "schema-id": True},
        {"action": "add-schema", "schema": {"type": "struct"}},
        {"action": "set-properties", "updates": {"a": 1}},
        {"action": "remove-snapshots", "snapshot-ids": ["x"]},
        {"action": "set-snapshot-ref", "ref-name": "x", "type": "leaf", "snapshot-id": 1},
        {"action": "add-snapshot", "snapshot": {"snapshot-id": "nope"}},
        {"action": "set-statistics"},
        {"action": "remove-statistics", "snapshot-id": "1"},
        {"action": "set-partition-statistics"},
        {"action": "remove-partition-specs", "spec-ids": [True]},
        {"action": "remove-schemas", "schema-ids": "1"},
        {"action": "add-encryption-key", "key-id": "k1"},
        {"action": "remove-encryption-key", "key-id": 1},
    ],
)
def test_bad_updates_are_validation_errors(bad: object) -> None:
    with pytest.raises(ValidationError):
        update_from_dict(bad)


def test_unknown_kinds_are_malformed_requests() -> None:
    """A table commit naming a view action or an unknown requirement is answered 400, not 406."""
    with pytest.raises(ValidationError, match="unknown table update action 'add-view-version'"):
        update_from_dict({"action": "add-view-version"})
    with pytest.raises(ValidationError, match="unknown table requirement 'assert-view-uuid'"):
        requirement_from_dict({"type": "assert-view-uuid"})
    with pytest.raises(ValidationError):
        requirement_from_dict({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": "1"})
