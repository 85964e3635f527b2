"""Table updates, requirements and new-table metadata."""

from __future__ import annotations

import pytest

from icefloe.errors import CommitConflict, Unsupported, ValidationError
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema, assign_fresh_ids
from icefloe.spec.snapshots import RefType, Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField, SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform, YearTransform
from icefloe.spec.types import (
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    UnknownType,
)
from icefloe.spec.updates import (
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    AssignUUID,
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
    TableRequirement,
    UpgradeFormatVersion,
    apply_updates,
    new_table_metadata,
    validate_requirements,
)

UUID = "9c12d441-03fe-4693-9a96-a0705ddf69c1"
NOW = 1_700_000_000_000

# ids deliberately not 1..n, to check fresh id assignment
SCHEMA = Schema(
    NestedField(10, "id", LongType(), True),
    NestedField(20, "ts", TimestampType(), False),
    NestedField(
        30,
        "loc",
        StructType(
            NestedField(31, "lat", IntegerType()), NestedField(32, "tags", ListType(33, StringType()))
        ),
    ),
    NestedField(40, "attrs", MapType(41, StringType(), 42, StringType())),
    identifier_field_ids=[10],
)
SPEC = PartitionSpec(
    PartitionField(20, 5, DayTransform(), "ts_day"), PartitionField(10, 6, BucketTransform(8), "id_bucket")
)
ORDER = SortOrder(SortField(10, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST), order_id=7)


def new_md(format_version: int = 2, **kwargs: object) -> TableMetadata:
    return new_table_metadata(
        SCHEMA, SPEC, ORDER, "s3://b/t/", {"k": "v"}, format_version, table_uuid=UUID, now_ms=NOW, **kwargs
    )


def snap(snapshot_id: int, seq: int, parent: int | None = None, ts: int = NOW + 10, **kw: object) -> Snapshot:
    return Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=ts,
        summary={"operation": "append"},
        parent_snapshot_id=parent,
        sequence_number=seq,
        manifest_list=f"s3://b/t/metadata/snap-{snapshot_id}.avro",
        schema_id=0,
        **kw,  # type: ignore[arg-type]
    )


def test_assign_fresh_ids_siblings_first() -> None:
    fresh, mapping = assign_fresh_ids(SCHEMA)
    assert mapping == {10: 1, 20: 2, 30: 3, 40: 4, 31: 5, 32: 6, 33: 7, 41: 8, 42: 9}
    assert fresh.find_field("loc.tags").field_type == ListType(7, StringType())
    assert fresh.find_type("attrs") == MapType(8, StringType(), 9, StringType())
    assert fresh.identifier_field_ids == (1,)


def test_new_table_metadata() -> None:
    md = new_md()
    assert md.format_version == 2
    assert md.table_uuid == UUID
    assert md.location == "s3://b/t"
    assert md.last_updated_ms == NOW
    assert md.last_column_id == 9
    assert md.schema().schema_id == 0 and md.schema().identifier_field_ids == (1,)
    assert md.spec() == PartitionSpec(
        PartitionField(2, 1000, DayTransform(), "ts_day"),
        PartitionField(1, 1001, BucketTransform(8), "id_bucket"),
        spec_id=0,
    )
    assert md.last_partition_id == 1001
    assert md.sort_order() == SortOrder(
        SortField(1, IdentityTransform(), SortDirection.DESC, NullOrder.NULLS_LAST), order_id=1
    )
    assert md.default_sort_order_id == 1
    assert md.properties == {"k": "v"}
    assert md.current_snapshot_id is None and md.refs == {} and md.next_row_id is None
    assert md.last_sequence_number == 0


def test_new_table_unsorted_unpartitioned_and_format_property() -> None:
    md = new_table_metadata(
        Schema(NestedField(1, "x", TimestampNanoType())),
        PartitionSpec(),
        SortOrder(),
        "/tmp/t",
        {"format-version": "3", "a": "b"},
        now_ms=NOW,
    )
    assert md.format_version == 3 and md.next_row_id == 0
    assert md.properties == {"a": "b"}
    assert md.sort_orders == (SortOrder(order_id=0),) and md.default_sort_order_id == 0
    assert md.last_partition_id == 999
    assert len(md.table_uuid) == 36


