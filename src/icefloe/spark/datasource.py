"""The ``icefloe`` Python data source: ``spark.read.format("icefloe")``, ``df.write.format("icefloe")``,
SQL ``USING icefloe`` and a streaming sink.

Options (keys are case-insensitive): ``table`` (or the ``load()/save()`` path) names the table;
reads take ``snapshot-id``, ``as-of-timestamp`` (ms), ``branch``, ``tag``, ``filter`` (icefloe filter
text) and ``columns`` (comma-separated: the Python data source API never prunes columns, so
narrowing the schema is up to you); writes take ``overwrite-filter``, ``partition-overwrite``
(``static``/``dynamic``), ``branch`` and ``snapshot-property.<key>``; streaming writes take
``query-id`` (defaults to the checkpoint location). ``catalog-uri`` / ``warehouse`` override the
catalog baked into the registered class by ``icefloe.spark.session()``.

Every data file is one input partition read with ``icefloe.scan.reader.read_task`` (deletes
applied) and returned as Arrow batches. Writes go through icefloe's Parquet writer on the
executors (one file per partition per task, in a job-unique directory) and one commit on the
driver. This is the friendly face: ``icefloe.spark.read_table`` / ``write_table`` are the fast paths.
"""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType as SparkStruct

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, And, Expression
from icefloe.expressions.parser import to_expression
from icefloe.spark.arrow_bridge import from_spark_arrow, spark_arrow_schema, to_spark_arrow
from icefloe.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from icefloe.spec.snapshots import MAIN_BRANCH

SNAPSHOT_PROPERTY_PREFIX = "snapshot-property."


def datasource_class(catalog_properties: dict[str, str], pushdown: bool) -> type[IcefloeDataSource]:
    """A subclass of the data source carrying a catalog configuration (pickled by value to workers)."""
    base = PushdownIcefloeDataSource if pushdown else IcefloeDataSource
    return type(
        "ConfiguredIcefloeDataSource",
        (base,),
        {"catalog_properties": dict(catalog_properties), "__module__": __name__},
    )


def _identifier(options: dict[str, str]) -> str:
    ident = options.get("table") or options.get("path")
    if not ident:
        raise ValidationError(
            "the icefloe data source needs a table: .option('table', 'ns.t') or .load('ns.t')"
        )
    return ident


def _catalog_props(options: dict[str, str], baked: dict[str, str]) -> dict[str, str]:
    props = dict(baked)
    for key, target in (
        ("catalog-uri", "uri"),
        ("catalog.uri", "uri"),
        ("uri", "uri"),
        ("warehouse", "warehouse"),
        ("catalog.warehouse", "warehouse"),
    ):
        if options.get(key):
            props[target] = options[key]
    return props


class IcefloeDataSource(DataSource):
    """Python data source named ``icefloe`` (batch read/write, streaming write)."""

    catalog_properties: ClassVar[dict[str, str]] = {}
    pushdown: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        """The format name: ``icefloe``."""
        return "icefloe"

    def _opts(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in dict(self.options).items()}

    def _load(self) -> Any:
        from icefloe.spark.runtime import catalog_from_properties

        opts = self._opts()
        return catalog_from_properties(_catalog_props(opts, self.catalog_properties)).load_table(
            _identifier(opts)
        )

    def schema(self) -> SparkStruct:
        """The table's columns (or those of the ``columns`` option) as a Spark schema."""
        return _ReadSetup.create(self._opts(), self._load()).spark_schema()

    def reader(self, schema: SparkStruct) -> DataSourceReader:
        """A batch reader; plans the files on the driver."""
        setup = _ReadSetup.create(self._opts(), self._load())
        return IcefloePushdownReader(setup) if self.pushdown else IcefloeReader(setup)

    def writer(self, schema: SparkStruct, overwrite: bool) -> IcefloeWriter:
        """A batch writer (append, or overwrite with ``overwrite=True``)."""
        return IcefloeWriter(
            _WriteSetup.create(self._opts(), self.catalog_properties, self._load(), schema, overwrite)
        )

    def streamWriter(self, schema: SparkStruct, overwrite: bool) -> IcefloeStreamWriter:
        """A streaming writer: one snapshot per micro-batch, idempotent on replay."""
        setup = _WriteSetup.create(self._opts(), self.catalog_properties, self._load(), schema, overwrite)
        return IcefloeStreamWriter(setup)


class PushdownIcefloeDataSource(IcefloeDataSource):
    """The data source with filter pushdown (needs ``spark.sql.python.filterPushdown.enabled``)."""

    pushdown: ClassVar[bool] = True


# ---------------------------------------------------------------------------------------------
# reading


