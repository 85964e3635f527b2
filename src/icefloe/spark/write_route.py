"""Which route ``write_table`` takes for a Spark-writable schema: small inputs go through Arrow.

Spark's Parquet writer wins at scale, but a small append pays its fixed costs: a shuffle that
clusters rows by partition, ~15-20 ms per file it opens, and the driver reading every footer back
for metrics. icefloe's own writer on one ``mapInArrow`` task writes one file per partition with its
metrics already known, so for a streaming micro-batch or a small ``INSERT`` it is the faster route
(``bench/bench_spark_small_append.py``).

The choice must not cost a Spark job, so it reads Spark's own estimate of the input's size: the
statistics of the optimized logical plan, which Spark computes without running anything (a local
relation knows its rows, a file scan its files' sizes, ``range`` its row count, a micro-batch of a
file stream its files). An estimate Spark does not know (rows from a Python RDD, a rate or Kafka
micro-batch) is ``Long.MAX_VALUE``, and that, like any estimate at or above the threshold, keeps
the native route; so does a join whose estimate multiplies its sides.

A session whose Python workers cannot import icefloe writes natively whatever the size
(``workers.workers_import_icefloe``): an append there needs no Python on the executors, as before.

The threshold is the Spark conf ``spark.icefloe.write.small-input-bytes``, else the table property
``write.spark.small-input-bytes``, else :data:`DEFAULT_SMALL_INPUT_BYTES`; ``0`` always writes
natively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.spark.runtime import get_conf
from icefloe.spec.properties import checked_int_property

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NATIVE = "native"
"""Spark's Parquet writer into a staging directory; the driver reads the footers."""
ARROW = "arrow"
"""icefloe's Parquet writer in ``mapInArrow`` tasks; the tasks send their DataFiles back."""

SMALL_INPUT_BYTES_PROPERTY = "write.spark.small-input-bytes"
SMALL_INPUT_BYTES_CONF = "spark.icefloe.write.small-input-bytes"
DEFAULT_SMALL_INPUT_BYTES = 8 * 1024 * 1024
"""Inputs Spark estimates below this go through Arrow.

On 2 cores the one Arrow task stayed ahead up to millions of rows (a partitioned append: 3-4x at
1,000 to 100,000 rows, 2x at 1,000,000, 1.3x at 4,000,000), but there the native route's two tasks
shared the cores with other jobs; with many executors its share of the rows shrinks and the one
task falls behind sooner. 8 MiB is ~280,000 rows of the benchmark's six columns as ``range``
estimates them (30 bytes a row), ~3.5x faster there, and one task writes it in well under a second.
A file scan's estimate is its compressed size, so the same bytes mean more rows there."""


def estimated_input_bytes(df: DataFrame) -> int | None:
    """Spark's size estimate of ``df``'s optimized plan, in bytes (None when Spark cannot say).

    Optimizing the plan runs no job; the write plans ``df`` again anyway, and Spark keeps the
    optimized plan of this query execution, so the cost is one optimizer pass on the driver.
    """
    try:
        # a Scala BigInt, which py4j hands over as a Python int
        size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # Spark Connect, or a plan whose statistics fail: no estimate
        return None
    return None if size >= 2**63 - 1 else size


def small_input_bytes(df: DataFrame, table_properties: Mapping[str, str]) -> int:
    """The threshold below which this write takes the Arrow route (session conf over table)."""
    override = get_conf(df.sparkSession, SMALL_INPUT_BYTES_CONF, "").strip()
    if override:
        try:
            return int(override)
        except ValueError:
            raise ValidationError(
                f"Spark conf {SMALL_INPUT_BYTES_CONF} must be an integer, got {override!r}"
            ) from None
    return checked_int_property(table_properties, SMALL_INPUT_BYTES_PROPERTY, DEFAULT_SMALL_INPUT_BYTES)


def choose_route(df: DataFrame, table_properties: Mapping[str, str]) -> str:
    """:data:`ARROW` when Spark estimates ``df`` below the threshold, else :data:`NATIVE`."""
    threshold = small_input_bytes(df, table_properties)
    if threshold <= 0:
        return NATIVE
    size = estimated_input_bytes(df)
    return ARROW if size is not None and size < threshold else NATIVE
