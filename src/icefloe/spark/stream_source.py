"""The streaming source: ``spark.readStream.format("icefloe").load("ns.t")``.

Built on pyspark's Python streaming data source API (``DataSourceStreamReader`` with admission
control and ``Trigger.AvailableNow``). Offsets and units are planned on the driver by
:class:`~icefloe.spark.stream_planner.StreamPlanner`. The data files of a micro-batch are packed
into a few input partitions (``stream_planner.group_units``), each read with ``read_task`` (deletes
applied) and handed to Spark as Arrow record batches; in changelog mode every unit (one snapshot's
changelog) is an input partition of its own. With icefloe's jar on the class path, streaming reads
that Spark's Parquet reader can serve run on the JVM instead (``icefloe.spark.jvm_stream``, same
planner and offsets); this reader keeps changelogs and the rest.

Options (besides the batch reader's ``columns`` / ``filter`` / ``branch``): ``starting-offsets``
(``earliest`` default, ``latest``), ``start-snapshot-id`` (exclusive), ``stream-from-timestamp``
(ms: snapshots committed at or after it), ``max-files-per-trigger``, ``max-records-per-trigger``,
``skip-delete-snapshots``, ``skip-overwrite-snapshots``, ``read-changelog``, and for packing files
into partitions ``min-partitions``, ``split-size``, ``file-open-cost``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import IntegerType, LongType, StringType, StructField
from pyspark.sql.types import StructType as SparkStruct

from icefloe.spark.arrow_bridge import spark_arrow_schema, to_spark_arrow
from icefloe.spark.stream_planner import StreamOptions, StreamPlanner, group_payload, group_units

CHANGE_FIELDS = [
    StructField("_change_type", StringType(), False),
    StructField("_change_ordinal", IntegerType(), False),
    StructField("_commit_snapshot_id", LongType(), False),
]


def stream_schema(table_schema: SparkStruct, options: StreamOptions) -> SparkStruct:
    """The stream's rows: the table's columns, plus the change columns in changelog mode."""
    if not options.changelog:
        return table_schema
    return SparkStruct([*table_schema.fields, *CHANGE_FIELDS])


class IcefloeStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of units between two offsets; restarts continue exactly from the checkpoint."""

    def __init__(self, setup: Any, opts: dict[str, str], load_table: Any) -> None:
        self.setup = setup
        self.options = StreamOptions.parse(opts)
        self.request = setup.request()
        self.fields = setup.fields()
        self.spark_schema = stream_schema(setup.spark_schema(), self.options)
        self.target = spark_arrow_schema(self.spark_schema)

        def load_metadata() -> tuple[Any, Any]:
            table = load_table()
            return table.io, table.metadata

        self.planner = StreamPlanner(load_metadata, self.options, self.request.table_schema, setup.row_filter)

    # ---- driver side ---------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts."""
        return self.planner.initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        """The admission limit of the options (files first, then records)."""
        if self.options.max_files is not None:
            return ReadMaxFiles(self.options.max_files)
        if self.options.max_records is not None:
            return ReadMaxRows(self.options.max_records)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The end of the next micro-batch (both option limits apply unless Spark asks for everything)."""
        return self.planner.latest_offset(start, limited=not isinstance(limit, ReadAllAvailable))

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: never read past the snapshot that is the head now."""
        self.planner.freeze_head()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The units between the offsets: files packed into partitions, or a changelog each."""
        units = self.planner.units_between(start, end)
        _, md = self.planner.load_metadata()
        if not self.options.changelog:
            groups = group_units(units, *self.options.packing(md.properties))
            return [InputPartition(group_payload(g)) for g in groups]
        return [InputPartition(pickle.dumps((u.snapshot_id, md))) for u in units]

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: offsets are snapshots, which the table keeps."""

    # ---- executor side -------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Read one partition's units as Arrow batches on Spark's schema."""
        if self.options.changelog:
            yield from self._read_changes(partition)
            return
        from icefloe.scan.reader import read_each_task

        tasks = [task for _, task in pickle.loads(partition.value)]
        for table in read_each_task(self.setup.io(), tasks, self.request):  # deletes shared within
            if table.num_rows:
                yield from to_spark_arrow(table, self.fields, self.target).to_batches(max_chunksize=65536)

    def _read_changes(self, partition: InputPartition) -> Iterator[Any]:
        from icefloe.scan.changelog import CHANGE_COLUMNS, ChangelogScan
        from icefloe.scan.incremental import SnapshotRange

        sid, md = pickle.loads(partition.value)
        snap = md.snapshot_by_id(sid)
        parent = md.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id is not None else None
        scan = ChangelogScan(
            self.setup.io(),
            md,
            SnapshotRange(parent, (snap,)),
            row_filter=self.setup.row_filter,
            selected_fields=self.setup.columns,
            schema=self.request.table_schema,
        )
        table = scan.to_arrow()
        if not table.num_rows:
            return
        data = to_spark_arrow(
            table.drop_columns(list(CHANGE_COLUMNS)),
            self.fields,
            spark_arrow_schema(SparkStruct(self.spark_schema.fields[: len(self.fields)])),
        )
        for name in CHANGE_COLUMNS:
            data = data.append_column(name, table.column(name))
        yield from data.cast(self.target).to_batches(max_chunksize=65536)
