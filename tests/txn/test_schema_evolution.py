"""UpdateSchema: schema evolution rules, id assignment, retries on fresh metadata."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.json_codec import table_metadata_from_json, table_metadata_to_json
from icefloe.spec.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortField, SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import BucketTransform, DayTransform, IdentityTransform
from icefloe.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
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
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    SetCurrentSchema,
    SetDefaultSpec,
    apply_updates,
    new_table_metadata,
)
from icefloe.table.table import Table
from icefloe.txn.schema_evolution import UpdateSchema
from icefloe.txn.transaction import AttemptContext

NOW = 1_700_000_000_000

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "count", IntegerType()),
    NestedField(4, "loc", StructType(NestedField(5, "lat", FloatType()), NestedField(6, "lon", FloatType()))),
    NestedField(7, "tags", ListType(8, StringType())),
    NestedField(9, "props", MapType(10, StringType(), 11, StructType(NestedField(12, "v", IntegerType())))),
    NestedField(13, "price", DecimalType(9, 2)),
    NestedField(14, "day", DateType()),
    identifier_field_ids=[1],
)


def make_md(
    format_version: int = 2,
    spec: PartitionSpec = UNPARTITIONED,
    schema: Schema = SCHEMA,
    sort_order: SortOrder | None = None,
) -> TableMetadata:
    """Metadata of a new table, keeping the field ids of ``schema`` and the ids in ``spec``."""
    md = new_table_metadata(
        schema, UNPARTITIONED, SortOrder(), "/tmp/t", format_version=format_version, now_ms=NOW
    )
    order = sort_order or SortOrder()
    return md.with_changes(
        schemas=(schema,),
        last_column_id=schema.highest_field_id,
        partition_specs=(spec,),
        last_partition_id=spec.last_assigned_field_id,
        sort_orders=(order,)
        if order.is_unsorted
        else (SortOrder(order_id=0), SortOrder(*order.fields, order_id=1)),
        default_sort_order_id=0 if order.is_unsorted else 1,
    )


def ctx(md: TableMetadata) -> AttemptContext:
    """An attempt context; schema updates do not use its FileIO."""
    return AttemptContext(io=None, base=md, now_ms=NOW)  # type: ignore[arg-type]


def commit(md: TableMetadata, update: Any) -> TableMetadata:
    """Apply an action to metadata the way a transaction attempt does."""
    return apply_updates(md, update.apply(ctx(md), md), NOW)


def col(md: TableMetadata, name: str) -> NestedField:
    """A column of the current schema by dotted name."""
    return md.schema().find_field(name)


# ---- adding ---------------------------------------------------------------------------------


def test_add_column_takes_the_next_id_and_emits_add_and_set_current() -> None:
    md = make_md()
    update = UpdateSchema(md).add_column("email", StringType(), doc="contact")
    updates = update.apply(ctx(md), md)
    assert len(updates) == 2
    assert isinstance(updates[0], AddSchema) and updates[0].last_column_id == 15
    assert updates[1] == SetCurrentSchema(LAST_ADDED)
    new = apply_updates(md, updates, NOW)
    assert new.current_schema_id == 1
    assert new.last_column_id == 15
    assert new.schema().fields[-1] == NestedField(15, "email", StringType(), False, "contact")
    assert new.schema().identifier_field_ids == (1,)
    assert new.schema_by_id(0) == md.schema()


def test_add_nested_types_gets_fresh_ids_field_first_then_children() -> None:
    md = make_md()
    new_type = StructType(
        NestedField(0, "a", IntegerType()),
        NestedField(0, "b", ListType(0, StructType(NestedField(0, "x", LongType())))),
        NestedField(0, "c", MapType(0, StringType(), 0, DoubleType())),
    )
    new = commit(md, UpdateSchema(md).add_column("extra", new_type))
    expected = StructType(
        NestedField(16, "a", IntegerType()),
        NestedField(17, "b", ListType(19, StructType(NestedField(20, "x", LongType())))),
        NestedField(18, "c", MapType(21, StringType(), 22, DoubleType())),
    )
    assert col(new, "extra") == NestedField(15, "extra", expected)
    assert new.last_column_id == 22


def test_add_into_struct_list_element_and_map_value() -> None:
    md = make_md()
    md2 = make_md(
        schema=Schema(
            NestedField(1, "id", LongType(), True),
            NestedField(2, "points", ListType(3, StructType(NestedField(4, "x", IntegerType())))),
        )
    )
    new = commit(
        md, UpdateSchema(md).add_column("loc.alt", DoubleType()).add_column("props.value.w", LongType())
    )
    assert col(new, "loc").field_type == StructType(
        NestedField(5, "lat", FloatType()),
        NestedField(6, "lon", FloatType()),
        NestedField(15, "alt", DoubleType()),
    )
    assert col(new, "props.value.w") == NestedField(16, "w", LongType())
    new2 = commit(md2, UpdateSchema(md2).add_column("points.y", IntegerType()))
    assert col(new2, "points").field_type == ListType(
        3, StructType(NestedField(4, "x", IntegerType()), NestedField(5, "y", IntegerType()))
    )


def test_add_column_errors_name_the_column() -> None:
    md = make_md()
    with pytest.raises(ValidationError, match=r"'name'.*exists"):
        UpdateSchema(md).add_column("name", StringType())
    with pytest.raises(ValidationError, match=r"parent 'nope' not found"):
        UpdateSchema(md).add_column("nope.x", StringType())
    with pytest.raises(ValidationError, match=r"parent 'name' is string, not a struct"):
        UpdateSchema(md).add_column("name.x", StringType())
    with pytest.raises(ValidationError, match=r"'ts'.*format-version 3"):
        UpdateSchema(md).add_column("ts", TimestampNanoType())


def test_ids_are_never_reused_even_after_a_drop() -> None:
    md = make_md()
    dropped = commit(md, UpdateSchema(md).delete_column("day"))
    assert dropped.last_column_id == 14 and 14 not in dropped.schema().field_ids()
    again = commit(dropped, UpdateSchema(dropped).add_column("day", DateType()))
    assert col(again, "day").field_id == 15
    assert again.last_column_id == 15
    assert [s.schema_id for s in again.schemas] == [0, 1, 2]


def test_delete_then_add_same_name_in_one_update_gets_a_new_id() -> None:
    md = make_md()
    new = commit(md, UpdateSchema(md).delete_column("name").add_column("name", IntegerType()))
    assert col(new, "name") == NestedField(15, "name", IntegerType())


def test_nested_add_to_a_struct_added_in_the_same_update_and_move_it() -> None:
    md = make_md()
    update = (
        UpdateSchema(md)
        .add_column("point", StructType(NestedField(0, "x", IntegerType())))
        .add_column("point.y", IntegerType())
        .move_first("point")
        .move_before("point.y", "point.x")
    )
    new = commit(md, update)
    assert new.schema().fields[0] == NestedField(
        15, "point", StructType(NestedField(17, "y", IntegerType()), NestedField(16, "x", IntegerType()))
    )


# ---- required columns and defaults ----------------------------------------------------------


def test_required_column_without_default_needs_allow_incompatible() -> None:
    md = make_md()
    with pytest.raises(ValidationError, match=r"cannot add required column 'z'"):
        UpdateSchema(md).add_column("z", IntegerType(), required=True)
    new = commit(
        md, UpdateSchema(md, allow_incompatible_changes=True).add_column("z", IntegerType(), required=True)
    )
    assert col(new, "z") == NestedField(15, "z", IntegerType(), True)


def test_v3_required_column_with_initial_default() -> None:
    md = make_md(format_version=3)
    with pytest.raises(ValidationError, match=r"without an initial_default"):
        UpdateSchema(md).add_column("z", IntegerType(), required=True)
    update = (
        UpdateSchema(md)
        .add_column("z", IntegerType(), required=True, initial_default=7)
        .add_column("d", DateType(), initial_default="2024-01-02", write_default="2024-02-03")
        .add_column(
            "s", StructType(NestedField(0, "q", IntegerType(), initial_default=1)), initial_default={}
        )
    )
    new = commit(md, update)
    assert col(new, "z") == NestedField(15, "z", IntegerType(), True, None, 7, 7)
    assert col(new, "d").initial_default == 19724 and col(new, "d").write_default == 19756
    assert col(new, "s").initial_default == {} and col(new, "s.q").initial_default == 1
    # defaults survive the metadata JSON round trip
    again = table_metadata_from_json(table_metadata_to_json(new))
    assert again.schema() == new.schema()


def test_defaults_are_rejected_before_v3_and_when_invalid() -> None:
    with pytest.raises(ValidationError, match=r"default values need format version 3"):
        UpdateSchema(make_md()).add_column("z", IntegerType(), initial_default=1)
    md3 = make_md(format_version=3)
    with pytest.raises(ValidationError, match=r"bad initial_default for column 'z'"):
        UpdateSchema(md3).add_column("z", IntegerType(), initial_default="abc")
    with pytest.raises(ValidationError, match=r"can only default to null"):
        UpdateSchema(md3).add_column("l", ListType(0, IntegerType()), initial_default=[1])
    with pytest.raises(ValidationError, match=r"struct default must be null or"):
        UpdateSchema(md3).add_column(
            "s", StructType(NestedField(0, "q", IntegerType())), initial_default={1: 2}
        )


def test_write_default_can_change_in_v3() -> None:
    md = make_md(format_version=3)
    new = commit(md, UpdateSchema(md).update_column("count", write_default=5))
    assert col(new, "count").write_default == 5 and col(new, "count").initial_default is None


# ---- rename / delete / update ---------------------------------------------------------------


def test_rename_keeps_ids_and_identifier_fields() -> None:
    md = make_md()
    new = commit(md, UpdateSchema(md).rename_column("id", "key").rename_column("loc.lat", "latitude"))
    assert col(new, "key").field_id == 1
    assert col(new, "loc.latitude").field_id == 5
    assert new.schema().identifier_field_ids == (1,)
    with pytest.raises(ValidationError, match=r"two columns named 'id'"):
        UpdateSchema(md).rename_column("name", "id")
    with pytest.raises(ValidationError, match=r"list and map parts have fixed names"):
        UpdateSchema(md).rename_column("tags.element", "x")


def test_renamed_column_can_be_found_by_its_new_name_in_the_same_update() -> None:
    md = make_md()
    new = commit(md, UpdateSchema(md).rename_column("name", "full_name").move_first("full_name"))
    assert md.schema().fields[1].field_id == 2
    assert new.schema().fields[0] == NestedField(2, "full_name", StringType())


def test_delete_column_rules() -> None:
    md = make_md()
    new = commit(md, UpdateSchema(md).delete_column("loc.lon").delete_column("tags"))
    assert col(new, "loc").field_type == StructType(NestedField(5, "lat", FloatType()))
    assert "tags" not in new.schema().column_names()
    with pytest.raises(ValidationError, match=r"cannot delete identifier field 'id'"):
        UpdateSchema(md).delete_column("id")
    ok = commit(md, UpdateSchema(md).set_identifier_fields().delete_column("id"))
    assert ok.schema().identifier_field_ids == ()
    with pytest.raises(ValidationError, match=r"no such column"):
        UpdateSchema(md).delete_column("nope")
    with pytest.raises(ValidationError, match=r"'name': it is deleted by this update"):
        UpdateSchema(md).delete_column("name").delete_column("name")
    with pytest.raises(ValidationError, match=r"adds fields to it"):
        UpdateSchema(md).add_column("loc.alt", DoubleType()).delete_column("loc")


def test_cannot_delete_partition_or_sort_source_of_the_current_spec() -> None:
    spec = PartitionSpec(PartitionField(14, 1000, DayTransform(), "day_day"))
    md = make_md(spec=spec)
    with pytest.raises(ValidationError, match=r"'day'.*partition field 'day_day'.*current partition spec 0"):
        UpdateSchema(md).delete_column("day")
    # after the partition field is removed, the old spec no longer blocks the drop
    md = apply_updates(md, [AddPartitionSpec(PartitionSpec()), SetDefaultSpec(LAST_ADDED)], NOW)
    assert 14 not in commit(md, UpdateSchema(md).delete_column("day")).schema().field_ids()
    sorted_md = make_md(sort_order=SortOrder(SortField(2, IdentityTransform())))
    with pytest.raises(ValidationError, match=r"'name'.*sort order"):
        UpdateSchema(sorted_md).delete_column("name")


@pytest.mark.parametrize(
    ("column", "old", "new"),
    [
        ("count", IntegerType(), LongType()),
        ("loc.lat", FloatType(), DoubleType()),
        ("price", DecimalType(9, 2), DecimalType(18, 2)),
    ],
)
def test_allowed_promotions(column: str, old: Any, new: Any) -> None:
    md = make_md()
    assert col(md, column).field_type == old
    updated = commit(md, UpdateSchema(md).update_column(column, field_type=new))
    assert col(updated, column).field_type == new
    assert col(updated, column).field_id == col(md, column).field_id


@pytest.mark.parametrize(
    ("column", "new", "text"),
    [
        ("name", IntegerType(), "from string to int"),
        ("id", IntegerType(), "from long to int"),
        ("price", DecimalType(10, 3), r"from decimal\(9, 2\) to decimal\(10, 3\)"),
        ("price", DecimalType(8, 2), r"from decimal\(9, 2\) to decimal\(8, 2\)"),
        ("day", TimestampType(), "from date to timestamp: not an allowed type promotion in format version 2"),
        ("loc", StringType(), "only primitive types can be promoted"),
    ],
)
def test_disallowed_promotions_name_the_column_and_types(column: str, new: Any, text: str) -> None:
    with pytest.raises(ValidationError, match=rf"'{column}' {text}" if "only" not in text else text):
        UpdateSchema(make_md()).update_column(column, field_type=new)


def test_v3_date_to_timestamp_respects_partition_transforms() -> None:
    md = make_md(format_version=3)
    assert (
        col(commit(md, UpdateSchema(md).update_column("day", field_type="timestamp")), "day").field_type
        == TimestampType()
    )
    by_day = make_md(format_version=3, spec=PartitionSpec(PartitionField(14, 1000, DayTransform(), "d")))
    assert (
        col(
            commit(by_day, UpdateSchema(by_day).update_column("day", field_type=TimestampNanoType())), "day"
        ).field_type
        == TimestampNanoType()
    )
    bucketed = make_md(
        format_version=3, spec=PartitionSpec(PartitionField(14, 1000, BucketTransform(4), "b"))
    )
    with pytest.raises(ValidationError, match=r"'day' from date to timestamp.*'b' \(bucket\[4\]\)"):
        UpdateSchema(bucketed).update_column("day", field_type=TimestampType())


def test_nullability_changes() -> None:
    md = make_md()
    with pytest.raises(ValidationError, match=r"cannot make column 'name' required"):
        UpdateSchema(md).require_column("name")
    forced = commit(md, UpdateSchema(md, allow_incompatible_changes=True).require_column("name"))
    assert col(forced, "name").required
    with pytest.raises(ValidationError, match=r"identifier field 'id' must be required"):
        UpdateSchema(md).make_column_optional("id")
    opt = commit(md, UpdateSchema(md).set_identifier_fields().make_column_optional("id"))
    assert not col(opt, "id").required
    element_required = make_md(schema=Schema(NestedField(1, "l", ListType(2, IntegerType(), True))))
    new = commit(element_required, UpdateSchema(element_required).make_column_optional("l.element"))
    assert col(new, "l").field_type == ListType(2, IntegerType(), False)


def test_update_doc_and_element_promotion() -> None:
    md = make_md(
        schema=Schema(NestedField(1, "l", ListType(2, IntegerType())), NestedField(3, "x", FloatType()))
    )
    new = commit(
        md, UpdateSchema(md).update_column("l.element", field_type=LongType()).update_column_doc("x", "X")
    )
    assert col(new, "l").field_type == ListType(2, LongType())
    assert col(new, "x").doc == "X"


# ---- reordering -----------------------------------------------------------------------------


def test_moves() -> None:
    md = make_md()
    update = UpdateSchema(md).move_first("day").move_after("id", "name").move_before("loc.lon", "loc.lat")
    new = commit(md, update)
    assert new.schema().column_names() == ["day", "name", "id", "count", "loc", "tags", "props", "price"]
    assert [f.name for f in col(new, "loc").field_type.fields] == ["lon", "lat"]  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match=r"different structs"):
        UpdateSchema(md).move_before("loc.lat", "id")
    with pytest.raises(ValidationError, match=r"before itself"):
        UpdateSchema(md).move_before("id", "id")
    with pytest.raises(ValidationError, match=r"no such column"):
        UpdateSchema(md).move_first("nope")


# ---- identifier fields ----------------------------------------------------------------------


def test_identifier_fields_rules() -> None:
    md = make_md()
    new = commit(
        md,
        UpdateSchema(md, allow_incompatible_changes=True)
        .add_column("region", StringType(), required=True)
        .set_identifier_fields("id", "region"),
    )
    assert new.schema().identifier_field_ids == (1, 15)
    with pytest.raises(ValidationError, match=r"identifier field 'name' must be required"):
        UpdateSchema(md).set_identifier_fields("name")
    with pytest.raises(ValidationError, match=r"cannot be float"):
        UpdateSchema(make_md(schema=Schema(NestedField(1, "f", FloatType(), True)))).set_identifier_fields(
            "f"
        )
    with pytest.raises(ValidationError, match=r"nested in a list or map"):
        UpdateSchema(md).set_identifier_fields("props.key")
    with pytest.raises(ValidationError, match=r"nested in optional struct 'loc'"):
        UpdateSchema(md, allow_incompatible_changes=True).require_column("loc.lat").set_identifier_fields(
            "loc.lat"
        )
    with pytest.raises(ValidationError, match=r"no such column"):
        UpdateSchema(md).set_identifier_fields("nope")


# ---- union by name --------------------------------------------------------------------------


def test_union_by_name() -> None:
    md = make_md()
    other = Schema(
        NestedField(100, "id", IntegerType(), True),  # narrower: kept as long
        NestedField(101, "count", LongType(), True, "how many"),  # promoted, doc taken, stays optional
        NestedField(102, "loc", StructType(NestedField(103, "alt", DoubleType(), True))),
        NestedField(104, "new_col", BooleanType(), True),
        NestedField(105, "tags", ListType(106, StringType())),
    )
    new = commit(md, UpdateSchema(md).union_by_name(other))
    s = new.schema()
    assert s.find_field("id") == NestedField(1, "id", LongType(), True)
    assert s.find_field("count") == NestedField(3, "count", LongType(), False, "how many")
    assert s.find_field("loc.alt") == NestedField(15, "alt", DoubleType())
    assert s.find_field("new_col") == NestedField(16, "new_col", BooleanType())
    with pytest.raises(ValidationError, match=r"cannot merge column 'name': string and int are incompatible"):
        UpdateSchema(md).union_by_name(Schema(NestedField(1, "name", IntegerType())))


def test_case_insensitive_names() -> None:
    md = make_md()
    new = commit(
        md,
        UpdateSchema(md, case_sensitive=False).rename_column("NAME", "n").add_column("LOC.Alt", LongType()),
    )
    assert col(new, "n").field_id == 2 and col(new, "loc.Alt").field_id == 15
    with pytest.raises(ValidationError):
        UpdateSchema(md).rename_column("NAME", "n")


# ---- builder behaviour ----------------------------------------------------------------------


def test_failed_call_leaves_the_builder_unchanged() -> None:
    md = make_md()
    update = UpdateSchema(md).add_column("a", IntegerType())
    with pytest.raises(ValidationError):
        update.add_column("a", IntegerType())
    with pytest.raises(ValidationError):
        update.update_column("name", field_type=IntegerType())
    assert update.preview().column_names()[-1] == "a"
    assert col(commit(md, update), "a").field_id == 15


def test_noop_update_produces_no_changes() -> None:
    md = make_md()
    assert UpdateSchema(md).apply(ctx(md), md) == []
    assert UpdateSchema(md).update_column("count", field_type=IntegerType()).apply(ctx(md), md) == []


def test_reverting_to_an_older_schema_reuses_its_id() -> None:
    md = make_md()
    renamed = commit(md, UpdateSchema(md).rename_column("name", "n"))
    back = commit(renamed, UpdateSchema(renamed).rename_column("n", "name"))
    assert back.current_schema_id == 0 and len(back.schemas) == 2


def test_unbound_builder_cannot_commit_itself() -> None:
    with pytest.raises(ValidationError, match=r"not bound to a table"):
        UpdateSchema(make_md()).add_column("a", IntegerType()).commit()
    seen: list[Any] = []
    with UpdateSchema(make_md(), on_commit=seen.append) as update:
        update.add_column("a", IntegerType())
    assert seen == [update]


# ---- retries on fresh metadata --------------------------------------------------------------


def test_retry_after_a_concurrent_add_assigns_ids_after_the_new_last_column_id() -> None:
    md = make_md()
    ours = (
        UpdateSchema(md).add_column("mine", StructType(NestedField(0, "a", IntegerType()))).move_first("mine")
    )
    theirs = commit(md, UpdateSchema(md).add_column("theirs", StringType()))
    new = commit(theirs, ours)
    assert new.schema().fields[0] == NestedField(16, "mine", StructType(NestedField(17, "a", IntegerType())))
    assert col(new, "theirs").field_id == 15
    assert new.last_column_id == 17


def test_retry_conflicts_when_a_touched_column_changed() -> None:
    md = make_md()
    ours = UpdateSchema(md).update_column("count", field_type=LongType())
    renamed = commit(md, UpdateSchema(md).rename_column("count", "n"))
    with pytest.raises(CommitConflict, match=r"'count' was renamed to 'n'") as info:
        ours.apply(ctx(renamed), renamed)
    assert info.value.retryable is False
    dropped = commit(md, UpdateSchema(md).delete_column("count"))
    with pytest.raises(CommitConflict, match=r"'count' was deleted"):
        ours.apply(ctx(dropped), dropped)
    promoted = commit(md, UpdateSchema(md).update_column("count", field_type=LongType()))
    with pytest.raises(CommitConflict, match=r"'count' was changed"):
        ours.apply(ctx(promoted), promoted)


def test_retry_conflicts_when_an_added_name_was_taken() -> None:
    md = make_md()
    ours = UpdateSchema(md).add_column("email", StringType())
    theirs = commit(md, UpdateSchema(md).add_column("email", StringType()))
    with pytest.raises(CommitConflict, match=r"changed concurrently.*two columns named 'email'") as info:
        ours.apply(ctx(theirs), theirs)
    assert info.value.retryable is False


def test_retry_with_unrelated_concurrent_change_merges() -> None:
    md = make_md()
    ours = UpdateSchema(md).rename_column("name", "full_name")
    theirs = commit(md, UpdateSchema(md).update_column("count", field_type=LongType()))
    new = commit(theirs, ours)
    assert col(new, "full_name").field_id == 2 and col(new, "count").field_type == LongType()


def test_decimal_default_is_parsed() -> None:
    md = make_md(format_version=3)
    new = commit(md, UpdateSchema(md).add_column("amount", DecimalType(9, 2), initial_default="1.50"))
    assert col(new, "amount").initial_default == Decimal("1.50")


# ---- end to end through a SQL catalog table -------------------------------------------------


def new_table(
    tmp_path: Path, schema: Schema, format_version: int = 2, spec: PartitionSpec | None = None
) -> Table:
    """A fresh table in a SQLite catalog under ``tmp_path``."""
    catalog = load_catalog(uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    return catalog.create_table(
        "db.t", schema, partition_spec=spec, properties={"format-version": str(format_version)}
    )


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows sorted by id."""
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def evolve(table: Table, update: Any) -> None:
    """Commit one action through a table transaction."""
    with table.transaction() as tx:
        tx.add_action(update)


