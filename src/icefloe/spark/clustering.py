"""Cluster the rows of a row-level change by table partition before the executors write them.

Each Spark task of an update or merge writes one file per table partition it holds rows for
(split at ``write.target-file-size-bytes``). Spreading inserted rows by a hash of the whole row put
every table partition's inserts in every task: a 100k-row MERGE into 480 partitions wrote 40,610
files of ~2 rows. As Iceberg's Spark writes do with ``write.distribution-mode=hash``, rows are
instead distributed by their partition: an inserted row by the partition its new values fall in, a
row of an existing data file by that file's partition (all rows of one file stay in one task, which
rewrites or deletes from it). One table partition therefore lands in one task, whatever
``spark.sql.shuffle.partitions`` is; within a task rows are sorted by file, partition and position,
so a partition's new rows are written together.

How many tasks: a change touches few rows more often than many, and each task costs a Python
worker's setup whether it gets rows or not (a 426-row MERGE into a 224-file table ran 200 tasks,
27 of its 32 s). With adaptive query execution on (Spark's default) the repartition names no
number, so Spark coalesces neighbouring shuffle partitions by the bytes that actually arrive;
coalescing only merges partitions, so a table partition still lands in one task. Without it, the
count is fixed up front (at most one task per file to change, unless the cluster is wider).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from icefloe.dml.row_io import POS_COLUMN
from icefloe.spark.row_writer import FILE_COLUMN
from icefloe.spec.partitioning import PartitionField
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    FixedType,
    IcebergType,
    IntegerType,
    LongType,
    TimestampType,
    TimestamptzType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from icefloe.scan.tasks import FileScanTask
    from icefloe.spec.table_metadata import TableMetadata

CLUSTER_COLUMN = "__icefloe_cluster"
_NULL = "\u0000"
_SEP = "\u0001"
MAX_MAPPED_FILES = 20_000  # beyond this, rows of existing files cluster by file (a literal map per file)


def cluster_by_partition(
    frame: DataFrame, md: TableMetadata, tasks: Sequence[FileScanTask], partitions: int | None
) -> DataFrame:
    """``frame`` repartitioned so each table partition's rows meet in one Spark task: into
    ``partitions`` tasks, or (None) into ``spark.sql.shuffle.partitions`` that adaptive execution
    then coalesces by the size of what arrives."""
    from pyspark.sql import functions as F

    from icefloe.spark.partitioning import partition_key_columns

    spec, schema = md.spec(), md.schema()
    if spec.is_unpartitioned:
        new_key: Column = F.lit("")
    else:
        parts = [F.coalesce(c, F.lit(_NULL)) for c in partition_key_columns(schema, spec)]
        new_key = F.concat_ws(_SEP, *parts)
    file_key = _file_keys(md, tasks)
    if file_key is None:
        key = F.coalesce(F.col(FILE_COLUMN), new_key)
    else:
        key = F.when(F.col(FILE_COLUMN).isNull(), new_key).otherwise(
            F.coalesce(file_key[F.col(FILE_COLUMN)], F.col(FILE_COLUMN))
        )
    keyed = frame.withColumn(CLUSTER_COLUMN, key)
    if partitions is None:  # adaptive execution coalesces what the rows leave (merges, never splits)
        spread = keyed.repartition(F.col(CLUSTER_COLUMN))
    else:
        spread = keyed.repartition(max(1, partitions), F.col(CLUSTER_COLUMN))
    return spread.sortWithinPartitions(FILE_COLUMN, CLUSTER_COLUMN, POS_COLUMN).drop(CLUSTER_COLUMN)


def _file_keys(md: TableMetadata, tasks: Sequence[FileScanTask]) -> Any:
    """A literal map ``file path -> partition key`` (as the Spark key column spells it), or None."""
    from pyspark.sql import functions as F

    if not tasks or len(tasks) > MAX_MAPPED_FILES:
        return None
    spec, schema = md.spec(), md.schema()
    pairs: list[Any] = []
    for task in tasks:
        f = task.data_file
        if f.spec_id != spec.spec_id:
            continue  # an older spec: the file's own path keeps its rows together
        if spec.is_unpartitioned:
            text = ""
        else:
            texts = [
                _encode(value, pf.transform.result_type(schema.find_type(pf.source_id)), pf)
                for value, pf in zip(f.partition, spec.fields, strict=True)
            ]
            text = _SEP.join(_NULL if t is None else t for t in texts)
        pairs += [F.lit(task.file_path), F.lit(text)]
    return F.create_map(*pairs) if pairs else None


def _encode(value: Any, result_type: IcebergType, pf: PartitionField) -> str | None:
    """``partitioning.encode_value``'s text for an internal partition value (None for null).

    A value whose text differs from Spark's (e.g. a float rendered otherwise) only costs clustering:
    its file's rows still stay together, in another task than the partition's inserts."""
    from icefloe.spec.transforms import VoidTransform

    if value is None or isinstance(pf.transform, VoidTransform):
        return None
    if isinstance(result_type, BooleanType):
        return "v" + ("true" if value else "false")
    if isinstance(result_type, IntegerType | LongType | DateType | TimestampType | TimestamptzType):
        return f"v{int(value)}"
    if isinstance(result_type, BinaryType | FixedType):
        return "v" + bytes(value).hex().upper()
    return f"v{value}"
