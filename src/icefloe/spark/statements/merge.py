"""MERGE INTO on an icefloe table, through ``spark.row_operations.execute_merge``.

SQL's WHEN clauses (any number, each with an optional condition, applied in order per row state:
``MATCHED``, ``NOT MATCHED [BY TARGET]``, ``NOT MATCHED BY SOURCE``) become the engine-neutral
``MergeSpec`` (conditions and values as Spark SQL over ``target.*`` / ``source.*``, values cast to
their column's type: SQL's store assignment); ``execute_merge`` joins, writes and commits one
snapshot. The ON condition's equalities of a target and a source column are the merge keys (an
equi-join); any other conjuncts (``t.day > s.day``, ``t.id BETWEEN s.lo AND s.hi``) become the
spec's match condition, which Spark evaluates in the join.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.dml.merge_clauses import (
    DELETE,
    UPDATE,
    MergeClause,
    MergeSpec,
    WhenMatched,
    WhenNotMatched,
    WhenNotMatchedBySource,
)
from icefloe.errors import ValidationError
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import to_sql
from icefloe.spark.statements.predicates import conjuncts
from icefloe.spark.statements.query import run_query, table_parts
from icefloe.spark.statements.relations import push_statement_ctes
from icefloe.spark.statements.results import counts, write_options, write_target

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from icefloe.spec.schema import Schema

_TARGET, _SOURCE = "target", "source"  # execute_merge's aliases of the joined pair
# Iceberg on Spark refuses them as well ("MERGE operation contains unsupported ... condition")
SUBQUERIES_REFUSED = "subqueries are not allowed in MERGE conditions, as in Iceberg on Spark"


def merge(ctx: SqlContext, tree: exp.Merge) -> DataFrame | None:
    """MERGE INTO t [AS a] USING source [AS s] ON keys WHEN ..."""
    from icefloe.spark.row_operations import execute_merge

    target_node = tree.this
    ref = write_target(ctx, target_node)
    if ref is None:
        return None
    push_statement_ctes(tree)
    schema = ref.table.schema()
    target_alias = (target_node.alias or ref.identifier[-1]).lower()
    using = tree.args["using"]
    if isinstance(using, exp.Subquery):
        source_alias = using.alias.lower() if using.alias else ""
        source = run_query(ctx, using.this.copy())
    elif isinstance(using, exp.Table):
        parts = table_parts(using) or []
        source_alias = (using.alias or (parts[-1] if parts else "")).lower()
        plain = using.copy()
        plain.set("alias", None)
        source = run_query(ctx, exp.select("*").from_(plain))
    else:
        raise UnsupportedStatement(f"MERGE ... USING {to_sql(using)}")
    keys, source, rest = _match_condition(tree.args["on"], schema, source, target_alias, source_alias)
    qualify = _Qualifier(schema, source.columns, target_alias, source_alias)
    clauses = [_clause(w, schema, source.columns, qualify) for w in tree.args["whens"].expressions]
    spec = MergeSpec(
        tuple(keys),
        tuple(c for c in clauses if isinstance(c, WhenMatched)),
        tuple(c for c in clauses if isinstance(c, WhenNotMatched)),
        tuple(c for c in clauses if isinstance(c, WhenNotMatchedBySource)),
        condition=" AND ".join(f"({qualify(part)})" for part in rest) or None,
    )
    with write_options(ctx, ref) as options:
        result = execute_merge(
            source, ref.identifier, spec, catalog=ctx.catalog, options=options, case_sensitive=False
        )
    return counts(
        ctx,
        num_affected_rows=result.updated_rows + result.deleted_rows + result.inserted_rows,
        num_updated_rows=result.updated_rows,
        num_deleted_rows=result.deleted_rows,
        num_inserted_rows=result.inserted_rows,
    )


def _match_condition(
    on: exp.Expr, schema: Schema, source: DataFrame, target_alias: str, source_alias: str
) -> tuple[list[str], DataFrame, list[exp.Expr]]:
    """The ON condition as (key columns, the source, the other conjuncts).

    Conjuncts ``t.a = s.b`` of a target and a source column become key columns (the source's
    column renamed to the target's name where they differ): the equi-join fast path. The rest
    (``t.day > s.day``, ``t.id BETWEEN s.lo AND s.hi``, ...) is returned for the match condition.
    """
    from pyspark.sql import functions as F

    if on.find(exp.Select) is not None:
        raise UnsupportedStatement(f"a subquery in MERGE ... ON {to_sql(on)}", SUBQUERIES_REFUSED)
    keys: list[str] = []
    rest: list[exp.Expr] = []
    for part in conjuncts(on):
        pair = _key_pair(part, target_alias, source_alias)
        if pair is None:
            rest.append(part)
            continue
        left, right = pair
        target_name = schema.find_field(left.name, case_sensitive=False).name
        source_name = next((c for c in source.columns if c.lower() == right.name.lower()), None)
        if source_name is None:
            raise ValidationError(f"MERGE: the source has no column {right.name!r}")
        if source_name != target_name:
            if any(c.lower() == target_name.lower() for c in source.columns):
                rest.append(part)  # the source's own column of that name stays as it is
                continue
            source = source.withColumn(target_name, F.col(f"`{source_name}`"))
        keys.append(target_name)
    return keys, source, rest


def _key_pair(part: exp.Expr, target_alias: str, source_alias: str) -> tuple[exp.Column, exp.Column] | None:
    """(target column, source column) of a conjunct ``t.a = s.b`` (either way round), else None."""
    if not (
        isinstance(part, exp.EQ)
        and isinstance(part.this, exp.Column)
        and isinstance(part.expression, exp.Column)
    ):
        return None
    left, right = part.this, part.expression
    if left.table.lower() == source_alias and right.table.lower() == target_alias:
        left, right = right, left
    if left.table.lower() != target_alias or right.table.lower() != source_alias:
        return None
    return left, right


class _Qualifier:
    """Rewrites the user's target/source names to merge_into's ``target.`` / ``source.``."""

    def __init__(
        self, schema: Schema, source_columns: list[str], target_alias: str, source_alias: str
    ) -> None:
        self.target_columns = {f.name.lower() for f in schema.fields}
        self.source_columns = {c.lower() for c in source_columns}
        self.target_alias = target_alias
        self.source_alias = source_alias

    def __call__(self, node: exp.Expr) -> str:
        def rewrite(n: exp.Expr) -> exp.Expr:
            if not isinstance(n, exp.Column) or isinstance(n.parent, exp.Dot):
                return n
            qualifier = n.table.lower()
            if qualifier == self.target_alias:
                side = _TARGET
            elif qualifier == self.source_alias:
                side = _SOURCE
            elif qualifier:
                return n
            else:
                name = n.name.lower()
                in_target, in_source = name in self.target_columns, name in self.source_columns
                if in_target and in_source:
                    raise ValidationError(f"MERGE: column {n.name!r} is ambiguous: qualify it")
                if not (in_target or in_source):
                    return n
                side = _TARGET if in_target else _SOURCE
            return exp.Column(this=n.this.copy(), table=exp.to_identifier(side))

        return to_sql(node.copy().transform(rewrite))


def _clause(when: exp.When, schema: Schema, source_columns: list[str], qualify: _Qualifier) -> MergeClause:
    if when.find(exp.Select) is not None:
        raise UnsupportedStatement(f"a subquery in MERGE ... {to_sql(when)}", SUBQUERIES_REFUSED)
    matched = bool(when.args.get("matched"))
    by_source = bool(when.args.get("source"))
    cond = when.args.get("condition")
    condition = qualify(cond) if cond is not None else None
    then = when.args["then"]
    if isinstance(then, exp.Insert):
        if matched or by_source:
            raise ValidationError("MERGE: only WHEN NOT MATCHED can INSERT")
        if isinstance(then.this, exp.Star):
            return WhenNotMatched(condition, _cast(schema, _star(schema, source_columns)))
        names = [c.name for c in then.this.expressions]
        exprs = then.expression.expressions
        if len(names) != len(exprs):
            raise ValidationError(f"MERGE: INSERT lists {len(names)} columns and {len(exprs)} values")
        values = {
            schema.find_field(n, case_sensitive=False).name: qualify(e)
            for n, e in zip(names, exprs, strict=True)
        }
        return WhenNotMatched(condition, _cast(schema, values))
    if not (matched or by_source):
        raise ValidationError("MERGE: WHEN NOT MATCHED can only INSERT")
    kind = WhenMatched if matched else WhenNotMatchedBySource
    if isinstance(then, exp.Var) and str(then.this).upper() == "DELETE":
        return kind(DELETE, condition)
    if isinstance(then, exp.Update):
        values = {}
        for item in then.expressions:
            if isinstance(item, exp.Star):
                if not matched:
                    raise ValidationError("MERGE: UPDATE SET * needs a source row (WHEN MATCHED)")
                values.update(_star(schema, source_columns))
            elif isinstance(item, exp.EQ) and isinstance(item.this, exp.Column):
                column = schema.find_field(item.this.name, case_sensitive=False).name
                values[column] = qualify(item.expression)
            else:
                raise UnsupportedStatement(f"the MERGE assignment {to_sql(item)}")
        return kind(UPDATE, condition, _cast(schema, values))
    raise UnsupportedStatement(f"the MERGE action {to_sql(then)}")


def _star(schema: Schema, source_columns: list[str]) -> dict[str, str]:
    by_lower = {c.lower(): c for c in source_columns}
    out = {}
    for f in schema.fields:
        src = by_lower.get(f.name.lower())
        if src is None:
            raise ValidationError(
                f"MERGE: * needs a source column for every table column; missing {f.name!r}"
            )
        out[f.name] = f"{_SOURCE}.`{src}`"
    return out


def _cast(schema: Schema, values: dict[str, str]) -> dict[str, Column]:
    """Each value cast to its column's type (SQL's store assignment: ``25.0`` is a decimal literal,
    written to a double column)."""
    from pyspark.sql import functions as F

    from icefloe.spark.schema import to_spark_type

    return {
        name: F.expr(value).cast(to_spark_type(schema.find_field(name).field_type, field_ids=False))
        for name, value in values.items()
    }
