"""The Python half of icefloe's JVM streaming source: planning for ``icefloe.stream`` on the JVM.

With icefloe's jar on the session's classpath (``session_setup.session()`` adds it when it was
built, see ``scripts/build_jar.py``), ``spark.readStream.format("icefloe")`` resolves to the JVM
class ``icefloe.DefaultSource``. It is the Python data source for everything but streaming reads;
a streaming read asks the factory registered here (through py4j's callback server, on the driver)
for a :class:`JvmStreamPlanning`. That object plans exactly as the Python source does
(:class:`~icefloe.spark.stream_planner.StreamPlanner`: same offsets, options, admission control
and errors, so checkpoints of either source are readable by the other) and hands the JVM the
Parquet files of each micro-batch, which Spark's vectorized Parquet reader reads by field id. Files
with position deletes or deletion vectors go with their deleted positions, which the JVM reader
drops by Parquet row index.

A read stays on the Python source (the factory returns ``None``) in changelog mode, with the
``stream-reader`` option set to ``python``, and when Spark's reader cannot return the rows as
icefloe would: a ``filter`` option (rows must be filtered, not only files), metadata columns,
types or column defaults Spark's reader does not map, tables with a name mapping, storage Spark
cannot reach, or tables whose current snapshot has equality deletes. A micro-batch that meets a
file the JVM reader cannot read (an equality delete, a v4 column file, an ORC or Avro data file:
possible only when a stream starts from a snapshot whose history was expired) fails naming the
file and the option that streams through Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from icefloe.errors import ValidationError
from icefloe.expressions.ast import AlwaysTrue
from icefloe.formats.parquet.data_files import NAME_MAPPING_PROPERTY
from icefloe.spark.jvm_catalog import register_follower
from icefloe.spark.read import has_defaults
from icefloe.spark.runtime import spark_location
from icefloe.spark.schema import native_readable, to_spark_schema
from icefloe.spark.storage import spark_native_storage
from icefloe.spark.stream_planner import StreamOptions, StreamPlanner, Unit, group_units
from icefloe.spec.content import FileContent

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.datasource import DataSource

    from icefloe.spark.worker_catalog import CatalogRef

JAR = Path(__file__).resolve().parent / "_jars" / "icefloe.jar"
"""Where ``scripts/build_jar.py`` puts the jar."""
READER_OPTION = "stream-reader"
"""``native`` (the default when the jar is loaded) or ``python``: which source reads the stream."""
NATIVE_STREAM = "IcefloeNativeStream"
"""How a query's progress names the JVM stream (``sources[].description``)."""


def jar_path() -> Path | None:
    """The built jar, or None when it was not built (no JDK when the environment was made)."""
    return JAR if JAR.is_file() else None


def classpath_settings(settings: dict[str, str]) -> dict[str, str]:
    """``spark.jars`` and ``spark.driver.extraClassPath`` with the jar added (unchanged without it).

    The driver class path puts the jar beside Spark's own classes, so the data source lookup and
    py4j see one copy of its classes; ``spark.jars`` ships it to executors of a cluster.
    """
    jar = jar_path()
    if jar is None:
        return {}
    out = {}
    for key, sep in (("spark.jars", ","), ("spark.driver.extraClassPath", ":")):
        current = [p for p in settings.get(key, "").split(sep) if p]
        if str(jar) not in current:
            out[key] = sep.join([*current, str(jar)])
    return out


def loaded(spark: SparkSession) -> bool:
    """True when icefloe's JVM classes are on the session's class path."""
    context: Any = spark.sparkContext
    try:
        context._jvm.icefloe.stream.StreamPlanners.registered()
    except Exception:  # py4j gives a JavaPackage for a class it cannot find: not callable
        return False
    return True


def register(spark: SparkSession, source: type[DataSource], catalog: CatalogRef) -> None:
    """Register the Python data source beside ``icefloe.DefaultSource``, the planning factory and
    the catalog follower (``jvm_catalog``).

    ``spark.dataSource.register`` refuses a name that a JVM class already answers to
    (DATA_SOURCE_ALREADY_EXISTS), and ``icefloe.DefaultSource`` does: it *is* that Python source
    for everything but streaming reads. So the Python class is registered with the session's
    data source manager directly, as ``register`` would after its check.
    """
    from pyspark.java_gateway import ensure_callback_server_started
    from pyspark.sql.udf import _wrap_function

    context: Any = spark.sparkContext
    jvm = context._jvm
    python_source = getattr(
        jvm, "org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource"
    )(_wrap_function(context, source))
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    manager.registerDataSource(source.name(), python_source)
    ensure_callback_server_started(context._gateway)
    jvm.icefloe.stream.StreamPlanners.register(PlanningFactory(catalog))
    register_follower(spark)


