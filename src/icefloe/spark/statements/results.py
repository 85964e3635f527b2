"""What statements return and where they write: empty DDL results, Delta-style counts, write targets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.spark.statements.names import SqlContext, TableRef
from icefloe.spark.statements.query import table_parts
from icefloe.spec.snapshots import MAIN_BRANCH

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def empty(ctx: SqlContext) -> DataFrame:
    """The empty result of a DDL statement (as ``spark.sql`` returns)."""
    from pyspark.sql import types as T

    return ctx.spark.createDataFrame([], T.StructType([]))


def write_target(ctx: SqlContext, node: exp.Expr) -> TableRef | None:
    """The icefloe table (or branch of it) a statement writes, None for Spark's tables."""
    if not isinstance(node, exp.Table):
        return None
    parts = table_parts(node)
    ref = ctx.resolve(parts) if parts else None
    if ref is None:
        return None
    if ref.metadata_table is not None:
        raise ValidationError(f"cannot write to the metadata table {ref.name}.{ref.metadata_table}")
    if ref.tag is not None:
        raise ValidationError(f"cannot write to tag {ref.tag!r} of {ref.name}: tags are read-only")
    if node.args.get("version") is not None:
        raise ValidationError(f"cannot write to {ref.name} AS OF a version")
    return ref


def branch_of(ref: TableRef) -> str:
    """The branch a write goes to."""
    return ref.branch or MAIN_BRANCH


def counts(ctx: SqlContext, **values: int) -> DataFrame:
    """A one-row frame of counts (``num_affected_rows`` ...), as Spark's Delta reports them."""
    names = ", ".join(f"{k} bigint" for k in values)
    return ctx.spark.createDataFrame([tuple(values.values())], names)


# ------------------------------------------------------------------------------------------ INSERT
