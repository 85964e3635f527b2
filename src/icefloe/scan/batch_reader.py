"""Stream planned scan tasks as Arrow record batches with bounded memory.

``to_arrow()`` concatenates every file's rows; a reader that only needs to look at each batch once
(an export, a Spark partition, a changelog consumer) should not hold the whole table. The stream
reads tasks in order with a small read-ahead (``prefetch`` files in flight on a thread pool), so
memory is bounded by ``prefetch + 1`` decoded files whatever the table's size, and yields each
file's rows in batches of at most ``batch_size`` rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

DEFAULT_BATCH_SIZE = 65_536
DEFAULT_PREFETCH = 2

T = TypeVar("T")


def read_ahead(items: Iterable[T], read: Callable[[T], pa.Table], prefetch: int) -> Iterator[pa.Table]:
    """``map(read, items)`` in order, with at most ``prefetch`` reads running ahead of the consumer."""
    if prefetch <= 0:
        yield from map(read, items)
        return
    source = iter(items)
    with ThreadPoolExecutor(max_workers=prefetch) as pool:
        pending: deque[Future[pa.Table]] = deque()
        try:
            for item in source:
                pending.append(pool.submit(read, item))
                if len(pending) > prefetch:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def batches_of(
    tables: Iterable[pa.Table], schema: pa.Schema, batch_size: int, limit: int | None = None
) -> Iterator[pa.RecordBatch]:
    """The rows of ``tables`` as batches of ``schema`` (at most ``batch_size`` rows), up to ``limit`` rows."""
    remaining = limit
    for table in tables:
        if remaining is not None and remaining <= 0:
            return
        if table.num_rows == 0:
            continue
        if remaining is not None and table.num_rows > remaining:
            table = table.slice(0, remaining)
        if remaining is not None:
            remaining -= table.num_rows
        if table.schema != schema:
            table = table.cast(schema)
        if not len(schema):
            yield pa.RecordBatch.from_struct_array(pa.array([{}] * table.num_rows, pa.struct([])))
            continue
        yield from (b for b in table.to_batches(max_chunksize=batch_size) if b.num_rows)


def record_batch_reader(
    schema: pa.Schema,
    items: Iterable[T],
    read: Callable[[T], pa.Table],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    prefetch: int = DEFAULT_PREFETCH,
    limit: int | None = None,
) -> pa.RecordBatchReader:
    """A ``RecordBatchReader`` over ``read(item)`` for each item, read lazily in order."""
    return pa.RecordBatchReader.from_batches(
        schema, batches_of(read_ahead(items, read, prefetch), schema, batch_size, limit)
    )
