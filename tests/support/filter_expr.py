"""The acceptance corpus' JSON row filters (``filter_expr``) and a visitor to turn them into any engine's.

Format (from ``cases.json`` ``check_fields.filter_expr``)::

    {"and": [e, ...]}  {"or": [e, ...]}  {"not": e}
    {"op": "=" | "!=" | "<" | "<=" | ">" | ">=", "col": "a.b", "value": v}
    {"op": "in" | "not_in", "col": c, "values": [v, ...]}
    {"op": "is_null" | "not_null", "col": c}

Accepted as well (not in the corpus today, easy for builders to support): ``"<>"`` for ``"!="``,
``is_nan`` / ``not_nan`` and ``starts_with`` / ``not_starts_with`` (with ``value``).
Literals are JSON: numbers for numeric columns (decimals too), ISO 8601 strings for dates and
timestamps (timestamptz with ``+00:00``), booleans. Nested fields are written ``a.b``.
SQL three-valued logic: a comparison with NULL is not true, and neither is its negation.

``convert(expr, builder)`` walks an expression bottom-up and calls the builder's methods (see
``FilterBuilder``); ``SqlBuilder``, ``PyIcebergBuilder`` and ``ArrowBuilder`` are ready-made builders.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

T = TypeVar("T")

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
UNARY_OPS = ("is_null", "not_null", "is_nan", "not_nan")
SET_OPS = ("in", "not_in")
PREFIX_OPS = ("starts_with", "not_starts_with")


class FilterBuilder(Protocol[T]):
    """What ``convert`` needs from an engine: one method per node kind of ``filter_expr``."""

    def and_(self, operands: list[T]) -> T:
        """Conjunction of two or more operands."""
        ...

    def or_(self, operands: list[T]) -> T:
        """Disjunction of two or more operands."""
        ...

    def not_(self, operand: T) -> T:
        """Negation (SQL NOT: NULL stays NULL)."""
        ...

    def compare(self, op: str, column: str, value: Any) -> T:
        """``column <op> value`` with op one of ``= != < <= > >=``."""
        ...

    def in_(self, column: str, values: list[Any]) -> T:
        """``column IN (values)``."""
        ...

    def not_in(self, column: str, values: list[Any]) -> T:
        """``column NOT IN (values)``."""
        ...

    def is_null(self, column: str) -> T:
        """``column IS NULL``."""
        ...

    def not_null(self, column: str) -> T:
        """``column IS NOT NULL``."""
        ...


def _require(node: dict[str, Any], key: str) -> Any:
    if key not in node:
        raise ValueError(f"filter_expr node {node!r} lacks {key!r}")
    return node[key]


def convert(expr: dict[str, Any] | None, builder: FilterBuilder[T]) -> T | None:
    """Build ``builder``'s representation of a JSON ``filter_expr`` (None stays None)."""
    if expr is None:
        return None
    if not isinstance(expr, dict):
        raise ValueError(f"filter_expr node must be an object, got {expr!r}")
    for key, method in (("and", builder.and_), ("or", builder.or_)):
        if key in expr:
            operands = expr[key]
            if not isinstance(operands, list) or not operands:
                raise ValueError(f"filter_expr {key!r} needs a non-empty list, got {operands!r}")
            built = [convert(e, builder) for e in operands]
            return built[0] if len(built) == 1 else method(built)  # type: ignore[arg-type]
    if "not" in expr:
        return builder.not_(convert(expr["not"], builder))  # type: ignore[arg-type]
    op = _require(expr, "op")
    column = _require(expr, "col")
    if op == "<>":
        op = "!="
    if op in COMPARISONS:
        return builder.compare(op, column, _require(expr, "value"))
    if op == "in":
        return builder.in_(column, list(_require(expr, "values")))
    if op == "not_in":
        return builder.not_in(column, list(_require(expr, "values")))
    if op == "is_null":
        return builder.is_null(column)
    if op == "not_null":
        return builder.not_null(column)
    if op in ("is_nan", "not_nan", "starts_with", "not_starts_with"):
        optional: Any = getattr(builder, op, None)
        if optional is None:
            raise ValueError(f"{type(builder).__name__} does not support filter op {op!r}")
        return optional(column) if op in UNARY_OPS else optional(column, _require(expr, "value"))
    raise ValueError(f"unknown filter_expr op {op!r} in {expr!r}")


def filter_expr_walk(expr: dict[str, Any] | None) -> list[dict[str, Any]]:
    """All leaf predicates of a ``filter_expr``, left to right (for collecting referenced columns)."""
    if expr is None:
        return []
    for key in ("and", "or"):
        if key in expr:
            return [leaf for e in expr[key] for leaf in filter_expr_walk(e)]
    if "not" in expr:
        return filter_expr_walk(expr["not"])
    return [expr]


def filter_columns(expr: dict[str, Any] | None) -> list[str]:
    """Distinct column names a ``filter_expr`` references, in first-use order."""
    return list(dict.fromkeys(leaf["col"] for leaf in filter_expr_walk(expr)))


# ---------------------------------------------------------------- SQL


