"""Which table nodes of a statement's tree name relations, as Spark's parser and analyzer decide.

sqlglot makes an ``exp.Table`` of everything that looks like a table; only some of them name a
table or view of a catalog. A node names a relation unless it is

- a table-valued function (``range(3)``, ``explode(...)``): its parts are not all names;
- inside a hint (``/*+ BROADCAST(t) */``): Spark reads the hint's argument as an alias or name of a
  relation the query reads elsewhere, never as a read of its own;
- a one-part name of a common table expression *in scope* at that node. Spark (CTE substitution,
  its default ``CORRECTED`` precedence) resolves a one-part name against the ``WITH`` clauses of
  the enclosing queries, innermost first. A CTE is in scope in the query it is attached to (its
  main body and any subquery of it) and in the bodies of the CTEs defined *after* it in the same
  ``WITH``; not in its own body (unless ``WITH RECURSIVE``), not in earlier CTEs, and not outside
  the query it is attached to. So ``WITH t AS (SELECT * FROM t) SELECT * FROM t`` reads the table
  ``t`` once, and ``SELECT * FROM (WITH t AS (...) SELECT * FROM t) JOIN t`` reads it too. Names
  of two or more parts never name a CTE.

``tests/spark/statements/test_relations_fuzz.py`` checks this against the relations Spark's own
parser names for generated statements.
"""

from __future__ import annotations

from sqlglot import exp

from icefloe.spark.statements.errors import UnsupportedStatement


def table_parts(node: exp.Table) -> list[str] | None:
    """The dotted name of a table reference (None for table functions and the like)."""
    parts = node.parts
    if not parts or not all(isinstance(p, exp.Identifier) for p in parts):
        return None
    return [p.name for p in parts]


def relation_tables(tree: exp.Expr) -> list[exp.Table]:
    """The table nodes of ``tree`` that name a catalog's table or view, in tree order."""
    out = []
    for node in tree.find_all(exp.Table):
        parts = table_parts(node)
        if parts is None or node.find_ancestor(exp.Hint) is not None:
            continue
        if len(parts) == 1 and names_cte(node, parts[0]):
            continue
        out.append(node)
    return out


def names_cte(node: exp.Expr, name: str) -> bool:
    """Whether the one-part ``name`` at ``node`` means a CTE in scope there (see the module doc)."""
    lowered = name.lower()
    child: exp.Expr = node
    parent = node.parent
    while parent is not None:
        visible: list[exp.Expr] = []
        if isinstance(parent, exp.With):
            own = next(i for i, cte in enumerate(parent.expressions) if cte is child)
            visible = parent.expressions[: own + 1 if parent.args.get("recursive") else own]
        else:
            with_ = parent.args.get("with_")
            if isinstance(with_, exp.With) and with_ is not child:
                visible = with_.expressions
        if any(cte.alias_or_name.lower() == lowered for cte in visible):
            return True
        child, parent = parent, parent.parent
    return False


def insert_source(tree: exp.Insert) -> exp.Expr:
    """The query an INSERT writes, with the statement's leading ``WITH`` (``WITH c AS (...) INSERT
    INTO t SELECT * FROM c``, which sqlglot hangs on the INSERT) in scope of it.

    ``INSERT INTO a TABLE b`` writes ``SELECT * FROM b``. A query without a ``WITH`` of its own
    takes the statement's; one with its own is wrapped (``WITH c ... SELECT * FROM (WITH d ...
    query)``) so that its CTEs still shadow the outer ones.
    """
    query: exp.Expr = tree.args.get("expression") or _table_query(tree.args["source"])
    outer = tree.args.get("with_")
    if not isinstance(outer, exp.With):
        return query
    return _with_ctes(query.copy(), outer)


def _with_ctes(query: exp.Expr, outer: exp.With) -> exp.Expr:
    """``query`` with the common table expressions of ``outer`` in scope.

    A query without a ``WITH`` takes ``outer``; one with its own takes ``outer``'s CTEs ahead of its
    own (which still see them, as they would), or, when a name is in both, is wrapped (``WITH c ...
    SELECT * FROM (WITH c ... query)``) so that its own CTEs still shadow the outer ones.
    """
    inner = query.args.get("with_") if isinstance(query, exp.Query) else None
    if isinstance(query, exp.Query) and inner is None:
        query.set("with_", outer.copy())
        return query
    if isinstance(inner, exp.With):
        own = {cte.alias_or_name.lower() for cte in inner.expressions}
        if not any(cte.alias_or_name.lower() in own for cte in outer.expressions):
            ctes = [cte.copy() for cte in outer.expressions] + list(inner.expressions)
            recursive = bool(inner.args.get("recursive") or outer.args.get("recursive"))
            query.set("with_", exp.With(expressions=ctes, recursive=recursive or None))
            return query
    wrapped = exp.select("*").from_(exp.Subquery(this=query))
    wrapped.set("with_", outer.copy())
    return wrapped


def push_statement_ctes(tree: exp.Delete | exp.Update | exp.Merge) -> None:
    """Move the leading ``WITH`` of ``WITH c AS (...) DELETE / UPDATE / MERGE ...`` (Spark 4 reads
    it) into each query of the statement, in place.

    icefloe runs these statements piecewise (the WHERE's subqueries, the SET's scalar subqueries,
    the MERGE source, each through Spark on its own), so each piece must carry the CTEs it may
    name. A MERGE source that is a CTE's name becomes the query ``SELECT * FROM c`` under its alias.
    A target named like one of the CTEs is refused (Spark would substitute the CTE for it).
    """
    outer = tree.args.get("with_")
    if not isinstance(outer, exp.With):
        return
    names = {cte.alias_or_name.lower() for cte in outer.expressions}
    target = table_parts(tree.this) if isinstance(tree.this, exp.Table) else None
    if target is not None and len(target) == 1 and target[0].lower() in names:
        raise UnsupportedStatement(
            f"WITH {target[0]} AS (...) before a statement that writes {target[0]}",
            "a common table expression is not a table to write; rename it",
        )
    tree.set("with_", None)
    using = tree.args.get("using")
    if isinstance(tree, exp.Merge) and isinstance(using, exp.Table):
        parts = table_parts(using)
        if parts is not None and len(parts) == 1 and parts[0].lower() in names:
            alias = using.alias or parts[0]
            plain = exp.Table(this=exp.to_identifier(parts[0]))
            source = exp.Subquery(
                this=exp.select("*").from_(plain), alias=exp.TableAlias(this=exp.to_identifier(alias))
            )
            using.replace(source)
    outermost = [
        node
        for node in tree.find_all(exp.Select, exp.SetOperation)
        if node.find_ancestor(exp.Select, exp.SetOperation) is None
    ]
    for query in outermost:
        place = exp.Null()
        query.replace(place)  # frees the query for wrapping, whatever holds it
        place.replace(_with_ctes(query, outer))


def _table_query(source: exp.Expr) -> exp.Expr:
    """``TABLE b`` as the query it stands for (sqlglot keeps INSERT's ``TABLE b`` as a bare table)."""
    if not isinstance(source, exp.Table):
        raise TypeError(f"an INSERT without a query writes a table, not {type(source).__name__}")
    return exp.select("*").from_(source.copy())
