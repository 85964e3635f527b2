"""The ``icefloe`` Python data source: ``spark.read.format("icefloe")``, ``df.write.format("icefloe")``,
SQL ``USING icefloe`` and a streaming sink.

Options (keys are case-insensitive): ``table`` (or the ``load()/save()`` path) names the table;
reads take ``snapshot-id``, ``as-of-timestamp`` (ms), ``branch``, ``tag``, ``filter`` (icefloe filter
text), ``start-snapshot-id`` / ``start-timestamp`` (an incremental read of the rows appended after
it, up to ``end-snapshot-id`` / ``end-timestamp`` or the current snapshot) and ``columns``
(comma-separated: the Python data source API never prunes columns, so
narrowing the schema is up to you); writes take ``overwrite-filter``, ``partition-overwrite``
(``static``/``dynamic``), ``branch`` and ``snapshot-property.<key>``; streaming writes take
``query-id`` (defaults to the checkpoint location). ``catalog-type`` / ``catalog-uri`` /
``warehouse`` override the session's catalog, which ``icefloe.spark.session()`` gives the registered
class as a ``worker_catalog.CatalogRef`` (an http(s) URI is a REST catalog's:
``.option("catalog.uri", "http://host:8181")``). What each Python worker receives of the catalog,
and why no executor task gets its login but the batch read's of a table's current state, is in
``icefloe.spark.worker_catalog``.

Reads of the current state, a branch or a tag plan the files when the query runs (from the
table's current metadata; see ``IcefloeReader`` for why); reads of one snapshot id, or of a
timestamp the table's history has already passed (``_ReadSetup.pinned``), are planned once, in the
planning worker (``PinnedSnapshotReader``). Both read the files with
``icefloe.scan.reader.read_task`` (deletes applied) as Arrow batches; the query's own filters are
applied by Spark. Writes go through icefloe's Parquet writer on the executors (one file per
partition per task, in a job-unique directory) and one commit on the driver.
``spark.readStream.format("icefloe")`` is the streaming source of ``icefloe.spark.stream_source``.
This is the friendly face: ``icefloe.spark.read_table`` / ``write_table`` are the fast paths.
"""

from __future__ import annotations

import pickle
import uuid
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType as SparkStruct

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.parser import to_expression
from icefloe.spark.arrow_bridge import from_spark_arrow, spark_arrow_schema, to_spark_arrow
from icefloe.spark.streaming import BATCH_ID_PROPERTY, QUERY_ID_PROPERTY
from icefloe.spark.worker_catalog import CatalogRef, keep_catalog, task_catalog_properties
from icefloe.spec.snapshots import MAIN_BRANCH

SNAPSHOT_PROPERTY_PREFIX = "snapshot-property."


def datasource_class(catalog_properties: dict[str, str], pushdown: bool) -> type[IcefloeDataSource]:
    """A subclass of the data source for the session's catalog. It is pickled by value to the
    planning worker and, inside PySpark's read function, to read tasks, so it holds a
    ``CatalogRef``: a catalog with a login stays in a file on the driver's host."""
    base = PushdownIcefloeDataSource if pushdown else IcefloeDataSource
    return type(
        "ConfiguredIcefloeDataSource",
        (base,),
        {"catalog": keep_catalog(catalog_properties), "__module__": __name__},
    )


def _identifier(options: dict[str, str]) -> str:
    ident = options.get("table") or options.get("path")
    if not ident:
        raise ValidationError(
            "the icefloe data source needs a table: .option('table', 'ns.t') or .load('ns.t')"
        )
    return ident


