"""Iceberg views on icefloe's catalog: ``CREATE [OR REPLACE] VIEW [IF NOT EXISTS]``, ``DROP VIEW``,
``ALTER VIEW ... RENAME TO / SET | UNSET TBLPROPERTIES / AS``, ``SHOW VIEWS``, ``DESCRIBE`` and
``SHOW CREATE TABLE`` of a view.

A view is stored as Iceberg view metadata in the SQL catalog (``catalog.sql_views``): its Spark
SQL, the schema of its result (Spark analyses the query; column names and comments from the
statement's column list), the session's catalog and namespace at creation (unqualified names in
the SQL resolve there), ``comment`` and the TBLPROPERTIES as properties, and a summary naming the
engine, as Iceberg's Spark catalog writes them. Reading a view is ``view_expansion``'s.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe import __version__
from icefloe.errors import AlreadyExists, NotFound, ValidationError
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SPARK_CATALOG, SqlContext, namespace_parts
from icefloe.spark.statements.parse import Statement, TokenCursor, to_sql
from icefloe.spark.statements.query import run_query
from icefloe.spark.statements.results import empty
from icefloe.spark.statements.view_expansion import (
    DIALECT,
    load_view,
    new_view_location,
    view_identifier,
    view_store,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import NestedField
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.catalog.views import ViewStore

COMMENT = "comment"
QUERY_COLUMN_NAMES = "spark.query-column-names"
_RESERVED = (COMMENT, QUERY_COLUMN_NAMES)


def handle(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame | None:
    """Run a view statement on icefloe's catalog (None when the statement is not one)."""
    store = view_store(ctx)
    if store is None:
        return None
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, exp.Create) and kind == "VIEW":
        return _create(ctx, store, tree)
    if isinstance(tree, exp.Drop) and kind == "VIEW":
        return _drop(ctx, store, tree)
    if isinstance(tree, exp.Alter) and kind == "VIEW":
        return _alter(ctx, store, tree)
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        ident = view_identifier(ctx, tree.this)
        md = load_view(ctx, ident) if ident is not None and ctx.load(ident) is None else None
        extended = str(tree.args.get("style") or "").upper() == "EXTENDED"
        return None if md is None else _describe(ctx, md, extended)
    if isinstance(tree, exp.Command):
        return _command(ctx, store, stmt)
    return None


# ------------------------------------------------------------------------------------------ create


def _create(ctx: SqlContext, store: ViewStore, tree: exp.Create) -> DataFrame | None:
    target = tree.this
    columns = list(target.expressions) if isinstance(target, exp.Schema) else []
    table = target.this if isinstance(target, exp.Schema) else target
    ident = view_identifier(ctx, table) if isinstance(table, exp.Table) else None
    if ident is None:
        return None  # a view of Spark's catalog
    query = tree.expression
    if not isinstance(query, exp.Query):
        raise UnsupportedStatement("CREATE VIEW without AS <query>")
    properties = _properties(tree.args.get("properties"))
    existing = _existing(store, ident)
    if existing is not None and not tree.args.get("replace"):
        if tree.args.get("exists"):
            return empty(ctx)
        raise AlreadyExists(f"view {'.'.join(ident)!r} already exists")
    schema, query_columns = _schema(ctx, query, columns)
    properties[QUERY_COLUMN_NAMES] = ",".join(query_columns)
    version = _version(ctx, query)
    if existing is None:
        location = new_view_location(ctx, ident)
        store.create(ident, ViewMetadata.new(location, version, schema, properties))
    else:
        md, at = existing
        store.replace(ident, at, md.with_version(version, schema).with_properties(properties))
    return empty(ctx)


def _existing(store: ViewStore, ident: tuple[str, ...]) -> tuple[ViewMetadata, str] | None:
    try:
        return store.load(ident)
    except NotFound:
        return None


def _schema(ctx: SqlContext, query: exp.Query, columns: list[exp.Expr]) -> tuple[Schema, list[str]]:
    """The view's schema (Spark's analysis of the query, renamed and commented by the column list)
    and the query's own column names."""
    from icefloe.spark.schema import to_iceberg_schema

    analysed = run_query(ctx, query.copy()).schema
    schema = to_iceberg_schema(analysed)
    names = [f.name for f in analysed.fields]
    if not columns:
        return schema, names
    if len(columns) != len(schema.fields):
        raise ValidationError(
            f"the view lists {len(columns)} column(s), its query returns {len(schema.fields)}"
        )
    fields = []
    for column, f in zip(columns, schema.fields, strict=True):
        name = column.name if isinstance(column, exp.ColumnDef | exp.Identifier) else to_sql(column)
        comment = None
        for constraint in column.args.get("constraints") or []:
            if isinstance(constraint.args.get("kind"), exp.CommentColumnConstraint):
                comment = str(constraint.args["kind"].this.this)
        fields.append(NestedField(f.field_id, name, f.field_type, f.required, comment))
    return Schema(*fields), names


