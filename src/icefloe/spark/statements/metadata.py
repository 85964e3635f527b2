"""Metadata tables (``db.t.snapshots``, ``db.t.files``, ``db.t.position_deletes`` ...) and the
changelog table ``db.t.changes`` as Spark DataFrames."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.scan.metadata_tables_all import any_metadata_table
from icefloe.spark.statements.errors import UnsupportedStatement

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.spark.statements.names import SqlContext, TableRef
    from icefloe.table.table import Table

CHANGES = "changes"


def metadata_frame(spark: SparkSession, table: Table, name: str, snapshot_id: int | None = None) -> DataFrame:
    """The rows of one metadata table of ``table`` (at ``snapshot_id`` where that applies)."""
    arrow = any_metadata_table(table.io, table.metadata, name, snapshot_id, table.metadata_location)
    return spark.createDataFrame(arrow)


def changes_frame(ctx: SqlContext, ref: TableRef, time_travel: bool) -> DataFrame:
    """Iceberg's ``changes`` table: every row inserted or deleted by each snapshot of the current
    snapshot's history (``_change_type`` INSERT / DELETE, ``_change_ordinal``, ``_commit_snapshot_id``).

    As in Iceberg, updates are not paired (``create_changelog_view`` computes them) and ``AS OF``
    is refused; ``CALL system.create_changelog_view`` takes a snapshot or time range.
    """
    from icefloe.spark.changes import read_changes

    if time_travel:
        raise UnsupportedStatement(
            f"AS OF on the changelog table {ref.name}.changes",
            "AS OF clause is not supported for changelogs (as in Iceberg); "
            "CALL system.create_changelog_view takes a range",
        )
    return read_changes(ctx.spark, ref.identifier, catalog=ctx.catalog, compute_updates=False)