class IcefloeDataSource(DataSource):
    """Python data source named ``icefloe`` (batch read/write, streaming write)."""

    catalog: ClassVar[CatalogRef] = CatalogRef()
    pushdown: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        """The format name: ``icefloe``."""
        return "icefloe"

    def _opts(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in dict(self.options).items()}

    def _catalog(self) -> CatalogRef:
        return self.catalog.with_options(self._opts())

    def _load(self) -> Any:
        from icefloe.spark.runtime import catalog_from_properties

        return catalog_from_properties(self._catalog().properties()).load_table(_identifier(self._opts()))

    def schema(self) -> SparkStruct:
        """The table's columns (or those of the ``columns`` option) as a Spark schema."""
        opts = self._opts()
        schema = _ReadSetup.create(opts, self._load(), self.catalog).spark_schema()
        if opts.get("read-changelog", "").lower() == "true":
            from icefloe.spark.stream_source import CHANGE_FIELDS

            schema = SparkStruct([*schema.fields, *CHANGE_FIELDS])
        return schema

    def reader(self, schema: SparkStruct) -> DataSourceReader:
        """A batch reader: ``PinnedSnapshotReader`` for a read of one snapshot id (planned here,
        in the planning worker), else ``IcefloeReader`` (planned by its tasks)."""
        if self._opts().get("read-changelog", "").lower() == "true":
            raise ValidationError(
                "read-changelog is a streaming option: batch changelogs come from read_changes()"
            )
        from icefloe.spark.runtime import catalog_from_properties

        opts = self._opts()
        props = self._catalog().properties()
        catalog = catalog_from_properties(props)
        setup = _ReadSetup.create(opts, catalog.load_table(_identifier(opts)), self.catalog).pinned()
        if setup.snapshot_id is not None:
            return PinnedSnapshotReader(setup)
        kind = IcefloePushdownReader if self.pushdown else IcefloeReader
        return kind(setup, task_catalog_properties(props, catalog))

    def writer(self, schema: SparkStruct, overwrite: bool) -> IcefloeWriter:
        """A batch writer (append, or overwrite with ``overwrite=True``)."""
        return IcefloeWriter(_WriteSetup.create(self._opts(), self.catalog, self._load(), schema, overwrite))

    def streamReader(self, schema: SparkStruct) -> DataSourceStreamReader:
        """A streaming reader: ``spark.readStream.format("icefloe")`` (``icefloe.spark.stream_source``)."""
        from icefloe.spark.stream_source import IcefloeStreamReader

        opts = self._opts()
        return IcefloeStreamReader(_ReadSetup.create(opts, self._load(), self.catalog), opts, self._load)

    def streamWriter(self, schema: SparkStruct, overwrite: bool) -> IcefloeStreamWriter:
        """A streaming writer: one snapshot per micro-batch, idempotent on replay."""
        setup = _WriteSetup.create(self._opts(), self.catalog, self._load(), schema, overwrite)
        return IcefloeStreamWriter(setup)


class PushdownIcefloeDataSource(IcefloeDataSource):
    """The data source registered when ``spark.sql.python.filterPushdown.enabled`` is on (Spark then
    asks the reader for filters; ``IcefloePushdownReader`` leaves them all to Spark)."""

    pushdown: ClassVar[bool] = True


# ---------------------------------------------------------------------------------------------
# reading


