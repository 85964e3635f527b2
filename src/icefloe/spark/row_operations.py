"""Row-level changes from PySpark: ``delete_rows``, ``update_rows``, ``merge_into``.

Each plans the candidate data files on the driver (icefloe's planner), lets the executors find the
affected rows and write the new data files and delete files, collects what they wrote, and
commits **one** snapshot from the driver:

- copy-on-write (``write.<op>.mode``, the default): changed files are rewritten with their
  surviving rows, committed as an ``OverwriteFiles`` that also retires their delete files;
- merge-on-read: changed rows get v2 position deletes / v3 deletion vectors / v4 colocated DVs
  (one Puffin file per Spark task), replacement rows are new data files; a ``RowDelta``.

Row lineage (v3+): rows moved into new files keep ``_row_id``; updated rows get a null
``_last_updated_sequence_number`` (so they take the new snapshot's sequence number); copied rows
keep theirs; inserted rows get fresh ids. Conflicts are validated against the table's isolation
level (``write.<op>.isolation-level``) with the condition as the conflict filter.

Executors write into a job-unique staging directory; files of failed task attempts are deleted
after the job, and everything the job wrote is deleted when it or its commit fails. Bad input
(unknown column, lossy type, duplicate source keys) fails before any file is written.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

from icefloe.deprecation import renamed
from icefloe.dml.change_builder import COPY_ON_WRITE, RowLevelChange, RowLevelResult, write_mode
from icefloe.dml.column_updates import column_updates_enabled
from icefloe.dml.copy_on_write import retired_deletes
from icefloe.dml.merge_clauses import MergeSpec, spec_from_flags
from icefloe.dml.row_io import POS_COLUMN
from icefloe.errors import CommitStateUnknown, ValidationError, nothing_committed
from icefloe.expressions.ast import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    GreaterThanOrEqual,
    LessThanOrEqual,
)
from icefloe.expressions.binding import bind
from icefloe.expressions.change_filters import change_filter
from icefloe.expressions.evaluators import strict_partition_evaluators
from icefloe.scan.planner import plan_files
from icefloe.scan.tasks import FileScanTask
from icefloe.spark.clustering import cluster_by_partition
from icefloe.spark.commit import merge_enabled
from icefloe.spark.compat import map_in_arrow
from icefloe.spark.executor_jobs import (
    JobStaging,
    chunked,
    collect_results,
    executor_errors,
    result_batch,
    result_schema,
    run_chunks,
)
from icefloe.spark.merge_plan import (
    SOURCE_ALIAS,
    SOURCE_MARKER,
    TARGET_ALIAS,
    merge_condition,
    merge_row_state,
    plan_merge,
)
from icefloe.spark.row_frames import (
    Assignments,
    SubqueryCondition,
    assignment_exprs,
    change_frame_columns,
    conform_assignments,
    insert_default,
    metadata_columns,
    quote,
    resolve_columns,
    target_frame,
)
from icefloe.spark.row_writer import (
    ACTION,
    DELETE,
    FILE_COLUMN,
    INSERT,
    KEEP,
    UPDATE,
    ChangeJob,
    ChangeResult,
    DeleteJob,
    delete_in_files,
    merge_results,
    write_changes,
)
from icefloe.spark.runtime import coalesces_shuffles, resolve_catalog
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions, resolve_options
from icefloe.txn.producers import branch_head

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

# ---------------------------------------------------------------------------------------------
# delete


def delete_rows(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    filter: Expression | str | bool | None = None,
    mode: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    *,
    condition: Expression | str | None = None,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
) -> RowLevelResult:
    """``DELETE FROM table WHERE filter`` (an icefloe filter); one snapshot, none when nothing matches.

    An empty condition is refused: pass True or ``"true"`` to delete every row.

    Files whose partition proves every row matches are dropped without being read (metadata-only
    when that covers every candidate file). ``mode``: None uses ``write.delete.mode``.
    ``condition=`` is the deprecated name of ``filter=``.
    """
    opts = resolve_options(options, branch, snapshot_properties)
    branch_name, properties = opts.branch, opts.properties
    chosen_filter = renamed(filter, condition, "filter", "condition")
    table = resolve_catalog(spark, catalog).load_table(identifier)
    md = table.metadata
    expr = change_filter(chosen_filter, "delete")
    bind(md.schema(), expr, case_sensitive)
    chosen = write_mode(md, "delete", mode)
    base = branch_head(md, branch_name)
    change = RowLevelChange.reading("delete", chosen, base, expr, case_sensitive)
    tasks = plan_files(table.io, md, base, expr, case_sensitive=case_sensitive) if base else []
    if not tasks:
        return change.result()
    whole = _wholly_matching(md, tasks, expr, case_sensitive)
    if len(whole) == len(tasks):  # metadata-only in both modes
        change.removed = [t.entry for t in tasks]
        change.deleted_rows = sum(t.data_file.record_count for t in tasks)
        return _commit(table, change, branch_name, properties, None)
    cow = chosen == COPY_ON_WRITE
    to_read = [t for t in tasks if not (cow and t.file_path in whole)]
    if cow:
        for t in tasks:
            if t.file_path in whole:
                change.removed.append(t.entry)
                change.deleted_rows += t.data_file.record_count
    staging = JobStaging.create(table.io, md)
    job = DeleteJob(staging.metadata, dict(table.io.properties), expr, case_sensitive, cow, frozenset(whole))
    try:
        chunks = chunked(to_read, spark.sparkContext.defaultParallelism)
        total = merge_results(run_chunks(spark, chunks, lambda chunk: delete_in_files(job, chunk)))
        staging.tidy(total.written_paths())
    except BaseException:
        staging.discard()
        raise
    _absorb(change, total, {t.file_path: t for t in tasks}, table)
    return _commit(table, change, branch_name, properties, staging)


def _wholly_matching(
    md: TableMetadata, tasks: list[FileScanTask], row_filter: Expression, case_sensitive: bool
) -> set[str]:
    """Paths of the files (without deletes) whose partition proves every row matches."""
    schema = md.schema()
    evaluators = strict_partition_evaluators(md.specs_by_id(), schema, row_filter, case_sensitive)
    return {
        t.file_path
        for t in tasks
        if not t.deletes and evaluators[t.data_file.spec_id].eval(t.data_file.partition)
    }


# ---------------------------------------------------------------------------------------------
# update


def update_rows(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    set: Assignments,
    filter: Expression | str | bool | None = None,
    mode: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    spark_condition: str | Column | SubqueryCondition | None = None,
    *,
    condition: Expression | str | None = None,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
) -> RowLevelResult:
    """``UPDATE table SET column = value WHERE filter``; one snapshot.

    ``set`` maps column names to Spark SQL expression strings over the row's current values
    (``"price * 2"``, ``"'sale'"``), Columns, or Python literals. ``filter`` is an icefloe
    filter (``condition=`` is its deprecated name). ``spark_condition`` (a Spark SQL condition over
    the table's columns, or a ``SubqueryCondition``) selects the rows instead; ``filter`` then only
    prunes files.
    ``mode``: None uses ``write.update.mode``.
    """
    opts = resolve_options(options, branch, snapshot_properties)
    branch_name, properties = opts.branch, opts.properties
    condition = renamed(filter, condition, "filter", "condition")
    table = resolve_catalog(spark, catalog).load_table(identifier)
    md = table.metadata
    schema = md.schema()
    if not set:
        raise ValidationError("update: set at least one column")
    expr = change_filter(condition, "update")
    bind(schema, expr, case_sensitive)
    _check_spark_condition(spark_condition)
    chosen = write_mode(md, "update", mode)
    base = branch_head(md, branch_name)
    tasks = plan_files(table.io, md, base, expr, case_sensitive=case_sensitive) if base else []
    target = target_frame(spark, md, dict(table.io.properties), tasks, case_sensitive)
    fields, exprs = assignment_exprs(schema, set, case_sensitive, "update", "__icefloe_set_")
    marked = _mark_matching(target, schema, expr, spark_condition, case_sensitive, "update")
    stage = _select(marked, ["*", *exprs], "update")
    values = conform_assignments(stage.schema, fields, "update", "__icefloe_set_")
    change = RowLevelChange.reading("update", chosen, base, expr, case_sensitive)
    if not tasks:
        return change.result()
    from pyspark.sql import functions as F

    action = F.when(F.col(_MATCHED), F.lit(UPDATE)).otherwise(F.lit(KEEP))
    return _run_target_changes(
        spark, table, change, tasks, stage, action, values, branch_name, properties, tuple(fields)
    )


_MATCHED = "__icefloe_matched"


def _check_spark_condition(spark_condition: str | Column | SubqueryCondition | None) -> None:
    """Refuse an empty Spark condition before anything is planned or written: as for icefloe
    filters, "every row" must be explicit."""
    if isinstance(spark_condition, str) and not spark_condition.strip():
        raise ValidationError("the Spark condition is empty; pass 'true' to change every row")


def _mark_matching(
    target: DataFrame,
    schema: Schema,
    expr: Expression,
    spark_condition: str | Column | SubqueryCondition | None,
    case_sensitive: bool,
    what: str,
) -> DataFrame:
    """The target rows with ``_MATCHED``: whether the row changes, by the Spark condition when given,
    else by the icefloe filter (null: no)."""
    from pyspark.sql import functions as F

    from icefloe.spark.filters import to_spark_filter

    if isinstance(spark_condition, SubqueryCondition):
        return spark_condition.mark(target, _MATCHED)
    if spark_condition is None:
        matched = to_spark_filter(schema, expr, case_sensitive)
    else:
        matched = F.expr(spark_condition) if isinstance(spark_condition, str) else spark_condition
    return _select(target, ["*", F.coalesce(matched, F.lit(False)).alias(_MATCHED)], what)


def delete_where(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    spark_condition: str | Column | SubqueryCondition,
    prune_filter: Expression | str | None = None,
    mode: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
) -> RowLevelResult:
    """``DELETE FROM table WHERE <Spark SQL condition>`` for conditions icefloe filters cannot
    express (functions, casts; subqueries as a ``SubqueryCondition``); ``prune_filter`` (implied by
    the condition) prunes files. One snapshot."""
    from pyspark.sql import functions as F

    options = options or DEFAULT_OPTIONS
    branch, snapshot_properties = options.branch, options.properties
    table = resolve_catalog(spark, catalog).load_table(identifier)
    md = table.metadata
    schema = md.schema()
    expr = AlwaysTrue() if prune_filter is None else change_filter(prune_filter, "delete")
    bind(schema, expr, case_sensitive)
    _check_spark_condition(spark_condition)
    base = branch_head(md, branch)
    tasks = plan_files(table.io, md, base, expr, case_sensitive=case_sensitive) if base else []
    target = target_frame(spark, md, dict(table.io.properties), tasks, case_sensitive)
    change = RowLevelChange.reading("delete", write_mode(md, "delete", mode), base, expr, case_sensitive)
    if not tasks:
        return change.result()
    stage = _mark_matching(target, schema, expr, spark_condition, case_sensitive, "delete")
    action = F.when(F.col(_MATCHED), F.lit(DELETE)).otherwise(F.lit(KEEP))
    return _run_target_changes(spark, table, change, tasks, stage, action, {}, branch, snapshot_properties)


# ---------------------------------------------------------------------------------------------
# merge


def merge_into(
    source: DataFrame,
    identifier: str | tuple[str, ...],
    on: str | Sequence[str],
    when_matched_update: bool | Assignments = True,
    when_matched_delete: bool | str | Column = False,
    when_not_matched_insert: bool | Assignments = True,
    when_not_matched_by_source_delete: bool | str | Column = False,
    mode: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    action: Column | None = None,
    *,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
) -> RowLevelResult:
    """``MERGE INTO table USING source ON keys``: update or delete matched rows, insert the others.

    The keyword form of the clauses (``spec_from_flags``); ``icefloe.spark.merge(...)`` takes any
    number of ordered, conditional clauses. Keys (``on``) are column names both sides have; they
    compare with SQL equality (a null key matches nothing). Expressions are Spark SQL over the
    pair, with the target row's columns as ``target.x`` and the source row's as ``source.x``:

    - ``when_matched_update``: True sets every table column the source has; or ``{column: expr}``;
    - ``when_matched_delete``: True, or a condition: matched rows where it holds are deleted (the
      others are updated when ``when_matched_update`` is set; True with an update is refused);
    - ``when_not_matched_insert``: True inserts source rows without a match (columns by name), or
      ``{column: expr}`` over ``source.*`` (unset columns get their write default or null);
    - ``when_not_matched_by_source_delete``: True or a condition over ``target.*``: target rows no
      source row matches are deleted (this reads the whole table).

    A target row matched by several source rows is a ``ValidationError`` (nothing written).
    ``mode``: None uses ``write.merge.mode``.

    ``action`` (deprecated: use ``merge(...)``) replaces the action the flags imply: a Column over
    the joined pair giving ``"update"``, ``"delete"``, ``"insert"``, ``"keep"`` or null per row.
    """
    opts = resolve_options(options, branch, snapshot_properties)
    spec = spec_from_flags(
        on,
        when_matched_update,
        when_matched_delete,
        when_not_matched_insert,
        when_not_matched_by_source_delete,
    )
    if action is not None:
        warnings.warn(
            "merge_into(action=...) is deprecated: give ordered clauses with icefloe.spark.merge(...)",
            DeprecationWarning,
            stacklevel=2,
        )
    return execute_merge(source, identifier, spec, mode, catalog, opts, case_sensitive, action)


def execute_merge(
    source: DataFrame,
    identifier: str | tuple[str, ...],
    spec: MergeSpec,
    mode: str | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    action: Column | None = None,
) -> RowLevelResult:
    """Run the MERGE ``spec`` of ``source`` into the table (``merge_plan`` gives its Columns): one
    snapshot, none when nothing changes. ``action`` replaces the clauses' action (see merge_into)."""
    from pyspark.sql import functions as F

    options = options or DEFAULT_OPTIONS
    spark = source.sparkSession
    table = resolve_catalog(spark, catalog).load_table(identifier)
    md = table.metadata
    schema = md.schema()
    chosen = write_mode(md, "merge", mode)
    keys = resolve_columns(schema, list(spec.on), case_sensitive, "merge")
    source_keys = [_source_column(source, k.name, case_sensitive) for k in keys]
    plan = plan_merge(spec, schema, source.columns, case_sensitive)
    base = branch_head(md, options.branch)
    with executor_errors("the merge"):  # jobs over the source: a bad value fails here first
        scan_filter: Expression = (
            AlwaysTrue() if spec.reads_whole_table else _key_filter(source, schema, keys, source_keys)
        )
    tasks = plan_files(table.io, md, base, scan_filter, case_sensitive=case_sensitive) if base else []
    target = target_frame(spark, md, dict(table.io.properties), tasks, case_sensitive)

    # target rows join whole (outer) when NOT MATCHED BY SOURCE clauses look at every one, or when
    # copy-on-write must write back the untouched rows of files a matched clause changes; an
    # insert-only MERGE changes no target file, so it needs only the target rows a source row meets
    preserve_target = spec.reads_whole_table or (chosen == COPY_ON_WRITE and spec.has_matched)
    preserve_source = plan.has_inserts()
    how = {(True, True): "full_outer", (True, False): "left_outer", (False, True): "right_outer"}.get(
        (preserve_target, preserve_source), "inner"
    )
    marked = source.withColumn(SOURCE_MARKER, F.lit(True)).alias(SOURCE_ALIAS)
    on_parts = [
        F.col(f"{TARGET_ALIAS}.{quote(k.name)}") == F.col(f"{SOURCE_ALIAS}.{quote(sk)}")
        for k, sk in zip(keys, source_keys, strict=True)
    ]
    if spec.condition is not None:
        on_parts.append(merge_condition(spec.condition, "match condition"))
    joined = target.alias(TARGET_ALIAS).join(marked, reduce(lambda a, b: a & b, on_parts), how)
    stage = _select(
        joined,
        [
            *[
                F.col(f"{TARGET_ALIAS}.{quote(f.name)}").alias(f"__icefloe_old_{i}")
                for i, f in enumerate(schema.fields)
            ],
            *[F.col(f"{TARGET_ALIAS}.{quote(n)}").alias(n) for n in metadata_columns(md)],
            *plan.stage_columns(),
            *([] if action is None else [action.alias(ACTION)]),
        ],
        "merge",
    )
    row_action = plan.action() if action is None else F.col(ACTION)
    if chosen == COPY_ON_WRITE and spec.reads_whole_table and not spec.has_matched:
        stage = _once_per_target_row(stage, row_action)
    old = {f.name: F.col(f"__icefloe_old_{i}") for i, f in enumerate(schema.fields)}
    upd_values = plan.values(stage.schema, UPDATE, lambda f: old[f.name])
    ins_values = plan.values(stage.schema, INSERT, insert_default) if preserve_source else None
    meta = {n: F.col(quote(n)) for n in metadata_columns(md)}
    changes = stage.where(row_action.isNotNull()).select(
        *change_frame_columns(md, old, upd_values, row_action, meta, ins_values)
    )
    with executor_errors("the merge"):
        if spec.has_matched and tasks and spec.condition is None:
            _check_single_match(source, target, keys, source_keys)
        elif spec.has_matched and tasks:
            _check_single_match_joined(joined)
    change = RowLevelChange.reading("merge", chosen, base, scan_filter, case_sensitive)
    return _run_changes(
        spark, table, change, tasks, changes, options.branch, options.properties, plan.updated_fields()
    )


def _once_per_target_row(stage: DataFrame, row_action: Column) -> DataFrame:
    """``stage`` with one row per kept target row. Without WHEN MATCHED clauses several source rows
    may match a target row (Spark's one-match rule is only for matched actions): the row is then
    kept as it is, once, not once per match, which copy-on-write would write back. (Merge-on-read
    drops kept rows, and an insert-only MERGE does not join them whole: neither needs this.)"""
    kept = row_action == KEEP
    once = stage.where(kept).dropDuplicates([FILE_COLUMN, POS_COLUMN])
    return once.unionByName(stage.where(~kept | row_action.isNull()))


def _source_column(source: DataFrame, name: str, case_sensitive: bool) -> str:
    for c in source.columns:
        if c == name or (not case_sensitive and c.lower() == name.lower()):
            return c
    raise ValidationError(
        f"merge: key column {name!r} is not in the source (columns: {', '.join(source.columns)})"
    )


def _key_filter(
    source: DataFrame, schema: Schema, keys: Sequence[Any], source_keys: Sequence[str]
) -> Expression:
    """Prune target files to those that may hold a source key (min/max of int, long, string keys)."""
    from pyspark.sql import functions as F

    ranged = [
        (k, sk)
        for k, sk in zip(keys, source_keys, strict=True)
        if isinstance(k.field_type, IntegerType | LongType | StringType)
    ]
    if not ranged:
        return AlwaysTrue()
    aggs = []
    for i, (_, sk) in enumerate(ranged):
        col = F.col(quote(sk))
        aggs += [F.min(col).alias(f"lo{i}"), F.max(col).alias(f"hi{i}")]
    row = source.agg(*aggs).collect()[0]
    out: Expression = AlwaysTrue()
    for i, (k, _) in enumerate(ranged):
        lo, hi = row[f"lo{i}"], row[f"hi{i}"]
        if lo is None:
            return AlwaysFalse()  # no non-null key: nothing in the target can match
        predicate = And(GreaterThanOrEqual(k.name, lo), LessThanOrEqual(k.name, hi))
        out = predicate if isinstance(out, AlwaysTrue) else And(out, predicate)
    return out


def _check_single_match(
    source: DataFrame, target: DataFrame, keys: Sequence[Any], source_keys: Sequence[str]
) -> None:
    """ValidationError when several source rows share a key that some target row has."""
    from pyspark.sql import functions as F

    named = [F.col(quote(sk)).alias(f"__icefloe_d{i}") for i, sk in enumerate(source_keys)]
    present = reduce(lambda a, b: a & b, [F.col(f"__icefloe_d{i}").isNotNull() for i in range(len(keys))])
    dups = (
        source.select(*named)
        .where(present)
        .groupBy(*[f"__icefloe_d{i}" for i in range(len(keys))])
        .count()
        .where(F.col("count") > 1)
    )
    if not dups.limit(1).collect():
        return  # the common case: no key repeats in the source, so the target need not be read
    target_keys = target.select(*[F.col(quote(k.name)).alias(f"__icefloe_t{i}") for i, k in enumerate(keys)])
    cond = reduce(
        lambda a, b: a & b,
        [dups[f"__icefloe_d{i}"] == target_keys[f"__icefloe_t{i}"] for i in range(len(keys))],
    )
    hits = dups.join(target_keys, cond, "left_semi").limit(3).collect()
    if hits:
        shown = ", ".join(
            "("
            + ", ".join(f"{k.name}={r[f'__icefloe_d{i}']!r}" for i, k in enumerate(keys))
            + f"): {r['count']} rows"
            for r in hits
        )
        raise ValidationError(
            f"merge: several source rows match the same target row, e.g. key {shown}; "
            "each target row may be matched by one source row at most (deduplicate the source)"
        )


def _check_single_match_joined(joined: DataFrame) -> None:
    """ValidationError when a target row matches several source rows (any match condition)."""
    from pyspark.sql import functions as F

    has_target, has_source = merge_row_state()
    file, pos = F.col(f"{TARGET_ALIAS}.{quote(FILE_COLUMN)}"), F.col(f"{TARGET_ALIAS}.{quote(POS_COLUMN)}")
    hits = (
        joined.where(has_target & has_source)
        .groupBy(file.alias("file"), pos.alias("pos"))
        .count()
        .where(F.col("count") > 1)
        .limit(3)
        .collect()
    )
    if hits:
        shown = ", ".join(f"{r['file']} row {r['pos']}: {r['count']} source rows" for r in hits)
        raise ValidationError(
            f"merge: several source rows match the same target row, e.g. {shown}; each target row may "
            "be matched by one source row at most"
        )


# ---------------------------------------------------------------------------------------------
# running and committing


def _select(frame: DataFrame, columns: list[Any], what: str) -> DataFrame:
    """``frame.select(columns)``, with analysis errors (unknown column, bad expression) as ValidationError."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        return frame.select(*columns)
    except (AnalysisException, ParseException) as exc:
        text = str(exc).strip().splitlines()
        raise ValidationError(f"{what}: {text[0] if text else type(exc).__name__}") from None


def _run_target_changes(
    spark: SparkSession,
    table: Table,
    change: RowLevelChange,
    tasks: list[FileScanTask],
    stage: DataFrame,
    action: Column,
    values: Mapping[str, Column],
    branch: str,
    snapshot_properties: dict[str, str] | None,
    updated_fields: Sequence[NestedField] = (),
) -> RowLevelResult:
    """Run and commit the changes of target rows: ``stage`` holds the table's and the metadata
    columns by name, ``action`` and ``values`` (updated columns, ``updated_fields``) are Columns
    over it."""
    from pyspark.sql import functions as F

    md = table.metadata
    old = {f.name: F.col(quote(f.name)) for f in md.schema().fields}
    meta = {n: F.col(quote(n)) for n in metadata_columns(md)}
    changes = stage.select(*change_frame_columns(md, old, values, action, meta))
    return _run_changes(spark, table, change, tasks, changes, branch, snapshot_properties, updated_fields)


def _run_changes(
    spark: SparkSession,
    table: Table,
    change: RowLevelChange,
    tasks: list[FileScanTask],
    changes: DataFrame,
    branch: str,
    snapshot_properties: dict[str, str] | None,
    updated_fields: Sequence[NestedField] = (),
) -> RowLevelResult:
    """Run the change frame through the executors and commit what they wrote.

    ``updated_fields``: the columns updates set (v4 column updates write just those).
    """
    from pyspark.sql import functions as F

    md = table.metadata
    cow = change.mode == COPY_ON_WRITE
    if not cow:
        changes = changes.where(F.col(ACTION) != F.lit(KEEP))
    # rows meet by table partition (a file's rows stay together): one group of output files (and,
    # merge-on-read, one Puffin file) per task; as many tasks as the rows need (adaptive
    # execution), else no more tasks than files to change, unless the cluster is wider
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or "200")
    partitions = max(1, min(shuffle, max(len(tasks), spark.sparkContext.defaultParallelism)))
    clustered = cluster_by_partition(changes, md, tasks, None if coalesces_shuffles(spark) else partitions)
    staging = JobStaging.create(table.io, md)
    columns = tuple(f.field_id for f in updated_fields) if column_updates_enabled(md, not cow) else ()
    job = ChangeJob(staging.metadata, dict(table.io.properties), cow, columns)
    by_path = {t.file_path: t for t in tasks}
    payload = spark.sparkContext.broadcast(pickle.dumps(by_path))

    def work(batches: Any) -> Any:
        planned: dict[str, FileScanTask] = pickle.loads(payload.value)
        for result in write_changes(job, planned, batches):
            yield result_batch(result)

    try:
        frame = map_in_arrow(clustered, work, result_schema())
        total = merge_results(collect_results(frame, f"the {change.operation}"))
        staging.tidy(total.written_paths())
    except BaseException:
        staging.discard()
        raise
    finally:
        payload.destroy()
    _absorb(change, total, by_path, table)
    return _commit(table, change, branch, snapshot_properties, staging)


def _absorb(
    change: RowLevelChange, total: ChangeResult, tasks: Mapping[str, FileScanTask], table: Table
) -> None:
    """Add the executors' results to the change (removed files with the delete files they retire)."""
    for path in total.removed:
        task = tasks[path]
        change.removed.append(task.entry)
        change.removed.extend(retired_deletes(table.io, table.metadata, task))
    change.added.extend(total.added)
    change.deletes = change.deletes.merge(total.deletes)
    change.column_files.update(total.column_files)
    change.delete_targets.extend(tasks[path].data_file for path in total.column_files)
    change.deleted_rows += total.deleted_rows
    change.updated_rows += total.updated_rows
    change.inserted_rows += total.inserted_rows


def _commit(
    table: Table,
    change: RowLevelChange,
    branch: str,
    snapshot_properties: dict[str, str] | None,
    staging: JobStaging | None,
) -> RowLevelResult:
    """Commit the change as one snapshot (nothing when it is empty); clean up on failure."""
    md = table.metadata
    result = change.result()
    committing = False
    try:
        options = CommitOptions(branch=branch, snapshot_properties=dict(snapshot_properties or {}))
        producer = change.producer(md, options, merge_enabled(md))
        if producer is None:
            if staging is not None:
                staging.discard()
            return result
        committing = True
        with table.transaction() as tx:
            tx.add_action(producer)
    except CommitStateUnknown:
        raise  # the commit may have happened: keep every file
    except BaseException as exc:
        known_clean = not committing or nothing_committed(exc)  # else the swap may have happened
        if staging is not None and known_clean:
            staging.discard()
        raise
    snapshot = table.metadata.snapshot_for_ref(branch)
    result.snapshot_id = snapshot.snapshot_id if snapshot else None
    return result