class PlanningFactory:
    """Creates the planning of each streaming read the JVM source is asked for (py4j callback)."""

    def __init__(self, catalog: CatalogRef) -> None:
        self.catalog = catalog

    def create(self, options_json: str) -> JvmStreamPlanning | None:
        """The planning of a read with these options, or None: stream through Python instead."""
        from icefloe.spark.datasource import load_read_setup

        opts: dict[str, str] = json.loads(options_json)
        if (opts.get(READER_OPTION) or "native").strip().lower() == "python":
            return None
        options = StreamOptions.parse(opts)
        if options.changelog:
            return None
        setup, table = load_read_setup(opts, self.catalog)
        request = setup.request()
        projected = request.projected
        head = table.metadata.snapshot_for_ref(options.branch)
        readable = (
            not request.metadata_columns
            and isinstance(setup.row_filter, AlwaysTrue)
            and native_readable(projected.as_struct)
            and not has_defaults(projected)
            and NAME_MAPPING_PROPERTY not in table.metadata.properties
            and spark_native_storage(table.metadata.location)
            and int((head.summary if head is not None else {}).get("total-equality-deletes", 0)) == 0
        )
        if not readable:
            return None

        def load_metadata() -> tuple[Any, Any]:
            fresh = setup.load_table()
            return fresh.io, fresh.metadata

        planner = StreamPlanner(load_metadata, options, request.table_schema, setup.row_filter)
        return JvmStreamPlanning(planner, json.dumps(to_spark_schema(projected).jsonValue()))

    class Java:
        implements: ClassVar[list[str]] = ["icefloe.stream.StreamPlanningFactory"]


class JvmStreamPlanning:
    """:class:`StreamPlanner` behind the JVM interface ``icefloe.stream.StreamPlanning`` (JSON)."""

    def __init__(self, planner: StreamPlanner, file_schema_json: str) -> None:
        self.planner = planner
        self.file_schema_json = file_schema_json

    def initialOffset(self) -> str:
        """Where a new query starts."""
        return json.dumps(self.planner.initial_offset())

    def readLimits(self) -> str:
        """The options' admission limits."""
        opts = self.planner.options
        return json.dumps({"max_files": opts.max_files, "max_records": opts.max_records})

    def latestOffset(self, start: str, limited: bool) -> str:
        """The end of the next micro-batch."""
        return json.dumps(self.planner.latest_offset(json.loads(start), limited=limited))

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: never read past the snapshot that is the head now."""
        self.planner.freeze_head()

    def files(self, start: str, end: str) -> str:
        """The files between two offsets, packed into input partitions, with deleted positions."""
        units = self.planner.units_between(json.loads(start), json.loads(end))
        io, md = self.planner.load_metadata()
        groups = group_units(units, *self.planner.options.packing(md.properties))
        return json.dumps({"partitions": [[_file_of(io, u) for u in group] for group in groups]})

    def fileSchema(self) -> str:
        """The Spark schema the files are read with (field ids in the metadata)."""
        return self.file_schema_json

    class Java:
        implements: ClassVar[list[str]] = ["icefloe.stream.StreamPlanning"]


def _file_of(io: Any, unit: Unit) -> dict[str, Any]:
    from icefloe.scan.reader import deleted_positions

    task = unit.task
    assert task is not None, "file units carry their scan task"
    data = task.data_file
    unreadable = (
        data.file_format.lower() != "parquet"
        or data.column_files
        or any(d.delete_file.content == FileContent.EQUALITY_DELETES for d in task.deletes)
    )
    if unreadable:
        raise ValidationError(
            f"the JVM streaming reader cannot read {task.file_path} (a {data.file_format} file with "
            "equality deletes or column files): set .option('stream-reader', 'python')"
        )
    deleted = deleted_positions(io, task, task.deletes) if task.deletes else ()
    return {
        "path": spark_location(task.file_path),
        "length": data.file_size_in_bytes,
        "deleted": [int(p) for p in deleted],
    }
