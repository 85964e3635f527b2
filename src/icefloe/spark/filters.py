"""icefloe filter expressions <-> Spark: a Spark Column for a residual filter, and Python data
source filters turned into icefloe expressions for planning."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from icefloe.expressions.ast import AlwaysFalse, AlwaysTrue, And, Expression, Not, Op, Or
from icefloe.expressions.binding import bind
from icefloe.expressions.bound import BoundPredicate, BoundReference
from icefloe.spark.schema import spark_literal
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    TimestampType,
    TimestamptzType,
)


def to_spark_filter(schema: Schema, expr: Expression, case_sensitive: bool = True) -> Column:
    """A Spark boolean Column equivalent to ``expr`` (bound against ``schema`` first)."""
    return _convert(bind(schema, expr, case_sensitive))


def _convert(expr: Expression) -> Column:
    if isinstance(expr, AlwaysTrue):
        return F.lit(True)
    if isinstance(expr, AlwaysFalse):
        return F.lit(False)
    if isinstance(expr, And):
        return _convert(expr.left) & _convert(expr.right)
    if isinstance(expr, Or):
        return _convert(expr.left) | _convert(expr.right)
    if isinstance(expr, Not):
        return _convert(expr.child.negate())  # as the Arrow evaluator does (NaN stays unmatched)
    if isinstance(expr, BoundPredicate):
        return _predicate(expr)
    raise TypeError(f"cannot translate filter {expr!r} to Spark")


def _column(ref: BoundReference) -> Column:
    col = F.col("`" + ref.path[0].replace("`", "``") + "`")
    for part in ref.path[1:]:
        col = col.getField(part)
    return col


def _literal(t: IcebergType, value: Any) -> Column:
    if isinstance(t, DateType):
        return F.date_from_unix_date(F.lit(int(value)))
    if isinstance(t, TimestamptzType):
        return F.timestamp_micros(F.lit(int(value)))
    if isinstance(t, TimestampType):
        text = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))).isoformat(sep=" ")
        return F.lit(text).cast("timestamp_ntz")
    return F.lit(spark_literal(t, value))


def _predicate(p: BoundPredicate) -> Column:
    col = _column(p.ref)
    t = p.ref.field_type
    op = p.op
    if op is Op.IS_NULL:
        return col.isNull()
    if op is Op.NOT_NULL:
        return col.isNotNull()
    if op is Op.IS_NAN:
        return F.isnan(col)
    if op is Op.NOT_NAN:
        return ~F.isnan(col)
    if op in (Op.IN, Op.NOT_IN):
        values = [_literal(t, v) for v in sorted(p.literals or (), key=repr)]
        if not values:
            return F.lit(op is Op.NOT_IN)
        inside = col.isin(*values)
        return inside if op is Op.IN else ~inside
    lit = _literal(t, p.literal)
    if op is Op.EQ:
        return col == lit
    if op is Op.NOT_EQ:
        return col != lit
    if op is Op.LT:
        return col < lit
    if op is Op.LT_EQ:
        return col <= lit
    if op in (Op.GT, Op.GT_EQ):
        # Spark orders NaN above every value; icefloe filters follow Iceberg (and IEEE): a
        # comparison never matches NaN, so the native route agrees with the Python route.
        cmp = col > lit if op is Op.GT else col >= lit
        return cmp & ~F.isnan(col) if isinstance(t, FloatType | DoubleType) else cmp
    if op is Op.STARTS_WITH:
        return col.startswith(lit)
    if op is Op.NOT_STARTS_WITH:
        return ~col.startswith(lit)
    raise TypeError(f"cannot translate predicate {p!r} to Spark")


# ---------------------------------------------------------------------------------------------
# Python data source filters -> icefloe expressions (planning only; Spark re-applies them)


def from_datasource_filter(f: Any) -> Expression | None:
    """An icefloe expression for a ``pyspark.sql.datasource`` filter, or None if not expressible."""
    from pyspark.sql import datasource as ds

    from icefloe.expressions import ast

    def name(attr: tuple[str, ...]) -> str:
        return ".".join(attr)

    try:
        if isinstance(f, ds.EqualTo):
            return ast.EqualTo(name(f.attribute), _plain(f.value))
        if isinstance(f, ds.GreaterThan):
            return ast.GreaterThan(name(f.attribute), _plain(f.value))
        if isinstance(f, ds.GreaterThanOrEqual):
            return ast.GreaterThanOrEqual(name(f.attribute), _plain(f.value))
        if isinstance(f, ds.LessThan):
            return ast.LessThan(name(f.attribute), _plain(f.value))
        if isinstance(f, ds.LessThanOrEqual):
            return ast.LessThanOrEqual(name(f.attribute), _plain(f.value))
        if isinstance(f, ds.In):
            values = [_plain(v) for v in f.value if v is not None]
            return ast.In(name(f.attribute), values) if values else None
        if isinstance(f, ds.IsNull):
            return ast.IsNull(name(f.attribute))
        if isinstance(f, ds.IsNotNull):
            return ast.NotNull(name(f.attribute))
        if isinstance(f, ds.StringStartsWith):
            return ast.StartsWith(name(f.attribute), f.value)
        if isinstance(f, ds.Not):
            inner = from_datasource_filter(f.child)
            return None if inner is None else ast.Not(inner)
    except Exception:  # a literal icefloe cannot represent: just do not use it for planning
        return None
    return None


class _Skip(Exception):
    """A filter value whose meaning is ambiguous for planning."""


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        raise _Skip  # naive datetimes depend on the worker's time zone: do not prune with them
    return value
