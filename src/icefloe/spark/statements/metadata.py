"""Metadata tables (``db.t.snapshots``, ``db.t.files``, ...) as Spark DataFrames."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.scan.metadata_tables_all import any_metadata_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.table.table import Table


def metadata_frame(spark: SparkSession, table: Table, name: str, snapshot_id: int | None = None) -> DataFrame:
    """The rows of one metadata table of ``table`` (at ``snapshot_id`` where that applies)."""
    arrow = any_metadata_table(table.io, table.metadata, name, snapshot_id, table.metadata_location)
    return spark.createDataFrame(arrow)
