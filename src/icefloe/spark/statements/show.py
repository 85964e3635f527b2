"""SHOW NAMESPACES / TABLES / TBLPROPERTIES / CREATE TABLE and DESCRIBE [EXTENDED] for icefloe names,
with Spark's result columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import Statement, TokenCursor
from icefloe.spark.statements.query import table_parts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.table.table import Table


def handle(ctx: SqlContext, stmt: Statement, tree: exp.Expr) -> DataFrame | None:
    """Run SHOW / DESCRIBE on icefloe names (None otherwise)."""
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        parts = table_parts(tree.this)
        ref = ctx.resolve(parts) if parts else None
        if ref is None:
            return None
        return describe(ctx, ref.table, str(tree.args.get("style") or "").upper() == "EXTENDED")
    if not isinstance(tree, exp.Command) or str(tree.this).upper() != "SHOW":
        return None
    cursor = TokenCursor(stmt.text)
    cursor.expect("SHOW")
    if cursor.accept("NAMESPACES") or cursor.accept("DATABASES") or cursor.accept("SCHEMAS"):
        return _namespaces(ctx, cursor)
    if cursor.accept("TABLES"):
        return _tables(ctx, cursor)
    if cursor.accept("TBLPROPERTIES"):
        table = _table(ctx, cursor.dotted())
        if table is None:
            return None
        key = _paren_string(cursor)
        props = sorted(table.properties.items())
        if key is not None:
            props = [(key, table.properties.get(key, f"Table {table.name} does not have property: {key}"))]
        return _frame(ctx, [("key", "string"), ("value", "string")], props)
    if cursor.accept("CREATE", "TABLE"):
        table = _table(ctx, cursor.dotted())
        if table is None:
            return None
        return _frame(ctx, [("createtab_stmt", "string")], [(show_create(ctx, table),)])
    return None


def _table(ctx: SqlContext, parts: list[str]) -> Table | None:
    ref = ctx.resolve(parts)
    return ref.table if ref is not None else None


def _paren_string(cursor: TokenCursor) -> str | None:
    if not cursor.accept("("):
        return None
    text = cursor.next().text
    cursor.expect(")")
    return str(text)


def _namespaces(ctx: SqlContext, cursor: TokenCursor) -> DataFrame | None:
    parent: tuple[str, ...] = ()
    if cursor.accept("IN") or cursor.accept("FROM"):
        parts = cursor.dotted()
        if parts[0].lower() == ctx.name.lower():
            parent = tuple(parts[1:])
        elif ctx.current_is_icefloe():
            parent = tuple(parts)
        else:
            return None
    elif not ctx.current_is_icefloe():
        return None
    rows = [(".".join(ns),) for ns in ctx.catalog.list_namespaces(parent)]
    return _frame(ctx, [("namespace", "string")], sorted(rows))


def _tables(ctx: SqlContext, cursor: TokenCursor) -> DataFrame | None:
    if cursor.accept("IN") or cursor.accept("FROM"):
        parts = cursor.dotted()
        if parts[0].lower() == ctx.name.lower():
            ns = tuple(parts[1:])
        elif ctx.current_is_icefloe():
            ns = tuple(parts)
        else:
            return None
    elif ctx.current_is_icefloe() and ctx.current_namespace():
        ns = ctx.current_namespace()
    else:
        return None
    rows = [(".".join(ident[:-1]), ident[-1], False) for ident in ctx.catalog.list_tables(ns)]
    return _frame(ctx, [("namespace", "string"), ("tableName", "string"), ("isTemporary", "boolean")], rows)


def describe(ctx: SqlContext, table: Table, extended: bool) -> DataFrame:
    """DESCRIBE [EXTENDED]: columns, then the partitioning (and table details when extended)."""
    from icefloe.spark.schema import to_spark_type

    rows: list[tuple[Any, ...]] = [
        (f.name, to_spark_type(f.field_type, False).simpleString(), f.doc) for f in table.schema().fields
    ]
    spec = table.spec()
    if spec.fields:
        rows += [("", "", ""), ("# Partitioning", "", "")]
        rows += [(f"Part {i}", partition_text(table, f), "") for i, f in enumerate(spec.fields)]
    if extended:
        snap = table.current_snapshot()
        rows += [("", "", ""), ("# Metadata Columns", "", "")]
        rows += [("_spec_id", "int", ""), ("_partition", "struct", ""), ("_file", "string", "")]
        rows += [("_pos", "bigint", ""), ("_deleted", "boolean", "")]
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        rows += [
            ("Name", f"{ctx.name}.{table.name}", ""),
            ("Type", "MANAGED", ""),
            ("Location", table.location(), ""),
            ("Provider", "iceberg", ""),
            ("Owner", table.properties.get("owner", ""), ""),
            ("Table Properties", _properties_text(table), ""),
        ]
        if snap is not None:
            rows.insert(-5, ("Current Snapshot", str(snap.snapshot_id), ""))
    return _frame(ctx, [("col_name", "string"), ("data_type", "string"), ("comment", "string")], rows)


def partition_text(table: Table, field: Any) -> str:
    """A partition field as Spark SQL shows it: ``bucket(16, id)``, ``days(ts)``, ``category``."""
    from icefloe.spec.transforms import (
        BucketTransform,
        DayTransform,
        HourTransform,
        IdentityTransform,
        MonthTransform,
        TruncateTransform,
        YearTransform,
    )

    source = table.schema().find_column_name(field.source_id) or str(field.source_id)
    t = field.transform
    if isinstance(t, IdentityTransform):
        return source
    if isinstance(t, BucketTransform):
        return f"bucket({t.num_buckets}, {source})"
    if isinstance(t, TruncateTransform):
        return f"truncate({t.width}, {source})"
    names = {YearTransform: "years", MonthTransform: "months", DayTransform: "days", HourTransform: "hours"}
    for cls, name in names.items():
        if isinstance(t, cls):
            return f"{name}({source})"
    return f"{t}({source})"


def _properties_text(table: Table) -> str:
    props = {"format-version": str(table.format_version), **table.properties}
    return "[" + ",".join(f"{k}={v}" for k, v in sorted(props.items())) + "]"


def show_create(ctx: SqlContext, table: Table) -> str:
    """A CREATE TABLE statement that makes an equal (empty) table."""
    from icefloe.spark.schema import to_spark_type

    cols = []
    for f in table.schema().fields:
        text = f"  {f.name} {to_spark_type(f.field_type, False).simpleString().upper()}"
        if f.required:
            text += " NOT NULL"
        if f.doc:
            text += " COMMENT '" + f.doc.replace("'", "\\'") + "'"
        cols.append(text)
    out = f"CREATE TABLE {ctx.name}.{table.name} (\n" + ",\n".join(cols) + ")\nUSING iceberg\n"
    spec = table.spec()
    if spec.fields:
        out += "PARTITIONED BY (" + ", ".join(partition_text(table, f) for f in spec.fields) + ")\n"
    out += f"LOCATION '{table.location()}'\n"
    props = {"format-version": str(table.format_version), **table.properties}
    out += "TBLPROPERTIES (\n" + ",\n".join(f"  '{k}' = '{v}'" for k, v in sorted(props.items())) + ")\n"
    return out


def _frame(ctx: SqlContext, columns: list[tuple[str, str]], rows: list[tuple[Any, ...]]) -> DataFrame:
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in columns)
    return ctx.spark.createDataFrame(rows, ddl)
