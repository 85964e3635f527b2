"""Partition and sort terms of SQL (``bucket(16, id)``, ``days(ts)``, ``category DESC NULLS LAST``):
partition-spec text, (column, transform) pairs of a table, sort fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe.spark.statements.columns import column_path
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.parse import TokenCursor, parse_expression, to_sql
from icefloe.spec.sort_order import NullOrder, SortDirection, SortField

if TYPE_CHECKING:
    from icefloe.table.table import Table

_DATE_PARTS: dict[type[exp.Expr], str] = {
    exp.Year: "years",
    exp.Month: "months",
    exp.Day: "days",
    exp.Hour: "hours",
}


def partition_term(term: exp.Expr) -> str:
    """``bucket(16, id)``, ``days(ts)``, ``category`` as the text ``views.parse_partitioning`` reads."""
    if isinstance(term, exp.Column | exp.Identifier):
        return column_path(term)
    if isinstance(term, exp.PartitionedByBucket):
        return f"bucket({_number(term.expression)}, {_source(term.this)})"
    if isinstance(term, exp.PartitionByTruncate):
        return f"truncate({_number(term.expression)}, {_source(term.this)})"
    for cls, name in _DATE_PARTS.items():
        if isinstance(term, cls):
            return f"{name}({_source(term.this)})"
    if isinstance(term, exp.Cast) and term.to.this == exp.DataType.Type.DATE:
        return f"days({_source(term.this)})"
    if isinstance(term, exp.Anonymous):
        args = [str(a.this) if isinstance(a, exp.Literal) else _source(a) for a in term.expressions]
        return f"{str(term.this).lower()}({', '.join(args)})"
    raise UnsupportedStatement(f"the partition term {to_sql(term)}")


def _source(node: exp.Expr) -> str:
    column = node if isinstance(node, exp.Column) else node.find(exp.Column)
    if column is None:
        raise UnsupportedStatement(f"the partition source {to_sql(node)}")
    return column_path(column)


def _number(node: exp.Expr) -> int:
    if isinstance(node, exp.Literal) and not node.is_string:
        return int(node.this)
    raise UnsupportedStatement(f"the transform width {to_sql(node)}")


def transform_of(table: Table, text: str) -> tuple[str, Any]:
    """(source column, transform) of ``bucket(16, id)`` / ``days(ts)`` / ``id``."""
    from icefloe.spark.views import parse_partitioning

    term = partition_term(_partition_expression(text))
    (field,) = parse_partitioning(table.schema(), [term]).fields
    return table.schema().find_column_name(field.source_id) or "", field.transform


def _partition_expression(text: str) -> exp.Expr:
    node = parse_expression(text)
    if isinstance(node, exp.Trunc):  # truncate(w, col) reads as the numeric function
        return exp.PartitionByTruncate(this=node.args.get("decimals"), expression=node.this)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("bucket", "truncate"):
        # CREATE TABLE's parser has dedicated nodes for these; an expression parse gives a call
        width, column = node.expressions
        cls = exp.PartitionedByBucket if str(node.this).lower() == "bucket" else exp.PartitionByTruncate
        return cls(this=column, expression=width)
    return node


def sort_fields(table: Table, cursor: TokenCursor) -> list[SortField]:
    """The sort fields of an ORDER BY list (``category ASC NULLS LAST, bucket(4, id) DESC``)."""
    out = []
    while True:
        text = cursor.until(",", "ASC", "DESC", "NULLS")
        source, transform = transform_of(table, text)
        direction = SortDirection.ASC
        if cursor.accept("DESC"):
            direction = SortDirection.DESC
        else:
            cursor.accept("ASC")
        nulls = NullOrder.NULLS_FIRST if direction == SortDirection.ASC else NullOrder.NULLS_LAST
        if cursor.accept("NULLS", "FIRST"):
            nulls = NullOrder.NULLS_FIRST
        elif cursor.accept("NULLS", "LAST"):
            nulls = NullOrder.NULLS_LAST
        out.append(SortField(table.schema().find_field(source).field_id, transform, direction, nulls))
        if not cursor.accept(","):
            return out
