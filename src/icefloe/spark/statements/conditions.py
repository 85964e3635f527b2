"""WHERE clauses of DELETE and UPDATE: which rows change, and which files may hold them.

A condition that converts to an icefloe filter goes to the writers as that filter (file pruning,
metadata-only deletes). Otherwise Spark evaluates it over the target rows, with its convertible
conjuncts pruning files:

- without subqueries, as a Spark SQL condition over the table's columns;
- with uncorrelated ``IN (SELECT ...)`` subqueries only: each is evaluated first and becomes a value
  list (which then prunes files too);
- with ``EXISTS`` / ``NOT EXISTS``, correlated or scalar subqueries: as a ``SubqueryCondition``,
  which Spark evaluates in a query over the target rows (Spark plans the semi/anti joins). icefloe
  tables the subqueries read become planned reads like in any query.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, And, Expression
from icefloe.expressions.binding import bind
from icefloe.spark.row_frames import SubqueryCondition
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext, TableRef
from icefloe.spark.statements.parse import to_sql
from icefloe.spark.statements.predicates import NotPushable, conjuncts, to_filter
from icefloe.spark.statements.query import RewrittenQuery, rewrite_reads, run_query


@dataclass
class WhereClause:
    """A DELETE/UPDATE condition as the writers take it.

    ``prune`` is an icefloe filter implied by the condition; ``rows`` selects the rows when
    ``prune`` is not exact (Spark SQL text, or a ``SubqueryCondition``), else None. ``reads`` holds
    the views the subqueries read, to drop once the statement ran.
    """

    prune: Expression
    rows: str | SubqueryCondition | None = None
    reads: RewrittenQuery | None = None

    def drop(self, ctx: SqlContext) -> None:
        """Drop the views the condition's subqueries read."""
        if self.reads is not None:
            self.reads.drop(ctx)


def where_clause(ctx: SqlContext, ref: TableRef, node: exp.Table, where: exp.Expr | None) -> WhereClause:
    """The condition of ``DELETE FROM / UPDATE node ... WHERE where`` on the table ``ref``."""
    if where is None:
        return WhereClause(AlwaysTrue())
    aliases = target_names(ref, node)
    cond = unqualified(where.this, aliases)
    if cond.find(exp.Select) is not None and cond.find(exp.Exists) is None:
        cond = materialize_subqueries(ctx, cond)
    if cond.find(exp.Select) is None:
        prune, exact = split_condition(ref, cond)
        return WhereClause(prune, None if exact else to_sql(cond))
    alias = node.alias or ref.identifier[-1]
    # the subqueries' own columns keep their meaning: only names of the target are requalified
    rows = _requalified(where.this, aliases, alias)
    reads = rewrite_reads(ctx, rows)
    prune, _ = split_condition(ref, cond)
    return WhereClause(prune, SubqueryCondition(to_sql(reads.tree), alias), reads)


def target_names(ref: TableRef, node: exp.Table) -> set[str]:
    """The names (lower case) the statement's columns may qualify the target with."""
    return {ref.identifier[-1].lower(), *([node.alias.lower()] if node.alias else [])}


def unqualified(node: exp.Expr, aliases: set[str]) -> exp.Expr:
    """A copy of ``node`` whose columns qualified with the target's name or alias lose the qualifier
    (columns inside subqueries stay as they are: there a bare name may mean the subquery's column)."""

    def strip(n: exp.Expr) -> exp.Expr:
        if (
            isinstance(n, exp.Column)
            and n.table
            and n.table.lower() in aliases
            and n.find_ancestor(exp.Select) is None
        ):
            return exp.Column(this=n.this.copy())
        return n

    return node.copy().transform(strip)


def _requalified(node: exp.Expr, aliases: set[str], alias: str) -> exp.Expr:
    """A copy of ``node`` whose columns qualified with the target's (dotted) name use ``alias``."""

    def requalify(n: exp.Expr) -> exp.Expr:
        if isinstance(n, exp.Column) and n.table and n.table.lower() in aliases:
            return exp.Column(this=n.this.copy(), table=exp.to_identifier(alias))
        return n

    return node.copy().transform(requalify)


def materialize_subqueries(ctx: SqlContext, node: exp.Expr) -> exp.Expr:
    """``x IN (SELECT ...)`` with uncorrelated subqueries become ``x IN (v1, v2, ...)``; ``node``
    itself when one of them cannot run on its own (it refers to the target row)."""
    original, node = node, node.copy()
    for pred in list(node.find_all(exp.In)):
        query = pred.args.get("query")
        if query is None:
            continue
        inner = query.this if isinstance(query, exp.Subquery) else query
        try:
            values = [r[0] for r in run_query(ctx, inner.copy()).distinct().collect()]
        except Exception:  # correlated: Spark evaluates the whole condition instead
            return original
        literals = [_sql_literal(v) for v in values]
        replacement = exp.In(this=pred.this.copy(), expressions=literals) if literals else exp.false()
        pred.replace(replacement)
    return node


def scalar_values(ctx: SqlContext, node: exp.Expr, where: str) -> exp.Expr:
    """A copy of ``node`` whose scalar subqueries are replaced by their values, as Spark evaluates an
    uncorrelated scalar subquery once, before the statement changes anything (no row: NULL; more
    than one: an error). A subquery that cannot run on its own (it refers to the target row), or
    that is not a scalar one (``IN``, ``EXISTS``), is refused."""
    holder = exp.Paren(this=node.copy())  # so that a subquery that is the whole value can be replaced
    candidates = holder.find_all(exp.Exists, exp.In, exp.Subquery)
    outermost = [n for n in candidates if n.find_ancestor(exp.Select) is None]
    predicates = [n for n in outermost if isinstance(n, exp.Exists) or n.args.get("query")]
    if predicates:
        raise UnsupportedStatement(f"{to_sql(predicates[0])} in {where}", "only scalar subqueries")
    for sub in (n for n in outermost if isinstance(n, exp.Subquery)):
        try:
            frame = run_query(ctx, sub.this.copy())
            values = frame.limit(2).collect()
        except Exception as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UnsupportedStatement(
                f"the subquery {to_sql(sub)} in {where}",
                f"it must run on its own (correlated subqueries are not supported there): {reason}",
            ) from exc
        if len(frame.columns) != 1:
            raise ValidationError(f"the scalar subquery {to_sql(sub)} gives {len(frame.columns)} columns")
        if len(values) > 1:
            raise ValidationError(f"the scalar subquery {to_sql(sub)} returned more than one row")
        literal = _sql_literal(values[0][0] if values else None)
        spark_type = frame.schema.fields[0].dataType.simpleString()
        sub.replace(exp.cast(literal, exp.DataType.build(spark_type, dialect="spark")))
    return holder.this


def _sql_literal(value: Any) -> exp.Expr:
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), exp.DataType.build("timestamp"))
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("date"))
    return exp.Literal.string(str(value))


def split_condition(ref: TableRef, node: exp.Expr) -> tuple[Expression, bool]:
    """(icefloe filter of the convertible conjuncts, whether that filter is the whole condition)."""
    schema = ref.table.schema()

    def column(col: exp.Column) -> str:
        if col.table:
            raise NotPushable
        return str(col.name)

    out: Expression = AlwaysTrue()
    exact = True
    for part in conjuncts(node):
        try:
            if part.find(exp.Select) is not None:
                raise NotPushable
            expr = to_filter(part, column)
            bind(schema, expr, case_sensitive=False)
        except (NotPushable, ValidationError):
            exact = False
            continue
        out = expr if isinstance(out, AlwaysTrue) else And(out, expr)
    return out, exact
