"""Iceberg's SQL extensions (and Spark forms sqlglot keeps as commands), read token by token.

``ALTER TABLE t`` with ``ADD / DROP / REPLACE PARTITION FIELD``, ``WRITE [LOCALLY] ORDERED BY`` /
``WRITE DISTRIBUTED BY PARTITION`` / ``WRITE UNORDERED``, ``SET / DROP IDENTIFIER FIELDS``,
``CREATE [OR REPLACE] / REPLACE / DROP BRANCH | TAG`` with retention, ``ALTER COLUMN ... FIRST /
AFTER / TYPE / COMMENT`` on nested columns, ``UNSET TBLPROPERTIES``; and ``CREATE DATABASE`` with
clauses sqlglot does not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from icefloe.errors import AlreadyExists, ValidationError
from icefloe.spark.statements.alter import target_table
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import Statement, TokenCursor, parse_expression
from icefloe.spark.statements.partition_terms import sort_fields, transform_of
from icefloe.spec.snapshots import RefType
from icefloe.spec.sort_order import SortField, SortOrder
from icefloe.spec.updates import AddSortOrder, SetDefaultSortOrder, TableUpdate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.spec.table_metadata import TableMetadata
    from icefloe.table.table import Table
    from icefloe.txn.transaction import AttemptContext

_UNIT_MS = {"DAYS": 86_400_000, "DAY": 86_400_000, "HOURS": 3_600_000, "HOUR": 3_600_000}
_UNIT_MS.update({"MINUTES": 60_000, "MINUTE": 60_000})


def handle(ctx: SqlContext, stmt: Statement, tree: exp.Expr | None) -> DataFrame | None:
    """Run a CALL / ALTER TABLE / CREATE DATABASE command on icefloe names (None otherwise); also for
    statements sqlglot could not parse (``tree`` None) or parsed as Spark's own, different clauses."""
    from icefloe.spark.statements.procedures import call
    from icefloe.spark.statements.results import empty

    if tree is not None and not isinstance(tree, exp.Command):
        return None
    cursor = TokenCursor(stmt.text)
    if cursor.accept("CALL"):
        return call(ctx, cursor)
    if cursor.accept("CREATE"):
        return _create_namespace(ctx, cursor)
    if not cursor.accept("ALTER", "TABLE"):
        return None
    table = target_table(ctx, cursor.dotted())
    if table is None:
        return None
    _alter(ctx, table, cursor)
    if not cursor.at_end():
        cursor.fail("unexpected text after the statement")
    ctx.forget(table.identifier)
    return empty(ctx)


def _create_namespace(ctx: SqlContext, cursor: TokenCursor) -> DataFrame | None:
    from icefloe.spark.statements.names import namespace_parts
    from icefloe.spark.statements.results import empty

    if not (cursor.accept("DATABASE") or cursor.accept("NAMESPACE") or cursor.accept("SCHEMA")):
        return None
    if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
    ns = namespace_parts(ctx, cursor.dotted())
    if ns is None:
        return None
    props: dict[str, str] = {}
    while not cursor.at_end():
        if cursor.accept("COMMENT"):
            props["comment"] = _string(cursor)
        elif cursor.accept("LOCATION"):
            props["location"] = _string(cursor)
        elif cursor.accept("WITH", "DBPROPERTIES") or cursor.accept("WITH", "PROPERTIES"):
            props.update(_property_list(cursor))
        else:
            cursor.fail("expected COMMENT, LOCATION or WITH DBPROPERTIES")
    if ctx.catalog.namespace_exists(ns):
        if if_not_exists:
            return empty(ctx)
        raise AlreadyExists(f"namespace {'.'.join(ns)!r} already exists")
    ctx.catalog.create_namespace(ns, props)
    return empty(ctx)


