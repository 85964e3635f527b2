"""Compaction on Spark: ``rewrite_data_files`` with the file groups rewritten by the executors.

The driver plans exactly as the Python version does (``maintenance.rewrite_data_files``: files
with deletes or off-target sizes, bin-packed per spec and partition; delete files only they
use), ships the groups to the executors (one Spark task per group), and commits one ``replace``
snapshot with what they wrote. Executors read each group with its deletes applied and row lineage
materialised and write files near the target size into the job's staging directory; files of
failed task attempts are deleted after the job, and everything when the job or commit fails.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.errors import CommitStateUnknown, nothing_committed
from icefloe.expressions.ast import Expression
from icefloe.maintenance.rewrite_data_files import (
    FileGroup,
    RewriteResult,
    commit_rewrite,
    plan_rewrite,
    write_group,
)
from icefloe.spark.context import resolve_catalog
from icefloe.spark.executor_jobs import JobStaging, executor_io, run_chunks
from icefloe.spec.content import DataFile
from icefloe.spec.snapshots import MAIN_BRANCH
from icefloe.spec.table_metadata import TableMetadata
from icefloe.txn.producers import branch_head

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog


@dataclass(frozen=True)
class RewriteJob:
    """What an executor needs to rewrite file groups: staged metadata, FileIO settings, target size."""

    metadata: TableMetadata
    io_properties: dict[str, str]
    target_file_size: int


def rewrite_groups(job: RewriteJob, groups: Sequence[FileGroup]) -> Iterator[list[DataFile]]:
    """Executor side: rewrite each group; one list of new data files per group."""
    io = executor_io(job.metadata, job.io_properties)
    for group in groups:
        yield write_group(io, job.metadata, group, job.target_file_size)


def rewrite_data_files(
    spark: SparkSession,
    identifier: str | tuple[str, ...],
    filter: Expression | str | None = None,
    target_file_size: int | None = None,
    *,
    min_input_files: int = 2,
    rewrite_all: bool = False,
    catalog: Catalog | dict[str, str] | None = None,
    branch: str = MAIN_BRANCH,
    snapshot_properties: dict[str, str] | None = None,
    case_sensitive: bool = True,
) -> RewriteResult:
    """Compact the files that may hold rows matching ``filter`` on the executors; one ``replace`` snapshot.

    Same selection and options as ``icefloe.maintenance.rewrite_data_files.rewrite_data_files``.
    """
    table = resolve_catalog(spark, catalog).load_table(identifier)
    md = table.metadata
    plan = plan_rewrite(
        table.io,
        md,
        branch_head(md, branch),
        filter,
        target_file_size,
        min_input_files=min_input_files,
        rewrite_all=rewrite_all,
        case_sensitive=case_sensitive,
    )
    if not plan.groups:
        return RewriteResult(0, 0, 0, 0, None)
    staging = JobStaging.create(table.io, md)
    job = RewriteJob(staging.metadata, dict(table.io.properties), plan.target_file_size)
    committing = False
    try:
        chunks = [[g] for g in plan.groups]
        written = run_chunks(spark, chunks, lambda groups: rewrite_groups(job, groups))
        added = [f for files in written for f in files]
        staging.tidy({f.file_path for f in added})
        committing = True
        return commit_rewrite(table, plan, added, branch, snapshot_properties)
    except CommitStateUnknown:
        raise  # the commit may have happened: keep every file
    except BaseException as exc:
        if not committing or nothing_committed(exc):  # else the swap may have happened
            staging.discard()
        raise
