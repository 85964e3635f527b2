"""``merge(source_df, "db.t", on=...)``: the MERGE builder of the Python API, on Spark DataFrames.

::

    from icefloe.spark import merge
    merge(changes, "db.events", on="id").when_matched_delete("source.deleted").when_matched_update()
        .when_not_matched_insert().execute()

Conditions and values are Spark SQL text or Columns over ``target.*`` and ``source.*``. The
clauses are the engine-neutral ``MergeSpec``; executors find the rows and write the files, the
driver commits one snapshot (``row_operations.merge_into``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from icefloe.dml.change_builder import RowLevelResult
from icefloe.dml.merge_clauses import DELETE, UPDATE, MergeSpec, MergeSpecBuilder
from icefloe.errors import Unsupported, ValidationError
from icefloe.spark.row_operations import merge_into
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
        flags = spark_flags(self.spec())
        return merge_into(
            self._source,
            self._identifier,
            self.on,
            *flags,
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


def spark_flags(spec: MergeSpec) -> tuple[Any, Any, Any, Any]:
    """The clause shape the Spark engine runs: (matched update, matched delete, insert, by-source delete).

    It covers at most a conditional or unconditional matched DELETE followed by an unconditional
    matched UPDATE, one unconditional insert and one NOT MATCHED BY SOURCE DELETE. Other shapes
    (several conditional updates, conditional inserts, NOT MATCHED BY SOURCE UPDATE) run on the
    Arrow engine (``Table.merge``) and are refused here with the clause that does not fit.
    """
    if not (spec.matched or spec.not_matched or spec.not_matched_by_source):
        raise ValidationError("MERGE needs at least one clause (when_matched_update(), ...)")
    matched_update: Any = False
    matched_delete: Any = False
    for i, clause in enumerate(spec.matched):
        if clause.action == DELETE and i == 0:
            matched_delete = True if clause.condition is None else clause.condition
        elif clause.action == UPDATE and clause.condition is None and i == len(spec.matched) - 1:
            matched_update = True if clause.set is None else dict(clause.set)
        else:
            raise Unsupported(
                f"Spark MERGE: WHEN MATCHED clause {i + 1} ({clause.action}"
                f"{' with a condition' if clause.condition is not None else ''}) is not supported by the "
                "Spark engine yet: it runs a conditional DELETE then an unconditional UPDATE"
            )
    insert: Any = False
    if len(spec.not_matched) > 1 or (spec.not_matched and spec.not_matched[0].condition is not None):
        raise Unsupported(
            "Spark MERGE: conditional or several WHEN NOT MATCHED clauses are not supported yet"
        )
    if spec.not_matched:
        values = spec.not_matched[0].values
        insert = True if values is None else dict(values)
    by_source: Any = False
    if len(spec.not_matched_by_source) > 1 or any(c.action != DELETE for c in spec.not_matched_by_source):
        raise Unsupported(
            "Spark MERGE: only one WHEN NOT MATCHED BY SOURCE ... DELETE clause is supported yet"
        )
    if spec.not_matched_by_source:
        cond = spec.not_matched_by_source[0].condition
        by_source = True if cond is None else cond
    return matched_update, matched_delete, insert, by_source