@dataclass
class _ReadSetup:
    """Picklable state of a read: which table, catalog (a ``CatalogRef``: no login), scan options;
    the schema Spark was given.

    ``metadata`` is the table's metadata when the relation was created: it fixes the projection
    (the Spark schema of a view or DataFrame never changes). The files are planned when the query
    runs, from the metadata current then (see ``IcefloeReader``).
    """

    metadata: Any
    io_properties: dict[str, str]
    snapshot_id: int | None
    ref: str | None
    as_of_ms: int | None
    row_filter: Expression
    columns: tuple[str, ...]
    identifier: str = ""
    catalog: CatalogRef = field(default_factory=CatalogRef)
    start_snapshot_id: int | None = None
    start_timestamp_ms: int | None = None

    @classmethod
    def create(cls, opts: dict[str, str], table: Any, catalog: CatalogRef | None = None) -> _ReadSetup:
        def num(key: str) -> int | None:
            return int(opts[key]) if opts.get(key) else None

        ref = opts.get("branch") or opts.get("tag")
        cols = tuple(c.strip() for c in opts.get("columns", "").split(",") if c.strip()) or ("*",)
        row_filter = to_expression(opts["filter"]) if opts.get("filter") else AlwaysTrue()
        return cls(
            table.metadata,
            dict(table.io.properties),
            num("snapshot-id") or num("end-snapshot-id"),
            ref,
            num("as-of-timestamp") or num("end-timestamp"),
            row_filter,
            cols,
            _identifier(opts),
            (catalog or CatalogRef()).with_options(opts),
            start_snapshot_id=num("start-snapshot-id"),
            start_timestamp_ms=num("start-timestamp"),
        )

    def pinned(self) -> _ReadSetup:
        """This read with ``as-of-timestamp`` resolved to its snapshot id when that can no longer
        change (then ``PinnedSnapshotReader`` reads it), else itself.

        The snapshot current on main at a time is the last snapshot-log entry at or before it.
        Once the log holds an entry *after* that time, later commits append entries later still,
        so the answer is fixed (only a rollback rewriting history or an expiry removing the
        snapshot could change it, as they could for a ``snapshot-id`` read). A time at or after
        the newest entry stays on the current-state path: a commit can still land before it.

        A ``tag`` is not pinned: a tag can be replaced or dropped, and a read naming it means
        what it names when the query runs, as a branch does (and ``VERSION AS OF 'tag'`` in SQL,
        resolved by each statement).
        """
        if self.snapshot_id is not None or self.ref is not None or self.as_of_ms is None:
            return self
        as_of = self.as_of_ms
        if not any(entry.timestamp_ms > as_of for entry in self.metadata.snapshot_log):
            return self
        return replace(self, snapshot_id=self.metadata.snapshot_as_of(as_of).snapshot_id, as_of_ms=None)

    def scan(self, io: Any, metadata: Any = None) -> Any:
        from icefloe.scan.table_scan import TableScan

        return TableScan(
            io=io,
            metadata=self.metadata if metadata is None else metadata,
            row_filter=self.row_filter,
            selected_fields=self.columns,
            snapshot_id=self.snapshot_id,
            ref=self.ref,
            as_of_timestamp_ms=self.as_of_ms,
            start_snapshot_id=self.start_snapshot_id,
            start_timestamp_ms=self.start_timestamp_ms,
        )

    def current_metadata(self) -> Any:
        """The table's metadata now (from the catalog), or the remembered one without a catalog
        (on the driver's host: the planning worker, the driver)."""
        if not self.identifier:
            return self.metadata
        return self.load_table().metadata

    def load_table(self) -> Any:
        """The table, loaded from the catalog now."""
        from icefloe.spark.runtime import catalog_from_properties

        return catalog_from_properties(self.catalog.properties()).load_table(self.identifier)

    def io(self) -> Any:
        from icefloe.spark.runtime import executor_io

        return executor_io(self.io_properties, self.metadata.location)

    def request(self) -> Any:
        from icefloe.scan.reader import ReadRequest

        scan = self.scan(self.io())
        projected, meta = scan.projection()
        return ReadRequest(
            scan.schema(), projected, tuple(meta), self.row_filter, specs=self.metadata.specs_by_id()
        )

    def fields(self) -> list[Any]:
        from icefloe.scan.reader import METADATA_COLUMNS

        req = self.request()
        return [*req.projected.fields, *(METADATA_COLUMNS[n] for n in req.metadata_columns)]

    def spark_schema(self) -> SparkStruct:
        from icefloe.spark.schema import to_spark_field

        return SparkStruct([to_spark_field(f, field_ids=False) for f in self.fields()])


def load_read_setup(opts: dict[str, str], catalog: CatalogRef) -> tuple[_ReadSetup, Any]:
    """The read setup of a data source's options (keys in lower case), and the table it loads."""
    from icefloe.spark.runtime import catalog_from_properties

    table = catalog_from_properties(catalog.with_options(opts).properties()).load_table(_identifier(opts))
    return _ReadSetup.create(opts, table, catalog), table


MIN_SLOTS = 8
MAX_SLOTS = 256
_PLANS: dict[tuple[str, ...], list[Any]] = {}
_PLANS_KEPT = 8