def _version(ctx: SqlContext, query: exp.Query) -> ViewVersion:
    """A view version of ``query`` made now, resolving names as the session does now."""
    if ctx.current_is_icefloe():
        catalog, namespace = ctx.name, ctx.current_namespace()
    else:
        current = ctx.spark.catalog.currentDatabase()
        catalog, namespace = SPARK_CATALOG, (current,)
    summary = {
        "engine-name": "Spark",
        "engine-version": ctx.spark.version,
        "icefloe-version": __version__,
        "app-id": ctx.spark.sparkContext.applicationId,
    }
    representation = SqlRepresentation(to_sql(query), DIALECT)
    return ViewVersion(0, int(time.time() * 1000), 0, (representation,), namespace, summary, catalog)


def _properties(node: exp.Expr | None) -> dict[str, str]:
    """COMMENT and TBLPROPERTIES of a CREATE VIEW."""
    out: dict[str, str] = {}
    for prop in node.expressions if node is not None else []:
        if isinstance(prop, exp.SchemaCommentProperty):
            out[COMMENT] = str(prop.this.this)
        elif type(prop) is exp.Property:
            out[_text(prop.this)] = _text(prop.args["value"])
        else:
            raise UnsupportedStatement(f"the clause {to_sql(prop)} of CREATE VIEW")
    return out


def _text(node: exp.Expr) -> str:
    return str(node.this) if isinstance(node, exp.Literal | exp.Identifier | exp.Var) else to_sql(node)


# ------------------------------------------------------------------------------------------ drop / alter


def _drop(ctx: SqlContext, store: ViewStore, tree: exp.Drop) -> DataFrame | None:
    targets = tree.args.get("tables") or []
    ident = view_identifier(ctx, targets[0]) if targets and isinstance(targets[0], exp.Table) else None
    if ident is None:
        return None
    if not store.exists(ident):
        if tree.args.get("exists"):
            return empty(ctx)
        what = "is a table, not a view" if ctx.load(ident) is not None else "does not exist"
        raise NotFound(f"view {'.'.join(ident)!r} {what}")
    store.drop(ident)
    return empty(ctx)


def _alter(ctx: SqlContext, store: ViewStore, tree: exp.Alter) -> DataFrame | None:
    ident = view_identifier(ctx, tree.this) if isinstance(tree.this, exp.Table) else None
    if ident is None:
        return None
    md, at = store.load(ident)
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.AlterRename) and isinstance(action.this, exp.Table):
            target = view_identifier(ctx, action.this) or ctx.table_identifier([ident[0], action.this.name])
            if target is None:
                raise ValidationError(f"cannot rename view {'.'.join(ident)} out of catalog {ctx.name}")
            store.rename(ident, target)
        elif isinstance(action, exp.AlterSet) and action.expressions:
            added = _properties(action.expressions[0])
            at = store.replace(ident, at, md.with_properties({**md.properties, **added}))
        elif isinstance(action, exp.Query):
            schema, names = _schema(ctx, action, [])
            changed = md.with_version(_version(ctx, action), schema)
            props = {k: v for k, v in md.properties.items() if k != QUERY_COLUMN_NAMES}
            at = store.replace(
                ident, at, changed.with_properties({**props, QUERY_COLUMN_NAMES: ",".join(names)})
            )
        else:
            raise UnsupportedStatement(f"ALTER VIEW ... {to_sql(action)}")
        md, at = store.load(ident) if not isinstance(action, exp.AlterRename) else (md, at)
    return empty(ctx)


# ------------------------------------------------------------------------------------------ commands


