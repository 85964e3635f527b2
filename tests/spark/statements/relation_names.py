"""The relations a statement names, as Spark's parser sees them and as icefloe's front-end does.

Spark's side walks the unresolved plan ``sqlParser().parsePlan`` returns (nothing is analysed or
run): every ``UnresolvedRelation`` is a read, except a one-part name of a CTE in scope (applied as
Spark's CTE substitution does), and the table a DML command writes is its target. icefloe's side
follows what ``run_statement``'s handlers hand to ``relations.relation_tables``: the query of a
SELECT, the target and the source query of INSERT, the target and the WHERE of DELETE / UPDATE,
the target, source and conditions of MERGE (a leading ``WITH`` moved into their queries first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from icefloe.spark.statements import UnsupportedStatement
from icefloe.spark.statements.parse import parse_statement
from icefloe.spark.statements.relations import (
    insert_source,
    push_statement_ctes,
    relation_tables,
    table_parts,
)

Name = tuple[str, ...]


@dataclass
class Relations:
    """The tables a statement writes (``targets``) and reads (``reads``), names lower-cased, sorted."""

    targets: list[Name] = field(default_factory=list)
    reads: list[Name] = field(default_factory=list)

    def normalised(self) -> tuple[list[Name], list[Name]]:
        """Both lists sorted (the order of a tree walk differs between the two parsers)."""
        return sorted(self.targets), sorted(self.reads)


class Unparsed(Exception):
    """The parser refused the statement."""


# ------------------------------------------------------------------------------------------ Spark


_DML_TARGETS = {
    "InsertIntoStatement": "table",
    "DeleteFromTable": "table",
    "UpdateTable": "table",
    "MergeIntoTable": "targetTable",
}


def spark_relations(spark: Any, text: str) -> Relations:
    """The relations Spark's parser names in ``text`` (Unparsed when Spark refuses it)."""
    from pyspark.errors import ParseException

    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(text)
    except Exception as exc:  # py4j hands the JVM's ParseException over as itself or wrapped
        if isinstance(exc, ParseException) or "ParseException" in str(exc):
            raise Unparsed(str(exc).splitlines()[0]) from None
        raise
    walker = _SparkWalker(spark)
    walker.plan(plan, frozenset(), "reads")
    return walker.found


class _SparkWalker:
    def __init__(self, spark: Any) -> None:
        jvm = spark._jvm
        self.subquery = jvm.java.lang.Class.forName(
            "org.apache.spark.sql.catalyst.expressions.SubqueryExpression"
        )
        self.found = Relations()

    def plan(self, node: Any, ctes: frozenset[str], role: str) -> None:
        kind = node.getClass().getSimpleName()
        if kind == "UnresolvedRelation":
            name = tuple(str(p).lower() for p in _seq(node.multipartIdentifier()))
            if not (len(name) == 1 and name[0] in ctes and role == "reads"):
                getattr(self.found, role).append(name)
            return
        if kind == "UnresolvedWith":
            scope = set(ctes)
            recursive = _bool_attr(node, "allowRecursion")
            for pair in _seq(node.cteRelations()):
                name = str(pair._1()).lower()
                self.plan(pair._2(), frozenset(scope | ({name} if recursive else set())), "reads")
                scope.add(name)
            self.plan(node.child(), frozenset(scope), "reads")
            return
        if kind == "RelationTimeTravel":  # a leaf node that holds the relation it travels in
            self.plan(node.relation(), ctes, role)
            return
        target_field = _DML_TARGETS.get(kind)
        target = getattr(node, target_field)() if target_field else None
        if target is not None:
            self.plan(target, ctes, "targets")
        for child in _seq(node.children()):
            if target is None or not child.equals(target):
                self.plan(child, ctes, role)
        for expression in _seq(node.expressions()):
            self.expression(expression, ctes)

    def expression(self, node: Any, ctes: frozenset[str]) -> None:
        if self.subquery.isInstance(node):
            self.plan(node.plan(), ctes, "reads")
        for child in _seq(node.children()):
            self.expression(child, ctes)


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _bool_attr(node: Any, name: str) -> bool:
    try:
        return bool(getattr(node, name)())
    except Exception:  # an older Spark without the attribute
        return False


# ------------------------------------------------------------------------------------------ icefloe


def icefloe_relations(text: str) -> Relations:
    """The relations icefloe's front-end resolves in ``text`` (Unparsed when it refuses it)."""
    stmt = parse_statement(text)
    if stmt.tree is None:
        raise Unparsed(str(stmt.error))
    tree = stmt.tree
    found = Relations()
    if isinstance(tree, exp.Query):
        found.reads = _names(relation_tables(tree))
        return found
    if isinstance(tree, exp.Insert | exp.Delete | exp.Update | exp.Merge):
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        parts = table_parts(target) if isinstance(target, exp.Table) else None
        if parts is None:
            raise Unparsed(f"no table target: {type(target).__name__}")
        if isinstance(tree, exp.Insert):
            reads = relation_tables(insert_source(tree))
        else:
            try:
                push_statement_ctes(tree)  # as the handlers do before running the pieces
            except UnsupportedStatement as exc:
                raise Unparsed(str(exc)) from None
            reads = [t for t in relation_tables(tree) if t is not target]
        found.targets = [tuple(p.lower() for p in parts)]
        found.reads = _names(reads)
        return found
    raise Unparsed(f"not a query or DML: {type(tree).__name__}")


def _names(tables: list[exp.Table]) -> list[Name]:
    return [tuple(p.lower() for p in table_parts(t) or []) for t in tables]
