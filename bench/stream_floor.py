"""A floor for Python streaming sources: a source that only yields Arrow batches already in memory.

``spark.readStream.format("stream_floor")`` with options ``rows``, ``ddl`` (the Spark schema) and
``partitions`` emits ``rows`` rows of that schema in one micro-batch of ``partitions`` input
partitions. Each Python worker builds its batches once and then only hands them to Spark, so a
stream of it measures what any Python streaming source pays on its own: the runner and planner
processes Spark starts for the query, the Python worker round trip of each task and the JVM's
conversion of Arrow columns to rows. ``bench_changelog`` (a) runs it next to the icefloe source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

_CACHE_ATTRIBUTE = "_icefloe_bench_floor_batches"
"""Where a worker keeps its built batches (on a module that outlives the unpickled reader)."""


class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One micro-batch of prebuilt batches, split into ``partitions`` input partitions."""

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        self.schema = schema
        self.rows = int(options.get("rows", "1000000"))
        self.parts = int(options.get("partitions", str(os.cpu_count() or 1)))

    def initialOffset(self) -> dict[str, int]:
        """Before the only micro-batch."""
        return {"batch": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """After the only micro-batch."""
        return {"batch": 1}

    def prepareForTriggerAvailableNow(self) -> None:
        """Nothing to pin: there is only one micro-batch."""

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        """``partitions`` equal shares of the rows."""
        if start == end:
            return []
        share = self.rows // self.parts
        return [InputPartition(share + (self.rows % self.parts if p == 0 else 0)) for p in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The partition's rows from this worker's prebuilt batches."""
        yield from _prebuilt(self.schema, partition.value).to_batches(max_chunksize=65536)


def _prebuilt(schema: Any, rows: int) -> Any:
    """``rows`` rows on Spark's Arrow schema for ``schema``, built once per worker process."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.pandas.types import to_arrow_schema

    target = to_arrow_schema(schema, timezone="UTC")
    cache: dict[tuple[int, str], Any] = sys.modules["pyarrow"].__dict__.setdefault(_CACHE_ATTRIBUTE, {})
    key = (rows, str(target))
    if key not in cache:
        ids = pa.array(range(rows), pa.int64())
        columns = []
        for f in target:
            if pa.types.is_integer(f.type):
                columns.append(ids.cast(f.type))
            elif pa.types.is_string(f.type):
                keys = pc.cast(pc.divide(ids, 1000), pa.string())
                columns.append(pc.binary_join_element_wise("key-", keys, ""))
            elif pa.types.is_decimal(f.type):
                columns.append(pc.cast(pc.divide(ids.cast(pa.float64()), 100), f.type))
            else:
                columns.append(pc.multiply(ids.cast(pa.float64()), 0.25).cast(f.type))
        cache[key] = pa.Table.from_arrays(columns, schema=target)
    return cache[key]


class FloorSource(DataSource):
    """``format("stream_floor")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "stream_floor"

    def schema(self) -> str:
        """The ``ddl`` option."""
        return str(self.options.get("ddl", "id BIGINT"))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        """The reader of the only micro-batch."""
        return FloorReader(schema, dict(self.options))


def register(spark: Any) -> None:
    """Register the floor source on ``spark`` (pickled by value: workers need not import ``bench``)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(FloorSource)