@dataclass
class _ReadSetup:
    """Picklable state of a read: table metadata, scan options, projection and request."""

    metadata: Any
    io_properties: dict[str, str]
    snapshot_id: int | None
    ref: str | None
    as_of_ms: int | None
    row_filter: Expression
    columns: tuple[str, ...]

    @classmethod
    def create(cls, opts: dict[str, str], table: Any) -> _ReadSetup:
        def num(key: str) -> int | None:
            return int(opts[key]) if opts.get(key) else None

        ref = opts.get("branch") or opts.get("tag")
        cols = tuple(c.strip() for c in opts.get("columns", "").split(",") if c.strip()) or ("*",)
        row_filter = to_expression(opts["filter"]) if opts.get("filter") else AlwaysTrue()
        return cls(
            table.metadata,
            dict(table.io.properties),
            num("snapshot-id"),
            ref,
            num("as-of-timestamp"),
            row_filter,
            cols,
        )

    def scan(self, io: Any) -> Any:
        from icefloe.scan.table_scan import TableScan

        return TableScan(
            io=io,
            metadata=self.metadata,
            row_filter=self.row_filter,
            selected_fields=self.columns,
            snapshot_id=self.snapshot_id,
            ref=self.ref,
            as_of_timestamp_ms=self.as_of_ms,
        )

    def io(self) -> Any:
        from icefloe.spark.runtime import executor_io

        return executor_io(self.io_properties, self.metadata.location)

    def request(self) -> Any:
        from icefloe.scan.reader import ReadRequest

        scan = self.scan(self.io())
        projected, meta = scan.projection()
        return ReadRequest(scan.schema(), projected, tuple(meta), self.row_filter)

    def fields(self) -> list[Any]:
        from icefloe.scan.reader import METADATA_COLUMNS

        req = self.request()
        return [*req.projected.fields, *(METADATA_COLUMNS[n] for n in req.metadata_columns)]

    def spark_schema(self) -> SparkStruct:
        from icefloe.spark.schema import to_spark_field

        return SparkStruct([to_spark_field(f, field_ids=False) for f in self.fields()])


class IcefloeReader(DataSourceReader):
    """One input partition per planned data file; each read returns Arrow batches."""

    def __init__(self, setup: _ReadSetup) -> None:
        self.setup = setup
        self.request = setup.request()
        self.fields = setup.fields()
        self.target = spark_arrow_schema(setup.spark_schema())

    def partitions(self) -> Sequence[InputPartition]:
        """Plan on the driver; the pickled scan task is the partition value."""
        tasks = self.setup.scan(self.setup.io()).plan_files()
        return [InputPartition(pickle.dumps(t)) for t in tasks]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Read one data file (deletes and residual filter applied)."""
        from icefloe.scan.reader import read_task

        if partition.value is None:
            return
        task = pickle.loads(partition.value)
        table = read_task(self.setup.io(), task, self.request)
        if table.num_rows:
            yield from to_spark_arrow(table, self.fields, self.target).to_batches(max_chunksize=65536)


class IcefloePushdownReader(IcefloeReader):
    """A reader that also uses Spark's filters for planning (Spark still applies them to rows)."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Use every expressible filter to prune files; report all back so Spark re-checks rows."""
        from icefloe.expressions.binding import bind
        from icefloe.spark.filters import from_datasource_filter

        schema = self.request.table_schema
        expr = self.setup.row_filter
        for f in filters:
            converted = from_datasource_filter(f)
            if converted is None:
                continue
            try:
                bind(schema, converted)
            except Exception:  # a column or literal icefloe cannot bind: leave it to Spark
                continue
            expr = And(expr, converted)
        self.setup.row_filter = expr
        self.request = self.setup.request()
        return iter(list(filters))


# ---------------------------------------------------------------------------------------------
# writing