class SqlBuilder:
    """SQL text for DuckDB, DataFusion (double-quoted identifiers) or Spark (backticks)."""

    def __init__(self, dialect: str = "duckdb") -> None:
        if dialect not in ("duckdb", "datafusion", "spark"):
            raise ValueError(f"unknown SQL dialect {dialect!r}")
        self.dialect = dialect

    def ident(self, column: str) -> str:
        """A quoted column reference; ``a.b`` is struct field access."""
        q = "`" if self.dialect == "spark" else '"'
        return ".".join(q + part.replace(q, q + q) + q for part in column.split("."))

    def literal(self, value: Any) -> str:
        """A SQL literal for a JSON value."""
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int | decimal.Decimal):
            return str(value)
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                text = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
                return f"CAST('{text}' AS DOUBLE)"
            return repr(value)
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        raise ValueError(f"no SQL literal for {value!r}")

    def and_(self, operands: list[str]) -> str:
        """Conjunction."""
        return "(" + " AND ".join(operands) + ")"

    def or_(self, operands: list[str]) -> str:
        """Disjunction."""
        return "(" + " OR ".join(operands) + ")"

    def not_(self, operand: str) -> str:
        """Negation."""
        return f"(NOT {operand})"

    def compare(self, op: str, column: str, value: Any) -> str:
        """Comparison."""
        sql_op = "<>" if op == "!=" else op
        return f"({self.ident(column)} {sql_op} {self.literal(value)})"

    def in_(self, column: str, values: list[Any]) -> str:
        """Set membership."""
        return f"({self.ident(column)} IN ({', '.join(self.literal(v) for v in values)}))"

    def not_in(self, column: str, values: list[Any]) -> str:
        """Negated set membership."""
        return f"({self.ident(column)} NOT IN ({', '.join(self.literal(v) for v in values)}))"

    def is_null(self, column: str) -> str:
        """Null test."""
        return f"({self.ident(column)} IS NULL)"

    def not_null(self, column: str) -> str:
        """Non-null test."""
        return f"({self.ident(column)} IS NOT NULL)"

    def is_nan(self, column: str) -> str:
        """NaN test."""
        return f"isnan({self.ident(column)})"

    def not_nan(self, column: str) -> str:
        """Non-NaN test."""
        return f"(NOT isnan({self.ident(column)}))"

    def starts_with(self, column: str, value: str) -> str:
        """Prefix test."""
        return f"starts_with({self.ident(column)}, {self.literal(value)})"

    def not_starts_with(self, column: str, value: str) -> str:
        """Negated prefix test."""
        return f"(NOT starts_with({self.ident(column)}, {self.literal(value)}))"


def filter_expr_to_sql(expr: dict[str, Any] | None, dialect: str = "duckdb") -> str | None:
    """A SQL boolean expression (for a WHERE clause) equivalent to ``expr``; None for no filter."""
    return convert(expr, SqlBuilder(dialect))


# ---------------------------------------------------------------- PyIceberg


class PyIcebergBuilder:
    """``pyiceberg.expressions`` objects (literals are converted by PyIceberg when binding)."""

    def __init__(self) -> None:
        from pyiceberg import expressions as ex

        self.ex: Any = ex  # pyiceberg's pydantic models confuse type checkers

    def and_(self, operands: list[Any]) -> Any:
        """Conjunction."""
        return self.ex.And(*operands)

    def or_(self, operands: list[Any]) -> Any:
        """Disjunction."""
        return self.ex.Or(*operands)

    def not_(self, operand: Any) -> Any:
        """Negation."""
        return self.ex.Not(operand)

    def compare(self, op: str, column: str, value: Any) -> Any:
        """Comparison."""
        cls = {
            "=": self.ex.EqualTo,
            "!=": self.ex.NotEqualTo,
            "<": self.ex.LessThan,
            "<=": self.ex.LessThanOrEqual,
            ">": self.ex.GreaterThan,
            ">=": self.ex.GreaterThanOrEqual,
        }[op]
        return cls(column, value)

    def in_(self, column: str, values: list[Any]) -> Any:
        """Set membership."""
        return self.ex.In(column, tuple(values))

    def not_in(self, column: str, values: list[Any]) -> Any:
        """Negated set membership."""
        return self.ex.NotIn(column, tuple(values))

    def is_null(self, column: str) -> Any:
        """Null test."""
        return self.ex.IsNull(column)

    def not_null(self, column: str) -> Any:
        """Non-null test."""
        return self.ex.NotNull(column)

    def is_nan(self, column: str) -> Any:
        """NaN test."""
        return self.ex.IsNaN(column)

    def not_nan(self, column: str) -> Any:
        """Non-NaN test."""
        return self.ex.NotNaN(column)

    def starts_with(self, column: str, value: str) -> Any:
        """Prefix test."""
        return self.ex.StartsWith(column, value)

    def not_starts_with(self, column: str, value: str) -> Any:
        """Negated prefix test."""
        return self.ex.NotStartsWith(column, value)


