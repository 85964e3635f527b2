"""ALTER TABLE statements sqlglot parses: columns (add, rename, drop, type, comment, nullability),
SET TBLPROPERTIES, RENAME TO. Each statement commits once, through icefloe's evolution builders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe.spark.statements.columns import column_path, comment, iceberg_type, not_null
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import to_sql
from icefloe.spark.statements.query import table_parts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.table.table import Table
    from icefloe.txn.schema_evolution import UpdateSchema


def target_table(ctx: SqlContext, parts: list[str] | None) -> Table | None:
    """The icefloe table an ALTER names (None: a Spark table)."""
    if parts is None:
        return None
    ident = ctx.table_identifier(parts)
    if ident is None:
        return None
    return ctx.catalog.load_table(ident)


def alter_table(ctx: SqlContext, tree: exp.Alter) -> DataFrame | None:
    """Run an ALTER TABLE on an icefloe table (None when it names a Spark table)."""
    from icefloe.spark.statements.results import empty

    if str(tree.args.get("kind") or "").upper() != "TABLE" or not isinstance(tree.this, exp.Table):
        return None
    table = target_table(ctx, table_parts(tree.this))
    if table is None:
        return None
    actions = tree.args.get("actions") or []
    schema_actions = [a for a in actions if not isinstance(a, exp.AlterSet | exp.AlterRename)]
    if schema_actions:
        update = table.update_schema(allow_incompatible_changes=False, case_sensitive=False)
        for action in schema_actions:
            _schema_action(update, action)
        update.commit()
    for action in actions:
        if isinstance(action, exp.AlterSet):
            props = _set_properties(action)
            version = props.pop("format-version", None)
            if version is not None:  # Iceberg: setting format-version upgrades the table
                table.refresh().upgrade_format_version(int(version))
            if props:
                table.refresh().set_properties(**props)
        elif isinstance(action, exp.AlterRename):
            new_parts = table_parts(action.this)
            ident = ctx.table_identifier(new_parts) if new_parts else None
            if ident is None and new_parts is not None and len(new_parts) == 1:
                ident = (*table.identifier[:-1], new_parts[0])
            if ident is None:
                raise UnsupportedStatement("renaming an icefloe table into another catalog")
            ctx.catalog.rename_table(table.identifier, ident)
    ctx.forget(table.identifier)
    return empty(ctx)


_UNDERSTOOD = (
    exp.Schema,
    exp.ColumnDef,
    exp.RenameColumn,
    exp.AlterColumn,
    exp.AlterSet,
    exp.AlterRename,
)


def understood(tree: exp.Alter) -> bool:
    """Whether every action of a parsed ALTER is one this module runs."""
    for action in tree.args.get("actions") or []:
        is_column_drop = isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() in (
            "COLUMN",
            "COLUMNS",
        )
        if not is_column_drop and not isinstance(action, _UNDERSTOOD):
            return False
        if isinstance(action, exp.AlterSet) and not all(
            isinstance(n, exp.Properties) for n in action.expressions
        ):
            return False
    return True


def _schema_action(update: UpdateSchema, action: exp.Expr) -> None:
    if isinstance(action, exp.Schema):
        for col in action.expressions:
            _add_column(update, col)
    elif isinstance(action, exp.ColumnDef):
        _add_column(update, action)
    elif isinstance(action, exp.RenameColumn):
        update.rename_column(column_path(action.this), column_path(action.args["to"]).split(".")[-1])
    elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() in ("COLUMN", "COLUMNS"):
        for target in action.args.get("tables") or []:
            names = target.expressions if isinstance(target, exp.Schema) else [target]
            for name in names:
                update.delete_column(column_path(name))
    elif isinstance(action, exp.AlterColumn):
        _alter_column(update, action)
    else:
        raise UnsupportedStatement(f"ALTER TABLE ... {to_sql(action)}")


def _add_column(update: UpdateSchema, col: exp.Expr) -> None:
    if not isinstance(col, exp.ColumnDef) or col.args.get("kind") is None:
        raise UnsupportedStatement(f"the column definition {to_sql(col)}")
    path = column_path(col.this)
    required = not_null(col)
    if required:
        raise UnsupportedStatement(
            f"adding the required column {path!r}", "existing rows have no value for it; add it nullable"
        )
    update.add_column(path, iceberg_type(col.args["kind"]), doc=comment(col))
    position = col.args.get("position")
    if position is not None:
        _move(update, path, position)


def _move(update: UpdateSchema, path: str, position: exp.Expr) -> None:
    where = str(position.args.get("position") or "").upper()
    if where == "FIRST":
        update.move_first(path)
    elif where == "AFTER":
        ref = column_path(position.this)
        parent = path.rsplit(".", 1)[0] + "." if "." in path else ""
        update.move_after(path, ref if "." in ref or not parent else parent + ref)
    else:
        raise UnsupportedStatement(f"the column position {to_sql(position)}")


def _alter_column(update: UpdateSchema, action: exp.AlterColumn) -> None:
    path = column_path(action.this)
    dtype = action.args.get("dtype")
    if dtype is not None:
        update.update_column(path, field_type=iceberg_type(dtype))
    if action.args.get("comment") is not None:
        update.update_column(path, doc=str(action.args["comment"].this))
    allow_null = action.args.get("allow_null")
    if allow_null is True:
        update.make_column_optional(path)
    elif allow_null is False:
        update.require_column(path)


def _set_properties(action: exp.AlterSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for node in action.expressions:
        props = node.expressions if isinstance(node, exp.Properties) else [node]
        for prop in props:
            if type(prop) is not exp.Property:
                raise UnsupportedStatement(f"ALTER TABLE SET {to_sql(prop)}")
            out[_text(prop.this)] = _text(prop.args["value"])
    return out


def _text(node: exp.Expr) -> str:
    if isinstance(node, exp.Literal | exp.Identifier | exp.Var):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return to_sql(node)
