"""CREATE / DROP of namespaces and tables, CTAS and CREATE OR REPLACE, ALTER TABLE dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import AlreadyExists, NoSuchNamespace, NoSuchTable
from icefloe.spark.statements.columns import schema_of
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext, namespace_parts
from icefloe.spark.statements.parse import Statement, to_sql, tokenize
from icefloe.spark.statements.partition_terms import partition_term
from icefloe.spark.statements.query import run_query, table_parts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.spec.partitioning import PartitionSpec
    from icefloe.spec.schema import Schema

_NAMESPACE_KINDS = ("NAMESPACE", "DATABASE", "SCHEMA")
_FORMATS = ("icefloe", "iceberg")


def handle(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame | None:
    """Run CREATE / DROP / ALTER on icefloe names; None when the statement is not one of them."""
    from icefloe.spark.statements import alter

    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind") or "").upper()
        if kind in _NAMESPACE_KINDS:
            return create_namespace(ctx, tree)
        if kind == "TABLE":
            tokens = tokenize(stmt.text)
            plain_replace = bool(tokens) and tokens[0].text.upper() == "REPLACE"
            return create_table(ctx, tree, plain_replace)
        return None
    if isinstance(tree, exp.Drop):
        return drop(ctx, tree)
    if isinstance(tree, exp.Alter):
        if not alter.understood(tree):  # Iceberg's extensions that sqlglot read as Spark clauses
            from icefloe.spark.statements import extensions

            return extensions.handle(ctx, stmt, None)
        return alter.alter_table(ctx, tree)
    return None


def create_namespace(ctx: SqlContext, tree: exp.Create) -> DataFrame | None:
    """CREATE NAMESPACE|DATABASE|SCHEMA [IF NOT EXISTS] name [COMMENT ..] [LOCATION ..] [WITH ..]."""
    from icefloe.spark.statements.results import empty

    target = tree.this
    parts = table_parts(target) if isinstance(target, exp.Table) else None
    ns = namespace_parts(ctx, parts) if parts else None
    if ns is None:
        return None
    props = _properties(tree.args.get("properties"))
    if ctx.catalog.namespace_exists(ns):
        if tree.args.get("exists"):
            return empty(ctx)
        raise AlreadyExists(f"namespace {'.'.join(ns)!r} already exists")
    ctx.catalog.create_namespace(ns, props)
    return empty(ctx)


def create_table(ctx: SqlContext, tree: exp.Create, plain_replace: bool = False) -> DataFrame | None:
    """CREATE [OR REPLACE] TABLE [IF NOT EXISTS] ... [AS SELECT]; ``REPLACE TABLE`` (``plain_replace``)
    needs the table to exist."""
    from icefloe.spark.statements.results import empty
    from icefloe.spark.views import parse_partitioning
    from icefloe.spark.write import write_table

    schema_node = tree.this if isinstance(tree.this, exp.Schema) else None
    table_node = schema_node.this if schema_node is not None else tree.this
    parts = table_parts(table_node) if isinstance(table_node, exp.Table) else None
    ident = ctx.table_identifier(parts) if parts else None
    if ident is None:
        return None
    props_node = tree.args.get("properties")
    using = _using(props_node)
    if using is not None and using.lower() not in _FORMATS:
        raise UnsupportedStatement(f"USING {using} for a table of catalog {ctx.name!r}", "use USING iceberg")
    properties = _properties(props_node, table=True)
    location = properties.pop("location", None)
    partition_texts = _partitioning(props_node)
    query = tree.args.get("expression")
    exists = ctx.catalog.table_exists(ident)
    if exists and tree.args.get("exists"):
        return empty(ctx)
    if exists and not tree.args.get("replace"):
        raise AlreadyExists(f"table {'.'.join(ident)!r} already exists")
    if plain_replace and not exists:
        raise NoSuchTable(f"table {'.'.join(ident)!r} does not exist (REPLACE TABLE needs it)")
    source = run_query(ctx, query) if query is not None else None
    if schema_node is not None:
        columns = [c for c in schema_node.expressions if isinstance(c, exp.ColumnDef)]
        schema: Schema = schema_of(columns)
    elif source is not None:
        from icefloe.spark.schema import to_iceberg_schema

        schema = to_iceberg_schema(source.schema)
    else:
        raise UnsupportedStatement("CREATE TABLE without columns or AS SELECT")
    spec = parse_partitioning(schema, partition_texts)
    if exists:  # [CREATE OR] REPLACE: the same table, with its history, gets the new definition
        _replace_table(ctx, ident, schema, spec, properties, location, source)
        ctx.forget(ident)
        return empty(ctx)
    if not ctx.catalog.namespace_exists(ident[:-1]):
        raise NoSuchNamespace(f"namespace {'.'.join(ident[:-1])!r} does not exist")
    table = ctx.catalog.create_table(ident, schema, spec, location=location, properties=properties)
    if source is not None:
        try:
            write_table(source, ident, "append", catalog=ctx.catalog)
        except BaseException:
            ctx.catalog.drop_table(ident, purge=True)  # nothing stays behind when the query fails
            raise
    ctx.forget(table.identifier)
    return empty(ctx)


def _replace_table(
    ctx: SqlContext,
    ident: tuple[str, ...],
    schema: Schema,
    spec: PartitionSpec,
    properties: dict[str, str],
    location: str | None,
    source: DataFrame | None,
) -> None:
    """Replace the table's definition in one commit, with the rows of ``source`` when given."""
    import time

    from icefloe.errors import nothing_committed
    from icefloe.spark.write import stage_dataframe
    from icefloe.spec.updates import apply_updates
    from icefloe.table.table import Table
    from icefloe.txn.replace_table import ReplacementAppend, ReplaceTable, replacement_updates

    table = ctx.catalog.load_table(ident)
    action = ReplaceTable(schema, spec, properties, location)
    if source is None:
        with table.transaction() as tx:
            tx.add_action(action)
        return
    # the rows are written with the replaced schema and spec, then committed with the replacement
    md = table.metadata
    preview = apply_updates(
        md, replacement_updates(md, schema, spec, properties, location), int(time.time() * 1000)
    )
    staged = stage_dataframe(
        source, Table(table.identifier, preview, table.metadata_location, table.io, table.commit_target)
    )
    try:
        with table.transaction() as tx:
            tx.add_action(action)
            tx.add_action(
                ReplacementAppend(
                    files=list(staged.files), schema=preview.schema(), spec_id=preview.default_spec_id
                )
            )
    except BaseException as exc:
        if nothing_committed(exc):
            staged.discard()
        raise


