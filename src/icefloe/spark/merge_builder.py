"""``merge(source_df, "db.t", on=...)``: the MERGE builder of the Python API, on Spark DataFrames.

::

    from icefloe.spark import merge
    merge(changes, "db.events", on="id").when_matched_delete("source.deleted").when_matched_update()
        .when_not_matched_insert().execute()

Conditions and values are Spark SQL text or Columns over ``target.*`` and ``source.*``. The
clauses are the engine-neutral ``MergeSpec`` (any number of each kind, in order, the first whose
condition holds applies, as ``Table.merge``); ``merge_plan`` turns them into Spark Columns,
executors find the rows and write the files, the driver commits one snapshot
(``row_operations.execute_merge``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icefloe.dml.change_builder import RowLevelResult
from icefloe.dml.merge_clauses import MergeSpecBuilder
from icefloe.spark.row_operations import execute_merge
from icefloe.txn.commit_options import DEFAULT_OPTIONS, CommitOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from icefloe.catalog.base import Catalog


class SparkMerge(MergeSpecBuilder):
    """Ordered MERGE clauses over a source DataFrame; ``execute()`` runs the Spark job."""

    def __init__(
        self,
        source: DataFrame,
        identifier: str | tuple[str, ...],
        on: str | Sequence[str],
        mode: str | None = None,
        options: CommitOptions | None = None,
        catalog: Catalog | dict[str, str] | None = None,
        case_sensitive: bool = True,
    ) -> None:
        super().__init__(on)
        self._source, self._identifier, self._mode = source, identifier, mode
        self._options, self._catalog, self._case_sensitive = (
            options or DEFAULT_OPTIONS,
            catalog,
            case_sensitive,
        )

    def execute(self) -> RowLevelResult:
        """Run the MERGE (one snapshot; none when nothing changes)."""
        return execute_merge(
            self._source,
            self._identifier,
            self.spec(),
            mode=self._mode,
            catalog=self._catalog,
            options=self._options,
            case_sensitive=self._case_sensitive,
        )


def merge(
    source: DataFrame,
    identifier: str | tuple[str, ...],
    on: str | Sequence[str],
    mode: str | None = None,
    options: CommitOptions | None = None,
    catalog: Catalog | dict[str, str] | None = None,
    case_sensitive: bool = True,
) -> SparkMerge:
    """Start a MERGE of ``source`` into the table (see the module docstring)."""
    return SparkMerge(source, identifier, on, mode, options, catalog, case_sensitive)