@dataclass
class _WriteSetup:
    """Picklable state of a write: where files go, how to commit them."""

    identifier: str
    catalog_properties: dict[str, str]
    job: Any
    overwrite: bool
    overwrite_filter: str | None
    partition_overwrite: str
    branch: str
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    query_id: str | None = None

    @classmethod
    def create(
        cls, opts: dict[str, str], baked: dict[str, str], table: Any, schema: SparkStruct, overwrite: bool
    ) -> _WriteSetup:
        from icefloe.spark.write import ArrowWriteJob, check_write_arguments
        from icefloe.tree.locations import LocationProvider

        _check_input_schema(table.metadata.schema(), schema)
        check_write_arguments(
            table,
            "overwrite" if overwrite else "append",
            opts.get("overwrite-filter"),
            opts.get("branch", MAIN_BRANCH),
        )
        staging = f"{LocationProvider(table.metadata).data_location}/spark-ds-{uuid.uuid4().hex}"
        props = {
            k[len(SNAPSHOT_PROPERTY_PREFIX) :]: v
            for k, v in opts.items()
            if k.startswith(SNAPSHOT_PROPERTY_PREFIX)
        }
        mode = opts.get("partition-overwrite", opts.get("partitionoverwritemode", "static")).lower()
        if mode not in ("static", "dynamic"):
            raise ValidationError(f"partition-overwrite must be 'static' or 'dynamic', got {mode!r}")
        return cls(
            identifier=_identifier(opts),
            catalog_properties=_catalog_props(opts, baked),
            job=ArrowWriteJob(table.metadata, staging, dict(table.io.properties)),
            overwrite=overwrite,
            overwrite_filter=opts.get("overwrite-filter"),
            partition_overwrite=mode,
            branch=opts.get("branch", MAIN_BRANCH),
            snapshot_properties=props,
            query_id=opts.get("query-id") or opts.get("checkpointlocation"),
        )

    def staging(self, batch_id: str | None = None) -> str:
        """The job's staging directory (one sub-directory per micro-batch when streaming)."""
        return self.job.staging if batch_id is None else f"{self.job.staging}/batch-{batch_id}"

    def write(self, batches: Iterator[Any], batch_id: str | None = None) -> _FilesMessage:
        from dataclasses import replace

        from icefloe.spark.write import write_arrow_batches

        job = replace(self.job, staging=self.staging(batch_id))
        files: list[Any] = []
        for out in write_arrow_batches(job, batches):
            files.extend(pickle.loads(b) for b in out.column(0).to_pylist())
        return _FilesMessage(files)

    def commit(
        self,
        messages: list[Any],
        extra_properties: dict[str, str] | None = None,
        skip_if_committed: tuple[str, str] | None = None,
        batch_id: str | None = None,
    ) -> None:
        from icefloe.spark.commit import build_action
        from icefloe.spark.runtime import catalog_from_properties
        from icefloe.spark.streaming import already_committed
        from icefloe.spark.write import StagedFiles

        table = catalog_from_properties(self.catalog_properties).load_table(self.identifier)
        files = [f for m in messages if isinstance(m, _FilesMessage) for f in m.files]
        staged = StagedFiles(table.io, self.staging(batch_id), files, route="arrow")
        if skip_if_committed and already_committed(table, self.branch, *skip_if_committed):
            staged.discard()
            return
        staged.tidy()  # files of failed or speculative task attempts
        mode = "overwrite" if self.overwrite else "append"
        props = {**self.snapshot_properties, **(extra_properties or {})}
        action = build_action(
            table, files, mode, self.overwrite_filter, self.partition_overwrite, self.branch, props
        )
        if action is None:
            staged.discard()
            return
        with table.transaction() as tx:
            tx.add_action(action)

    def abort(self, batch_id: str | None = None) -> None:
        from icefloe.spark.runtime import delete_tree, executor_io

        delete_tree(executor_io(self.job.io_properties, self.job.metadata.location), self.staging(batch_id))


def _check_input_schema(schema: Any, spark_schema: SparkStruct) -> None:
    """Fail before any task runs when the input cannot be written to the table."""
    from icefloe.formats.arrow_schema import check_arrow_compatible

    empty = spark_arrow_schema(spark_schema).empty_table()
    check_arrow_compatible(schema, from_spark_arrow(empty, schema).schema)
    names = {f.name for f in schema.fields}
    missing = [
        f.name
        for f in schema.fields
        if f.required and f.write_default is None and f.name not in spark_schema.fieldNames()
    ]
    if missing:
        raise ValidationError(f"required column {missing[0]!r} is missing from the input")
    extra = [n for n in spark_schema.fieldNames() if n not in names]
    if extra:
        raise ValidationError(f"column {extra[0]!r} is not in the table schema")


@dataclass
class _FilesMessage(WriterCommitMessage):
    """The data files one task wrote."""

    files: list[Any]


class IcefloeWriter(DataSourceArrowWriter):
    """Batch writer: tasks write files, ``commit`` (on the driver) makes one snapshot."""

    def __init__(self, setup: _WriteSetup) -> None:
        self.setup = setup

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        """Write this task's rows as data files in the job's staging directory."""
        return self.setup.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Commit every task's files as one snapshot (stray files of failed attempts deleted)."""
        self.setup.commit(list(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Delete the job's staging directory."""
        self.setup.abort()


class IcefloeStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writer: one snapshot per micro-batch, skipped when the batch was committed before."""

    def __init__(self, setup: _WriteSetup) -> None:
        self.setup = setup

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        """Write this task's rows of the micro-batch (into the batch's own staging directory)."""
        return self.setup.write(iterator, _task_batch_id())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the micro-batch unless a snapshot already records this query id and batch id."""
        query_id = self.setup.query_id or f"table:{self.setup.identifier}"
        extra = {QUERY_ID_PROPERTY: query_id, BATCH_ID_PROPERTY: str(batchId)}
        self.setup.commit(
            list(messages), extra, skip_if_committed=(query_id, str(batchId)), batch_id=str(batchId)
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Delete the micro-batch's staged files."""
        self.setup.abort(str(batchId))


def _task_batch_id() -> str:
    """The micro-batch id Spark puts in the task's local properties."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    value = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    if value is None:
        raise ValidationError("cannot tell which micro-batch this task belongs to")
    return str(value)
