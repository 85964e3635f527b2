"""Write a Spark DataFrame into an icefloe table: executors write Parquet, the driver commits once.

Route (see ARCHITECTURE.md, "Spark"):

- **native**: Spark's own Parquet writer, with the table's field ids in the column metadata and
  ``TIMESTAMP_MICROS``, into a job-unique staging directory ``<data>/spark-<uuid>/`` partitioned by
  helper columns that hold the exact Iceberg partition values. Spark's commit protocol only moves
  the output of successful task attempts into that directory, so after the job every Parquet file
  there belongs to the write. The driver reads their footers for metrics and commits one snapshot.
- **arrow**: ``mapInArrow`` writes the files with icefloe's Parquet writer and sends the DataFile
  entries back; files of failed task attempts are found by listing the staging directory and
  deleted. Taken for schemas Spark cannot lay out as Iceberg requires (lists and maps need element
  field ids; uuid, fixed and time need other physical types), and for inputs Spark estimates as
  small (``write_route``), in one task: there it skips the clustering shuffle, Spark's per-file
  cost and the footer reads, and each partition still gets one file.

Bad input (unknown column, missing required column, lossy type) fails before any file is written;
a failed job deletes its staging directory; the table only changes in the final commit. A job
that fails on a value of the input (a null in a required column, a cast or decimal overflow) is a
``ValidationError`` (``executor_jobs.executor_errors``).
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from icefloe.deprecation import renamed
from icefloe.errors import ValidationError
from icefloe.expressions.ast import Expression
from icefloe.io.fileio import FileIO, split_scheme
from icefloe.spark.compat import map_in_arrow
from icefloe.spark.executor_jobs import executor_errors
from icefloe.spark.footer import data_files_from_footers
from icefloe.spark.partitioning import parse_partition_dirs, partition_column_name, partition_key_columns
from icefloe.spark.runtime import delete_tree, executor_io, resolve_catalog, session_conf, spark_location
from icefloe.spark.schema import native_writable, write_projection
from icefloe.spark.storage import spark_native_storage
from icefloe.spark.workers import workers_import_icefloe
from icefloe.spark.write_route import ARROW, choose_route
from icefloe.spec.content import DataFile
from icefloe.spec.snapshots import MAIN_BRANCH, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider
from icefloe.txn.commit_options import CommitOptions, resolve_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

WRITE_CONF = {
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
SPREAD_SMALL_WRITES_CONF = {"spark.sql.adaptive.coalescePartitions.minPartitionSize": "1b"}
"""For the clustered write job: let adaptive execution give a small write one task per core.

