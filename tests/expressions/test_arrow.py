"""Arrow expressions: SQL null semantics, literal types, nested fields; agreement with row evaluation."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from icefloe.errors import ValidationError
from icefloe.expressions import Expression, bind, col, evaluate, parse
from icefloe.expressions.arrow import to_arrow_expression
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
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

U1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
U2 = uuid.UUID("00000000-0000-0000-0000-000000000001")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "s", StringType()),
    NestedField(4, "f", DoubleType()),
    NestedField(5, "g", FloatType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "d", DateType()),
    NestedField(8, "ts", TimestampType()),
    NestedField(9, "tz", TimestamptzType()),
    NestedField(10, "b", BooleanType()),
    NestedField(11, "bin", BinaryType()),
    NestedField(12, "st", StructType(NestedField(13, "x", IntegerType()))),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(2)),
    NestedField(16, "t", TimeType()),
)

NAN = float("nan")
TABLE = pa.table(
    {
        "id": pa.array([0, 1, 2, 3, 4], pa.int64()),
        "i": pa.array([1, None, 3, 4, 5], pa.int32()),
        "s": pa.array(["apple", None, "banana", "apricot", ""], pa.large_string()),
        "f": pa.array([1.5, None, NAN, -2.0, 0.0], pa.float64()),
        "g": pa.array([0.1, None, NAN, 2.0, -1.0], pa.float32()),
        "dec": pa.array(
            [Decimal("1.50"), None, Decimal("-2.25"), Decimal("10.00"), Decimal("0.01")], pa.decimal128(9, 2)
        ),
        "d": pa.array(
            [dt.date(2024, 1, 1), None, dt.date(2024, 1, 2), dt.date(2024, 1, 3), dt.date(1969, 12, 31)]
        ),
        "ts": pa.array(
            [
                dt.datetime(2024, 1, 2, 10),
                None,
                dt.datetime(2024, 1, 2, 9),
                dt.datetime(2024, 1, 3),
                dt.datetime(1970, 1, 1),
            ],
            pa.timestamp("us"),
        ),
        "tz": pa.array([0, None, 3_600_000_000, 7_200_000_000, -1], pa.timestamp("us", tz="UTC")),
        "b": pa.array([True, None, False, True, False]),
        "bin": pa.array([b"\x00", None, b"\x01\x02", b"", b"\xff"], pa.binary()),
        "st": pa.array(
            [{"x": 1}, None, {"x": None}, {"x": 4}, {"x": 5}], pa.struct([pa.field("x", pa.int32())])
        ),
        "u": pa.array([U1.bytes, None, U2.bytes, U1.bytes, U2.bytes], pa.binary(16)),
        "fx": pa.array([b"ab", None, b"cd", b"ab", b"zz"], pa.binary(2)),
        "t": pa.array([dt.time(10), None, dt.time(0), dt.time(23, 59), dt.time(12)], pa.time64("us")),
    }
)


def ids(expr: Expression | str, table: pa.Table = TABLE) -> list[int]:
    e = parse(expr) if isinstance(expr, str) else expr
    return table.filter(to_arrow_expression(e, SCHEMA)).column("id").to_pylist()


def python_ids(expr: Expression | str) -> list[int]:
    e = parse(expr) if isinstance(expr, str) else expr
    b = bind(SCHEMA, e)
    rows = _internal_rows()
    return [r[0] for r in rows if evaluate(b, r)]


def _internal_rows() -> list[tuple[Any, ...]]:
    """TABLE as tuples in the internal representation."""
    epoch = dt.date(1970, 1, 1)
    out = []
    for r in TABLE.to_pylist():
        ts = r["ts"]
        out.append(
            (
                r["id"],
                r["i"],
                r["s"],
                r["f"],
                r["g"],
                r["dec"],
                None if r["d"] is None else (r["d"] - epoch).days,
                None if ts is None else int((ts - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1)),
                None if r["tz"] is None else int(r["tz"].timestamp() * 1_000_000),
                r["b"],
                r["bin"],
                None if r["st"] is None else (r["st"]["x"],),
                None if r["u"] is None else uuid.UUID(bytes=r["u"]),
                r["fx"],
                None if r["t"] is None else (r["t"].hour * 3600 + r["t"].minute * 60) * 1_000_000,
            )
        )
    return out


CASES: list[tuple[str | Expression, list[int]]] = [
    ("i > 3", [3, 4]),
    ("i = 1", [0]),
    ("i != 1", [2, 3, 4]),
    ("not (i = 1)", [2, 3, 4]),
    ("i in (1, 3)", [0, 2]),
    ("i not in (1, 3)", [3, 4]),
    ("not (i in (1, 3))", [3, 4]),
    ("i is null", [1]),
    ("i is not null", [0, 2, 3, 4]),
    ("i < 1.5", [0]),
    ("i > 3000000000", []),
    ("i < 3000000000", [0, 2, 3, 4]),
    ("i = 1 or i is null", [0, 1]),
    ("not (i = 1 or s = 'x')", [2, 3, 4]),
    ("s = 'apple'", [0]),
    ("s like 'ap%'", [0, 3]),
    ("s not like 'ap%'", [2, 4]),
    ("s < 'b'", [0, 3, 4]),
    ("s = ''", [4]),
    ("s in ('apple', 'banana', 'x')", [0, 2]),
    ("s not in ('apple', 'x')", [2, 3, 4]),
    ("f is nan", [2]),
    ("f is not nan", [0, 1, 3, 4]),
    ("not (f is nan)", [0, 1, 3, 4]),
    ("f > 0", [0]),
    ("f != 1.5", [2, 3, 4]),
    ("f < 100", [0, 3, 4]),
    ("g = 2", [3]),
    ("g > 0.1", [0, 3]),  # float32(0.1) is slightly above the double 0.1
    ("g is nan", [2]),
    ("dec > 1.5", [3]),
    ("dec <= 0.01", [2, 4]),
    ("dec in (1.5, 10)", [0, 3]),
    ("d >= '2024-01-02'", [2, 3]),
    ("d < '1970-01-01'", [4]),
    ("d < '2024-01-02T12:00:00'", [0, 2, 4]),
    ("ts > '2024-01-02T09:30:00'", [0, 3]),
    ("ts between '2024-01-02' and '2024-01-02T23:59:59'", [0, 2]),
    ("tz >= '1970-01-01T02:00:00+01:00'", [2, 3]),
    ("tz < '1970-01-01T00:00:00Z'", [4]),
    ("b = true", [0, 3]),
    ("b != true", [2, 4]),
    ("bin = X'0102'", [2]),
    ("bin > X'00'", [2, 4]),
    ("st.x > 1", [3, 4]),
    ("st.x is null", [1, 2]),
    ("st is null", [1]),
    (col("u") == U1, [0, 3]),
    (col("u").isin([U2]), [2, 4]),
    (col("u").notin([U2, U1]), []),
    ("fx = X'6162'", [0, 3]),
    ("t >= '12:00:00'", [3, 4]),
    ("id is null", []),
    ("id is not null", [0, 1, 2, 3, 4]),
    ("true", [0, 1, 2, 3, 4]),
    ("false", []),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_arrow_filter(expr: Expression | str, expected: list[int]) -> None:
    assert ids(expr) == expected
    assert python_ids(expr) == expected


def test_bound_expression_and_dataset_scan() -> None:
    bound = bind(SCHEMA, parse("i >= 3 and s like 'a%'"))
    expr = to_arrow_expression(bound)
    assert isinstance(expr, pc.Expression)
    assert ds.dataset(TABLE).to_table(filter=expr).column("id").to_pylist() == [3]


def test_uuid_extension_column() -> None:
    table = pa.table({"id": [0, 1], "u": pa.array([U1.bytes, U2.bytes], pa.uuid())})
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(14, "u", UUIDType()))
    expr = to_arrow_expression(col("u") == str(U2), schema)
    assert table.filter(expr).column("id").to_pylist() == [1]


def test_unbound_without_schema_is_refused() -> None:
    with pytest.raises(ValidationError, match="schema"):
        to_arrow_expression(parse("i = 1"))
