"""Iceberg's Spark SQL functions: ``system.iceberg_version()``, ``system.bucket(n, c)``,
``system.truncate(w, c)``, ``system.years / months / days / hours(c)``.

Iceberg names them in its catalog's ``system`` namespace (``system.bucket(16, id)`` once the
catalog is current, ``icefloe.system.bucket(16, id)`` always). icefloe rewrites each call into a
call of an Arrow UDF it registers in the session, which applies the spec's transform to the whole
argument column (``formats.partition_arrow.transform_array``: the same code that partitions
icefloe's own writes), so the values are the partition values Iceberg computes. Result types are
Iceberg's: ``bucket``, ``years``, ``months``, ``hours`` give ``int``, ``days`` gives ``date``,
``truncate`` the argument's type (found by letting Spark analyse the argument),
``iceberg_version`` a string (icefloe's version). Width and bucket count must be literals, as in
Iceberg.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from icefloe import __version__
from icefloe.errors import ValidationError
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import to_sql
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

ICEBERG_FUNCTIONS = ("iceberg_version", "bucket", "truncate", "years", "months", "days", "hours")
_TIME_TRANSFORMS: dict[str, tuple[Transform, str]] = {
    "years": (YearTransform(), "int"),
    "months": (MonthTransform(), "int"),
    "days": (DayTransform(), "date"),
    "hours": (HourTransform(), "int"),
}
_UDF_PREFIX = "__icefloe_"
_REGISTERED: dict[int, set[str]] = {}


def rewrite_iceberg_functions(ctx: SqlContext, tree: exp.Expr) -> None:
    """Replace every call of an Iceberg function in ``tree`` by what computes it (inner calls first)."""
    calls = [dot for dot in tree.find_all(exp.Dot) if _function_name(ctx, dot) is not None]
    for dot in reversed(calls):  # pre-order reversed: an argument's calls are replaced before its own
        name = _function_name(ctx, dot)
        assert name is not None
        call = dot.expression
        args = list(call.expressions)
        replacement = _replacement(ctx, dot, name, args)
        if isinstance(dot.parent, exp.Select) and dot.arg_key == "expressions":
            replacement = exp.alias_(replacement, to_sql(dot), quoted=True)  # the column is named as typed
        dot.replace(replacement)


def _function_name(ctx: SqlContext, dot: exp.Dot) -> str | None:
    """The Iceberg function a ``system.f(...)`` / ``<catalog>.system.f(...)`` node calls, else None."""
    call = dot.expression
    if not isinstance(call, exp.Anonymous) or str(call.this).lower() not in ICEBERG_FUNCTIONS:
        return None
    path = [p.name.lower() for p in dot.this.find_all(exp.Identifier)] if dot.this else []
    if path == ["system"] or path == [ctx.name.lower(), "system"]:
        return str(call.this).lower()
    return None


def _replacement(ctx: SqlContext, dot: exp.Dot, name: str, args: list[exp.Expr]) -> exp.Expr:
    if name == "iceberg_version":
        _arity(name, args, 0)
        return exp.Literal.string(__version__)
    if name in _TIME_TRANSFORMS:
        _arity(name, args, 1)
        transform, result = _TIME_TRANSFORMS[name]
        return _udf_call(ctx, name, transform, result, args)
    _arity(name, args, 2)
    number = _positive_literal(name, args[0])
    if name == "bucket":
        return _udf_call(ctx, f"bucket_{number}", BucketTransform(number), "int", [args[1]])
    spark_type = _argument_type(ctx, dot, args[1])
    suffix = re.sub(r"\W", "_", spark_type.simpleString())
    return _udf_call(ctx, f"truncate_{number}_{suffix}", TruncateTransform(number), spark_type, [args[1]])


def _arity(name: str, args: list[exp.Expr], wanted: int) -> None:
    if len(args) != wanted:
        raise ValidationError(f"system.{name} takes {wanted} argument(s), got {len(args)}")


def _positive_literal(name: str, arg: exp.Expr) -> int:
    if not isinstance(arg, exp.Literal) or arg.is_string or not str(arg.this).isdigit() or int(arg.this) <= 0:
        what = "number of buckets" if name == "bucket" else "width"
        raise ValidationError(
            f"system.{name}: the {what} must be a positive integer literal, not {to_sql(arg)}"
        )
    return int(arg.this)


def _argument_type(ctx: SqlContext, dot: exp.Dot, arg: exp.Expr) -> DataType:
    """The Spark type of ``arg``, by letting Spark analyse it over the FROM clause of its SELECT."""
    select = dot.find_ancestor(exp.Select)
    if select is None or select.args.get("from_") is None:
        probe = exp.select(exp.alias_(arg.copy(), "v"))
    else:
        probe = exp.Select(
            expressions=[exp.alias_(arg.copy(), "v")],
            from_=select.args["from_"].copy(),
            joins=[j.copy() for j in select.args.get("joins") or []],
        )
        ctes = _visible_ctes(select)
        if ctes:
            probe.set("with_", exp.With(expressions=ctes))
    return ctx.spark.sql(to_sql(probe)).schema.fields[0].dataType


def _visible_ctes(node: exp.Expr) -> list[exp.Expr]:
    """Copies of the CTEs ``node`` can name: its own WITH and its ancestors', outermost first."""
    found: list[exp.Expr] = []
    scope: exp.Expr | None = node
    while scope is not None:
        with_ = scope.args.get("with_")
        if isinstance(with_, exp.With):
            found = [cte.copy() for cte in with_.expressions] + found
        scope = scope.parent
    return found


def _udf_call(
    ctx: SqlContext, key: str, transform: Transform, result: str | DataType, args: list[exp.Expr]
) -> exp.Expr:
    """A call of the session's Arrow UDF applying ``transform`` (registered on first use)."""
    name = _UDF_PREFIX + key
    registered = _REGISTERED.setdefault(id(ctx.spark), set())
    if name not in registered:
        ctx.spark.udf.register(name, _arrow_udf(transform, result))
        registered.add(name)
    return exp.Anonymous(this=name, expressions=[a.copy() for a in args])


def _arrow_udf(transform: Transform, result: str | DataType) -> Any:
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.util import PythonEvalType

    from icefloe.spark.workers import require_icefloe_on_workers

    require_icefloe_on_workers(SparkSession.getActiveSession())
    apply = _column_transform(transform)
    with warnings.catch_warnings():  # "prefer type hints": hints cannot name pyarrow types lazily
        warnings.simplefilter("ignore", UserWarning)
        return arrow_udf(apply, result, PythonEvalType.SQL_SCALAR_ARROW_UDF)


def _column_transform(transform: Transform) -> Callable[[pa.Array], pa.Array]:
    """The function the UDF runs: the spec transform over one Arrow batch of the argument."""

    def apply(values: pa.Array) -> pa.Array:
        from icefloe.formats.arrow_schema import arrow_type_to_iceberg
        from icefloe.formats.partition_arrow import transform_array

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        small = pa.types.is_int8(values.type) or pa.types.is_int16(values.type)
        source = values.cast(pa.int32()) if small else values  # tinyint / smallint compute as int
        source_type = arrow_type_to_iceberg(source.type)
        if not transform.can_transform(source_type):
            raise ValidationError(f"Iceberg's {transform} cannot be applied to {values.type} values")
        out = transform_array(transform, source_type, source)
        return out.cast(values.type) if isinstance(transform, TruncateTransform) else out

    return apply
