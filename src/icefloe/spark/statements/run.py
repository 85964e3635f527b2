"""Run one parsed statement: icefloe's own handling when it touches an icefloe table, else Spark's."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.identifier_calls import resolve_identifier_calls
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import Statement, TokenCursor
from icefloe.spark.statements.query import run_query, table_parts
from icefloe.spark.statements.relations import relation_tables
from icefloe.spark.statements.results import empty

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def run_statement(ctx: SqlContext, stmt: Statement) -> DataFrame:
    """The result of one statement (a query's rows, DML counts, or an empty frame for DDL)."""
    from icefloe.spark.statements import ddl, dml, extensions, show, views

    tree = stmt.tree
    if tree is None:
        if mentions_icefloe(ctx, stmt) and stmt.error is not None:
            handled = extensions.handle(ctx, stmt, None)
            if handled is not None:
                return handled
            raise stmt.error
        return ctx.spark.sql(stmt.text)  # Spark's own syntax error (or a statement sqlglot lacks)
    if "identifier" in stmt.text.lower():  # IDENTIFIER(<expression>) naming a table
        tree = resolve_identifier_calls(ctx, tree)
        stmt = replace(stmt, tree=tree)
    if isinstance(tree, exp.MultitableInserts) and references_icefloe(ctx, tree):
        raise UnsupportedStatement(
            "multi-insert (FROM src INSERT INTO a ... INSERT INTO b ...) on icefloe tables",
            "its inserts would commit one after the other, not as one change; run one INSERT per table",
        )
    if isinstance(tree, exp.Use):
        parts = table_parts(tree.this) if isinstance(tree.this, exp.Table) else None
        if parts is not None and ctx.use(parts):
            return empty(ctx)
        return ctx.spark.sql(stmt.text)
    if isinstance(tree, exp.Query | exp.Insert | exp.Delete | exp.Update | exp.Merge):
        refuse_what_spark_refuses(ctx, stmt)
    if isinstance(tree, exp.Query):
        return run_query(ctx, tree, stmt.text)
    handlers = (views.handle, ddl.handle, dml.handle, show.handle, extensions.handle)
    for handler in handlers:
        result = handler(ctx, stmt, tree)
        if result is not None:
            return result
    if references_icefloe(ctx, tree):
        kind = tree.args.get("kind")  # CREATE / DROP / ALTER name what they act on: VIEW, FUNCTION ...
        verb = type(tree).__name__.upper() + (f" {str(kind).upper()}" if isinstance(kind, str) else "")
        raise UnsupportedStatement(f"the statement {verb} on an icefloe table")
    return ctx.spark.sql(stmt.text)


def refuse_what_spark_refuses(ctx: SqlContext, stmt: Statement) -> None:
    """Raise Spark's own ParseException for a query or DML statement Spark's parser refuses.

    sqlglot is more lenient than Spark: it reads a hint out of place as a comment, for one. Run as
    sqlglot reads it, such a statement would do something Spark never would; refused here, it does
    nothing, as in Spark. (On Spark Connect there is no parser to ask; the check is skipped.)
    """
    jsession = getattr(ctx.spark, "_jsparkSession", None)
    if jsession is None:
        return
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import convert_exception

    try:
        jsession.sessionState().sqlParser().parsePlan(stmt.text)
    except Py4JJavaError as exc:
        if not exc.java_exception.getClass().getName().endswith("ParseException"):
            raise
        raise convert_exception(exc.java_exception) from None


def references_icefloe(ctx: SqlContext, tree: exp.Expr) -> bool:
    """Whether any table name in the tree is an icefloe name: one of two or more parts, or a one-part
    name of an icefloe table after ``USE icefloe.ns`` (Spark, whose current catalog stays its own,
    would read its own table of that name)."""
    for node in relation_tables(tree):
        rest = ctx.icefloe_parts(table_parts(node) or [])
        if rest is not None and (len(node.parts) > 1 or ctx.load(tuple(rest)) is not None):
            return True
    return False


def mentions_icefloe(ctx: SqlContext, stmt: Statement) -> bool:
    """Whether a statement that did not parse names icefloe's catalog (or runs with it current)."""
    if ctx.current_is_icefloe():
        return True
    cursor = TokenCursor(stmt.text)
    return any(tok.text.lower() == ctx.name.lower() for tok in cursor.tokens)