def _command(ctx: SqlContext, store: ViewStore, stmt: Statement) -> DataFrame | None:
    """SHOW VIEWS [IN ns], SHOW CREATE TABLE <view>, ALTER VIEW v UNSET TBLPROPERTIES [IF EXISTS] (...)."""
    cursor = TokenCursor(stmt.text)
    if cursor.accept("SHOW", "VIEWS"):
        return _show_views(ctx, store, cursor)
    if cursor.accept("SHOW", "CREATE", "TABLE"):
        ident = ctx.table_identifier(cursor.dotted())
        md = load_view(ctx, ident) if ident is not None and ctx.load(ident) is None else None
        return (
            None
            if md is None or ident is None
            else _frame(ctx, "createtab_stmt string", [(show_create(ctx, ident, md),)])
        )
    if cursor.accept("SHOW", "TBLPROPERTIES"):
        ident = ctx.table_identifier(cursor.dotted())
        md = load_view(ctx, ident) if ident is not None and ctx.load(ident) is None else None
        if md is None:
            return None
        props = sorted(md.properties.items())
        if cursor.accept("("):
            key = cursor.next().text
            cursor.expect(")")
            props = [
                (key, md.properties.get(key, f"View {'.'.join(ident or ())} does not have property: {key}"))
            ]
        return _frame(ctx, "key string, value string", props)
    if cursor.accept("ALTER", "VIEW"):
        ident = ctx.table_identifier(cursor.dotted())
        if ident is None:
            return None
        cursor.expect("UNSET", "TBLPROPERTIES")
        if_exists = cursor.accept("IF", "EXISTS")
        keys = _string_list(cursor)
        md, at = store.load(ident)
        missing = [k for k in keys if k not in md.properties]
        if missing and not if_exists:
            raise ValidationError(f"view {'.'.join(ident)} has no properties {missing}")
        store.replace(
            ident, at, md.with_properties({k: v for k, v in md.properties.items() if k not in keys})
        )
        return empty(ctx)
    return None


def _string_list(cursor: TokenCursor) -> list[str]:
    cursor.expect("(")
    keys = []
    while True:
        keys.append(cursor.next().text)
        if cursor.accept(")"):
            return keys
        cursor.expect(",")


def _show_views(ctx: SqlContext, store: ViewStore, cursor: TokenCursor) -> DataFrame | None:
    if cursor.accept("IN") or cursor.accept("FROM"):
        ns = namespace_parts(ctx, cursor.dotted())
    else:
        ns = ctx.current_namespace() if ctx.current_is_icefloe() else None
    if ns is None:
        return None
    rows = [(".".join(ident[:-1]), ident[-1], False) for ident in store.names(ns)]
    return _frame(ctx, "namespace string, viewName string, isTemporary boolean", rows)


def _describe(ctx: SqlContext, md: ViewMetadata, extended: bool) -> DataFrame:
    """The view's columns; with EXTENDED, the view details Spark shows for a catalog view."""
    from icefloe.spark.schema import to_spark_type

    fields = md.schema().fields
    rows: list[tuple[Any, ...]] = [
        (f.name, to_spark_type(f.field_type, False).simpleString(), f.doc) for f in fields
    ]
    if extended:
        version = md.current_version()
        shown = sorted((k, v) for k, v in md.properties.items() if k not in _RESERVED)
        query_columns = md.properties.get(QUERY_COLUMN_NAMES, ",".join(f.name for f in fields)).split(",")
        rows += [
            ("", "", ""),
            ("# Detailed View Information", "", ""),
            ("Comment", md.properties.get(COMMENT, ""), ""),
            (
                "View Catalog and Namespace",
                ".".join([version.default_catalog or ctx.name, *version.default_namespace]),
                "",
            ),
            ("View Query Output Columns", "[" + ", ".join(query_columns) + "]", ""),
            ("View Properties", "[" + ", ".join(f"{k}={v}" for k, v in shown) + "]", ""),
            (
                "Created By",
                version.summary.get("engine-name", "") + " " + version.summary.get("engine-version", ""),
                "",
            ),
        ]
    return _frame(ctx, "col_name string, data_type string, comment string", rows)


def show_create(ctx: SqlContext, ident: tuple[str, ...], md: ViewMetadata) -> str:
    """The CREATE VIEW statement of a view, as Iceberg's Spark catalog shows it."""
    columns = ",\n".join(
        f"  {f.name}" + (f" COMMENT '{_escape(f.doc)}'" if f.doc else "") for f in md.schema().fields
    )
    text = f"CREATE VIEW {ctx.name}.{'.'.join(ident)} (\n{columns})\n"
    if COMMENT in md.properties:
        text += f"COMMENT '{_escape(md.properties[COMMENT])}'\n"
    shown = sorted((k, v) for k, v in md.properties.items() if k not in _RESERVED)
    if shown:
        pairs = ",\n".join(f"  '{_escape(k)}' = '{_escape(v)}'" for k, v in shown)
        text += f"TBLPROPERTIES (\n{pairs})\n"
    return text + f"AS\n{md.current_version().sql_for(DIALECT)}\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _frame(ctx: SqlContext, ddl: str, rows: list[tuple[Any, ...]]) -> DataFrame:
    return ctx.spark.createDataFrame(rows, ddl)