def pyiceberg_rows(table: Table, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    """The table read by PyIceberg (optionally at a snapshot), rows sorted by id."""
    from pyiceberg.table import StaticTable

    static = StaticTable.from_metadata(table.metadata_location)
    return rows(static.scan(snapshot_id=snapshot_id).to_arrow())


E2E_SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType()),
    NestedField(3, "n", IntegerType()),
    NestedField(4, "loc", StructType(NestedField(5, "lat", FloatType()))),
)


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_end_to_end_evolution_reads_every_snapshot(tmp_path: Path, format_version: int) -> None:
    table = new_table(tmp_path, E2E_SCHEMA, format_version=format_version)
    loc_type = pa.struct([pa.field("lat", pa.float32())])
    table.append(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "name": ["a", "b"],
                "n": pa.array([10, 20], pa.int32()),
                "loc": pa.array([{"lat": 1.5}, None], loc_type),
            }
        )
    )
    s1 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    evolve(
        table,
        UpdateSchema(table.metadata)
        .add_column("email", StringType())
        .rename_column("name", "full_name")
        .update_column("n", field_type=LongType())
        .update_column("loc.lat", field_type=DoubleType()),
    )
    assert table.schema().schema_id == 1 and table.metadata.last_column_id == 6
    table.append(
        pa.table(
            {
                "id": pa.array([3], pa.int64()),
                "full_name": ["c"],
                "n": pa.array([2**40], pa.int64()),
                "loc": pa.array([{"lat": 2.25}], pa.struct([pa.field("lat", pa.float64())])),
                "email": ["c@x"],
            }
        )
    )
    s2 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    evolve(table, UpdateSchema(table.metadata).delete_column("loc").move_first("email"))
    table.append(
        pa.table(
            {
                "email": [None],
                "id": pa.array([4], pa.int64()),
                "full_name": ["d"],
                "n": pa.array([40], pa.int64()),
            }
        )
    )
    s3 = table.current_snapshot().snapshot_id  # type: ignore[union-attr]

    at_s1 = [
        {"id": 1, "name": "a", "n": 10, "loc": {"lat": 1.5}},
        {"id": 2, "name": "b", "n": 20, "loc": None},
    ]
    at_s2: list[dict[str, Any]] = [
        {"id": 1, "full_name": "a", "n": 10, "loc": {"lat": 1.5}, "email": None},
        {"id": 2, "full_name": "b", "n": 20, "loc": None, "email": None},
        {"id": 3, "full_name": "c", "n": 2**40, "loc": {"lat": 2.25}, "email": "c@x"},
    ]
    at_s3 = [
        {"email": r["email"], "id": r["id"], "full_name": r["full_name"], "n": r["n"]}
        for r in [*at_s2, {"id": 4, "full_name": "d", "n": 40, "email": None}]
    ]
    assert rows(table.scan(snapshot_id=s1).to_arrow()) == at_s1
    assert rows(table.scan(snapshot_id=s2).to_arrow()) == at_s2
    assert rows(table.scan(snapshot_id=s3).to_arrow()) == at_s3
    current = table.scan().to_arrow()
    assert current.column_names == ["email", "id", "full_name", "n"]
    assert current.schema.field("n").type == pa.int64()
    assert rows(current) == at_s3
    if format_version < 4:  # independent readers cannot read v4 (root manifest) tables
        # PyIceberg reads the same rows at every snapshot
        assert pyiceberg_rows(table, s1) == at_s1
        assert pyiceberg_rows(table, s2) == at_s2
        assert pyiceberg_rows(table) == at_s3
        # ... and so does DuckDB
        from tests.support.interop import read_with_duckdb

        for snapshot_id, want in ((s1, at_s1), (s2, at_s2), (s3, at_s3)):
            assert rows(read_with_duckdb(table.metadata_location, snapshot_id=snapshot_id)) == want
    # field ids were kept; new ids came after last-column-id
    fresh = table.commit_target.catalog.load_table("db.t")
    assert [(f.field_id, f.name) for f in fresh.schema().fields] == [
        (6, "email"),
        (1, "id"),
        (2, "full_name"),
        (3, "n"),
    ]
    assert [s.schema_id for s in fresh.metadata.schemas] == [0, 1, 2]


