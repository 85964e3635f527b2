"""Planned reads kept between statements, so a repeated query does not plan and list files again.

Planning a read (manifests, pruning) and building its DataFrame (``spark.read.parquet`` of the
planned files: a file listing and several py4j round trips) cost tens of milliseconds, more than
Spark's own analysis of a short query. A statement that reads the same table state with the same
pushed filter gets the same files, so the DataFrame is kept and reused.

The key is exact: the table's metadata file (every commit, schema or property change writes a new
one), the time travel asked for, the pushed filter's ``repr`` (it spells literal types: ``1`` and
``1.0`` stay apart) and the session. A new snapshot or another filter plans afresh. The cache holds
the ``CAPACITY`` reads used last.

Each cached read is registered once as a global temporary view (in Spark's ``global_temp``
database, so it does not show among the user's tables); statements name that view, which spares
registering and dropping a view per statement (each is an analysis in Spark). Evicted reads drop
their view.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.lru import LruCache
from icefloe.spark.read import ReadPlan, dataframe_for_plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.table.table import Table

CAPACITY = 32
GLOBAL_TEMP_CONF = "spark.sql.globalTempDatabase"
_COUNTER = itertools.count()


@dataclasses.dataclass(frozen=True)
class PlannedRead:
    """A read plan, the DataFrame that executes it (the pushed filter only pruned files) and the
    global temporary view over that DataFrame (``database``, ``name``) statements name."""

    plan: ReadPlan
    frame: DataFrame
    database: str
    name: str


_READS: LruCache[tuple[Hashable, ...], tuple[SparkSession, PlannedRead]] = LruCache()
"""Bounded to ``CAPACITY`` here, not by the cache: an evicted read may still be held (``_evict``)."""
_HOLDERS: Counter[str] = Counter()  # view name -> statements holding the read
_EVICTED: dict[str, tuple[SparkSession, PlannedRead]] = {}  # evicted, still held
_LOCK = threading.Lock()


def planned_read(
    spark: SparkSession,
    table: Table,
    travel: Hashable,
    row_filter: Expression,
    plan: Callable[[], ReadPlan],
) -> PlannedRead:
    """The read of ``table`` at ``travel`` pruned by ``row_filter``: cached, else ``plan()``'s.

    The DataFrame reads every row of the planned files: Spark applies the query's whole condition
    to them (applying the pushed filter inside the read as well would only cost time). The caller
    holds the read until it calls ``release``.
    """
    key = (id(spark), table.metadata_location, travel, repr(row_filter))
    with _LOCK:
        hit = _cached(spark, key)
        if hit is not None:
            return hit
    planned = plan()
    frame = dataframe_for_plan(spark, dataclasses.replace(planned, row_filter=AlwaysTrue()))
    name = f"__icefloe_read_{next(_COUNTER)}_{uuid.uuid4().hex[:8]}"
    frame.createOrReplaceGlobalTempView(name)
    database = spark.conf.get(GLOBAL_TEMP_CONF) or "global_temp"
    read = PlannedRead(planned, frame, database, name)
    unheld: list[tuple[SparkSession, PlannedRead]] = []
    with _LOCK:
        hit = _cached(spark, key)
        if hit is None:
            _READS.put(key, (spark, read), refresh=False)
            _HOLDERS[name] += 1
            while len(_READS) > CAPACITY:
                unheld.extend(_evict(_READS.pop_oldest()[1]))
    if hit is not None:  # another thread planned the same read first
        _forget(spark, read)
        return hit
    for entry in unheld:
        _forget(*entry)
    return read


def release(read: PlannedRead) -> None:
    """The statement that named ``read`` has been analysed: an evicted read nobody holds drops its view."""
    with _LOCK:
        _HOLDERS[read.name] -= 1
        if _HOLDERS[read.name] > 0:
            return
        del _HOLDERS[read.name]
        gone = _EVICTED.pop(read.name, None)
    if gone is not None:
        _forget(*gone)


def held() -> int:
    """How many holds statements have on reads now (0 once every statement was analysed)."""
    with _LOCK:
        return sum(_HOLDERS.values())


def clear() -> None:
    """Forget every cached read (and drop the views nobody holds)."""
    with _LOCK:
        unheld = [e for entry in _READS.values() for e in _evict(entry)]
        _READS.clear()
    for entry in unheld:
        _forget(*entry)


def _cached(spark: SparkSession, key: tuple[Hashable, ...]) -> PlannedRead | None:
    """The cached read under ``key``, held for the caller (called with the lock held)."""
    hit = _READS.peek(key)
    if hit is None or hit[0] is not spark:
        return None
    _READS.get(key)  # now the most recently used
    _HOLDERS[hit[1].name] += 1
    return hit[1]


def _evict(entry: tuple[SparkSession, PlannedRead]) -> list[tuple[SparkSession, PlannedRead]]:
    """An entry leaving the cache (lock held): ``[entry]`` to forget now, none while it is held."""
    if _HOLDERS[entry[1].name] > 0:
        _EVICTED[entry[1].name] = entry
        return []
    return [entry]


def _forget(spark: SparkSession, read: PlannedRead) -> None:
    with contextlib.suppress(Exception):  # a stopped session took its views with it
        spark.catalog.dropGlobalTempView(read.name)
