"""Unit tests of the filter_expr visitor and its SQL / PyIceberg / Arrow builders."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from tests.support.filter_expr import (
    SqlBuilder,
    convert,
    filter_columns,
    filter_expr_to_pyiceberg,
    filter_expr_to_sql,
    filter_expr_walk,
    filter_table,
    sql_where,
)

EXPR = {
    "and": [
        {"op": ">=", "col": "id", "value": 30},
        {"or": [{"op": "is_null", "col": "name"}, {"not": {"op": "in", "col": "s.a", "values": [1, 2]}}]},
    ]
}


class Recorder:
    """A builder that spells the tree as nested tuples (shows the visitor's calls)."""

    def and_(self, operands: list[Any]) -> Any:
        """Record and."""
        return ("and", *operands)

    def or_(self, operands: list[Any]) -> Any:
        """Record or."""
        return ("or", *operands)

    def not_(self, operand: Any) -> Any:
        """Record not."""
        return ("not", operand)

    def compare(self, op: str, column: str, value: Any) -> Any:
        """Record compare."""
        return (op, column, value)

    def in_(self, column: str, values: list[Any]) -> Any:
        """Record in."""
        return ("in", column, tuple(values))

    def not_in(self, column: str, values: list[Any]) -> Any:
        """Record not_in."""
        return ("not_in", column, tuple(values))

    def is_null(self, column: str) -> Any:
        """Record is_null."""
        return ("is_null", column)

    def not_null(self, column: str) -> Any:
        """Record not_null."""
        return ("not_null", column)


def test_convert_calls_builder_bottom_up() -> None:
    """The visitor calls one builder method per node, children first."""
    assert convert(EXPR, Recorder()) == (
        "and",
        (">=", "id", 30),
        ("or", ("is_null", "name"), ("not", ("in", "s.a", (1, 2)))),
    )
    assert convert(None, Recorder()) is None
    assert convert({"and": [{"op": "<>", "col": "x", "value": 1}]}, Recorder()) == ("!=", "x", 1)


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "~", "col": "x", "value": 1},
        {"op": "=", "col": "x"},
        {"and": []},
        {"op": "is_nan", "col": "x"},  # Recorder has no is_nan
        ["not", "a", "dict"],
    ],
)
def test_convert_rejects_malformed(bad: Any) -> None:
    """Malformed nodes and ops the builder lacks raise ValueError."""
    with pytest.raises(ValueError):
        convert(bad, Recorder())


def test_walk_and_columns() -> None:
    """Leaves come left to right; referenced columns once each."""
    assert [leaf["col"] for leaf in filter_expr_walk(EXPR)] == ["id", "name", "s.a"]
    assert filter_columns({"or": [{"op": "is_null", "col": "a"}, {"op": "=", "col": "a", "value": 1}]}) == [
        "a"
    ]


def test_sql_dialects() -> None:
    """SQL text quotes identifiers per dialect and spells literals safely."""
    assert filter_expr_to_sql(EXPR) == '(("id" >= 30) AND (("name" IS NULL) OR (NOT ("s"."a" IN (1, 2)))))'
    spark = filter_expr_to_sql({"op": "=", "col": "it's", "value": "o'k"}, "spark")
    assert spark == "(`it's` = 'o''k')"
    assert SqlBuilder().literal(True) == "TRUE"
    assert SqlBuilder().literal(decimal.Decimal("1.50")) == "1.50"
    assert SqlBuilder().literal(float("nan")) == "CAST('NaN' AS DOUBLE)"
    assert sql_where(None, "duckdb") == ""
    assert sql_where("x > 1", "duckdb") == " WHERE x > 1"


def test_pyiceberg_expression() -> None:
    """PyIceberg expressions are built from the JSON form."""
    from pyiceberg.expressions import AlwaysTrue, And, GreaterThanOrEqual

    assert filter_expr_to_pyiceberg(None) == AlwaysTrue()
    built = filter_expr_to_pyiceberg(
        {"and": [{"op": ">=", "col": "id", "value": 3}, {"op": "not_null", "col": "x"}]}
    )
    assert isinstance(built, And)
    assert built.left == GreaterThanOrEqual("id", 3)


TABLE = pa.table(
    {
        "id": pa.array([1, 2, None, 4], pa.int64()),
        "cat": ["a", None, "b", "c"],
        "ts": pa.array(
            [dt.datetime(2024, 1, d, tzinfo=dt.UTC) for d in (1, 2, 3, 4)],
            pa.timestamp("us", tz="UTC"),
        ),
        "d": pa.array([dt.date(2024, 1, d) for d in (1, 2, 3, 4)], pa.date32()),
        "amount": pa.array(
            [decimal.Decimal(x) for x in ("1.50", "2.00", "3.25", "-1.00")], pa.decimal128(9, 2)
        ),
        "s": pa.array([{"a": 1}, {"a": 5}, None, {"a": None}], pa.struct([("a", pa.int32())])),
    }
)


@pytest.mark.parametrize(
    ("expr", "ids"),
    [
        ({"op": "=", "col": "id", "value": 2}, [2]),
        ({"not": {"op": "=", "col": "id", "value": 2}}, [1, 4]),  # NULL id is neither
        ({"op": "in", "col": "id", "values": [1, 4]}, [1, 4]),
        ({"op": "not_in", "col": "id", "values": [1]}, [2, 4]),  # NULL NOT IN (...) is not true
        ({"not": {"op": "in", "col": "id", "values": [1]}}, [2, 4]),
        ({"op": "is_null", "col": "id"}, [None]),
        ({"op": "!=", "col": "cat", "value": "a"}, [None, 4]),
        ({"op": ">=", "col": "ts", "value": "2024-01-03T00:00:00+00:00"}, [None, 4]),
        ({"op": "<", "col": "d", "value": "2024-01-02"}, [1]),
        ({"op": ">", "col": "amount", "value": 2}, [None]),
        ({"op": "<=", "col": "amount", "value": 1.5}, [1, 4]),
        ({"op": ">", "col": "s.a", "value": 2}, [2]),
        ({"or": [{"op": "is_null", "col": "cat"}, {"op": "=", "col": "id", "value": 1}]}, [1, 2]),
        ({"and": [{"op": "not_null", "col": "id"}, {"op": ">", "col": "id", "value": 1}]}, [2, 4]),
    ],
)
def test_arrow_filter_has_sql_semantics(expr: dict[str, Any], ids: list[int | None]) -> None:
    """The Arrow evaluation follows SQL three-valued logic and casts literals to column types."""
    assert filter_table(TABLE, expr).column("id").to_pylist() == ids


def test_arrow_filter_agrees_with_duckdb() -> None:
    """The Arrow evaluation and DuckDB's SQL agree on NULL-sensitive filters."""
    import duckdb

    exprs = [
        {"not": {"op": "in", "col": "id", "values": [1]}},
        {"op": "not_in", "col": "cat", "values": ["a"]},
        {"or": [{"op": "is_null", "col": "cat"}, {"not": {"op": ">", "col": "amount", "value": 1}}]},
        {"op": ">=", "col": "ts", "value": "2024-01-03T00:00:00+00:00"},
    ]
    con = duckdb.connect()
    con.register("t", TABLE)
    for expr in exprs:
        sql_ids = sorted(
            (r[0] for r in con.execute(f"SELECT id FROM t{sql_where(expr, 'duckdb')}").fetchall()),
            key=lambda v: (v is None, v),
        )
        arrow_ids = sorted(filter_table(TABLE, expr).column("id").to_pylist(), key=lambda v: (v is None, v))
        assert arrow_ids == sql_ids, expr
