"""``IDENTIFIER(<constant expression>)`` in table position: the name Spark would read.

The parser turns ``IDENTIFIER('db.t')`` into the name ``db.t`` (``parse.identifier_clauses``); an
argument that is not one string literal (``IDENTIFIER('db.' || 't')``, a session variable) is a
constant expression Spark folds at analysis. Left unresolved, the statement would go to Spark,
which looks the name up in its own current catalog: after ``USE icefloe.db`` that is another table
than the one Spark itself would read. So the argument is folded here, by Spark, and the name it
gives replaces the call; an argument Spark cannot fold fails with Spark's own error.
"""

from __future__ import annotations

from sqlglot import exp

from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import identifier_clauses, to_sql


def _folded_calls(tree: exp.Expr) -> list[exp.Anonymous]:
    """The ``IDENTIFIER(...)`` calls naming a table whose argument is not a string literal."""
    calls = []
    for node in tree.find_all(exp.Table):
        call = node.this
        if not (isinstance(call, exp.Anonymous) and str(call.this).upper() == "IDENTIFIER"):
            continue
        args = call.expressions
        if len(args) == 1 and not (isinstance(args[0], exp.Literal) and args[0].is_string):
            calls.append(call)
    return calls


def resolve_identifier_calls(ctx: SqlContext, tree: exp.Expr) -> exp.Expr:
    """``tree`` with each table ``IDENTIFIER(expression)`` replaced by the name the expression gives."""
    calls = _folded_calls(tree)
    if not calls:
        return tree
    for call in calls:
        argument = call.expressions[0]
        row = ctx.spark.sql(f"SELECT CAST(({to_sql(argument)}) AS STRING) AS name").first()
        text = None if row is None else row[0]
        if text is not None:
            argument.replace(exp.Literal.string(text))
    return identifier_clauses(tree)