def _alter(ctx: SqlContext, table: Table, cursor: TokenCursor) -> None:
    if cursor.accept("ADD", "PARTITION", "FIELD"):
        source, transform = transform_of(table, cursor.until("AS"))
        name = cursor.identifier() if cursor.accept("AS") else None
        with table.update_spec(case_sensitive=False) as spec:
            spec.add_field(source, transform, name)
    elif cursor.accept("DROP", "PARTITION", "FIELD"):
        with table.update_spec(case_sensitive=False) as spec:
            spec.remove_field(_partition_field_name(table, cursor.rest()))
    elif cursor.accept("REPLACE", "PARTITION", "FIELD"):
        old = _partition_field_name(table, cursor.until("WITH"))
        cursor.expect("WITH")
        source, transform = transform_of(table, cursor.until("AS"))
        name = cursor.identifier() if cursor.accept("AS") else None
        with table.update_spec(case_sensitive=False) as spec:
            spec.remove_field(old)
            spec.add_field(source, transform, name)
    elif cursor.accept("WRITE"):
        _write_order(table, cursor)
    elif cursor.accept("SET", "IDENTIFIER", "FIELDS"):
        names = _name_list(cursor)
        with table.update_schema(case_sensitive=False) as update:
            update.set_identifier_fields(*names)
    elif cursor.accept("DROP", "IDENTIFIER", "FIELDS"):
        drop = {n.lower() for n in _name_list(cursor)}
        schema = table.schema()
        current = [schema.find_column_name(i) for i in schema.identifier_field_ids]
        missing = drop - {c.lower() for c in current if c}
        if missing:
            raise ValidationError(f"cannot drop identifier fields {sorted(missing)}: not identifier fields")
        with table.update_schema(case_sensitive=False) as update:
            update.set_identifier_fields(*[c for c in current if c and c.lower() not in drop])
    elif cursor.accept("UNSET", "TBLPROPERTIES"):
        if_exists = cursor.accept("IF", "EXISTS")
        keys = list(_string_list(cursor))
        absent = [k for k in keys if k not in table.properties]
        if absent and not if_exists:
            raise ValidationError(f"cannot unset properties {absent}: the table does not have them")
        present = [k for k in keys if k in table.properties]
        if present:
            table.remove_properties(*present)
    elif cursor.accept("ALTER", "COLUMN") or cursor.accept("CHANGE", "COLUMN"):
        _alter_column(table, cursor)
    else:
        _refs(table, cursor)


def _alter_column(table: Table, cursor: TokenCursor) -> None:
    from icefloe.spark.statements.columns import iceberg_type

    path = ".".join(cursor.dotted())
    with table.update_schema(case_sensitive=False) as update:
        while not cursor.at_end():
            if cursor.accept("FIRST"):
                update.move_first(path)
            elif cursor.accept("AFTER"):
                ref = ".".join(cursor.dotted())
                parent = path.rsplit(".", 1)[0] + "." if "." in path and "." not in ref else ""
                update.move_after(path, parent + ref)
            elif cursor.accept("TYPE"):
                kind = parse_expression(f"CAST(NULL AS {cursor.until('COMMENT', 'FIRST', 'AFTER')})")
                update.update_column(path, field_type=iceberg_type(kind.args["to"]))
            elif cursor.accept("COMMENT"):
                update.update_column(path, doc=_string(cursor))
            elif cursor.accept("DROP", "NOT", "NULL"):
                update.make_column_optional(path)
            elif cursor.accept("SET", "NOT", "NULL"):
                update.require_column(path)
            else:
                cursor.fail("expected TYPE, COMMENT, FIRST, AFTER or SET/DROP NOT NULL")


# ------------------------------------------------------------------------------------------ partitions


def _partition_field_name(table: Table, text: str) -> str:
    """The name of the current spec's field given by name or by its transform."""
    spec = table.spec()
    for f in spec.fields:
        if f.name.lower() == text.strip("`").lower():
            return f.name
    source, transform = transform_of(table, text)
    source_id = table.schema().find_field(source).field_id
    for f in spec.fields:
        if f.source_id == source_id and f.transform == transform:
            return f.name
    raise ValidationError(f"table {table.name} has no partition field {text!r}")


# ------------------------------------------------------------------------------------------ write order


class SetSortOrder:
    """A transaction action: add a sort order and make it the default."""

    def __init__(self, order: SortOrder) -> None:
        self.order = order

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """The updates that install the order."""
        return [AddSortOrder(self.order), SetDefaultSortOrder(-1)]

    def committed_files(self) -> list[str]:
        """No files."""
        return []


def _write_order(table: Table, cursor: TokenCursor) -> None:
    props: dict[str, str] = {}
    fields: list[SortField] = []
    if cursor.accept("UNORDERED"):
        props["write.distribution-mode"] = "none"
    elif cursor.accept("DISTRIBUTED", "BY", "PARTITION"):
        props["write.distribution-mode"] = "hash"
        if cursor.accept("LOCALLY", "ORDERED", "BY"):
            fields = sort_fields(table, cursor)
    elif cursor.accept("LOCALLY", "ORDERED", "BY"):
        props["write.distribution-mode"] = "none"
        fields = sort_fields(table, cursor)
    elif cursor.accept("ORDERED", "BY"):
        props["write.distribution-mode"] = "range"
        fields = sort_fields(table, cursor)
    else:
        cursor.fail("expected ORDERED BY, LOCALLY ORDERED BY, DISTRIBUTED BY PARTITION or UNORDERED")
    with table.transaction() as tx:
        tx.add_action(SetSortOrder(SortOrder(*fields)))
        tx.set_properties(props)


# ------------------------------------------------------------------------------------------ refs


