"""Stored content-entry rows widened to the encoder's types, with plans kept per pair of schemas."""

from __future__ import annotations

import pyarrow as pa

from icefloe.formats.v4 import stored_tables
from icefloe.formats.v4.stored_tables import widen_table, widening_plan


def _field(name: str, t: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, t, nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def _target(member_id: int) -> pa.Schema:
    inner = pa.struct([_field("a", pa.int32(), member_id), _field("b", pa.string(), member_id + 1)])
    return pa.schema([_field("id", pa.int64(), 1, nullable=False), _field("s", inner, 2)])


def test_a_stored_struct_missing_a_member_is_widened_with_nulls() -> None:
    stored_type = pa.struct([_field("a", pa.int32(), 10)])
    stored = pa.table(
        [pa.array([1, 2], pa.int64()), pa.array([{"a": 5}, None], stored_type)],
        schema=pa.schema([_field("id", pa.int64(), 1, nullable=False), _field("s", stored_type, 2)]),
    )
    widened = widen_table(stored, _target(10))
    assert widened is not None
    assert widened.schema.equals(_target(10), check_metadata=True)
    assert widened.column("s").to_pylist() == [{"a": 5, "b": None}, None]


def test_schemas_equal_but_for_their_field_ids_do_not_share_a_plan() -> None:
    # pa.Schema's == ignores field metadata: a plan found by == would widen by the wrong ids
    stored_type = pa.struct([_field("a", pa.int32(), 10), _field("b", pa.string(), 11)])
    stored = pa.schema([_field("id", pa.int64(), 1, nullable=False), _field("s", stored_type, 2)])
    assert stored == _target(20)
    assert widening_plan(stored, _target(10)) is not None
    assert widening_plan(stored, _target(20)) is None  # members 20, 21 are not stored; 10, 11 unknown
    assert widening_plan(stored, _target(10)) is not None


def test_a_column_the_encoder_does_not_write_or_another_nullability_is_refused() -> None:
    extra = _target(10).append(_field("x", pa.int32(), 99))
    assert widen_table(pa.table([pa.array([], t.type) for t in extra], schema=extra), _target(10)) is None
    nullable_id = pa.schema([_field("id", pa.int64(), 1), _target(10).field("s")])
    assert widening_plan(nullable_id, _target(10)) is None


def test_files_differing_only_in_their_footer_share_a_plan() -> None:
    # pyarrow puts a Parquet file's footer in its schema's metadata: each root has its own
    # snapshot id there, and the plan must still be found again (not worked out per file)
    stored_type = pa.struct([_field("a", pa.int32(), 30)])
    columns = [_field("id", pa.int64(), 1, nullable=False), _field("s", stored_type, 2)]
    target = _target(30)
    first = pa.schema(columns, metadata={"snapshot-id": "1"})
    made = stored_tables._PLANS.made
    assert widening_plan(first, target) is not None
    assert stored_tables._PLANS.made == made + 1
    for snapshot_id in range(2, 6):
        again = pa.schema(columns, metadata={"snapshot-id": str(snapshot_id)})
        assert widening_plan(again, target) is not None
    assert stored_tables._PLANS.made == made + 1
    other_ids = pa.schema([columns[0], _field("s", pa.struct([_field("a", pa.int32(), 31)]), 2)])
    assert widening_plan(other_ids, target) is None  # member 31 is not the target's
    assert stored_tables._PLANS.made == made + 2


def test_a_plan_widens_tables_of_any_length_with_the_nulls_it_keeps() -> None:
    stored_type = pa.struct([_field("a", pa.int32(), 40)])
    stored_schema = pa.schema([_field("id", pa.int64(), 1, nullable=False), _field("s", stored_type, 2)])
    for n in (1, 3, 5000):  # more rows than the nulls kept per type: built for the table
        stored = pa.table(
            [
                pa.array(range(n), pa.int64()),
                pa.array([{"a": i} if i % 2 else None for i in range(n)], stored_type),
            ],
            schema=stored_schema,
        )
        widened = widen_table(stored, _target(40))
        assert widened is not None and widened.num_rows == n
        assert widened.column("s").to_pylist() == [{"a": i, "b": None} if i % 2 else None for i in range(n)]