def drop(ctx: SqlContext, tree: exp.Drop) -> DataFrame | None:
    """DROP TABLE [IF EXISTS] t [PURGE]; DROP NAMESPACE [IF EXISTS] ns [CASCADE]."""
    from icefloe.spark.statements.drop_namespace import drop_namespace
    from icefloe.spark.statements.results import empty

    kind = str(tree.args.get("kind") or "").upper()
    targets = tree.args.get("tables") or []
    if not targets or not isinstance(targets[0], exp.Table):
        return None
    parts = table_parts(targets[0])
    if parts is None:
        return None
    if kind == "TABLE":
        ident = ctx.table_identifier(parts)
        if ident is None:
            return None
        if not ctx.catalog.table_exists(ident):
            if tree.args.get("exists"):
                return empty(ctx)
            raise NoSuchTable(f"table {'.'.join(ident)!r} does not exist")
        ctx.catalog.drop_table(ident, purge=bool(tree.args.get("purge")))
        ctx.forget(ident)
        return empty(ctx)
    if kind in _NAMESPACE_KINDS:
        ns = namespace_parts(ctx, parts)
        if ns is None:
            return None
        drop_namespace(
            ctx, ns, cascade=bool(tree.args.get("cascade")), if_exists=bool(tree.args.get("exists"))
        )
        return empty(ctx)
    return None


# ------------------------------------------------------------------------------------------ clauses


def _properties(node: exp.Expr | None, table: bool = False) -> dict[str, str]:
    """TBLPROPERTIES / DBPROPERTIES, LOCATION and COMMENT as catalog properties."""
    out: dict[str, str] = {}
    if node is None:
        return out
    for prop in node.expressions:
        if isinstance(prop, exp.LocationProperty):
            out["location"] = _text(prop.this)
        elif isinstance(prop, exp.SchemaCommentProperty):
            out["comment"] = _text(prop.this)
        elif isinstance(prop, exp.Property) and type(prop) is exp.Property:
            out[_text(prop.this)] = _text(prop.args["value"])
        elif isinstance(prop, exp.Properties):
            out.update(_properties(prop, table))
        elif isinstance(prop, exp.FileFormatProperty | exp.PartitionedByProperty):
            continue
        else:
            raise UnsupportedStatement(f"the clause {to_sql(prop)}")
    return out


def _text(node: exp.Expr) -> str:
    if isinstance(node, exp.Literal | exp.Identifier | exp.Var):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return to_sql(node).strip("'\"`")


def _using(node: exp.Expr | None) -> str | None:
    if node is None:
        return None
    for prop in node.expressions:
        if isinstance(prop, exp.FileFormatProperty):
            return _text(prop.this)
    return None


def _partitioning(node: exp.Expr | None) -> list[str]:
    """PARTITIONED BY terms as the texts ``views.parse_partitioning`` reads."""
    if node is None:
        return []
    for prop in node.expressions:
        if isinstance(prop, exp.PartitionedByProperty):
            inner = prop.this
            terms = inner.expressions if isinstance(inner, exp.Schema | exp.Tuple) else [inner]
            return [partition_term(t) for t in terms]
    return []
