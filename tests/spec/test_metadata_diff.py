"""metadata_changes: what a REST client sends is what turns the base into the new metadata."""

from __future__ import annotations

from icefloe.spec.metadata_diff import creation_changes, metadata_changes
from icefloe.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icefloe.spec.requirements import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
)
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.sort_order import UNSORTED
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    RemoveProperties,
    SetCurrentSchema,
    SetDefaultSpec,
    SetProperties,
    SetSnapshotRef,
    apply_updates,
    new_table_metadata,
)

BASE = new_table_metadata(
    Schema(NestedField(1, "id", LongType(), required=True)),
    UNPARTITIONED,
    UNSORTED,
    "file:///w/db/t",
    {"keep": "1", "drop": "2"},
    3,
)


def _snapshot(snapshot_id: int, parent: int | None, seq: int, first_row_id: int) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        parent_snapshot_id=parent,
        sequence_number=seq,
        timestamp_ms=1700000000000 + seq,
        manifest_list=f"file:///w/db/t/metadata/snap-{snapshot_id}.avro",
        summary={"operation": "append"},
        first_row_id=first_row_id,
        added_rows=10,
    )


def test_replaying_the_changes_gives_the_new_metadata() -> None:
    new = apply_updates(
        BASE,
        [
            AddSchema(
                Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
            ),
            SetCurrentSchema(-1),
            AddPartitionSpec(PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"))),
            SetDefaultSpec(-1),
            SetProperties({"new": "3", "keep": "changed"}),
            RemoveProperties(("drop",)),
            AddSnapshot(_snapshot(11, None, 1, 0)),
            SetSnapshotRef("main", 11),
            AddSnapshot(_snapshot(12, 11, 2, 10)),
            SetSnapshotRef("dev", 12),
        ],
        now_ms=1700000000100,
    )
    changes = metadata_changes(BASE, new)
    replayed = apply_updates(BASE, changes.updates, now_ms=1700000000100)
    assert replayed == new
    assert changes.added_snapshot_ids() == [11, 12]
    assert changes.requirements == [
        AssertTableUUID(BASE.table_uuid),
        AssertLastAssignedFieldId(1),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(BASE.last_partition_id),
        *changes.requirements[4:],
    ]
    assert AssertRefSnapshotId("main", None) in changes.requirements
    assert AssertRefSnapshotId("dev", None) in changes.requirements


def test_append_on_a_branch_head_requires_that_head() -> None:
    first = apply_updates(BASE, [AddSnapshot(_snapshot(11, None, 1, 0)), SetSnapshotRef("main", 11)])
    second = apply_updates(first, [AddSnapshot(_snapshot(12, 11, 2, 10)), SetSnapshotRef("main", 12)])
    changes = metadata_changes(first, second)
    assert changes.requirements == [AssertTableUUID(BASE.table_uuid), AssertRefSnapshotId("main", 11)]
    assert [type(u).__name__ for u in changes.updates] == ["AddSnapshot", "SetSnapshotRef"]


def test_no_change_is_no_update() -> None:
    assert metadata_changes(BASE, BASE).updates == []


def test_creation_changes_start_with_assert_create() -> None:
    changes = creation_changes(BASE)
    assert changes.requirements == [AssertCreate()]
    kinds = [type(u).__name__ for u in changes.updates]
    assert kinds[:2] == ["AssignUUID", "UpgradeFormatVersion"] and "SetLocation" in kinds