@pytest.mark.parametrize("format_version", [3, 4])
def test_end_to_end_initial_default_fills_old_rows(tmp_path: Path, format_version: int) -> None:
    table = new_table(tmp_path, Schema(NestedField(1, "id", LongType(), True)), format_version=format_version)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    evolve(
        table,
        UpdateSchema(table.metadata).add_column("level", IntegerType(), required=True, initial_default=7),
    )
    table.append(pa.table({"id": pa.array([3], pa.int64()), "level": pa.array([9], pa.int32())}))
    expected = [{"id": 1, "level": 7}, {"id": 2, "level": 7}, {"id": 3, "level": 9}]
    assert rows(table.scan().to_arrow()) == expected
    assert table.commit_target.catalog.load_table("db.t").schema().find_field("level") == NestedField(
        2, "level", IntegerType(), True, None, 7, 7
    )


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_end_to_end_concurrent_schema_changes(tmp_path: Path, format_version: int) -> None:
    table = new_table(tmp_path, E2E_SCHEMA, format_version=format_version)
    stale = table.commit_target.catalog.load_table("db.t")
    evolve(table, UpdateSchema(table.metadata).add_column("theirs", StringType()))
    # a builder made from stale metadata retries on the fresh schema: new ids after the concurrent add
    evolve(stale, UpdateSchema(stale.metadata).add_column("mine", StringType()))
    fresh = table.commit_target.catalog.load_table("db.t")
    assert [(f.field_id, f.name) for f in fresh.schema().fields][-2:] == [(6, "theirs"), (7, "mine")]
    conflicting = UpdateSchema(stale.metadata).rename_column("name", "label")
    evolve(table, UpdateSchema(table.commit_target.catalog.load_table("db.t").metadata).delete_column("name"))
    with pytest.raises(CommitConflict, match=r"'name' was deleted by a concurrent commit"):
        evolve(stale, conflicting)
    assert table.commit_target.catalog.load_table("db.t").metadata.current_schema_id == 3


