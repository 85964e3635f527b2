"""Column definitions of SQL (sqlglot ``ColumnDef``) as Iceberg fields and types."""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.spark.statements.parse import to_sql
from icefloe.spec.schema import Schema
from icefloe.spec.types import IcebergType, NestedField


def spark_type(kind: exp.Expr) -> object:
    """The Spark DataType of a SQL type."""
    from pyspark.sql import types as T

    text = to_sql(kind)
    try:
        return T._parse_datatype_string(text)
    except Exception as exc:  # pyspark raises several kinds for a bad type string
        raise ValidationError(f"unknown column type {text}: {exc}") from None


def iceberg_type(kind: exp.Expr) -> IcebergType:
    """The Iceberg type of a SQL type (``BIGINT``, ``STRUCT<a: INT>``, ``DECIMAL(9, 2)`` ...)."""
    from pyspark.sql import types as T

    from icefloe.spark.schema import to_iceberg_schema

    struct = T.StructType([T.StructField("x", spark_type(kind), True)])  # type: ignore[arg-type]
    return to_iceberg_schema(struct).fields[0].field_type


def not_null(col: exp.ColumnDef) -> bool:
    """Whether the definition says NOT NULL."""
    return any(isinstance(c.kind, exp.NotNullColumnConstraint) for c in col.constraints)


def comment(col: exp.ColumnDef) -> str | None:
    """The COMMENT of a column definition."""
    for c in col.constraints:
        if isinstance(c.kind, exp.CommentColumnConstraint):
            return str(c.kind.this.this)
    return None


def schema_of(columns: list[exp.ColumnDef]) -> Schema:
    """An Iceberg schema for column definitions (ids in order; the catalog reassigns them)."""
    from pyspark.sql import types as T

    from icefloe.spark.schema import to_iceberg_schema

    fields = []
    for col in columns:
        if col.args.get("kind") is None:
            raise ValidationError(f"column {col.name!r} needs a type")
        fields.append(T.StructField(col.name, spark_type(col.args["kind"]), not not_null(col)))  # type: ignore[arg-type]
    schema = to_iceberg_schema(T.StructType(fields))
    docs = [comment(c) for c in columns]
    out = [
        dataclasses.replace(f, doc=doc) if doc is not None else f
        for f, doc in zip(schema.fields, docs, strict=True)
    ]
    return Schema(*out)


def column_path(node: exp.Expr) -> str:
    """A (possibly nested) column name as a dotted path: ``point.x``."""
    if isinstance(node, exp.Identifier):
        return str(node.this)
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    if isinstance(node, exp.Dot):
        return f"{column_path(node.this)}.{column_path(node.expression)}"
    raise ValidationError(f"expected a column name, got {to_sql(node)}")


def with_docs(schema: Schema, docs: dict[str, str]) -> Schema:
    """``schema`` with top-level field docs set."""
    fields = [dataclasses.replace(f, doc=docs[f.name]) if f.name in docs else f for f in schema.fields]
    return Schema(*fields, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids)


__all__ = ["NestedField", "column_path", "comment", "iceberg_type", "not_null", "schema_of", "with_docs"]
