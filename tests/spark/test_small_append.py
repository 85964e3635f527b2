"""The fixed cost of a small Spark append through each of ``write_table``'s routes: what Spark runs.

Spark's Parquet writer pays per file, whatever its size, so a small append into many partitions is
dominated by files: the clustered write used to run as one task writing every partition's file in
turn (adaptive execution kept shuffle partitions at 1 MB or more), and Hadoop's local file system
wrote a ``.crc`` file beside each data file that the write then deleted. Inputs Spark estimates as
small skip all of that on the Arrow route (``write_route``): one job of one task. These tests count
the jobs and tasks through the status tracker and the files the job left in its staging directory.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, write_table
from icefloe.spark import write as spark_write
from icefloe.spark.runtime import session_conf
from icefloe.spark.workers import require_icefloe_on_workers
from icefloe.spark.write_route import ARROW, NATIVE, SMALL_INPUT_BYTES_CONF
from tests.spark.helpers import data_files, df_rows, icefloe_rows

PARTITIONS = 40
ROWS = 4_000
MIN_PARTITION_SIZE = "spark.sql.adaptive.coalescePartitions.minPartitionSize"


def _jobs(spark: Any, group: str) -> list[list[tuple[int, int]]]:
    """Per job of the group (in order): ``(stage id, completed tasks)`` of each of its stages."""
    tracker = spark.sparkContext.statusTracker()
    out = []
    for job in sorted(tracker.getJobIdsForGroup(group)):
        stages = sorted(tracker.getJobInfo(job).stageIds)
        out.append([(s, tracker.getStageInfo(s).numCompletedTasks) for s in stages])
    return out


def _append(spark: Any, df: Any, table_name: str, route: str = NATIVE) -> list[list[tuple[int, int]]]:
    """``write_table`` by ``route`` in a job group of its own, with 64 shuffle partitions; its jobs
    and tasks."""
    require_icefloe_on_workers(spark)  # its probe job, once per context, is not the append's
    conf = {
        "spark.sql.shuffle.partitions": "64",
        SMALL_INPUT_BYTES_CONF: "0" if route == NATIVE else str(2**62),
    }
    spark.sparkContext.setJobGroup(table_name, "small append")
    try:
        with session_conf(spark, conf):
            write_table(df, table_name)
    finally:
        spark.sparkContext.setJobGroup("", "")
    return _jobs(spark, table_name)


@pytest.fixture
def staged_listing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file the write job left in its staging directory, before the write tidies it."""
    seen: list[str] = []
    tidy = spark_write.StagedFiles.tidy

    def record(self: spark_write.StagedFiles) -> None:
        seen.extend(self.io.list_prefix(self.staging))
        tidy(self)

    monkeypatch.setattr(spark_write.StagedFiles, "tidy", record)
    return seen


def test_a_small_partitioned_append_spreads_its_files_over_the_cores(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, staged_listing: list[str]
) -> None:
    create_table(spark, table_name, "id BIGINT NOT NULL, p INT NOT NULL, v DOUBLE", partitioned_by=["p"])
    df = spark.range(0, ROWS, 1, 2).select(
        "id", (F.col("id") % PARTITIONS).cast("int").alias("p"), (F.col("id") * 0.5).alias("v")
    )
    before = spark.conf.get(MIN_PARTITION_SIZE, None)
    jobs = _append(spark, df, table_name)

    # the clustering shuffle's map stage (one task per input partition), then the write job
    assert len(jobs) == 2, jobs
    assert [tasks for _, tasks in jobs[0]] == [2], jobs
    write_stage_tasks = jobs[1][-1][1]
    # one task per core (the session's default parallelism), not one task writing 40 files
    assert write_stage_tasks >= spark.sparkContext.defaultParallelism, jobs
    assert spark.conf.get(MIN_PARTITION_SIZE, None) == before  # the job's setting is undone

    table = catalog.load_table(table_name)
    files = [t.data_file for t in table.scan().plan_files()]
    # still clustered: each partition's rows in exactly one file
    assert sorted(f.partition for f in files) == [(p,) for p in range(PARTITIONS)]
    assert icefloe_rows(table) == df_rows(df)
    assert len(table.snapshots()) == 1
    # no checksum files were written beside the data files (only Spark's _SUCCESS marker)
    data = set(data_files(table))
    assert sorted(p.rsplit("/", 1)[1] for p in staged_listing if p not in data) == ["_SUCCESS"]


def test_a_small_unpartitioned_append_runs_one_job_without_a_shuffle(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, staged_listing: list[str]
) -> None:
    create_table(spark, table_name, "id BIGINT NOT NULL, v DOUBLE")
    df = spark.range(0, ROWS, 1, 2).select("id", (F.col("id") * 0.5).alias("v"))
    jobs = _append(spark, df, table_name)

    assert [[tasks for _, tasks in job] for job in jobs] == [[2]]
    table = catalog.load_table(table_name)
    assert len(data_files(table)) == 2
    assert icefloe_rows(table) == df_rows(df)
    assert sorted(p.rsplit("/", 1)[1] for p in staged_listing if p not in set(data_files(table))) == [
        "_SUCCESS"
    ]


def test_a_small_append_on_the_arrow_route_is_one_task_writing_a_file_per_partition(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, staged_listing: list[str]
) -> None:
    create_table(spark, table_name, "id BIGINT NOT NULL, p INT NOT NULL, v DOUBLE", partitioned_by=["p"])
    df = spark.range(0, ROWS, 1, 2).select(
        "id", (F.col("id") % PARTITIONS).cast("int").alias("p"), (F.col("id") * 0.5).alias("v")
    )
    # no shuffle and no second job: the one task reads both input partitions
    jobs = _append(spark, df, table_name, ARROW)
    assert [[tasks for _, tasks in job] for job in jobs] == [[1]]

    table = catalog.load_table(table_name)
    files = [t.data_file for t in table.scan().plan_files()]
    assert sorted(f.partition for f in files) == [(p,) for p in range(PARTITIONS)]
    assert sum(f.record_count for f in files) == ROWS
    assert icefloe_rows(table) == df_rows(df)
    assert len(table.snapshots()) == 1
    # the staging directory held the data files and nothing else
    assert sorted(staged_listing) == data_files(table)