def _refs(table: Table, cursor: TokenCursor) -> None:
    create = cursor.accept("CREATE")
    or_replace = create and cursor.accept("OR", "REPLACE")
    replace = not create and cursor.accept("REPLACE")
    drop = not create and not replace and cursor.accept("DROP")
    if not (create or replace or drop):
        cursor.fail("unsupported ALTER TABLE clause")
    kind = RefType.BRANCH if cursor.accept("BRANCH") else RefType.TAG if cursor.accept("TAG") else None
    if kind is None:
        cursor.fail("expected BRANCH or TAG")
    if_not_exists = create and cursor.accept("IF", "NOT", "EXISTS")
    if_exists = drop and cursor.accept("IF", "EXISTS")
    name = cursor.identifier()
    refs = table.metadata.refs
    exists = name in refs and refs[name].ref_type == kind
    what = "branch" if kind == RefType.BRANCH else "tag"
    if drop:
        if not exists:
            if if_exists:
                return
            raise ValidationError(f"table {table.name} has no {what} {name!r}")
        with table.manage_snapshots() as ms:
            (ms.remove_branch if kind == RefType.BRANCH else ms.remove_tag)(name)
        return
    snapshot_id, retain, min_snapshots, max_age = _ref_options(cursor, kind)
    if create and exists and if_not_exists:
        return
    if snapshot_id is None:
        snapshot_id = table.metadata.current_snapshot_id
        if snapshot_id in (None, -1) and not exists:
            raise ValidationError(f"cannot create {what} {name!r}: the table has no snapshot yet")
    with table.manage_snapshots() as ms:
        if exists and (replace or or_replace):
            if snapshot_id is not None and snapshot_id != -1:
                (ms.replace_branch if kind == RefType.BRANCH else ms.replace_tag)(name, snapshot_id)
        elif replace:
            raise ValidationError(f"table {table.name} has no {what} {name!r} to replace")
        elif kind == RefType.BRANCH:
            ms.create_branch(name, snapshot_id, min_snapshots, max_age, retain)
            min_snapshots = max_age = retain = None
        else:
            assert snapshot_id is not None
            ms.create_tag(name, snapshot_id, retain)
            retain = None
        if retain is not None:
            ms.set_max_ref_age_ms(name, retain)
        if min_snapshots is not None:
            ms.set_min_snapshots_to_keep(name, min_snapshots)
        if max_age is not None:
            ms.set_max_snapshot_age_ms(name, max_age)


def _ref_options(cursor: TokenCursor, kind: RefType) -> tuple[int | None, int | None, int | None, int | None]:
    snapshot_id = retain = min_snapshots = max_age = None
    while not cursor.at_end():
        if cursor.accept("AS", "OF", "VERSION"):
            snapshot_id = int(cursor.next().text)
        elif cursor.accept("RETAIN"):
            retain = _duration(cursor)
        elif kind == RefType.BRANCH and cursor.accept("WITH", "SNAPSHOT", "RETENTION"):
            while not cursor.at_end():
                count = int(cursor.next().text)
                if cursor.accept("SNAPSHOTS"):
                    min_snapshots = count
                elif cursor.peek() in _UNIT_MS:
                    max_age = count * _UNIT_MS[cursor.next().text.upper()]
                else:
                    cursor.fail("expected SNAPSHOTS, DAYS, HOURS or MINUTES")
        else:
            cursor.fail("expected AS OF VERSION, RETAIN or WITH SNAPSHOT RETENTION")
    return snapshot_id, retain, min_snapshots, max_age


def _duration(cursor: TokenCursor) -> int:
    count = int(cursor.next().text)
    unit = cursor.next().text.upper()
    if unit not in _UNIT_MS:
        cursor.pos -= 1
        cursor.fail("expected DAYS, HOURS or MINUTES")
    return count * _UNIT_MS[unit]


# ------------------------------------------------------------------------------------------ helpers


def _name_list(cursor: TokenCursor) -> list[str]:
    names = [".".join(cursor.dotted())]
    while cursor.accept(","):
        names.append(".".join(cursor.dotted()))
    return names


def _string(cursor: TokenCursor) -> str:
    tok = cursor.next()
    return str(tok.text)


def _string_list(cursor: TokenCursor) -> list[str]:
    cursor.expect("(")
    out = [_string(cursor)]
    while cursor.accept(","):
        out.append(_string(cursor))
    cursor.expect(")")
    return out


def _property_list(cursor: TokenCursor) -> dict[str, str]:
    cursor.expect("(")
    out: dict[str, str] = {}
    while True:
        key = _string(cursor)
        cursor.expect("=")
        out[key] = _string(cursor)
        if not cursor.accept(","):
            break
    cursor.expect(")")
    return out


__all__ = ["SetSortOrder", "UnsupportedStatement", "handle"]