@pytest.mark.parametrize("format_version", [3, 4])
def test_end_to_end_date_to_timestamp_and_unknown_promotions(tmp_path: Path, format_version: int) -> None:
    table = new_table(
        tmp_path,
        Schema(
            NestedField(1, "id", LongType(), True),
            NestedField(2, "d", DateType()),
            NestedField(3, "u", UnknownType()),
        ),
        format_version=format_version,
    )
    table.append(
        pa.table({"id": pa.array([1], pa.int64()), "d": pa.array([dt.date(2024, 1, 2)]), "u": pa.nulls(1)})
    )
    evolve(
        table,
        UpdateSchema(table.metadata)
        .update_column("d", field_type=TimestampType())
        .update_column("u", field_type=StringType()),
    )
    table.append(
        pa.table({"id": pa.array([2], pa.int64()), "d": pa.array([dt.datetime(2024, 1, 3, 5)]), "u": ["x"]})
    )
    assert rows(table.scan().to_arrow()) == [
        {"id": 1, "d": dt.datetime(2024, 1, 2), "u": None},
        {"id": 2, "d": dt.datetime(2024, 1, 3, 5), "u": "x"},
    ]
    # the old file's 4-byte date bounds still prune correctly as timestamps
    assert [r["id"] for r in table.scan(filter="d < '2024-01-02T12:00:00'").to_arrow().to_pylist()] == [1]


@pytest.mark.parametrize("format_version", [2, 4])
def test_end_to_end_builder_bound_to_a_table_commits_on_exit(tmp_path: Path, format_version: int) -> None:
    """The shape a ``Table.update_schema()`` helper takes: the builder commits itself on ``with`` exit."""
    table = new_table(tmp_path, E2E_SCHEMA, format_version=format_version)
    with UpdateSchema(table.metadata, on_commit=lambda action: evolve(table, action)) as update:
        update.add_column("email", StringType())
    assert table.commit_target.catalog.load_table("db.t").schema().find_field("email").field_id == 6
    with (
        pytest.raises(RuntimeError),
        UpdateSchema(table.metadata, on_commit=lambda action: evolve(table, action)) as update,
    ):
        update.add_column("other", StringType())
        raise RuntimeError("abandon the block")
    assert "other" not in table.commit_target.catalog.load_table("db.t").schema().column_names()