@pytest.mark.parametrize(
    ("schema", "version", "message"),
    [
        (
            Schema(NestedField(1, "x", TimestampNanoType())),
            2,
            "'x' has type timestamp_ns, which needs format-version 3",
        ),
        (Schema(NestedField(1, "u", UnknownType())), 1, "'u' has type unknown"),
        (Schema(NestedField(1, "d", IntegerType(), initial_default=1)), 2, "'d' has a default value"),
        (Schema(NestedField(1, "x", IntegerType())), 5, "format-version must be one of"),
    ],
)
def test_new_table_rejects_version_mismatches(schema: Schema, version: int, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        new_table_metadata(schema, PartitionSpec(), SortOrder(), "/t", {}, version)


def test_new_table_rejects_bad_partitioning() -> None:
    bad = PartitionSpec(PartitionField(10, 1000, YearTransform(), "id_year"))
    with pytest.raises(ValidationError, match="transform year cannot be applied to column 'id' of type long"):
        new_table_metadata(SCHEMA, bad, SortOrder(), "/t")
    missing = PartitionSpec(PartitionField(99, 1000, IdentityTransform(), "nope"))
    with pytest.raises(ValidationError, match="column id 99"):
        new_table_metadata(SCHEMA, missing, SortOrder(), "/t")
    with pytest.raises(ValidationError, match="integer"):
        new_table_metadata(SCHEMA, SPEC, ORDER, "/t", {"format-version": "two"})


def test_empty_update_list_returns_same_object() -> None:
    md = new_md()
    assert apply_updates(md, [], NOW + 5) is md


def test_properties_location_uuid() -> None:
    md = new_md()
    out = apply_updates(
        md, [SetProperties({"a": "1", "k": "w"}), RemoveProperties(("a", "missing"))], NOW + 5
    )
    assert out.properties == {"k": "w"}
    assert out.last_updated_ms == NOW + 5
    assert apply_updates(md, [SetLocation("s3://c/t2/")], NOW + 5).location == "s3://c/t2"
    other = "11111111-2222-3333-4444-555555555555"
    assert apply_updates(md, [AssignUUID(other)], NOW + 5).table_uuid == other
    with pytest.raises(ValidationError, match="reserved"):
        apply_updates(md, [SetProperties({"format-version": "3"})], NOW)
    with pytest.raises(ValidationError):
        apply_updates(md, [AssignUUID("nope")], NOW)


def test_upgrade_format_version() -> None:
    md = new_md(1)
    v2 = apply_updates(md, [UpgradeFormatVersion(2)], NOW + 1)
    assert v2.format_version == 2 and v2.next_row_id is None
    v3 = apply_updates(v2, [UpgradeFormatVersion(3)], NOW + 2)
    assert v3.format_version == 3 and v3.next_row_id == 0
    assert apply_updates(v3, [UpgradeFormatVersion(3)], NOW + 3) is v3
    with pytest.raises(ValidationError, match="downgrade"):
        apply_updates(v3, [UpgradeFormatVersion(2)], NOW)
    with pytest.raises(Unsupported):
        apply_updates(v3, [UpgradeFormatVersion(5)], NOW)


def test_add_schema_and_set_current_last_added() -> None:
    md = new_md()
    evolved = Schema(*md.schema().fields, NestedField(10, "extra", StringType()), schema_id=99)
    out = apply_updates(md, [AddSchema(evolved), SetCurrentSchema(-1)], NOW + 1)
    assert [s.schema_id for s in out.schemas] == [0, 1]
    assert out.current_schema_id == 1
    assert out.schema().find_field("extra").field_id == 10
    assert out.last_column_id == 10
    # an identical schema is reused, not added again
    again = apply_updates(out, [AddSchema(evolved), SetCurrentSchema(-1)], NOW + 2)
    assert [s.schema_id for s in again.schemas] == [0, 1] and again.current_schema_id == 1
    assert apply_updates(out, [SetCurrentSchema(0)], NOW + 3).current_schema_id == 0
    with pytest.raises(ValidationError, match="no schema was added"):
        apply_updates(md, [SetCurrentSchema(-1)], NOW)
    with pytest.raises(ValidationError, match="unknown schema id 7"):
        apply_updates(md, [SetCurrentSchema(7)], NOW)
    with pytest.raises(ValidationError, match="timestamp_ns"):
        apply_updates(md, [AddSchema(Schema(NestedField(1, "n", TimestampNanoType())))], NOW)


def test_add_spec_and_sort_order() -> None:
    md = new_md()
    spec = PartitionSpec(PartitionField(1, 1002, IdentityTransform(), "id"))
    out = apply_updates(md, [AddPartitionSpec(spec), SetDefaultSpec(-1)], NOW + 1)
    assert out.default_spec_id == 1 and out.spec() == PartitionSpec(*spec.fields, spec_id=1)
    assert out.last_partition_id == 1002
    # a compatible spec is reused
    reused = apply_updates(out, [AddPartitionSpec(md.spec()), SetDefaultSpec(-1)], NOW + 2)
    assert reused.default_spec_id == 0 and len(reused.partition_specs) == 2
    with pytest.raises(ValidationError, match="column id 77"):
        apply_updates(
            md, [AddPartitionSpec(PartitionSpec(PartitionField(77, 1003, IdentityTransform(), "x")))]
        )

    order = SortOrder(SortField(2, DayTransform()))
    out2 = apply_updates(md, [AddSortOrder(order), SetDefaultSortOrder(-1)], NOW + 1)
    assert out2.default_sort_order_id == 2 and out2.sort_order() == SortOrder(*order.fields, order_id=2)
    unsorted = apply_updates(out2, [AddSortOrder(SortOrder()), SetDefaultSortOrder(-1)], NOW + 2)
    assert unsorted.default_sort_order_id == 0
    assert unsorted.sort_order().is_unsorted
    with pytest.raises(ValidationError, match="unknown spec id 4"):
        apply_updates(md, [SetDefaultSpec(4)])
    with pytest.raises(ValidationError, match="unknown order id 4"):
        apply_updates(md, [SetDefaultSortOrder(4)])


def test_remove_unused_specs_and_schemas() -> None:
    md = new_md()
    evolved = Schema(*md.schema().fields, NestedField(10, "extra", StringType()), schema_id=99)
    spec = PartitionSpec(PartitionField(1, 1002, IdentityTransform(), "id"))
    md = apply_updates(
        md, [AddSchema(evolved), SetCurrentSchema(-1), AddPartitionSpec(spec), SetDefaultSpec(-1)], NOW + 1
    )
    out = apply_updates(md, [RemovePartitionSpecs((0, 42)), RemoveSchemas((0, 42))], NOW + 2)
    assert [s.spec_id for s in out.partition_specs] == [1]
    assert [s.schema_id for s in out.schemas] == [1]
    assert out.last_partition_id == 1002 and out.last_column_id == md.last_column_id  # ids never reused
    assert apply_updates(out, [RemoveSchemas((42,))], NOW + 3) is out  # unknown ids: nothing changes
    with pytest.raises(ValidationError, match="default partition spec 1"):
        apply_updates(out, [RemovePartitionSpecs((1,))], NOW + 3)
    with pytest.raises(ValidationError, match="current schema 1"):
        apply_updates(out, [RemoveSchemas((1,))], NOW + 3)


def test_add_snapshot_and_main_ref_v2() -> None:
    md = new_md()
    s1 = snap(1, 1)
    out = apply_updates(md, [AddSnapshot(s1), SetSnapshotRef("main", 1, RefType.BRANCH)], NOW + 50)
    assert out.snapshots == (s1,)
    assert out.last_sequence_number == 1
    assert out.current_snapshot_id == 1
    assert out.refs == {"main": SnapshotRef(1, RefType.BRANCH)}
    assert out.snapshot_log == (SnapshotLogEntry(NOW + 10, 1),)
    assert out.last_updated_ms == NOW + 10
    # a branch elsewhere does not move main or the log
    s2 = snap(2, 2, parent=1, ts=NOW + 20)
    out2 = apply_updates(out, [AddSnapshot(s2), SetSnapshotRef("dev", 2)], NOW + 60)
    assert out2.current_snapshot_id == 1 and out2.refs["dev"] == SnapshotRef(2)
    assert out2.snapshot_log == out.snapshot_log
    # moving main to an older snapshot logs the commit time
    rolled = apply_updates(out2, [SetSnapshotRef("main", 2), SetSnapshotRef("main", 1)], NOW + 70)
    assert rolled.snapshot_log[-2:] == (SnapshotLogEntry(NOW + 70, 2), SnapshotLogEntry(NOW + 70, 1))
    with pytest.raises(
        CommitConflict, match="sequence number 1, not above the table's last sequence number 2"
    ):
        apply_updates(out2, [AddSnapshot(snap(3, 1))], NOW)
    with pytest.raises(CommitConflict, match="already exists"):
        apply_updates(out2, [AddSnapshot(snap(2, 3))], NOW)
    with pytest.raises(ValidationError, match="unknown snapshot 9"):
        apply_updates(out2, [SetSnapshotRef("main", 9)], NOW)
    with pytest.raises(ValidationError, match="must be a branch"):
        apply_updates(out2, [SetSnapshotRef("main", 1, RefType.TAG)], NOW)


def test_add_snapshot_v1_ignores_sequence_numbers() -> None:
    md = new_md(1)
    out = apply_updates(md, [AddSnapshot(snap(1, 0)), SetSnapshotRef("main", 1)], NOW)
    assert out.last_sequence_number == 0 and out.current_snapshot_id == 1


def test_add_snapshot_v3_row_lineage() -> None:
    md = new_md(3)
    out = apply_updates(md, [AddSnapshot(snap(1, 1, first_row_id=0, added_rows=40))], NOW)
    assert out.next_row_id == 40
    out = apply_updates(out, [AddSnapshot(snap(2, 2, parent=1, first_row_id=40, added_rows=10))], NOW)
    assert out.next_row_id == 50 and out.last_sequence_number == 2
    with pytest.raises(CommitConflict, match="first-row-id 45, behind the table's next-row-id 50"):
        apply_updates(out, [AddSnapshot(snap(3, 3, first_row_id=45, added_rows=1))], NOW)
    with pytest.raises(ValidationError, match="needs first-row-id and added-rows"):
        apply_updates(out, [AddSnapshot(snap(3, 3))], NOW)


def test_remove_snapshots_and_refs() -> None:
    md = new_md()
    md = apply_updates(
        md,
        [
            AddSnapshot(snap(1, 1, ts=NOW + 1)),
            SetSnapshotRef("main", 1),
            AddSnapshot(snap(2, 2, parent=1, ts=NOW + 2)),
            SetSnapshotRef("main", 2),
            SetSnapshotRef("tag1", 1, RefType.TAG),
            AddSnapshot(snap(3, 3, parent=2, ts=NOW + 3)),
            SetSnapshotRef("main", 3),
        ],
        NOW + 10,
    )
    md = md.with_changes(statistics=({"snapshot-id": 2, "statistics-path": "p"},))
    assert [e.snapshot_id for e in md.snapshot_log] == [1, 2, 3]
    out = apply_updates(md, [RemoveSnapshots((2,))], NOW + 20)
    assert [s.snapshot_id for s in out.snapshots] == [1, 3]
    assert out.snapshot_log == (SnapshotLogEntry(NOW + 3, 3),)
    assert out.statistics == ()
    assert set(out.refs) == {"main", "tag1"}
    gone = apply_updates(md, [RemoveSnapshots((1,))], NOW + 20)
    assert set(gone.refs) == {"main"}
    untagged = apply_updates(md, [RemoveSnapshotRef("tag1")], NOW + 20)
    assert set(untagged.refs) == {"main"} and untagged.current_snapshot_id == 3
    no_main = apply_updates(md, [RemoveSnapshotRef("main")], NOW + 20)
    assert no_main.current_snapshot_id is None and "main" not in no_main.refs
    head_removed = apply_updates(md, [RemoveSnapshots((3,))], NOW + 20)
    assert head_removed.current_snapshot_id is None


def test_requirements() -> None:
    md = apply_updates(new_md(), [AddSnapshot(snap(1, 1)), SetSnapshotRef("main", 1)], NOW)
    ok: list[TableRequirement] = [
        AssertTableUUID(UUID.upper()),
        AssertRefSnapshotId("main", 1),
        AssertRefSnapshotId("dev", None),
        AssertLastAssignedFieldId(9),
        AssertCurrentSchemaId(0),
        AssertLastAssignedPartitionId(1001),
        AssertDefaultSpecId(0),
        AssertDefaultSortOrderId(1),
    ]
    validate_requirements(md, ok)
    AssertCreate().validate(None)
    failures: list[tuple[TableRequirement, str]] = [
        (AssertCreate(), "created by another writer"),
        (AssertTableUUID("11111111-2222-3333-4444-555555555555"), "table UUID changed"),
        (AssertRefSnapshotId("main", 7), "ref 'main' moved from snapshot 7 to 1"),
        (AssertRefSnapshotId("main", None), "ref 'main' was created concurrently"),
        (AssertRefSnapshotId("dev", 1), "ref 'dev' was removed"),
        (AssertLastAssignedFieldId(8), "last assigned field id changed from 8 to 9"),
        (AssertCurrentSchemaId(3), "current schema id changed from 3 to 0"),
        (AssertLastAssignedPartitionId(1000), "last assigned partition id changed from 1000 to 1001"),
        (AssertDefaultSpecId(2), "default partition spec id changed from 2 to 0"),
        (AssertDefaultSortOrderId(0), "default sort order id changed from 0 to 1"),
    ]
    for requirement, message in failures:
        with pytest.raises(CommitConflict, match=message) as info:
            requirement.validate(md)
        assert info.value.retryable
    with pytest.raises(CommitConflict, match="does not exist"):
        AssertCurrentSchemaId(0).validate(None)
