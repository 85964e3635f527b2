"""Binding: name resolution, literal conversion to the internal representation, simplifications."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest

from icefloe.errors import ValidationError
from icefloe.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Op,
    bind,
    col,
    evaluate,
    parse,
    referenced_field_ids,
    unbind,
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
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
DAY_US = 86_400_000_000

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "f", FloatType()),
    NestedField(4, "dbl", DoubleType()),
    NestedField(5, "dec", DecimalType(9, 2)),
    NestedField(6, "d", DateType()),
    NestedField(7, "t", TimeType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tz", TimestamptzType()),
    NestedField(10, "ns", TimestampNanoType()),
    NestedField(11, "s", StringType()),
    NestedField(12, "u", UUIDType()),
    NestedField(13, "fx", FixedType(2)),
    NestedField(14, "bin", BinaryType()),
    NestedField(15, "b", BooleanType()),
    NestedField(
        16,
        "st",
        StructType(NestedField(17, "x", IntegerType(), required=True), NestedField(18, "Y", StringType())),
        required=True,
    ),
    NestedField(19, "opt", StructType(NestedField(20, "z", IntegerType(), required=True))),
    NestedField(21, "tags", ListType(22, StringType())),
    NestedField(23, "unk", UnknownType()),
)


def bound(text_or_expr: str | Expression, case_sensitive: bool = True) -> Expression:
    expr = parse(text_or_expr) if isinstance(text_or_expr, str) else text_or_expr
    return bind(SCHEMA, expr, case_sensitive)


def leaf(text_or_expr: str | Expression) -> BoundPredicate:
    out = bound(text_or_expr)
    assert isinstance(out, BoundPredicate), out
    return out


@pytest.mark.parametrize(
    ("expr", "literal"),
    [
        (col("id") == 5, 5),
        (col("id") == "5", 5),
        (col("i") == Decimal("7.00"), 7),
        (col("f") == 0.5, 0.5),
        (col("f") == 1, 1.0),
        (col("dbl") == Decimal("0.1"), 0.1),
        (col("dec") == Decimal("12.5"), Decimal("12.50")),
        (col("dec") == 12, Decimal("12.00")),
        (col("dec") == 0.1, Decimal("0.10")),
        (col("dec") == "-3.25", Decimal("-3.25")),
        (col("d") == "2024-01-02", 19724),
        (col("d") == dt.date(2024, 1, 2), 19724),
        (col("d") == dt.datetime(2024, 1, 2), 19724),
        (col("d") == 19724, 19724),
        (col("t") == "10:00:00", 36_000_000_000),
        (col("t") == dt.time(0, 0, 1), 1_000_000),
        (col("ts") == "2024-01-02T10:00:00", 19724 * DAY_US + 36_000_000_000),
        (col("ts") == dt.datetime(2024, 1, 2, 10), 19724 * DAY_US + 36_000_000_000),
        (col("tz") == "2024-01-02T12:00:00+02:00", 19724 * DAY_US + 36_000_000_000),
        (col("tz") == "2024-01-02T10:00:00", 19724 * DAY_US + 36_000_000_000),
        (col("ns") == "1970-01-01T00:00:00.000000001", 1),
        (col("ns") == dt.datetime(1970, 1, 1, 0, 0, 0, 2), 2000),
        (col("s") == "abc", "abc"),
        (col("u") == str(U), U),
        (col("u") == U, U),
        (col("fx") == b"ab", b"ab"),
        (col("bin") == b"\x00", b"\x00"),
        (col("b") == True, True),  # noqa: E712
        (col("b") == "false", False),
    ],
    ids=lambda x: str(x),
)
def test_literal_conversion(expr: Expression, literal: Any) -> None:
    pred = leaf(expr)
    assert pred.op is Op.EQ
    assert pred.literal == literal
    assert type(pred.literal) is type(literal)


def test_bound_reference_details() -> None:
    pred = leaf("st.x > 1")
    assert pred.ref.field_id == 17
    assert pred.ref.name == "st.x"
    assert pred.ref.path == ("st", "x")
    assert pred.ref.positions == (15, 0)
    assert pred.ref.required is True
    assert pred.ref.field_type == IntegerType()
    row: list[Any] = [None] * 20
    row[15] = (3, "q")
    assert pred.ref.eval(row) == 3
    assert evaluate(pred, row) is True


def test_case_insensitive_binding_uses_schema_names() -> None:
    with pytest.raises(ValidationError, match=r"'ST\.y'"):
        bound("ST.y = 'a'")
    pred = bound("ST.y = 'a'", case_sensitive=False)
    assert isinstance(pred, BoundPredicate)
    assert pred.ref.name == "st.Y"
    assert pred.ref.field_id == 18


def test_null_tests_on_required_fields_simplify() -> None:
    assert bound("id is null") == AlwaysFalse()
    assert bound("id is not null") == AlwaysTrue()
    assert bound("st.x is null") == AlwaysFalse()
    # a required field inside an optional struct can still be null
    assert leaf("opt.z is null").op is Op.IS_NULL
    assert leaf("opt is not null").op is Op.NOT_NULL
    assert bound("not (id is null) and i = 1") == leaf("i = 1")


def test_out_of_range_and_inexact_literals() -> None:
    assert bound("i < 3000000000") == leaf("i is not null")
    assert bound("i <= 3000000000") == leaf("i is not null")
    assert bound("i > 3000000000") == AlwaysFalse()
    assert bound("i = 3000000000") == AlwaysFalse()
    assert bound("i != 3000000000") == leaf("i is not null")
    assert bound("i > -3000000000") == leaf("i is not null")
    assert bound("i < -3000000000") == AlwaysFalse()
    assert bound("id < 1e30") == AlwaysTrue()  # required: IS NOT NULL is always true
    assert leaf("i < 1.5") == leaf("i <= 1")
    assert leaf("i <= 1.5") == leaf("i <= 1")
    assert leaf("i > 1.5") == leaf("i >= 2")
    assert leaf("i >= -1.5") == leaf("i >= -1")
    assert bound("i = 1.5") == AlwaysFalse()
    assert leaf("i != 1.5") == leaf("i is not null")
    assert leaf("dec < 1.555") == leaf("dec <= 1.55")
    assert leaf("dec > 1.555") == leaf("dec >= 1.56")
    assert bound("dec > 10000000") == AlwaysFalse()
    assert leaf("d < '2024-01-02T10:00:00'") == leaf("d <= '2024-01-02'")
    assert leaf("d > '2024-01-02T10:00:00'") == leaf("d >= '2024-01-03'")
    assert bound("d = '2024-01-02T10:00:00'") == AlwaysFalse()
    assert leaf("ts < '2024-01-02T10:00:00.000000500'") == leaf("ts <= '2024-01-02T10:00:00'")


def test_set_predicates() -> None:
    pred = leaf("i in (1, 2, 2.0, 2.5)")
    assert pred.op is Op.IN and pred.literals == frozenset({1, 2})
    assert leaf("i in (1)") == leaf("i = 1")
    assert leaf("i in (1, 1.5)") == leaf("i = 1")
    assert leaf("i not in (1, 1.5)") == leaf("i != 1")
    assert bound("i in (1.5, 3000000000)") == AlwaysFalse()
    assert bound("i not in (1.5)") == leaf("i is not null")
    assert leaf("d in ('2024-01-02', '2024-01-03')").literals == frozenset({19724, 19725})


def test_binding_errors_name_column_and_value() -> None:
    with pytest.raises(ValidationError, match="'nope'"):
        bound("nope = 1")
    with pytest.raises(ValidationError, match=r"'i' \(int\).*'abc'"):
        bound("i = 'abc'")
    with pytest.raises(ValidationError, match=r"'d'.*'2024-13-01'"):
        bound("d = '2024-13-01'")
    with pytest.raises(ValidationError, match=r"'s'.*5"):
        bound("s = 5")
    with pytest.raises(ValidationError, match="'fx'"):
        bound(col("fx") == b"abc")
    with pytest.raises(ValidationError, match="'i' is int"):
        bound("i is nan")
    with pytest.raises(ValidationError, match="'d'"):
        bound("d like 'a%'")
    with pytest.raises(ValidationError, match="'st'"):
        bound("st = 1")
    with pytest.raises(ValidationError, match="lists and maps"):
        bound("tags.element = 'a'")
    with pytest.raises(ValidationError, match="'u'"):
        bound("u = 'not-a-uuid'")
    with pytest.raises(ValidationError, match="NaN"):
        bound(col("dbl") == "nan")


def test_nan_tests_and_unknown_columns() -> None:
    assert leaf("f is nan").op is Op.IS_NAN
    assert leaf("dbl is not nan").op is Op.NOT_NAN
    assert bound("unk is null") == AlwaysTrue()
    assert bound("unk is not null") == AlwaysFalse()
    assert bound("unk = 5") == AlwaysFalse()
    assert bound("unk is not nan") == AlwaysTrue()


def test_not_is_kept_and_unbind_round_trips() -> None:
    b = bound("not (i = 1 and d >= '2024-01-02')")
    assert unbind(b) == parse("not (i = 1 and d >= '2024-01-02')")
    assert referenced_field_ids(b) == {2, 6}
    assert bound(unbind(b)) == b
    assert str(b) == "NOT (i = 1 AND d >= '2024-01-02')"


def test_bound_expressions_pass_through() -> None:
    b = bound("i = 1")
    assert bind(SCHEMA, And(b, col("s") == "x")) == And(b, leaf("s = 'x'"))


def test_row_evaluation_sql_semantics() -> None:
    row: list[Any] = [None] * 20
    assert evaluate(bound("i != 1"), row) is False
    assert evaluate(bound("i not in (1, 2)"), row) is False
    assert evaluate(bound("s not like 'a%'"), row) is False
    assert evaluate(bound("not (i = 1)"), row) is False
    assert evaluate(bound("dbl is not nan"), row) is True
    assert evaluate(bound("dbl is nan"), row) is False
    row[3] = float("nan")
    assert evaluate(bound("dbl is nan"), row) is True
    assert evaluate(bound("dbl > 1"), row) is False
    assert evaluate(bound("not (dbl is nan)"), row) is False
