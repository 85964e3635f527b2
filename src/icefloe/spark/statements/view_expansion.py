"""Reading Iceberg views: a reference to a view of icefloe's catalog becomes its query.

The view's Spark SQL (its ``spark`` representation) is parsed, its unqualified table names are
qualified with the view's default catalog and namespace (where they were resolved when the view
was made), views it reads are expanded in turn, and the reference is replaced by the subquery
with the view's column names (``(SELECT ...) AS v(c1, c2)``). The planned reads of the icefloe
tables inside then happen as for any query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import NotFound, Unsupported, ValidationError
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SPARK_CATALOG, SqlContext
from icefloe.spark.statements.parse import parse_statement
from icefloe.spark.statements.relations import relation_tables, table_parts

if TYPE_CHECKING:
    from icefloe.catalog.views import ViewStore
    from icefloe.spec.view_metadata import ViewMetadata

MAX_VIEW_DEPTH = 32
DIALECT = "spark"


def view_store(ctx: SqlContext) -> ViewStore | None:
    """The views of the session's icefloe catalog (None when the catalog cannot hold views)."""
    from icefloe.catalog.rest.catalog import RestCatalog
    from icefloe.catalog.rest.views import RestViews
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.catalog.sql_views import SqlViews

    if isinstance(ctx.catalog, RestCatalog):
        return RestViews(ctx.catalog)
    if not isinstance(ctx.catalog, SqlCatalog):
        return None
    try:
        return SqlViews(ctx.catalog)
    except Unsupported:
        return None


def new_view_location(ctx: SqlContext, ident: tuple[str, ...]) -> str:
    """Where a new view's metadata goes: the catalog's default location for that name, or ``""`` on
    a REST catalog, whose service chooses it (as for a table created without a location)."""
    from icefloe.catalog.rest.catalog import RestCatalog

    if isinstance(ctx.catalog, RestCatalog):
        return ""
    return ctx.catalog.default_table_location(ident[:-1], ident[-1])


def view_identifier(ctx: SqlContext, node: exp.Table) -> tuple[str, ...] | None:
    """namespace + name when ``node`` names something in icefloe's catalog (None: Spark's name)."""
    parts = node.parts
    if not parts or not all(isinstance(p, exp.Identifier) for p in parts):
        return None
    return ctx.table_identifier([p.name for p in parts])


def load_view(ctx: SqlContext, ident: tuple[str, ...]) -> ViewMetadata | None:
    """The view's metadata, None when no view has that name."""
    store = view_store(ctx)
    if store is None:
        return None
    try:
        return store.load(ident)[0]
    except NotFound:
        return None


def expand_views(ctx: SqlContext, tree: exp.Expr, skip: set[int] | None = None, depth: int = 0) -> None:
    """Replace every reference to an icefloe view in ``tree`` (but nodes whose id is in ``skip``) by
    the view's query."""
    if view_store(ctx) is None:
        return
    for node in relation_tables(tree):
        if skip and id(node) in skip:
            continue
        ident = view_identifier(ctx, node)
        if ident is None or ctx.load(ident) is not None:
            continue
        md = load_view(ctx, ident)
        if md is None:
            continue
        if depth >= MAX_VIEW_DEPTH:
            raise ValidationError(f"view {'.'.join(ident)} nests more than {MAX_VIEW_DEPTH} views (a cycle?)")
        if node.args.get("version") is not None:
            raise UnsupportedStatement(f"AS OF on the view {'.'.join(ident)}")
        query = view_query(ctx, md, ident)
        expand_views(ctx, query, depth=depth + 1)
        alias = node.alias or ident[-1]
        columns = [exp.to_identifier(f.name) for f in md.schema().fields]
        table_alias = exp.TableAlias(this=exp.to_identifier(alias), columns=columns)
        node.replace(exp.Subquery(this=query, alias=table_alias))


def view_query(ctx: SqlContext, md: ViewMetadata, ident: tuple[str, ...]) -> exp.Expr:
    """The view's Spark SQL as a tree, table names qualified as they were when the view was made."""
    version = md.current_version()
    text = version.sql_for(DIALECT)
    if text is None:
        dialects = ", ".join(r.dialect for r in version.representations) or "none"
        raise UnsupportedStatement(f"the view {'.'.join(ident)} without Spark SQL", f"it has {dialects}")
    tree = parse_statement(text).tree
    if tree is None:
        raise ValidationError(f"the SQL of view {'.'.join(ident)} does not parse: {text}")
    catalog = version.default_catalog or ctx.name
    for node in relation_tables(tree):
        _qualify(ctx, node, catalog, version.default_namespace)
    return tree


def _qualify(ctx: SqlContext, node: exp.Table, catalog: str, namespace: tuple[str, ...]) -> None:
    names = table_parts(node)
    if names is None:
        return
    if len(names) > 1 and names[0].lower() in (ctx.name.lower(), SPARK_CATALOG):
        return  # already names its catalog
    if catalog.lower() != ctx.name.lower():
        catalog = SPARK_CATALOG
    full = [catalog, *(namespace if len(names) == 1 else ()), *names]
    qualified = exp.to_table(".".join("`" + n.replace("`", "``") + "`" for n in full), dialect="spark")
    for key, value in node.args.items():
        if key not in ("this", "db", "catalog") and value is not None:
            qualified.set(key, value)
    node.replace(qualified)
