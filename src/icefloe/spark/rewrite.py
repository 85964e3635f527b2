"""Compaction on Spark: ``rewrite_data_files`` with the file groups rewritten by the executors.

The flow is the Python version's (``maintenance.rewrite_data_files.compact``: plan files with
deletes or off-target sizes, bin-packed per spec and partition, delete files only they use; one
``replace`` snapshot): only the writing differs, the groups go to the executors (one Spark task
per group). Executors read each group with its deletes applied and row lineage
materialised and write files near the target size into the job's staging directory; files of
failed task attempts are deleted after the job, and everything when the job or commit fails.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.expressions.ast import Expression
from icefloe.maintenance.rewrite_data_files import (
    FileGroup,
    RewritePlan,
    RewriteRequest,
    RewriteResult,
    compact,
    write_group,
)
from icefloe.maintenance.sorting import RowOrder
from icefloe.spark.executor_jobs import JobStaging, run_chunks
from icefloe.spark.runtime import executor_io, resolve_catalog
from icefloe.spec.content import DataFile
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.commit_options import CommitOptions, resolve_options
from icefloe.txn.handle import TableHandle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog


@dataclass(frozen=True)
class RewriteJob:
    """What an executor needs to rewrite file groups: staged metadata, FileIO settings, target size."""

    metadata: TableMetadata
    io_properties: dict[str, str]
    target_file_size: int
    sort_order: RowOrder | None = None


def rewrite_groups(job: RewriteJob, groups: Sequence[FileGroup]) -> Iterator[list[DataFile]]:
    """Executor side: rewrite each group; one list of new data files per group."""
    io = executor_io(job.io_properties, job.metadata.location)
    for group in groups:
        yield write_group(io, job.metadata, group, job.target_file_size, job.sort_order)


class ExecutorGroupWriter:
    """Rewrites the groups on Spark's executors (one task per group) into a job staging directory."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._staging: JobStaging | None = None

    def write(self, table: TableHandle, plan: RewritePlan) -> list[DataFile]:
        """Ship the groups to the executors; files of failed task attempts are deleted after the job."""
        self._staging = JobStaging.create(table.io, table.metadata)
        job = RewriteJob(
            self._staging.metadata, dict(table.io.properties), plan.target_file_size, plan.sort_order
        )
        try:
            chunks = [[g] for g in plan.groups]
            written = run_chunks(self._spark, chunks, lambda groups: rewrite_groups(job, groups))
            added = [f for files in written for f in files]
            self._staging.tidy({f.file_path for f in added})
        except BaseException:
            self.discard()
            raise
        return added

    def discard(self) -> None:
        """Delete everything the job staged."""
        if self._staging is not None:
            self._staging.discard()


def rewrite_data_files(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    filter: Expression | str | None = None,
    target_file_size: int | None = None,
    *,
    min_input_files: int = 2,
    rewrite_all: bool = False,
    catalog: Catalog | dict[str, str] | None = None,
    options: CommitOptions | None = None,
    case_sensitive: bool = True,
    branch: str | None = None,
    snapshot_properties: dict[str, str] | None = None,
    sort_order: RowOrder | None = None,
) -> RewriteResult:
    """Compact the files that may hold rows matching ``filter`` on the executors; one ``replace`` snapshot.

    ``sort_order`` sorts the rows of each rewritten group (the ``sort`` strategy).

    Same selection and options as ``icefloe.maintenance.rewrite_data_files.rewrite_data_files``:
    the planning and the commit are that module's ``compact``; only the writing differs.
    ``branch=`` / ``snapshot_properties=`` are deprecated: pass ``options=CommitOptions(...)``.
    """
    opts = resolve_options(options, branch, snapshot_properties)
    table = resolve_catalog(spark, catalog).load_table(identifier)
    request = RewriteRequest(
        filter,
        target_file_size,
        min_input_files,
        rewrite_all,
        case_sensitive=case_sensitive,
        sort_order=sort_order,
    )
    return compact(table, request.committing_with(opts), ExecutorGroupWriter(spark))
