"""``CALL <catalog>.system.<procedure>(name => value, ...)`` (or positional arguments), with the
result columns of Iceberg's Spark procedures. Each runs through icefloe's own machinery: snapshot
management (``txn.refs``), maintenance (expiry, orphan files), compaction on Spark."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.names import SqlContext
from icefloe.spark.statements.parse import TokenCursor, parse_expression, to_sql
from icefloe.spark.statements.query import timestamp_ms
from icefloe.spec.snapshots import MAIN_BRANCH

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.io.fileio import ListedFile
    from icefloe.maintenance.sorting import RowOrder
    from icefloe.maintenance.zorder import ZOrder
    from icefloe.table.table import Table

Procedure = Callable[[SqlContext, dict[str, Any]], "DataFrame"]


def call(ctx: SqlContext, cursor: TokenCursor) -> DataFrame | None:
    """Run ``CALL name(args)`` when ``name`` is one of icefloe's procedures (None: Spark's)."""
    parts = cursor.dotted()
    if parts[0].lower() == ctx.name.lower():
        parts = parts[1:]
    elif not ctx.current_is_icefloe():
        return None
    if len(parts) != 2 or parts[0].lower() != "system":
        raise UnsupportedStatement(f"the procedure {'.'.join(parts)}", "procedures are system.<name>")
    name = parts[1].lower()
    spec = PROCEDURES.get(name)
    if spec is None:
        raise UnsupportedStatement(f"the procedure system.{name}", f"known: {', '.join(sorted(PROCEDURES))}")
    params, run = spec
    args = _arguments(ctx, cursor.rest(), params, name)
    return run(ctx, args)


def _arguments(ctx: SqlContext, text: str, params: tuple[str, ...], name: str) -> dict[str, Any]:
    node = parse_expression("f" + text)
    if not isinstance(node, exp.Anonymous | exp.Func):
        raise ValidationError(f"CALL system.{name}: cannot read the arguments {text}")
    out: dict[str, Any] = {}
    for i, arg in enumerate(node.expressions):
        if isinstance(arg, exp.Kwarg):
            key = str(arg.this.name).lower()
            value = _value(ctx, arg.expression)
        else:
            if out and any(k not in params[: len(out)] for k in out):
                raise ValidationError(f"CALL system.{name}: positional arguments must come first")
            if i >= len(params):
                raise ValidationError(f"CALL system.{name}: too many arguments")
            key, value = params[i], _value(ctx, arg)
        if key not in params:
            raise ValidationError(f"CALL system.{name}: unknown argument {key!r}; known: {', '.join(params)}")
        out[key] = value
    if "table" in params and "table" not in out:
        raise ValidationError(f"CALL system.{name}: the argument 'table' is required")
    return out


def _value(ctx: SqlContext, node: exp.Expr) -> Any:
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(node, exp.Neg):
        return -_value(ctx, node.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Cast) and node.to.is_type("timestamp", "timestamptz", "timestamp_ntz", "date"):
        return _Timestamp(timestamp_ms(ctx, node))
    if isinstance(node, exp.Array):
        return [_value(ctx, e) for e in node.expressions]
    if isinstance(node, exp.VarMap):
        keys = [_value(ctx, k) for k in node.args["keys"].expressions]
        values = [_value(ctx, v) for v in node.args["values"].expressions]
        return dict(zip(keys, values, strict=True))
    if isinstance(node, exp.Column | exp.Identifier | exp.Var):
        return ".".join(p.name for p in node.parts) if isinstance(node, exp.Column) else str(node.name)
    raise UnsupportedStatement(f"the procedure argument {to_sql(node)}")


@dataclasses.dataclass(frozen=True)
class _Timestamp:
    ms: int


def _ms(ctx: SqlContext, value: Any) -> int:
    if isinstance(value, _Timestamp):
        return value.ms
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return timestamp_ms(ctx, exp.Literal.string(value))
    raise ValidationError(f"expected a timestamp, got {value!r}")


def _table(ctx: SqlContext, args: dict[str, Any]) -> Table:
    parts = str(args["table"]).split(".")
    if len(parts) > 1 and parts[0].lower() == ctx.name.lower():
        parts = parts[1:]
    elif len(parts) == 1 and ctx.current_namespace():
        parts = [*ctx.current_namespace(), parts[0]]
    return ctx.catalog.load_table(tuple(parts))


def _frame(ctx: SqlContext, columns: str, rows: list[tuple[Any, ...]]) -> DataFrame:
    return ctx.spark.createDataFrame(rows, columns)


def _head(table: Table) -> int | None:
    snap = table.metadata.snapshot_for_ref(MAIN_BRANCH)
    return snap.snapshot_id if snap is not None else None


# ------------------------------------------------------------------------------------------ snapshots


def _move_main(ctx: SqlContext, args: dict[str, Any], how: str) -> DataFrame:
    table = _table(ctx, args)
    previous = _head(table)
    with table.manage_snapshots() as ms:
        if how == "rollback_to_snapshot":
            ms.rollback_to_snapshot(int(args["snapshot_id"]))
        elif how == "rollback_to_timestamp":
            ms.rollback_to_timestamp(_ms(ctx, args["timestamp"]))
        else:
            target = args.get("snapshot_id")
            ref = args.get("ref")
            if (target is None) == (ref is None):
                raise ValidationError("set_current_snapshot: give either snapshot_id or ref")
            if ref is not None:
                snap = table.metadata.snapshot_for_ref(str(ref))
                if snap is None:
                    raise ValidationError(f"table {table.name} has no ref {ref!r}")
                target = snap.snapshot_id
            assert target is not None
            ms.set_current_snapshot(int(target))
    return _frame(
        ctx, "previous_snapshot_id bigint, current_snapshot_id bigint", [(previous, _head(table.refresh()))]
    )


def _cherrypick(ctx: SqlContext, table: Table, snapshot_id: int) -> DataFrame:
    """Apply the changes of an append snapshot to main (a fast-forward when main is its parent)."""
    from icefloe.tree.read_seam import live_entries
    from icefloe.txn.producers import AppendFiles

    md = table.metadata
    snap = md.snapshot_by_id(snapshot_id)
    head = _head(table)
    if snap.parent_snapshot_id == head:
        with table.manage_snapshots() as ms:
            ms.set_current_snapshot(snapshot_id)
    elif snap.operation == "append":
        files = [
            dataclasses.replace(e.data_file, first_row_id=None)
            for e in live_entries(table.io, md, snap)
            if e.snapshot_id == snapshot_id and int(e.status) == 1
        ]
        props = {"source-snapshot-id": str(snapshot_id)}
        if "wap.id" in snap.summary:
            props["published-wap-id"] = snap.summary["wap.id"]
        with table.transaction() as tx:
            tx.add_action(AppendFiles(branch=MAIN_BRANCH, snapshot_properties=props, files=files))
    else:
        raise UnsupportedStatement(
            f"cherry-picking a {snap.operation!r} snapshot", "only appends are supported"
        )
    return _frame(
        ctx, "source_snapshot_id bigint, current_snapshot_id bigint", [(snapshot_id, _head(table.refresh()))]
    )


def _cherrypick_snapshot(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    return _cherrypick(ctx, _table(ctx, args), int(args["snapshot_id"]))


def _publish_changes(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    table = _table(ctx, args)
    wap_id = str(args["wap_id"])
    found = [s for s in table.metadata.snapshots if s.summary.get("wap.id") == wap_id]
    if len(found) != 1:
        raise ValidationError(f"publish_changes: {len(found)} snapshots have wap.id {wap_id!r} (need one)")
    return _cherrypick(ctx, table, found[0].snapshot_id)


def _fast_forward(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    table = _table(ctx, args)
    branch, to = str(args["branch"]), str(args["to"])
    before = table.metadata.snapshot_for_ref(branch)
    with table.manage_snapshots() as ms:
        ms.fast_forward(branch, to)
    after = table.refresh().metadata.snapshot_for_ref(branch)
    return _frame(
        ctx,
        "branch_updated string, previous_ref bigint, updated_ref bigint",
        [(branch, before.snapshot_id if before else None, after.snapshot_id if after else None)],
    )


def _ancestors_of(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.txn.refs import ancestor_ids

    table = _table(ctx, args)
    md = table.metadata
    start = int(args["snapshot_id"]) if args.get("snapshot_id") is not None else _head(table)
    rows = [(sid, md.snapshot_by_id(sid).timestamp_ms) for sid in ancestor_ids(md, start)]
    return _frame(ctx, "snapshot_id bigint, timestamp bigint", rows)


# ------------------------------------------------------------------------------------------ maintenance


def _expire_snapshots(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.expire_snapshots import expire_snapshots

    table = _table(ctx, args)
    kinds = _content_kinds(table)
    statistics = set(table.metadata.statistics_paths())
    result = expire_snapshots(
        table,
        older_than=_ms(ctx, args["older_than"]) if args.get("older_than") is not None else None,
        retain_last=int(args["retain_last"]) if args.get("retain_last") is not None else None,
        snapshot_ids=[int(s) for s in args.get("snapshot_ids") or []],
    )
    data = sum(1 for f in result.deleted_content_files if kinds.get(f, 0) == 0)
    position = sum(1 for f in result.deleted_content_files if kinds.get(f) == 1)
    equality = sum(1 for f in result.deleted_content_files if kinds.get(f) == 2)
    lists = sum(1 for f in result.deleted_metadata_files if "snap-" in f.rsplit("/", 1)[-1])
    stats = sum(1 for f in result.deleted_metadata_files if f in statistics)
    manifests = len(result.deleted_metadata_files) - lists - stats
    return _frame(
        ctx,
        "deleted_data_files_count bigint, deleted_position_delete_files_count bigint, "
        "deleted_equality_delete_files_count bigint, deleted_manifest_files_count bigint, "
        "deleted_manifest_lists_count bigint, deleted_statistics_files_count bigint",
        [(data, position, equality, manifests, lists, stats)],
    )


def _content_kinds(table: Table) -> dict[str, int]:
    """Content kind (0 data, 1 position deletes, 2 equality deletes) of every file of every snapshot."""
    from icefloe.scan.metadata_tables_all import all_files_table

    files = all_files_table(table.io, table.metadata, "all")
    return dict(zip(files.column("file_path").to_pylist(), files.column("content").to_pylist(), strict=True))


def _remove_orphan_files(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.orphan_matching import PrefixMatching
    from icefloe.maintenance.remove_orphan_files import remove_orphan_files

    table = _table(ctx, args)
    older = args.get("older_than")
    matching = PrefixMatching.parse(
        args.get("prefix_mismatch_mode"), args.get("equal_schemes"), args.get("equal_authorities")
    )
    view = args.get("file_list_view")  # prefix_listing only chooses how Iceberg lists: same files
    result = remove_orphan_files(
        table,
        older_than=_ms(ctx, older) if older is not None else None,
        location=args.get("location"),
        dry_run=bool(args.get("dry_run", False)),
        matching=matching,
        listing=_listed_files(ctx, str(view)) if view is not None else None,
    )
    return _frame(ctx, "orphan_file_location string", [(f,) for f in result.orphan_files])


def _listed_files(ctx: SqlContext, view: str) -> list[ListedFile]:
    """The files of a ``file_list_view`` (columns ``file_path`` and ``last_modified``, as Iceberg's)."""
    from icefloe.io.fileio import ListedFile

    frame = ctx.spark.table(view).selectExpr("file_path", "CAST(unix_millis(last_modified) AS BIGINT)")
    return [ListedFile(str(path), 0, None if ms is None else int(ms)) for path, ms in frame.collect()]


def _rewrite_data_files(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.spark.rewrite import rewrite_data_files

    table = _table(ctx, args)
    strategy = str(args.get("strategy") or "binpack").lower()
    if strategy not in ("binpack", "sort"):
        raise UnsupportedStatement(f"rewrite_data_files strategy {strategy!r}", "binpack or sort")
    if strategy == "binpack" and args.get("sort_order") is not None:
        raise ValidationError("rewrite_data_files: sort_order needs strategy => 'sort'")
    order = _rewrite_sort_order(table, args.get("sort_order")) if strategy == "sort" else None
    options = {str(k).lower(): str(v) for k, v in (args.get("options") or {}).items()}
    where = args.get("where")
    row_filter = _where_filter(table, str(where)) if where is not None else None
    result = rewrite_data_files(
        ctx.spark,
        table.identifier,
        row_filter,
        int(options["target-file-size-bytes"]) if "target-file-size-bytes" in options else None,
        min_input_files=int(options.get("min-input-files", "2")),
        rewrite_all=options.get("rewrite-all", "false").lower() == "true",
        catalog=ctx.catalog,
        case_sensitive=False,
        sort_order=order,
    )
    return _frame(
        ctx,
        "rewritten_data_files_count int, added_data_files_count int, rewritten_bytes_count bigint, "
        "failed_data_files_count int, removed_delete_files_count int",
        [
            (
                result.rewritten_data_files,
                result.added_data_files,
                result.rewritten_bytes,
                0,
                result.removed_delete_files,
            )
        ],
    )


def _rewrite_sort_order(table: Table, text: Any) -> RowOrder:
    """The ``sort`` strategy's order: ``sort_order => 'id DESC NULLS LAST, name'`` or
    ``'zorder(c1, c2)'``, else the table's."""
    from icefloe.spark.statements.partition_terms import sort_fields
    from icefloe.spec.sort_order import SortOrder

    if text is None:
        order = table.metadata.sort_order()
        if order.is_unsorted:
            raise ValidationError("rewrite_data_files: cannot sort data without a valid sort order")
        return order
    if str(text).strip().lower().startswith("zorder"):
        return _zorder(table, str(text))
    return SortOrder(*sort_fields(table, TokenCursor(str(text))))


def _zorder(table: Table, text: str) -> ZOrder:
    """``zorder(c1, c2, ...)``: z-order by those top-level columns (not identity partition ones)."""
    from icefloe.maintenance.zorder import ZOrder, check_zorderable
    from icefloe.spec.transforms import IdentityTransform

    node = parse_expression(text)
    columns = node.expressions if isinstance(node, exp.Anonymous) else []
    if not columns or not all(isinstance(c, exp.Column) and not c.table for c in columns):
        raise ValidationError(f"rewrite_data_files: cannot read the z-order {text!r} (zorder(c1, c2, ...))")
    schema = table.schema()
    order = ZOrder(tuple(schema.find_field(c.name, case_sensitive=False).field_id for c in columns))
    identity = {f.source_id for f in table.spec().fields if isinstance(f.transform, IdentityTransform)}
    check_zorderable(schema, order, identity)
    return order


def _where_filter(table: Table, text: str) -> Any:
    from icefloe.spark.statements.conditions import split_condition
    from icefloe.spark.statements.names import TableRef

    prune, exact = split_condition(TableRef(table.identifier, table), parse_expression(text))
    if not exact:
        raise UnsupportedStatement(
            f"the rewrite_data_files where condition {text!r}", "use simple column filters"
        )
    return prune


def _register_table(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    parts = str(args["table"]).split(".")
    if len(parts) > 1 and parts[0].lower() == ctx.name.lower():
        parts = parts[1:]
    table = ctx.catalog.register_table(tuple(parts), str(args["metadata_file"]))
    snap = table.current_snapshot()
    summary = snap.summary if snap is not None else {}
    return _frame(
        ctx,
        "current_snapshot_id bigint, total_records_count bigint, total_data_files_count bigint",
        [
            (
                snap.snapshot_id if snap else None,
                int(summary.get("total-records", "0")),
                int(summary.get("total-data-files", "0")),
            )
        ],
    )


def _rewrite_manifests(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.errors import Unsupported
    from icefloe.maintenance.rewrite_manifests import rewrite_manifests

    table = _table(ctx, args)  # use_caching is accepted and ignored: nothing is cached here
    try:
        spec_id = args.get("spec_id")
        result = rewrite_manifests(
            table,
            spec_id=int(spec_id) if spec_id is not None else None,
            sort_by=[str(name) for name in args.get("sort_by") or []],
        )
    except Unsupported as exc:
        raise UnsupportedStatement("rewrite_manifests with these arguments", str(exc)) from exc
    return _frame(
        ctx,
        "rewritten_manifests_count int, added_manifests_count int",
        [(result.rewritten_manifests, result.added_manifests)],
    )


def _rewrite_position_delete_files(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.rewrite_position_deletes import rewrite_position_delete_files

    if args.get("where") is not None:
        raise UnsupportedStatement(
            "rewrite_position_delete_files with where", "every data file is considered"
        )
    options = {str(k).lower(): str(v) for k, v in (args.get("options") or {}).items()}
    unknown = sorted(set(options) - {"rewrite-all", "min-input-files"})
    if unknown:
        raise UnsupportedStatement(
            f"the rewrite_position_delete_files option {unknown[0]!r}", "known: rewrite-all, min-input-files"
        )
    # icefloe merges the position delete files per data file: min-input-files is the least number
    # of them a data file must have; rewrite-all rewrites every one
    at_least = (
        1
        if options.get("rewrite-all", "false").lower() == "true"
        else int(options.get("min-input-files", "2"))
    )
    result = rewrite_position_delete_files(_table(ctx, args), min_delete_files=at_least)
    return _frame(
        ctx,
        "rewritten_delete_files_count int, added_delete_files_count int, rewritten_bytes_count bigint, "
        "added_bytes_count bigint",
        [
            (
                result.rewritten_delete_files,
                result.added_delete_files,
                result.rewritten_bytes,
                result.added_bytes,
            )
        ],
    )


def _rewrite_table_path(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.rewrite_table_path import rewrite_table_path

    missing = [k for k in ("source_prefix", "target_prefix") if args.get(k) is None]
    if missing:
        raise ValidationError(f"CALL system.rewrite_table_path: the argument {missing[0]!r} is required")
    optional = {k: str(args[k]) for k in ("start_version", "end_version", "staging_location") if args.get(k)}
    result = rewrite_table_path(
        _table(ctx, args), str(args["source_prefix"]), str(args["target_prefix"]), **optional
    )
    return _frame(
        ctx,
        "latest_version string, file_list_location string",
        [(result.latest_version, result.file_list_location)],
    )


def _create_changelog_view(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.spark.changes import create_changelog_view

    table = _table(ctx, args)
    columns = args.get("identifier_columns")
    name = create_changelog_view(
        ctx.spark,
        ".".join(table.identifier),
        args.get("changelog_view"),
        options=args.get("options"),
        compute_updates=args.get("compute_updates"),
        identifier_columns=[str(c) for c in columns] if columns is not None else None,
        net_changes=bool(args.get("net_changes", False)),
        catalog=ctx.catalog,
    )
    return _frame(ctx, "changelog_view string", [(name,)])


def _identifier(ctx: SqlContext, text: str) -> tuple[str, ...]:
    parts = [p.strip("`") for p in text.split(".")]
    if len(parts) > 1 and parts[0].lower() in (ctx.name.lower(), "spark_catalog"):
        parts = parts[1:]
    elif len(parts) == 1 and ctx.current_namespace():
        parts = [*ctx.current_namespace(), parts[0]]
    return tuple(parts)


def _snapshot(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.spark.table_import import snapshot_table

    if args.get("source_table") is None or args.get("table") is None:
        raise ValidationError("CALL system.snapshot: the arguments 'source_table' and 'table' are required")
    count = snapshot_table(
        ctx.spark,
        ctx.catalog,
        str(args["source_table"]),
        _identifier(ctx, str(args["table"])),
        {str(k): str(v) for k, v in (args.get("properties") or {}).items()},
        location=args.get("location"),
    )
    return _frame(ctx, "imported_files_count bigint", [(count,)])


def _migrate(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.spark.table_migrate import migrate_table

    source = str(args["table"])
    backup = args.get("backup_table_name")
    count = migrate_table(
        ctx.spark,
        ctx.catalog,
        source,
        _identifier(ctx, source),
        {str(k): str(v) for k, v in (args.get("properties") or {}).items()},
        drop_backup=bool(args.get("drop_backup", False)),
        backup_table_name=str(backup) if backup is not None else None,
    )
    return _frame(ctx, "migrated_files_count bigint", [(count,)])


def _add_files(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.spark.add_files import add_files

    if args.get("source_table") is None:
        raise ValidationError("CALL system.add_files: the argument 'source_table' is required")
    result = add_files(
        ctx.spark,
        _table(ctx, args),
        str(args["source_table"]),
        {str(k): str(v) for k, v in (args.get("partition_filter") or {}).items()},
        check_duplicate_files=bool(args.get("check_duplicate_files", True)),
    )
    return _frame(
        ctx,
        "added_files_count bigint, changed_partition_count bigint",
        [(result.added_files_count, result.changed_partition_count)],
    )


def _compute_table_stats(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.table_stats import compute_table_stats

    snapshot_id, columns = args.get("snapshot_id"), args.get("columns")
    path = compute_table_stats(
        _table(ctx, args),
        int(snapshot_id) if snapshot_id is not None else None,
        [str(c) for c in columns] if columns is not None else None,
    )
    return _frame(ctx, "statistics_file string", [(path,)])


def _compute_partition_stats(ctx: SqlContext, args: dict[str, Any]) -> DataFrame:
    from icefloe.maintenance.partition_stats import compute_partition_stats

    snapshot_id = args.get("snapshot_id")
    path = compute_partition_stats(_table(ctx, args), int(snapshot_id) if snapshot_id is not None else None)
    return _frame(ctx, "partition_statistics_file string", [(path,)])


PROCEDURES: dict[str, tuple[tuple[str, ...], Procedure]] = {
    "rollback_to_snapshot": (("table", "snapshot_id"), lambda c, a: _move_main(c, a, "rollback_to_snapshot")),
    "rollback_to_timestamp": (("table", "timestamp"), lambda c, a: _move_main(c, a, "rollback_to_timestamp")),
    "set_current_snapshot": (("table", "snapshot_id", "ref"), lambda c, a: _move_main(c, a, "set")),
    "cherrypick_snapshot": (("table", "snapshot_id"), _cherrypick_snapshot),
    "publish_changes": (("table", "wap_id"), _publish_changes),
    "fast_forward": (("table", "branch", "to"), _fast_forward),
    "ancestors_of": (("table", "snapshot_id"), _ancestors_of),
    "expire_snapshots": (
        ("table", "older_than", "retain_last", "max_concurrent_deletes", "stream_results", "snapshot_ids"),
        _expire_snapshots,
    ),
    "remove_orphan_files": (
        (
            "table",
            "older_than",
            "location",
            "dry_run",
            "max_concurrent_deletes",
            "file_list_view",
            "equal_schemes",
            "equal_authorities",
            "prefix_mismatch_mode",
            "prefix_listing",
        ),
        _remove_orphan_files,
    ),
    "rewrite_data_files": (("table", "strategy", "sort_order", "options", "where"), _rewrite_data_files),
    "register_table": (("table", "metadata_file"), _register_table),
    "rewrite_manifests": (("table", "use_caching", "spec_id", "sort_by"), _rewrite_manifests),
    "rewrite_position_delete_files": (("table", "options", "where"), _rewrite_position_delete_files),
    "rewrite_table_path": (
        ("table", "source_prefix", "target_prefix", "start_version", "end_version", "staging_location"),
        _rewrite_table_path,
    ),
    "create_changelog_view": (
        ("table", "changelog_view", "options", "compute_updates", "identifier_columns", "net_changes"),
        _create_changelog_view,
    ),
    "snapshot": (("source_table", "table", "location", "properties", "parallelism"), _snapshot),
    "compute_partition_stats": (("table", "snapshot_id"), _compute_partition_stats),
    "compute_table_stats": (("table", "snapshot_id", "columns"), _compute_table_stats),
    "add_files": (
        ("table", "source_table", "partition_filter", "check_duplicate_files", "parallelism"),
        _add_files,
    ),
    "migrate": (("table", "properties", "drop_backup", "backup_table_name", "parallelism"), _migrate),
}