class IcefloeReader(DataSourceReader):
    """Reads the table in ``slots`` input partitions, planning the files when the query runs.

    Spark keeps a relation's planned partitions and pickled reader for the relation's lifetime
    (``PythonDataSourceV2.getOrCreateReadInfo`` caches them; filter pushdown replaces them only for
    queries with a pushable filter). A temporary view or a DataFrame would therefore replay its
    first query's files, snapshot and pushed filters on every later query. So nothing query-specific
    is decided at planning: a partition is only a slot number; each task loads the table's current
    metadata, plans the files (with the ``filter`` option alone; Spark applies the query's own
    filters to the rows) and reads the files whose path hashes to its slot. Tasks of one Spark SQL
    execution in one Python worker share one plan. A commit landing while a query's tasks start
    can be seen by some of its tasks and not others: ``read_table`` (planned once on the driver)
    is the route for snapshot-isolated reads under concurrent writers.

    Loading the current metadata is why these tasks, alone among executor tasks, get catalog
    properties: ``task_catalog``, as little of the login as reaches the table's pointer
    (``worker_catalog.task_catalog_properties``). A read of one snapshot id, or of a timestamp
    with a later commit, has nothing to replay stale and goes to ``PinnedSnapshotReader``
    instead, whose tasks get no catalog.
    """

    def __init__(self, setup: _ReadSetup, task_catalog: dict[str, str] | None = None) -> None:
        self.setup = setup
        self.task_catalog = dict(task_catalog or {})
        self.request = setup.request()
        self.fields = setup.fields()
        self.target = spark_arrow_schema(setup.spark_schema())

    def partitions(self) -> Sequence[InputPartition]:
        """``slot_count`` slots for the current snapshot's files."""
        slots = slot_count(self.setup.current_metadata())
        return [InputPartition((slot, slots)) for slot in range(slots)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Read the files of this slot (deletes and the ``filter`` option applied)."""
        if partition.value is None:
            return
        slot, slots = partition.value
        mine = (task for task in self._tasks() if _slot_of(task.file_path, slots) == slot)
        yield from _read_tasks(self.setup.io(), mine, self.request, self.fields, self.target)

    def _tasks(self) -> list[Any]:
        """The scan tasks of the current snapshot (shared by this execution's tasks in this worker)."""
        execution = _execution_id()
        key = (self.setup.identifier, repr(sorted(self.task_catalog.items())), execution or "")
        cached = _PLANS.get(key) if execution else None
        if cached is not None:
            return cached
        tasks: list[Any] = self.setup.scan(self.setup.io(), self._current_metadata()).plan_files()
        if execution:
            while len(_PLANS) >= _PLANS_KEPT:
                _PLANS.pop(next(iter(_PLANS)))
            _PLANS[key] = tasks
        return tasks

    def _current_metadata(self) -> Any:
        """The table's metadata now, loaded with ``task_catalog`` (without a table name: the
        remembered one)."""
        from icefloe.spark.runtime import catalog_from_properties

        if not self.setup.identifier:
            return self.setup.metadata
        return catalog_from_properties(self.task_catalog).load_table(self.setup.identifier).metadata


def slot_count(metadata: Any) -> int:
    """How many slots a current-state read gets: as many input partitions as Spark would pack the
    current snapshot's files into (each weighing at least the open-file cost, a partition at most
    a split), from the snapshot summary's totals, ``MIN_SLOTS`` to ``MAX_SLOTS``.

    Every slot is a Spark task with a Python worker's fixed cost (it unpickles the reader and
    loads the table), so a slot per file made a table of many small files slow to read: 1,000
    files of a few kB were 256 tasks where Spark packs them into 32.
    """
    files, size = _summary_total(metadata, "total-data-files"), _summary_total(metadata, "total-files-size")
    split, open_cost = _split_sizes(metadata)
    weight = max(size, files * open_cost)
    per_slot = max(1, min(split, max(open_cost, weight // MIN_SLOTS)))
    return max(MIN_SLOTS, min(MAX_SLOTS, -(-weight // per_slot)))


def _summary_total(metadata: Any, key: str) -> int:
    """A total of the current snapshot's summary (0 when there is none or it is not a number)."""
    snapshot = metadata.current_snapshot() if hasattr(metadata, "current_snapshot") else None
    summary = getattr(snapshot, "summary", None) or {}
    try:
        return max(0, int(summary.get(key, 0)))
    except (TypeError, ValueError):
        return 0


def _slot_of(path: str, slots: int) -> int:
    """A stable slot for a file path (the same in every worker process)."""
    return zlib.crc32(path.encode("utf-8")) % slots


def _execution_id() -> str | None:
    """The Spark SQL execution this task belongs to (None outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return None
    value = ctx.getLocalProperty("spark.sql.execution.id")
    return None if value is None else str(value)


def _read_tasks(io: Any, tasks: Iterable[Any], request: Any, fields: list[Any], target: Any) -> Iterator[Any]:
    """Read scan tasks (deletes and the ``filter`` option applied) as Arrow batches on Spark's schema;
    a delete file several of them need is read once (``read_each_task``)."""
    from icefloe.scan.reader import read_each_task

    for table in read_each_task(io, list(tasks), request):  # delete files shared within this task
        if table.num_rows:
            yield from to_spark_arrow(table, fields, target).to_batches(max_chunksize=65536)


class IcefloePushdownReader(IcefloeReader):
    """The reader used when ``spark.sql.python.filterPushdown.enabled`` is on.

    It takes no filter: Spark would keep the pruned plan of the first query with a pushable
    filter for later queries of the same relation (see ``IcefloeReader``), so every filter stays
    with Spark, which applies it to the rows with its own semantics (NaN included).
    """


class PinnedSnapshotReader(DataSourceReader):
    """Reads the one snapshot a read names by id (``snapshot-id``, or ``end-snapshot-id`` of an
    incremental read) or by a timestamp already followed by a commit (``as-of-timestamp`` /
    ``end-timestamp``, see ``_ReadSetup.pinned``), planned once, in the planning worker; its tasks
    get no catalog.

    A snapshot id names the same files for as long as the snapshot exists, so Spark keeping the
    relation's reader and partitions (see ``IcefloeReader``) replays nothing stale here: every
    query of the DataFrame or view reads that snapshot, as it did when tasks planned it afresh.
    ``partitions()`` plans with the metadata ``reader()`` loaded (``_ReadSetup.metadata``, which
    also fixed the Spark schema) and packs the tasks into input partitions as the streaming
    source packs a micro-batch's files (``stream_planner.group_units``, aiming at ``MIN_SLOTS``
    partitions or more): each partition carries its own tasks, the reader none. Tasks read
    their files with the table's FileIO properties and nothing else, so neither a SQL catalog's
    password nor a REST catalog's token reaches them, and a REST token expiring between queries
    cannot fail them.
    """

    def __init__(self, setup: _ReadSetup) -> None:
        self.setup = setup
        self.request = setup.request()
        self.fields = setup.fields()
        self.target = spark_arrow_schema(setup.spark_schema())

    def partitions(self) -> Sequence[InputPartition]:
        """The snapshot's scan tasks (the ``filter`` option applied), packed into partitions."""
        from icefloe.spark.stream_planner import Unit, group_payload, group_units, task_bytes

        setup = self.setup
        tasks = sorted(setup.scan(setup.io()).plan_files(), key=lambda t: t.file_path)
        sid = int(setup.snapshot_id or 0)
        units = [Unit(sid, t.data_file.record_count, t, task_bytes(t)) for t in tasks]
        groups = group_units(units, MIN_SLOTS, *_split_sizes(setup.metadata))
        return [InputPartition(group_payload(g)) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Read this partition's tasks (deletes and the ``filter`` option applied)."""
        if partition.value is None:  # PySpark's stand-in when there are no partitions
            return
        tasks = (task for _, task in pickle.loads(partition.value))
        yield from _read_tasks(self.setup.io(), tasks, self.request, self.fields, self.target)


def _split_sizes(metadata: Any) -> tuple[int, int]:
    """(split size, open-file cost): the table's ``read.split.*`` properties, else the defaults."""
    from icefloe.spark.stream_planner import (
        DEFAULT_OPEN_FILE_COST,
        DEFAULT_SPLIT_SIZE,
        OPEN_FILE_COST_PROPERTY,
        SPLIT_SIZE_PROPERTY,
    )

    split = metadata.int_property(SPLIT_SIZE_PROPERTY, DEFAULT_SPLIT_SIZE)
    return split, metadata.int_property(OPEN_FILE_COST_PROPERTY, DEFAULT_OPEN_FILE_COST)


# ---------------------------------------------------------------------------------------------
# writing


@dataclass
class _WriteSetup:
    """Picklable state of a write: where files go, how to commit them. Executor tasks use only
    ``job``; ``catalog`` (a ``CatalogRef``: no login) is opened by the commit on the driver's host."""

    identifier: str
    catalog: CatalogRef
    job: Any
    overwrite: bool
    overwrite_filter: str | None
    partition_overwrite: str
    branch: str
    snapshot_properties: dict[str, str] = field(default_factory=dict)
    query_id: str | None = None

    @classmethod
    def create(
        cls, opts: dict[str, str], catalog: CatalogRef, table: Any, schema: SparkStruct, overwrite: bool
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
            catalog=catalog.with_options(opts),
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

        table = catalog_from_properties(self.catalog.properties()).load_table(self.identifier)
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
