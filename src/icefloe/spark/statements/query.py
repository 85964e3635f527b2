"""Queries that read icefloe tables: each table reference becomes a temporary view over a freshly
planned read, with the query's predicates on that table pushed into icefloe planning.

The view is the fast read path (``spark.read``'s plan of ``icefloe.spark.read``: Spark's Parquet
reader for files without deletes, the delete-applying route for the others). The statement is
rewritten to name the views and run by ``spark.sql``; the views are dropped once Spark has
analysed it. Time travel (``VERSION AS OF``, ``TIMESTAMP AS OF``, ``branch_x`` / ``tag_x``) selects
the snapshot that is planned; metadata tables (``db.t.snapshots`` ...) become views over their rows.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from sqlglot import exp

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, And, Expression
from icefloe.expressions.binding import bind
from icefloe.spark.read import ReadPlan, plan_read
from icefloe.spark.statements.errors import UnsupportedStatement
from icefloe.spark.statements.functions import rewrite_iceberg_functions
from icefloe.spark.statements.metadata import CHANGES, changes_frame, metadata_frame
from icefloe.spark.statements.names import SqlContext, TableRef, wap_branch
from icefloe.spark.statements.parse import to_sql
from icefloe.spark.statements.predicates import NotPushable, conjuncts, to_filter
from icefloe.spark.statements.read_cache import PlannedRead, planned_read, release
from icefloe.spark.statements.relations import relation_tables, table_parts
from icefloe.spark.statements.table_options import (
    AS_OF_TIMESTAMP,
    BRANCH,
    END_SNAPSHOT_ID,
    SNAPSHOT_ID,
    START_SNAPSHOT_ID,
    TAG,
    read_options,
    table_options,
)
from icefloe.spark.statements.view_expansion import expand_views
from icefloe.spec.snapshots import RefType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_COUNTER = itertools.count()
_OUTER = {"LEFT", "RIGHT", "FULL"}


@dataclass(frozen=True)
class TimeTravel:
    """Which snapshot to read: a snapshot id, a branch, a tag or a timestamp (ms), else the current one."""

    snapshot_id: int | None = None
    branch: str | None = None
    tag: str | None = None
    as_of_ms: int | None = None
    start_snapshot_id: int | None = None  # an incremental read: the rows appended after it


@dataclass
class ReadView:
    """A temporary view standing for one metadata-table reference of the statement."""

    view: str
    ref: TableRef


@dataclass
class RewrittenQuery:
    """The statement with icefloe tables replaced by views: the planned reads of data tables (whose
    views outlive the statement, see ``read_cache``) and the metadata-table views to drop."""

    tree: exp.Expr
    views: list[ReadView] = field(default_factory=list)
    reads: list[PlannedRead] = field(default_factory=list)
    released: bool = False

    @property
    def plans(self) -> list[ReadPlan]:
        """The read plans of the data-table references (files each will read)."""
        return [r.plan for r in self.reads]

    def drop(self, ctx: SqlContext) -> None:
        """Drop the temporary views and release the planned reads (Spark has analysed the statement)."""
        for v in self.views:
            ctx.spark.catalog.dropTempView(v.view)
        if not self.released:
            for read in self.reads:
                release(read)
            self.released = True


def rewrite_reads(ctx: SqlContext, tree: exp.Expr, skip: set[int] | None = None) -> RewrittenQuery:
    """Replace every icefloe table reference in ``tree`` (except nodes whose id is in ``skip``)."""
    skip = skip or set()
    expand_views(ctx, tree, skip)
    result = RewrittenQuery(tree)
    try:
        kept = [
            node
            for node in relation_tables(tree)
            if id(node) not in skip and not _replace_reference(ctx, result, node, skip)
        ]
        if result.views or result.reads:
            _refuse_lost_options(kept)
        rewrite_iceberg_functions(ctx, tree)  # after the tables: truncate asks Spark for its argument's type
    except BaseException:
        result.drop(ctx)  # the views made so far and the reads held so far
        raise
    return result


def _replace_reference(ctx: SqlContext, result: RewrittenQuery, node: exp.Table, skip: set[int]) -> bool:
    """Replace one table reference of ``result.tree`` when it names an icefloe table (True if so)."""
    parts = table_parts(node)
    if id(node) in skip or parts is None:
        return False
    ref = ctx.resolve(parts)
    if ref is None:
        return False
    travel = time_travel(ctx, ref, node.args.get("version"))
    options = read_options(ref.name, table_options(node))
    if options:
        explicit = node.args.get("version") is not None or ref.branch is not None or ref.tag is not None
        travel = option_travel(ref, options, None if explicit else travel)
    alias = node.alias or ref.identifier[-1]
    if ref.metadata_table is not None:
        if travel.start_snapshot_id is not None:
            raise ValidationError(
                f"{ref.name}.{ref.metadata_table}: start-snapshot-id reads data tables only"
            )
        view = f"__icefloe_{next(_COUNTER)}_{uuid.uuid4().hex[:8]}"
        if ref.metadata_table == CHANGES:
            df = changes_frame(ctx, ref, time_travel=node.args.get("version") is not None)
        else:
            df = metadata_frame(ctx.spark, ref.table, ref.metadata_table, _snapshot_for(ref, travel))
        df.createOrReplaceTempView(view)
        result.views.append(ReadView(view, ref))
        replacement = exp.Table(this=exp.to_identifier(view))
    else:
        read = _read(ctx, ref, travel, pushed_filter(ref, node, alias))
        result.reads.append(read)
        replacement = exp.Table(this=exp.to_identifier(read.name), db=exp.to_identifier(read.database))
    replacement.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    node.replace(replacement)
    return True


def _refuse_lost_options(kept: list[exp.Table]) -> None:
    """Spark's generator does not write table options: a statement rewritten to read icefloe tables
    would read a Spark table (one of ``kept``) given ``WITH (...)`` without them, so it is refused."""
    for node in kept:
        if table_options(node):
            raise UnsupportedStatement(
                f"WITH (options) on the Spark table {to_sql(node)} in a statement reading icefloe tables"
            )


def option_travel(ref: TableRef, options: dict[str, str], travel: TimeTravel | None) -> TimeTravel:
    """The snapshot Iceberg's read options select (``snapshot-id``, ``as-of-timestamp`` in ms,
    ``branch``, ``tag``, ``start-snapshot-id`` [``end-snapshot-id``]); ``travel`` is what the name
    or the session chose when nothing was written in the statement, None when the statement chose
    (``AS OF``, ``branch_x``): options may not choose as well, as Iceberg refuses both."""

    def number(key: str) -> int | None:
        value = options.get(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise ValidationError(f"{ref.name}: read option {key} takes a number, not {value!r}") from None

    chosen = sorted(k for k in options if k in (SNAPSHOT_ID, AS_OF_TIMESTAMP, BRANCH, TAG, START_SNAPSHOT_ID))
    if END_SNAPSHOT_ID in options and START_SNAPSHOT_ID not in options:
        raise ValidationError(f"{ref.name}: end-snapshot-id needs start-snapshot-id (an incremental read)")
    if len(chosen) > 1:
        raise ValidationError(f"{ref.name}: the read options {', '.join(chosen)} select different snapshots")
    if chosen and travel is None:
        raise ValidationError(
            f"{ref.name}: read option {chosen[0]} cannot select a snapshot chosen in the name or AS OF"
        )
    if not chosen:
        return travel or TimeTravel()
    if START_SNAPSHOT_ID in options:
        return TimeTravel(snapshot_id=number(END_SNAPSHOT_ID), start_snapshot_id=number(START_SNAPSHOT_ID))
    if BRANCH in options or TAG in options:
        return TimeTravel(branch=options.get(BRANCH), tag=options.get(TAG))
    return TimeTravel(snapshot_id=number(SNAPSHOT_ID), as_of_ms=number(AS_OF_TIMESTAMP))


def run_query(ctx: SqlContext, tree: exp.Expr, text: str | None = None) -> DataFrame:
    """Run a query that may read icefloe tables; one that reads none runs as ``text`` when given
    (the statement as written: sqlglot's rendering may drop hints and comments, or differ else)."""
    original = tree.copy() if text is not None else None
    rewritten = rewrite_reads(ctx, tree)
    try:
        unchanged = original is not None and rewritten.tree == original
        return ctx.spark.sql(text if unchanged and text is not None else to_sql(rewritten.tree))
    finally:
        rewritten.drop(ctx)


def source_frame(ctx: SqlContext, tree: exp.Expr) -> DataFrame:
    """A DataFrame of a query (or VALUES) that may read icefloe tables (the source of a write)."""
    return run_query(ctx, tree)


def _read(ctx: SqlContext, ref: TableRef, travel: TimeTravel, row_filter: Expression) -> PlannedRead:
    """The planned read of a table reference (reused when the same table state and filter recur)."""

    def plan() -> ReadPlan:
        return plan_read(
            ref.table,
            snapshot_id=travel.snapshot_id,
            as_of_timestamp=travel.as_of_ms,
            branch=travel.branch,
            tag=travel.tag,
            row_filter=row_filter,
            start_snapshot_id=travel.start_snapshot_id,
        )

    return planned_read(ctx.spark, ref.table, travel, row_filter, plan)


# ------------------------------------------------------------------------------------------ pushdown


def pushed_filter(ref: TableRef, node: exp.Table, alias: str) -> Expression:
    """The conjuncts of the enclosing WHERE that concern only this table, as one icefloe filter."""
    select = node.find_ancestor(exp.Select)
    if select is None or select.args.get("where") is None:
        return AlwaysTrue()
    joins = select.args.get("joins") or []
    in_from = node.find_ancestor(exp.From, exp.Join)
    if isinstance(in_from, exp.Join) and in_from.side.upper() in _OUTER:
        return AlwaysTrue()
    if any(j.side.upper() in ("RIGHT", "FULL") for j in joins):
        return AlwaysTrue()
    single = not joins
    names = {alias.lower(), ref.identifier[-1].lower()}
    schema = ref.table.schema()

    def column(col: exp.Column) -> str:
        qualifier = col.table
        if qualifier and qualifier.lower() not in names:
            raise NotPushable
        if not qualifier and not single:
            raise NotPushable
        if col.args.get("db") or col.args.get("catalog"):
            raise NotPushable
        return str(col.name)

    out: Expression = AlwaysTrue()
    for part in conjuncts(select.args["where"].this):
        if part.find(exp.Subquery, exp.Select) is not None:
            continue
        try:
            expr = to_filter(part, column)
            bind(schema, expr, case_sensitive=False)
        except (NotPushable, ValidationError):
            continue
        out = expr if isinstance(out, AlwaysTrue) else And(out, expr)
    return out


# ------------------------------------------------------------------------------------------ time travel


def time_travel(ctx: SqlContext, ref: TableRef, version: exp.Expr | None) -> TimeTravel:
    """The snapshot a reference reads: ``VERSION/TIMESTAMP AS OF`` or a ``branch_``/``tag_`` suffix."""
    if version is None:
        if ref.branch is None and ref.tag is None:
            wap = wap_branch(ctx, ref)  # Iceberg reads the session's WAP branch once it exists
            if wap is not None and wap in ref.table.metadata.refs:
                return TimeTravel(branch=wap)
        return TimeTravel(branch=ref.branch, tag=ref.tag)
    if ref.branch is not None or ref.tag is not None:
        raise ValidationError(f"{ref.name}: a branch_/tag_ name cannot take AS OF as well")
    kind = str(version.this).upper()
    value = version.expression
    if kind == "VERSION":
        if isinstance(value, exp.Literal) and not value.is_string:
            return TimeTravel(snapshot_id=int(value.this))
        if isinstance(value, exp.Literal):
            name = value.this
            refs = ref.table.metadata.refs
            if name in refs:
                is_tag = refs[name].ref_type == RefType.TAG
                return TimeTravel(tag=name) if is_tag else TimeTravel(branch=name)
            if name.isdigit():
                return TimeTravel(snapshot_id=int(name))
            raise ValidationError(f"table {ref.name} has no branch or tag named {name!r}")
        raise ValidationError(f"VERSION AS OF takes a snapshot id or a ref name, got {to_sql(value)}")
    return TimeTravel(as_of_ms=timestamp_ms(ctx, value))


def timestamp_ms(ctx: SqlContext, value: exp.Expr) -> int:
    """Milliseconds since the epoch of a timestamp expression, read as Spark would."""
    if isinstance(value, exp.Literal) and not value.is_string:
        return int(float(value.this) * 1000)  # Spark: a number is seconds since the epoch
    text = value.this if isinstance(value, exp.Literal) else None
    if isinstance(value, exp.Cast) and isinstance(value.this, exp.Literal) and value.this.is_string:
        text = value.this.this
    if text is not None:
        try:
            parsed = dt.datetime.fromisoformat(text)
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                zone = ctx.spark.conf.get("spark.sql.session.timeZone") or "UTC"
                parsed = parsed.replace(tzinfo=ZoneInfo(zone))
            return int(parsed.timestamp() * 1000)
    row: Any = ctx.spark.sql(f"SELECT unix_millis(CAST({to_sql(value)} AS TIMESTAMP)) AS ms").first()
    if row is None or row[0] is None:
        raise ValidationError(f"TIMESTAMP AS OF: {to_sql(value)} is not a timestamp")
    return int(row[0])


def _snapshot_for(ref: TableRef, travel: TimeTravel) -> int | None:
    md = ref.table.metadata
    if travel.snapshot_id is not None:
        return travel.snapshot_id
    name = travel.branch or travel.tag
    if name is not None:
        snap = md.snapshot_for_ref(name)
        if snap is None:
            raise ValidationError(f"table {ref.name} has no branch or tag named {name!r}")
        return snap.snapshot_id
    if travel.as_of_ms is not None:
        snap = md.snapshot_as_of(travel.as_of_ms)
        if snap is None:
            raise ValidationError(f"table {ref.name} has no snapshot at or before {travel.as_of_ms} ms")
        return snap.snapshot_id
    return None
