"""Partition terms of SQL (``bucket(16, id)``, ``days(ts)``, ``category``) as partition-spec text."""

from __future__ import annotations

from sqlglot import exp

from icefloe.spark.statements.columns import column_path
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.parse import to_sql

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