Spark's Parquet writer pays ~15-20 ms per file it opens, whatever the file's size, so a small append
into many table partitions costs files, not bytes. Coalescing keeps shuffle partitions at 1 MB or
more by default: 10,000 rows into 56 partitions ran as one task writing 56 files one after the
other while the other cores idled. With no floor, coalescing aims at the shuffle's size divided by
the default parallelism (``parallelismFirst``, Spark's default) and still only merges neighbouring
shuffle partitions, so each table partition stays in one task, one file; a large write is sized by
``advisoryPartitionSizeInBytes`` as before."""
NO_CHECKSUM_FILES_OPTIONS = {
    "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}
"""Hadoop options of a write to a local directory: no ``.crc`` file beside each data file.

Hadoop's default local file system writes a checksum file next to every file, which the write
then deleted again (``StagedFiles.tidy``); Iceberg readers never look at them. Creating and
deleting them is a share of the per-file cost. The options apply to this write's Hadoop
configuration only (hence no cached file system instance)."""
DEFAULT_COMPRESSION = "zstd"
MODES = ("append", "overwrite")
PARTITION_OVERWRITE_MODES = ("static", "dynamic")


@dataclass
class StagedFiles:
    """Data files written for one job, not yet part of any snapshot."""

    io: FileIO
    staging: str
    files: list[DataFile] = field(default_factory=list)
    route: str = "native"

    def discard(self) -> None:
        """Delete everything under the staging directory (the job failed or its commit did)."""
        delete_tree(self.io, self.staging)

    def tidy(self) -> None:
        """Delete files in the staging directory that are not data files of this write."""
        keep = {f.file_path for f in self.files}
        for path in self.io.list_prefix(self.staging):
            if path not in keep:
                self.io.delete(path, missing_ok=True)


def write_table(
    df: DataFrame,
    identifier: str | tuple[str, ...],
    mode: str = "append",
    filter: Expression | str | None = None,
    partition_overwrite: str = "static",
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    *,
    overwrite_filter: Expression | str | None = None,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
) -> Snapshot | None:
    """Write ``df`` into the table and commit one snapshot; returns it (None when nothing changed).

    ``mode="append"`` adds rows. ``mode="overwrite"`` replaces the rows matching ``filter``
    (default: all rows), or with ``partition_overwrite="dynamic"`` every partition that ``df`` has
    rows for. ``options``: branch and snapshot properties (``overwrite_filter=``, ``branch=`` and
    ``snapshot_properties=`` are deprecated names).
    """
    opts = resolve_options(options, branch, snapshot_properties)
    overwrite_filter = renamed(filter, overwrite_filter, "filter", "overwrite_filter")
    branch, snapshot_properties = opts.branch, opts.properties
    _check_mode(mode, partition_overwrite)
    table = resolve_catalog(df.sparkSession, catalog).load_table(identifier)
    check_write_arguments(table, mode, overwrite_filter, branch)
    staged = stage_dataframe(df, table)
    return commit_staged(
        table, staged, mode, overwrite_filter, partition_overwrite, branch, snapshot_properties
    )


def _check_mode(mode: str, partition_overwrite: str) -> None:
    if mode not in MODES:
        raise ValidationError(f"write mode must be one of {MODES}, got {mode!r}")
    if partition_overwrite not in PARTITION_OVERWRITE_MODES:
        raise ValidationError(
            f"partition_overwrite must be one of {PARTITION_OVERWRITE_MODES}, got {partition_overwrite!r}"
        )


def check_write_arguments(
    table: Table, mode: str, overwrite_filter: Expression | str | None, branch: str
) -> None:
    """Reject a bad filter or a tag as target before any file is written."""
    from icefloe.expressions.binding import bind
    from icefloe.expressions.change_filters import change_filter
    from icefloe.txn.producers import branch_head

    if overwrite_filter is not None:
        if mode != "overwrite":
            raise ValidationError("overwrite_filter only applies to mode='overwrite'")
        bind(table.schema(), change_filter(overwrite_filter, "overwrite", none_means_all=True))
    branch_head(table.metadata, branch)


def stage_dataframe(df: DataFrame, table: Table) -> StagedFiles:
    """Validate ``df`` against the table and write it to a fresh staging directory."""
    md = table.metadata
    schema = md.schema()
    projection = write_projection(schema, df.schema)  # raises before anything is written
    conformed = df.select(*projection.columns)
    staging = f"{LocationProvider(md).data_location}/spark-{uuid.uuid4().hex}"
    staged = StagedFiles(table.io, staging)
    try:
        with executor_errors("the write job"):
            if not (native_writable(schema.as_struct) and spark_native_storage(staging)):
                _write_arrow(conformed, md, staged, table.io)
            elif choose_route(conformed, md.properties) == ARROW and workers_import_icefloe(
                conformed.sparkSession
            ):
                # one task: each partition's rows land in one file, as the clustered native write.
                # Workers that cannot import icefloe write natively, as they always could.
                _write_arrow(conformed.coalesce(1), md, staged, table.io)
            else:
                _write_native(conformed, md, staged)
    except BaseException:
        staged.discard()
        raise
    return staged


def commit_staged(
    table: Table,
    staged: StagedFiles,
    mode: str,
    overwrite_filter: Expression | str | None = None,
    partition_overwrite: str = "static",
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
) -> Snapshot | None:
    """Commit staged files as one snapshot (deleting them if the commit fails for sure)."""
    from icefloe.spark.commit import build_action

    try:
        action = build_action(
            table, staged.files, mode, overwrite_filter, partition_overwrite, branch, snapshot_properties
        )
    except BaseException:
        staged.discard()
        raise
    if action is None:
        staged.discard()
        return None
    with table.transaction() as tx:
        tx.add_action(action)
    return table.metadata.snapshot_for_ref(branch)


# ---------------------------------------------------------------------------------------------
# native route


def _write_native(df: DataFrame, md: TableMetadata, staged: StagedFiles) -> None:
    schema, spec = md.schema(), md.spec()
    spark = df.sparkSession
    keys = partition_key_columns(schema, spec) if not spec.is_unpartitioned else []
    key_names = [partition_column_name(i) for i in range(len(keys))]
    out = df.select("*", *keys) if keys else df
    conf = dict(WRITE_CONF)
    if keys and md.properties.get("write.distribution-mode", "hash").lower() != "none":
        # cluster rows by partition (few files per partition); REBALANCE lets AQE split skewed ones
        out = out.hint("rebalance", *key_names)
        conf.update(SPREAD_SMALL_WRITES_CONF)
    codec = md.properties.get("write.parquet.compression-codec", DEFAULT_COMPRESSION).lower()
    writer = out.write.mode("errorifexists").option("compression", _spark_codec(codec))
    row_group = md.properties.get("write.parquet.row-group-size-bytes")
    if row_group:
        writer = writer.option("parquet.block.size", row_group)
    if key_names:
        writer = writer.partitionBy(*key_names)
    if split_scheme(staged.staging)[0] in ("", "file"):
        for key, value in NO_CHECKSUM_FILES_OPTIONS.items():
            writer = writer.option(key, value)
    with session_conf(spark, conf):
        writer.parquet(spark_location(staged.staging))
    staged.route = "native"
    found: list[tuple[str, tuple[Any, ...]]] = []
    prefix = staged.staging.rstrip("/") + "/"
    for path in staged.io.list_prefix(staged.staging):
        rel = path[len(prefix) :] if path.startswith(prefix) else path
        parts = rel.split("/")
        name = parts[-1]
        if (
            not name.endswith(".parquet")
            or name.startswith((".", "_"))
            or any(p.startswith(("_", ".")) and "=" not in p for p in parts[:-1])
        ):
            continue
        partition = parse_partition_dirs("/".join(parts[:-1]), schema, spec) if keys else ()
        found.append((path, partition))
    staged.files = data_files_from_footers(staged.io, found, schema, spec.spec_id, dict(md.properties))
    staged.files = [f for f in staged.files if f.record_count > 0]
    staged.tidy()


def _spark_codec(codec: str) -> str:
    return {"uncompressed": "none", "none": "none"}.get(codec, codec)


# ---------------------------------------------------------------------------------------------
# arrow route


@dataclass(frozen=True)
class ArrowWriteJob:
    """Everything an executor needs to write Arrow batches as data files of one table."""

    metadata: TableMetadata
    staging: str
    io_properties: dict[str, str]
    target_rows: int = 1_000_000


def _write_arrow(df: DataFrame, md: TableMetadata, staged: StagedFiles, io: FileIO) -> None:
    from pyspark.sql import types as T

    job = ArrowWriteJob(md, staged.staging, dict(io.properties))
    out_schema = T.StructType([T.StructField("data_file", T.BinaryType(), False)])
    rows = map_in_arrow(df, lambda batches: write_arrow_batches(job, batches), out_schema).collect()
    staged.route = "arrow"
    staged.files = [pickle.loads(r["data_file"]) for r in rows]
    staged.tidy()


def write_arrow_batches(job: ArrowWriteJob, batches: Iterator[Any]) -> Iterator[Any]:
    """Executor side: write batches (table column names) as data files; yield pickled DataFiles."""
    import pyarrow as pa

    io = executor_io(job.io_properties, job.metadata.location)
    pending: list[Any] = []
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= job.target_rows:
            files = write_arrow_table(io, job, pa.Table.from_batches(pending))
            pending, rows = [], 0
            yield _files_batch(files)
    if pending:
        yield _files_batch(write_arrow_table(io, job, pa.Table.from_batches(pending)))


def write_arrow_table(io: FileIO, job: ArrowWriteJob, data: Any) -> list[DataFile]:
    """Conform an Arrow table (Spark types) to the table schema and write one file per partition."""
    from icefloe.formats.arrow_schema import check_required_no_nulls, to_table_schema
    from icefloe.formats.parquet.data_files import write_parquet_data_file
    from icefloe.formats.partition_arrow import partition_table
    from icefloe.spark.arrow_bridge import from_spark_arrow
    from icefloe.tree.locations import partition_path

    md = job.metadata
    schema, spec = md.schema(), md.spec()
    table = to_table_schema(from_spark_arrow(data, schema), schema)
    check_required_no_nulls(schema, table)
    written: list[DataFile] = []
    for partition, part in partition_table(table, schema, spec):
        sub = partition_path(spec, schema, partition)
        name = f"{uuid.uuid4().hex}.parquet"
        path = f"{job.staging}/{sub}/{name}" if sub else f"{job.staging}/{name}"
        written.append(
            write_parquet_data_file(io, path, part, schema, spec.spec_id, partition, dict(md.properties))
        )
    return written


def _files_batch(files: list[DataFile]) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([pickle.dumps(f) for f in files], pa.binary())],
        schema=pa.schema([pa.field("data_file", pa.binary(), nullable=False)]),
    )
