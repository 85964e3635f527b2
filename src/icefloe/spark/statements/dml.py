"""INSERT INTO / INSERT OVERWRITE, DELETE, UPDATE (MERGE in ``merge``, TRUNCATE in ``truncate``) on
icefloe tables.

Each statement commits one snapshot through the existing writers: ``write_table`` for inserts and
overwrites, ``delete_rows`` / ``delete_where`` / ``update_rows`` for row-level changes, with the
WHERE clause as ``conditions`` makes it (icefloe filter, Spark condition, or subqueries Spark
evaluates: ``IN (SELECT ...)``, ``EXISTS``, correlated). Results are
the affected-row counts Spark's Delta reports: ``num_affected_rows`` (and ``num_inserted_rows``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.expressions.ast import And, EqualTo, Expression
from icefloe.spark.statements.conditions import scalar_values, target_names, unqualified, where_clause
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext, TableRef
from icefloe.spark.statements.parse import Statement, to_sql
from icefloe.spark.statements.predicates import NotPushable, literal
from icefloe.spark.statements.query import run_query
from icefloe.spark.statements.relations import insert_source, push_statement_ctes
from icefloe.spark.statements.results import counts, write_options, write_target
from icefloe.spec.schema import Schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"


def handle(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame | None:
    """Run INSERT / DELETE / UPDATE / MERGE / TRUNCATE on an icefloe table (None for Spark's tables)."""
    from icefloe.spark.statements.merge import merge
    from icefloe.spark.statements.truncate import truncate

    if isinstance(tree, exp.Insert):
        return insert(ctx, tree)
    if isinstance(tree, exp.Delete):
        return delete(ctx, tree)
    if isinstance(tree, exp.Update):
        return update(ctx, tree)
    if isinstance(tree, exp.Merge):
        return merge(ctx, tree)
    if isinstance(tree, exp.TruncateTable):
        return truncate(ctx, tree)
    return None


def insert(ctx: SqlContext, tree: exp.Insert) -> DataFrame | None:
    """INSERT INTO / OVERWRITE [TABLE] t [PARTITION (...)] [(columns)] VALUES ... | query."""
    from pyspark.sql import functions as F

    from icefloe.spark.schema import to_spark_type
    from icefloe.spark.write import write_table

    target = tree.this
    listed: list[str] | None = None
    if isinstance(target, exp.Schema):
        listed = [c.name for c in target.expressions]
        target = target.this
    ref = write_target(ctx, target)
    if ref is None:
        return None
    schema = ref.table.schema()
    static, dynamic = _partition_clause(target.args.get("partition"))
    source = run_query(ctx, insert_source(tree))
    if tree.args.get("by_name"):
        names, source = _by_name(ref, schema, source, static)
    else:
        names = listed or [f.name for f in schema.fields if f.name.lower() not in static]
    if len(source.columns) != len(names):
        raise ValidationError(
            f"INSERT into {ref.name}: the query gives {len(source.columns)} columns, "
            f"the table takes {len(names)} ({', '.join(names)})"
        )
    source = source.toDF(*[f"__icefloe_c{i}" for i in range(len(source.columns))])  # positional
    columns = []
    for src, name in zip(source.columns, names, strict=True):
        field = schema.find_field(name, case_sensitive=False)
        spark_type = to_spark_type(field.field_type, field_ids=False)
        columns.append(F.col(f"`{src}`").cast(spark_type).alias(field.name))
    for name, value in static.items():
        field = schema.find_field(name, case_sensitive=False)
        columns.append(F.lit(value).cast(to_spark_type(field.field_type, field_ids=False)).alias(field.name))
    frame = source.select(*columns)
    overwrite = bool(tree.args.get("overwrite"))
    with write_options(ctx, ref) as options:
        if not overwrite:
            snapshot = write_table(frame, ref.identifier, "append", catalog=ctx.catalog, options=options)
        elif (ctx.spark.conf.get(OVERWRITE_MODE_CONF) or "static").lower() == "dynamic":
            snapshot = write_table(
                frame,
                ref.identifier,
                "overwrite",
                partition_overwrite="dynamic",
                catalog=ctx.catalog,
                options=options,
            )
        else:
            row_filter: Expression | None = None
            for name, value in static.items():
                predicate = EqualTo(schema.find_field(name, case_sensitive=False).name, value)
                row_filter = predicate if row_filter is None else And(row_filter, predicate)
            snapshot = write_table(
                frame,
                ref.identifier,
                "overwrite",
                filter=row_filter,
                catalog=ctx.catalog,
                options=options,
            )
    added = int(snapshot.summary.get("added-records", "0")) if snapshot is not None else 0
    del dynamic  # dynamic partition columns come from the query, as in Spark
    return counts(ctx, num_affected_rows=added, num_inserted_rows=added)


def _by_name(
    ref: TableRef, schema: Schema, source: DataFrame, static: dict[str, Any]
) -> tuple[list[str], DataFrame]:
    """``INSERT ... BY NAME``: the table columns the query's columns go to, matched by name (case
    aside, as Spark's default ``spark.sql.caseSensitive``), with a null column added for each
    optional table column the query lacks, as Spark fills them for a v2 table.

    A query column the table lacks, a column named twice, or a missing required column is refused
    before anything is written, with the error Spark gives the same statement.
    """
    from pyspark.sql import functions as F

    wanted = [f for f in schema.fields if f.name.lower() not in static]
    fields = {f.name.lower(): f for f in wanted}
    seen: set[str] = set()
    for column in source.columns:
        key = column.lower()
        if key in seen:
            raise ValidationError(f"INSERT into {ref.name} BY NAME: the query gives column {column!r} twice")
        seen.add(key)
        if key not in fields:
            raise ValidationError(
                f"INSERT into {ref.name} BY NAME: the table has no column {column!r} "
                f"(its columns: {', '.join(f.name for f in wanted)})"
            )
    names = [fields[c.lower()].name for c in source.columns]
    missing = [f for f in wanted if f.name.lower() not in seen]
    required = [f.name for f in missing if f.required]
    if required:
        raise ValidationError(
            f"INSERT into {ref.name} BY NAME: the query gives no value for the required column(s) "
            f"{', '.join(required)}"
        )
    if missing:
        source = source.select("*", *[F.lit(None).alias(f"__icefloe_null_{i}") for i in range(len(missing))])
        names += [f.name for f in missing]
    return names, source


def _partition_clause(node: exp.Expr | None) -> tuple[dict[str, Any], list[str]]:
    static: dict[str, Any] = {}
    dynamic: list[str] = []
    if node is None:
        return static, dynamic
    for part in node.expressions:
        if isinstance(part, exp.EQ) and isinstance(part.this, exp.Column):
            try:
                static[part.this.name.lower()] = literal(part.expression)
            except NotPushable:
                raise UnsupportedStatement(f"the partition value {to_sql(part.expression)}") from None
        elif isinstance(part, exp.Column):
            dynamic.append(part.name)
        else:
            raise UnsupportedStatement(f"the partition clause {to_sql(part)}")
    return static, dynamic


# ------------------------------------------------------------------------------------------ DELETE / UPDATE


def delete(ctx: SqlContext, tree: exp.Delete) -> DataFrame | None:
    """DELETE FROM t [AS a] [WHERE condition]."""
    from icefloe.spark.row_operations import delete_rows, delete_where

    ref = write_target(ctx, tree.this)
    if ref is None:
        return None
    push_statement_ctes(tree)
    where = where_clause(ctx, ref, tree.this, tree.args.get("where"))
    try:
        with write_options(ctx, ref) as options:
            common: dict[str, Any] = {"catalog": ctx.catalog, "options": options, "case_sensitive": False}
            if where.rows is None:  # an icefloe filter says exactly which rows go
                result = delete_rows(ctx.spark, ref.identifier, where.prune, **common)
            else:
                result = delete_where(ctx.spark, ref.identifier, where.rows, where.prune, **common)
    finally:
        where.drop(ctx)
    return counts(ctx, num_affected_rows=result.deleted_rows)


def update(ctx: SqlContext, tree: exp.Update) -> DataFrame | None:
    """UPDATE t [AS a] SET c = expr, ... [WHERE condition]."""
    from icefloe.spark.row_operations import update_rows
    from icefloe.spark.schema import to_spark_type

    ref = write_target(ctx, tree.this)
    if ref is None:
        return None
    push_statement_ctes(tree)
    if tree.args.get("from_") is not None:
        raise UnsupportedStatement("UPDATE ... FROM", "use MERGE INTO")
    aliases = target_names(ref, tree.this)
    assignments: dict[str, Any] = {}
    for eq in tree.expressions:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
            raise UnsupportedStatement(f"the assignment {to_sql(eq)}")
        value_node = eq.expression
        if value_node.find(exp.Select) is not None:
            value_node = scalar_values(ctx, value_node, "UPDATE ... SET")
        column = eq.this.name
        if eq.this.table and eq.this.table.lower() not in aliases:
            raise ValidationError(f"UPDATE {ref.name}: cannot assign {to_sql(eq.this)}")
        field = ref.table.schema().find_field(column, case_sensitive=False)
        spark_type = to_spark_type(field.field_type, field_ids=False).simpleString()
        # SQL's store assignment: the value takes the column's type (a decimal literal for a double)
        value = to_sql(unqualified(value_node, aliases))
        assignments[field.name] = f"CAST(({value}) AS {spark_type})"
    where = where_clause(ctx, ref, tree.this, tree.args.get("where"))
    try:
        with write_options(ctx, ref) as options:
            result = update_rows(
                ctx.spark,
                ref.identifier,
                assignments,
                where.prune,
                catalog=ctx.catalog,
                options=options,
                case_sensitive=False,
                spark_condition=where.rows,
            )
    finally:
        where.drop(ctx)
    return counts(ctx, num_affected_rows=result.updated_rows)
