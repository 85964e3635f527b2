"""Iceberg <-> Arrow schema mapping, compatibility checks and conforming user data."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import (
    FIELD_ID_KEY,
    arrow_to_schema,
    check_arrow_compatible,
    check_required_no_nulls,
    internal_to_arrow,
    schema_to_arrow,
    to_table_schema,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
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
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

PRIMITIVES = [
    (BooleanType(), pa.bool_()),
    (IntegerType(), pa.int32()),
    (LongType(), pa.int64()),
    (FloatType(), pa.float32()),
    (DoubleType(), pa.float64()),
    (DecimalType(9, 2), pa.decimal128(9, 2)),
    (DateType(), pa.date32()),
    (TimeType(), pa.time64("us")),
    (TimestampType(), pa.timestamp("us")),
    (TimestamptzType(), pa.timestamp("us", tz="UTC")),
    (TimestampNanoType(), pa.timestamp("ns")),
    (TimestamptzNanoType(), pa.timestamp("ns", tz="UTC")),
    (StringType(), pa.string()),
    (UUIDType(), pa.binary(16)),
    (FixedType(5), pa.binary(5)),
    (BinaryType(), pa.binary()),
    (UnknownType(), pa.null()),
]


def _fid(field: pa.Field) -> int:
    return int((field.metadata or {})[FIELD_ID_KEY])


@pytest.mark.parametrize(("iceberg", "arrow"), PRIMITIVES, ids=[str(t) for t, _ in PRIMITIVES])
def test_primitive_mapping(iceberg, arrow) -> None:
    schema = Schema(NestedField(7, "c", iceberg, required=not isinstance(iceberg, UnknownType)))
    field = schema_to_arrow(schema).field("c")
    assert field.type == arrow
    assert _fid(field) == 7
    assert field.nullable is isinstance(iceberg, UnknownType)


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(
        2, "s", StructType(NestedField(3, "x", IntegerType(), True), NestedField(4, "y", StringType())), False
    ),
    NestedField(5, "l", ListType(6, DateType(), element_required=True)),
    NestedField(7, "m", MapType(8, StringType(), 9, DoubleType(), value_required=False)),
)


def test_nested_field_ids_and_nullability() -> None:
    arrow = schema_to_arrow(NESTED)
    s = arrow.field("s")
    assert [_fid(s.type.field(i)) for i in range(2)] == [3, 4]
    assert not s.type.field(0).nullable and s.type.field(1).nullable
    elem = arrow.field("l").type.value_field
    assert (elem.name, _fid(elem), elem.nullable) == ("element", 6, False)
    m = arrow.field("m").type
    assert (_fid(m.key_field), m.key_field.nullable) == (8, False)
    assert (_fid(m.item_field), m.item_field.nullable) == (9, True)
    assert not arrow.field("id").nullable
    assert schema_to_arrow(NESTED, include_field_ids=False).field("id").metadata is None


def test_arrow_to_schema_round_trip() -> None:
    assert arrow_to_schema(schema_to_arrow(NESTED)) == NESTED
    everything = Schema(
        *(NestedField(i + 1, f"c{i}", t, False) for i, (t, _) in enumerate(PRIMITIVES) if t != UUIDType())
    )
    assert arrow_to_schema(schema_to_arrow(everything)) == everything
    # in-memory uuid is plain fixed_size_binary(16); the Arrow UUID extension type maps back to uuid
    uuid_field = pa.field("u", pa.uuid(), metadata={FIELD_ID_KEY: b"1"})
    assert arrow_to_schema(pa.schema([uuid_field])).find_type(1) == UUIDType()


def test_arrow_to_schema_names_field_without_id() -> None:
    arrow = pa.schema([pa.field("a", pa.struct([pa.field("b", pa.int32())]), metadata={FIELD_ID_KEY: b"1"})])
    with pytest.raises(ValidationError, match=r"'a\.b' has no field id"):
        arrow_to_schema(arrow)


@pytest.mark.parametrize(
    ("arrow_schema", "message"),
    [
        (pa.schema([("s", pa.struct([("x", pa.int32())]))]), "required column 'id' is missing"),
        (pa.schema([("id", pa.int64()), ("extra", pa.int32())]), "column 'extra' is not in the table schema"),
        (pa.schema([("id", pa.string())]), "column 'id': cannot write Arrow type string"),
        (pa.schema([("id", pa.int64()), ("s", pa.struct([("x", pa.int64())]))]), r"column 's\.x'"),
        (pa.schema([("id", pa.int64()), ("s", pa.struct([("q", pa.int32())]))]), r"column 's\.q' is not in"),
        (pa.schema([("id", pa.int64()), ("l", pa.list_(pa.string()))]), r"column 'l\.element'"),
        (pa.schema([("id", pa.int64()), ("m", pa.map_(pa.string(), pa.string()))]), r"column 'm\.value'"),
        (pa.schema([("id", pa.float64())]), "column 'id'"),
    ],
)
def test_check_arrow_compatible_names_the_column(arrow_schema: pa.Schema, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        check_arrow_compatible(NESTED, arrow_schema)


def test_check_arrow_compatible_accepts_safe_promotions() -> None:
    schema = Schema(
        NestedField(1, "i", LongType()),
        NestedField(2, "f", DoubleType()),
        NestedField(3, "s", StringType()),
        NestedField(4, "b", BinaryType()),
        NestedField(5, "ts", TimestampType()),
        NestedField(6, "d", DecimalType(10, 2)),
        NestedField(7, "l", ListType(8, LongType())),
        NestedField(9, "n", StringType()),
    )
    arrow = pa.schema(
        [
            ("i", pa.int32()),
            ("f", pa.float32()),
            ("s", pa.large_string()),
            ("b", pa.large_binary()),
            ("ts", pa.timestamp("ms")),
            ("d", pa.decimal128(5, 2)),
            ("l", pa.large_list(pa.int16())),
            ("n", pa.null()),
        ]
    )
    check_arrow_compatible(schema, arrow)


def test_timestamp_zone_mismatch_has_a_hint() -> None:
    schema = Schema(NestedField(1, "t", TimestamptzType()))
    with pytest.raises(ValidationError, match="give the Arrow timestamps a time zone"):
        check_arrow_compatible(schema, pa.schema([("t", pa.timestamp("us"))]))
    check_arrow_compatible(schema, pa.schema([("t", pa.timestamp("s", tz="Europe/Paris"))]))
    with pytest.raises(ValidationError, match="lose precision"):
        check_arrow_compatible(
            Schema(NestedField(1, "t", TimestampType())), pa.schema([("t", pa.timestamp("ns"))])
        )


def test_check_required_no_nulls() -> None:
    table = to_table_schema(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "s": pa.array([{"x": 1, "y": "a"}, None], pa.struct([("x", pa.int32()), ("y", pa.string())])),
            }
        ),
        NESTED,
    )
    check_required_no_nulls(NESTED, table)  # x is null only where its optional parent is null
    bad_child = table.set_column(
        1, "s", pa.array([{"x": None, "y": "a"}, None], pa.struct([("x", pa.int32()), ("y", pa.string())]))
    )
    with pytest.raises(ValidationError, match=r"column 's\.x' is required but has 1 null"):
        check_required_no_nulls(NESTED, bad_child)
    bad_top = table.set_column(0, "id", pa.array([1, None], pa.int64()))
    with pytest.raises(ValidationError, match="column 'id' is required but has 1 null"):
        check_required_no_nulls(NESTED, bad_top)
    bad_elem = table.set_column(2, "l", pa.array([[None], None], pa.list_(pa.date32())))
    with pytest.raises(ValidationError, match=r"column 'l\.element' is required"):
        check_required_no_nulls(NESTED, bad_elem)


def test_to_table_schema_casts_reorders_and_fills() -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "score", DoubleType(), write_default=1.5),
        NestedField(
            4,
            "p",
            StructType(
                NestedField(5, "x", IntegerType()), NestedField(6, "day", DateType(), write_default=3)
            ),
        ),
        NestedField(7, "tags", ListType(8, StringType())),
        NestedField(9, "attrs", MapType(10, StringType(), 11, LongType())),
        NestedField(12, "amount", DecimalType(12, 2)),
    )
    user = pa.table(
        {
            "amount": pa.array([Decimal("1.50"), None], pa.decimal128(4, 2)),
            "attrs": pa.array([[("k", 1)], None], pa.map_(pa.large_string(), pa.int32())),
            "tags": pa.array([["a", "b"], []], pa.large_list(pa.large_string())),
            "p": pa.array([{"x": 7}, None], pa.struct([("x", pa.int8())])),
            "id": pa.array([10, 11], pa.int32()),
        }
    )
    check_arrow_compatible(schema, user.schema)
    out = to_table_schema(user, schema)
    assert out.schema.equals(schema_to_arrow(schema), check_metadata=True)
    assert out.to_pylist() == [
        {
            "id": 10,
            "name": None,
            "score": 1.5,
            "p": {"x": 7, "day": dt.date(1970, 1, 4)},
            "tags": ["a", "b"],
            "attrs": [("k", 1)],
            "amount": Decimal("1.50"),
        },
        {"id": 11, "name": None, "score": 1.5, "p": None, "tags": [], "attrs": None, "amount": None},
    ]


def test_to_table_schema_rejects_missing_required_and_extra() -> None:
    with pytest.raises(ValidationError, match="required column 'id' is missing"):
        to_table_schema(pa.table({"s": pa.array([None], pa.null())}), NESTED)
    with pytest.raises(ValidationError, match="column 'zzz' is not in the table schema"):
        to_table_schema(pa.table({"id": [1], "zzz": [1]}), NESTED)


def test_to_table_schema_handles_sliced_and_chunked_input() -> None:
    s = pa.array([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c"}])
    l_ = pa.array([[1], [2, 3], [4]], pa.list_(pa.int32())).cast(pa.list_(pa.date32()))
    ids = pa.array([1, 2, 3], pa.int64())
    batch = pa.record_batch([ids, s, l_], names=["id", "s", "l"])
    table = pa.Table.from_batches([batch.slice(1), batch.slice(0, 1)])
    table = table.set_column(
        1, "s", table.column("s").cast(pa.struct([("x", pa.int32()), ("y", pa.string())]))
    )
    out = to_table_schema(table, NESTED)
    assert out.column("id").to_pylist() == [2, 3, 1]
    assert out.column("s").to_pylist() == [{"x": 2, "y": "b"}, {"x": 3, "y": "c"}, {"x": 1, "y": "a"}]
    assert out.column("l").to_pylist() == [
        [dt.date(1970, 1, 3), dt.date(1970, 1, 4)],
        [dt.date(1970, 1, 5)],
        [dt.date(1970, 1, 2)],
    ]


def test_to_table_schema_sliced_nested_with_nulls() -> None:
    schema = Schema(
        NestedField(1, "st", StructType(NestedField(2, "x", IntegerType()))),
        NestedField(3, "l", ListType(4, IntegerType())),
        NestedField(5, "m", MapType(6, StringType(), 7, IntegerType())),
    )
    rows = [
        {"st": {"x": 1}, "l": [1], "m": [("a", 1)]},
        {"st": None, "l": None, "m": None},
        {"st": {"x": 3}, "l": [3, 4], "m": [("b", 2), ("c", 3)]},
        {"st": None, "l": None, "m": None},
    ]
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema, include_field_ids=False))
    for offset in range(4):
        for length in range(5 - offset):
            piece = table.slice(offset, length)
            assert to_table_schema(piece, schema).to_pylist() == rows[offset : offset + length]


def test_internal_values_of_nested_columns_with_only_nulls() -> None:
    """A struct, list or map column of only nulls is a null array of the target type, as any other."""
    schema = Schema(
        NestedField(1, "s", StructType(NestedField(2, "a", LongType(), required=True)), required=False),
        NestedField(3, "l", ListType(4, StringType(), element_required=True), required=False),
        NestedField(5, "m", MapType(6, IntegerType(), 7, LongType(), value_required=True), required=False),
    )
    arrow = schema_to_arrow(schema)
    for field in schema.fields:
        target = arrow.field(field.name).type
        nulls = internal_to_arrow(field.field_type, [None, None], target)
        assert nulls.type == target and nulls.to_pylist() == [None, None]
    values = [None, {2: 7}], [None, ["x"]], [None, {1: 2}]
    got = [
        internal_to_arrow(f.field_type, v, arrow.field(f.name).type).to_pylist()
        for f, v in zip(schema.fields, values, strict=True)
    ]
    assert got == [[None, {"a": 7}], [None, ["x"]], [None, [(1, 2)]]]


def test_the_arrow_schema_follows_every_schema_change_never_a_cached_one() -> None:
    base = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))
    assert schema_to_arrow(base) is schema_to_arrow(base)  # made once
    evolved = [
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType())),
        Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType())),
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(3, "s", StringType())),
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType(), doc="d")),
        Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", BinaryType())),
        Schema(
            NestedField(1, "id", LongType(), required=True),
            NestedField(2, "s", StringType()),
            NestedField(3, "n", IntegerType()),
        ),
    ]
    for schema in evolved:
        fresh = pa.schema([_fresh_field(f) for f in schema.fields])
        assert schema_to_arrow(base).equals(schema_to_arrow(base), check_metadata=True)
        assert schema_to_arrow(schema).equals(fresh, check_metadata=True)
        assert not schema_to_arrow(schema).equals(schema_to_arrow(base), check_metadata=True)


def test_a_schema_with_an_unhashable_default_still_converts() -> None:
    point = StructType(NestedField(3, "x", IntegerType()))
    schema = Schema(NestedField(1, "p", point, write_default={3: 1}))
    with pytest.raises(TypeError):
        hash(schema)
    assert schema_to_arrow(schema).field("p").type == pa.struct([pa.field("x", pa.int32())])


def _fresh_field(f: NestedField) -> pa.Field:
    metadata = {FIELD_ID_KEY: str(f.field_id).encode()}
    if f.doc:
        metadata[b"doc"] = f.doc.encode()
    arrow_type = {LongType(): pa.int64(), StringType(): pa.string(), BinaryType(): pa.binary()}.get(
        f.field_type, pa.int32()
    )
    return pa.field(f.name, arrow_type, not f.required, metadata)
