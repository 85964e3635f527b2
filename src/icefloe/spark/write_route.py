"""Which route ``write_table`` takes for a Spark-writable schema: small inputs go through Arrow.

Spark's Parquet writer wins at scale, but a small append pays its fixed costs: a shuffle that
clusters rows by partition, ~15-20 ms per file it opens, and the driver reading every footer back
for metrics. icefloe's own writer on one ``mapInArrow`` task writes one file per partition with its
metrics already known, so for a small append whose rows Spark can count (``INSERT ... VALUES``, a
``VALUES`` relation, ``spark.range``) it is the faster route (``bench/bench_spark_small_append.py``).
(``createDataFrame`` of a Python list is an RDD to Spark's plan in PySpark 4.3: no estimate.)

The choice must not cost a Spark job, so it reads what Spark knows of the input without running
anything: the optimized logical plan, its node classes and its size estimate. The estimate alone
cannot be trusted: a file scan's is the *compressed* size of its files (a few MB of repetitive
Parquet can hold a hundred million rows), and without cost-based optimization a ``Generate``
(``explode``), an ``Expand``, a join or a Python UDTF keeps the estimate of its input however many
rows it makes. One task writing such an input would be orders of magnitude slower than the native
route on a cluster (``bench/bench_spark_write_route.py``). So the Arrow route is taken only when the
plan *bounds* its size (:func:`untrusted_nodes` is empty): every leaf holds rows whose count Spark
knows exactly (:data:`COUNTED_LEAVES`) and every operator above them makes at most as many rows as
its estimate says (:data:`BOUNDED_OPERATORS`), and then only when the estimate is below the
threshold. Anything else, including an operator this list does not name, writes natively: the
native route is always correct and scales, the Arrow route only wins for small inputs.

A session whose Python workers cannot import icefloe writes natively whatever the size
(``workers.workers_import_icefloe``): an append there needs no Python on the executors, as before.

The threshold is the Spark conf ``spark.icefloe.write.small-input-bytes``, else the table property
``write.spark.small-input-bytes``, else :data:`DEFAULT_SMALL_INPUT_BYTES`; ``0`` always writes
natively.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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
Only plans that bound their size are compared with it (:func:`untrusted_nodes`)."""

COUNTED_LEAVES = frozenset({"LocalRelation", "Range", "OneRowRelation"})
"""Leaves whose rows Spark counts exactly: ``VALUES`` rows, ``spark.range``, ``SELECT 1``.

Not here: file scans (``LogicalRelation``: the compressed size of the files), RDDs (no estimate),
data source relations, and cached relations (``InMemoryRelation``: before the cache is filled its
estimate is the cached plan's, after it the size of its compressed column buffers, which
run-length and dictionary encoding shrink as Parquet does)."""

BOUNDED_OPERATORS = frozenset(
    {
        "Project",
        "Filter",
        "Sample",
        "Sort",
        "GlobalLimit",
        "LocalLimit",
        "Offset",
        "Tail",
        "Union",
        "Aggregate",
        "Distinct",
        "Deduplicate",
        "Window",
        "Repartition",
        "RepartitionByExpression",
        "RebalancePartitions",
        "SubqueryAlias",
        "ResolvedHint",
        "BatchEvalPython",
        "ArrowEvalPython",
    }
)
"""Operators that make at most as many rows as Spark estimates from their children: one row per
input row or fewer (a scalar Python UDF is one row per row), a union the sum of its children, a
sample its fraction of them. Not here: ``Generate``, ``Expand``, joins, Python UDTFs and
``mapInPandas`` / ``mapInArrow`` (any number of rows per input row)."""


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


def untrusted_nodes(df: DataFrame) -> list[str]:
    """The nodes of ``df``'s optimized plan (class names, top first, left to right) that keep its
    size estimate from bounding it: leaves not in :data:`COUNTED_LEAVES`, operators not in
    :data:`BOUNDED_OPERATORS`. Empty when the estimate is a bound."""
    return list(_untrusted_nodes(df))


def _untrusted_nodes(df: DataFrame) -> Iterator[str]:
    """:func:`untrusted_nodes`, lazily: the route stops at the first.

    The walk asks py4j for each node's class and children (a few calls a node, ~1 ms for a
    small plan). ``TreeNode.toJSON`` would be one call but renders every expression, and the
    optimizer folds ``sequence(1, n)`` into a literal array of ``n`` values: ~100 ms at n = 2M.
    """
    try:
        pending = [df._jdf.queryExecution().optimizedPlan()]
        while pending:
            node = pending.pop()
            children = node.children()
            count = int(children.size())
            name = str(node.getClass().getSimpleName())
            if name not in (BOUNDED_OPERATORS if count else COUNTED_LEAVES):
                yield name
            pending.extend(children.apply(i) for i in reversed(range(count)))
    except Exception:  # Spark Connect, or a plan py4j cannot walk: nothing is known
        yield "<unknown plan>"


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
    """:data:`ARROW` when ``df``'s plan bounds its size and Spark estimates it below the threshold,
    else :data:`NATIVE`."""
    threshold = small_input_bytes(df, table_properties)
    if threshold <= 0:
        return NATIVE
    size = estimated_input_bytes(df)
    if size is None or size >= threshold:
        return NATIVE
    return NATIVE if next(_untrusted_nodes(df), None) is not None else ARROW