def filter_expr_to_pyiceberg(expr: dict[str, Any] | None) -> Any:
    """A ``pyiceberg.expressions.BooleanExpression`` for ``expr`` (AlwaysTrue for None)."""
    from pyiceberg.expressions import AlwaysTrue

    built = convert(expr, PyIcebergBuilder())
    return AlwaysTrue() if built is None else built


# ---------------------------------------------------------------- Arrow


def _field_type(schema: pa.Schema, column: str) -> pa.DataType:
    parts = column.split(".")
    typ: pa.DataType = schema.field(parts[0]).type
    for part in parts[1:]:
        typ = typ.field(part).type
    return typ


def _arrow_scalar(value: Any, typ: pa.DataType) -> pa.Scalar:
    """A scalar of ``typ`` for a JSON literal (ISO strings for dates and timestamps)."""
    if pa.types.is_decimal(typ) and not isinstance(value, decimal.Decimal):
        return pa.scalar(decimal.Decimal(str(value)), typ)
    if isinstance(value, str) and pa.types.is_date(typ):
        return pa.scalar(_dt.date.fromisoformat(value), typ)
    if isinstance(value, str) and pa.types.is_timestamp(typ):
        return pa.scalar(value).cast(typ)
    return pa.scalar(value).cast(typ)


class ArrowBuilder:
    """``pyarrow.compute.Expression`` with SQL NULL semantics, literals cast to the columns' types."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def _field(self, column: str) -> pc.Expression:
        return pc.field(*column.split("."))

    def _null_bool(self) -> pc.Expression:
        return pc.scalar(pa.scalar(None, pa.bool_()))

    def and_(self, operands: list[pc.Expression]) -> pc.Expression:
        """Conjunction (Kleene)."""
        out = operands[0]
        for e in operands[1:]:
            out = pc.and_kleene(out, e)
        return out

    def or_(self, operands: list[pc.Expression]) -> pc.Expression:
        """Disjunction (Kleene)."""
        out = operands[0]
        for e in operands[1:]:
            out = pc.or_kleene(out, e)
        return out

    def not_(self, operand: pc.Expression) -> pc.Expression:
        """Negation (NULL stays NULL)."""
        return pc.invert(operand)

    def compare(self, op: str, column: str, value: Any) -> pc.Expression:
        """Comparison (NULL operand gives NULL)."""
        f = self._field(column)
        lit = pc.scalar(_arrow_scalar(value, _field_type(self.schema, column)))
        return {
            "=": f == lit,
            "!=": f != lit,
            "<": f < lit,
            "<=": f <= lit,
            ">": f > lit,
            ">=": f >= lit,
        }[op]

    def _isin(self, column: str, values: list[Any]) -> pc.Expression:
        typ = _field_type(self.schema, column)
        value_set = pa.array([_arrow_scalar(v, typ).as_py() for v in values], typ)
        f = self._field(column)
        return pc.if_else(pc.is_null(f), self._null_bool(), pc.is_in(f, value_set=value_set))

    def in_(self, column: str, values: list[Any]) -> pc.Expression:
        """Set membership (NULL for a NULL value)."""
        return self._isin(column, values)

    def not_in(self, column: str, values: list[Any]) -> pc.Expression:
        """Negated set membership (NULL for a NULL value)."""
        return pc.invert(self._isin(column, values))

    def is_null(self, column: str) -> pc.Expression:
        """Null test (NaN is not null)."""
        return pc.is_null(self._field(column))

    def not_null(self, column: str) -> pc.Expression:
        """Non-null test."""
        return pc.is_valid(self._field(column))

    def is_nan(self, column: str) -> pc.Expression:
        """NaN test."""
        return pc.is_nan(self._field(column))

    def not_nan(self, column: str) -> pc.Expression:
        """Non-NaN test."""
        return pc.invert(pc.is_nan(self._field(column)))

    def starts_with(self, column: str, value: str) -> pc.Expression:
        """Prefix test."""
        return pc.starts_with(self._field(column), pattern=value)

    def not_starts_with(self, column: str, value: str) -> pc.Expression:
        """Negated prefix test."""
        return pc.invert(pc.starts_with(self._field(column), pattern=value))


def filter_table(table: pa.Table, expr: dict[str, Any] | None) -> pa.Table:
    """Rows of ``table`` for which ``expr`` is true (SQL semantics); the whole table for None."""
    built = convert(expr, ArrowBuilder(table.schema))
    return table if built is None else table.filter(built)


def sql_where(expr: dict[str, Any] | str | None, dialect: str) -> str:
    """`` WHERE ...`` for a ``filter_expr`` dict or raw SQL text; empty for no filter."""
    text = expr if isinstance(expr, str) or expr is None else filter_expr_to_sql(expr, dialect)
    return f" WHERE {text}" if text else ""


__all__: Sequence[str] = (
    "ArrowBuilder",
    "FilterBuilder",
    "PyIcebergBuilder",
    "SqlBuilder",
    "convert",
    "filter_columns",
    "filter_expr_to_pyiceberg",
    "filter_expr_to_sql",
    "filter_expr_walk",
    "filter_table",
    "sql_where",
)
