"""Read an icefloe table into a Spark DataFrame: plan on the driver, read on the executors.

Planning (snapshot selection, partition and metrics pruning with the row filter) runs in icefloe
on the driver. Then, per file:

- **native**: files without deletes go through Spark's own vectorized Parquet reader, given a
  schema whose fields carry ``parquet.field.id`` (with ``spark.sql.parquet.fieldId.read.enabled``
  columns resolve by id, so renamed columns read correctly). Spark keeps column pruning and its
  own row-group pushdown; the row filter is applied again as a Spark filter (the residual).
- **python**: files with deletes or v4 column files, Avro and ORC data files (or reads needing
  row-lineage metadata columns, types Spark cannot read as Iceberg does, or column defaults) go
  through ``mapInArrow`` running ``icefloe.scan.reader.read_task`` on the executors, which
  merges column files, applies the deletes and the residual.

The two parts are unioned. An empty plan gives an empty DataFrame with the right schema.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from icefloe.deprecation import renamed
from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.parser import to_expression
from icefloe.formats.parquet.data_files import NAME_MAPPING_PROPERTY
from icefloe.scan.planner import PlanStats
from icefloe.scan.reader import METADATA_COLUMNS, ReadRequest
from icefloe.scan.tasks import FileScanTask
from icefloe.spark.arrow_bridge import spark_arrow_schema, to_spark_arrow
from icefloe.spark.compat import map_in_arrow
from icefloe.spark.runtime import executor_io, resolve_catalog, session_conf, spark_location
from icefloe.spark.schema import native_readable, to_spark_field, to_spark_schema
from icefloe.spark.storage import spark_native_storage
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import NestedField

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

READ_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true"}
_LISTING_CONF = {"spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000"}


@dataclass
class ReadPlan:
    """What a read will do: the projected schema, and which files go through which route."""

    table_schema: Schema
    projected: Schema
    metadata_columns: tuple[str, ...]
    row_filter: Expression
    case_sensitive: bool
    native: list[FileScanTask] = field(default_factory=list)
    python: list[FileScanTask] = field(default_factory=list)
    stats: PlanStats = field(default_factory=PlanStats)
    io_properties: dict[str, str] = field(default_factory=dict)
    location: str = ""
    order: tuple[str, ...] = ()
    specs: dict[int, PartitionSpec] = field(default_factory=dict)

    @property
    def files(self) -> list[str]:
        """Every data file the read will open."""
        return [t.file_path for t in self.native + self.python]

    def request(self) -> ReadRequest:
        """The icefloe read request for the Python route."""
        return ReadRequest(
            self.table_schema,
            self.projected,
            self.metadata_columns,
            self.row_filter,
            self.case_sensitive,
            self.specs,
        )

    def output_fields(self) -> list[NestedField]:
        """Projected table columns then metadata columns, as Iceberg fields."""
        return [*self.projected.fields, *(METADATA_COLUMNS[n] for n in self.metadata_columns)]

    def spark_schema(self, field_ids: bool = False) -> T.StructType:
        """The Spark schema of the result (before reordering to the user's column order)."""
        from pyspark.sql import types as T

        return T.StructType([to_spark_field(f, field_ids) for f in self.output_fields()])


def plan_read(
    table: Table,
    snapshot_id: int | None = None,
    as_of_timestamp: int | datetime | None = None,
    branch: str | None = None,
    tag: str | None = None,
    row_filter: Expression | str | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    case_sensitive: bool = True,
    start_snapshot_id: int | None = None,
    start_timestamp: int | datetime | None = None,
) -> ReadPlan:
    """Plan a read of ``table`` (driver side): snapshot, projection, pruned files and their routes."""
    if branch is not None and tag is not None:
        raise ValidationError("give either branch or tag, not both")
    ref = branch or tag
    if ref is not None and ref not in table.metadata.refs:
        raise ValidationError(f"table {table.name} has no branch or tag named {ref!r}")
    expr = AlwaysTrue() if row_filter is None else to_expression(row_filter)
    selected = tuple(columns) if columns else ("*",)
    scan = table.scan(
        filter=expr,
        columns=selected,
        snapshot_id=snapshot_id,
        ref=ref,
        as_of_timestamp=as_of_timestamp,
        case_sensitive=case_sensitive,
        start_snapshot_id=start_snapshot_id,
        start_timestamp=start_timestamp,
    )
    projected, meta = scan.projection()
    stats = PlanStats()
    tasks = scan.plan_files(stats)
    plan = ReadPlan(
        table_schema=scan.schema(),
        projected=projected,
        metadata_columns=tuple(meta),
        row_filter=expr,
        case_sensitive=case_sensitive,
        stats=stats,
        io_properties=dict(table.io.properties),
        location=table.metadata.location,
        order=selected if "*" not in selected else (),
        specs=table.metadata.specs_by_id(),
    )
    # Spark resolves columns by field id only; files of tables with a name mapping may have none.
    name_mapped = NAME_MAPPING_PROPERTY in table.metadata.properties
    all_native = (
        not meta and not name_mapped and native_readable(projected.as_struct) and not has_defaults(projected)
    )
    for task in tasks:
        # Spark's Parquet reader resolves Parquet field ids; Avro and ORC files (written by other
        # Iceberg writers) go through icefloe's reader, which finds their columns by Iceberg id.
        parquet = task.data_file.file_format.lower() == "parquet"
        plain = not task.deletes and not task.data_file.column_files
        if all_native and parquet and plain and spark_native_storage(task.file_path):
            plan.native.append(task)
        else:
            plan.python.append(task)
    return plan


def has_defaults(schema: Schema) -> bool:
    """True when a column (or a nested field) has an initial default Spark's reader cannot fill."""
    from icefloe.formats.parquet.metrics import iter_leaves

    return any(f.initial_default is not None for f in schema.fields) or any(
        leaf.field.initial_default is not None for leaf in iter_leaves(schema.fields)
    )


def read_table(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    snapshot_id: int | None = None,
    as_of_timestamp: int | datetime | None = None,
    ref: str | None = None,
    filter: Expression | str | None = None,
    columns: list[str] | tuple[str, ...] | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    case_sensitive: bool = True,
    start_snapshot_id: int | None = None,
    start_timestamp: int | datetime | None = None,
    *,
    branch: str | None = None,
    tag: str | None = None,
    row_filter: Expression | str | None = None,
) -> DataFrame:
    """A DataFrame of the table: current snapshot, or a ``snapshot_id`` / ``as_of_timestamp`` (ms)
    / ``ref`` (branch or tag), with rows matching ``filter`` and the chosen ``columns``.

    With ``start_snapshot_id`` / ``start_timestamp``: the rows appended after it (exclusive) up to
    that snapshot (an incremental read; ``read_changes`` gives deletes and updates too).
    ``branch=`` / ``tag=`` (use ``ref=``) and ``row_filter=`` (use ``filter=``) are deprecated.
    """
    chosen_ref = renamed(ref, branch, "ref", "branch")
    chosen_ref = renamed(chosen_ref, tag, "ref", "tag")
    chosen_filter = renamed(filter, row_filter, "filter", "row_filter")
    table = resolve_catalog(spark, catalog).load_table(identifier)
    plan = plan_read(
        table,
        snapshot_id,
        as_of_timestamp,
        chosen_ref,
        None,
        chosen_filter,
        columns,
        case_sensitive,
        start_snapshot_id=start_snapshot_id,
        start_timestamp=start_timestamp,
    )
    return dataframe_for_plan(spark, plan)


def dataframe_for_plan(spark: SparkSession, plan: ReadPlan) -> DataFrame:
    """The DataFrame that executes a read plan (native and Python routes unioned)."""
    from pyspark.sql import functions as F

    schema = plan.spark_schema(field_ids=False)
    parts: list[DataFrame] = []
    if plan.native:
        parts.append(_native_frame(spark, plan))
    if plan.python:
        parts.append(_python_frame(spark, plan))
    if not parts:
        df = spark.createDataFrame([], schema)
    else:
        df = parts[0]
        for other in parts[1:]:
            df = df.unionByName(other)
        if _mostly_python(plan):
            # Spark sizes a mapInArrow frame by its tiny task list, so a join would broadcast it
            # (and run out of memory on a big table): ask for a sort-merge join instead. Adaptive
            # execution still sees real sizes for the other side.
            df = df.hint("merge")
    if plan.order:
        picked = []
        for name in plan.order:
            top = name.split(".")[0]
            match = next(
                (c for c in df.columns if c == top or (not plan.case_sensitive and c.lower() == top.lower())),
                None,
            )
            if match is not None and match not in picked:
                picked.append(match)
        df = df.select(*[F.col("`" + c.replace("`", "``") + "`") for c in picked])
    return df


def _mostly_python(plan: ReadPlan) -> bool:
    """True when the Python route reads at least half of the plan's bytes."""
    python = sum(t.data_file.file_size_in_bytes for t in plan.python)
    native = sum(t.data_file.file_size_in_bytes for t in plan.native)
    return python > 0 and python >= native


def _native_frame(spark: SparkSession, plan: ReadPlan) -> DataFrame:
    from pyspark.sql import functions as F

    from icefloe.expressions.binding import bind, referenced_field_ids
    from icefloe.spark.filters import to_spark_filter
    from icefloe.spec.schema import prune_columns

    for key, value in READ_CONF.items():
        spark.conf.set(key, value)  # read at execution time: must stay set on the session
    filtered = not isinstance(plan.row_filter, AlwaysTrue)
    wanted = plan.projected.field_ids()
    if filtered:
        wanted |= referenced_field_ids(bind(plan.table_schema, plan.row_filter, plan.case_sensitive))
    read_schema = (
        plan.projected if wanted == plan.projected.field_ids() else prune_columns(plan.table_schema, wanted)
    )
    paths = [spark_location(t.file_path) for t in plan.native]
    with session_conf(spark, _LISTING_CONF):
        df = spark.read.schema(to_spark_schema(read_schema)).option("mergeSchema", "false").parquet(*paths)
    if filtered:
        df = df.filter(to_spark_filter(plan.table_schema, plan.row_filter, plan.case_sensitive))
    out = []
    for f in plan.projected.fields:
        col = F.col(_quote(f.name))
        read_field = read_schema.find_field(f.field_id)
        if read_field.field_type != f.field_type:
            col = _reshape(col, f.field_type)
        out.append(col.alias(f.name))
    return df.select(*out)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _reshape(col: Any, t: Any) -> Any:
    """A struct column narrowed to the fields of ``t`` (extra fields were read for the filter)."""
    from pyspark.sql import functions as F

    from icefloe.spec.types import StructType

    if not isinstance(t, StructType):
        return col
    children = [_reshape(col.getField(c.name), c.field_type).alias(c.name) for c in t.fields]
    return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*children))


def _python_frame(spark: SparkSession, plan: ReadPlan) -> DataFrame:
    from pyspark.sql import types as T

    schema = plan.spark_schema(field_ids=False)
    payload = spark.sparkContext.broadcast(pickle.dumps(plan.python))
    job_request = plan.request()
    fields = plan.output_fields()
    io_props, location = plan.io_properties, plan.location
    schema_json = schema.json()

    def read_partition(batches: Any) -> Any:
        tasks: list[FileScanTask] = pickle.loads(payload.value)
        target = spark_arrow_schema(T.StructType.fromJson(json.loads(schema_json)))
        io = executor_io(io_props, location)
        from icefloe.scan.reader import read_each_task

        # this Spark task's share of the plan, known before reading so it can share delete files
        mine = [tasks[idx] for batch in batches for idx in batch.column(0).to_pylist()]
        for table in read_each_task(io, mine, job_request):
            if table.num_rows:
                yield from to_spark_arrow(table, fields, target).to_batches(max_chunksize=65536)

    n = len(plan.python)
    parallel = max(1, min(n, spark.sparkContext.defaultParallelism * 4))
    return map_in_arrow(spark.range(0, n, 1, parallel), read_partition, schema)
