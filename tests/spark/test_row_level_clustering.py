"""Row-level writes cluster rows by table partition: a MERGE into a table of many partitions writes
about one file per partition it touches, whatever ``spark.sql.shuffle.partitions`` is (issue 13,
item 10c: 50k updates + 50k inserts into 480 partitions used to write 40,610 files)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, merge_into, read_table, write_table
from tests.spark.conftest import CI

PARTITIONS = 120 if CI else 480
FILES = 40  # the small merge's table: one file per partition
ROWS_PER_PARTITION = 10


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_merge_into_many_partitions_writes_a_file_per_partition(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, mode: str
) -> None:
    create_table(
        spark,
        table_name,
        "id BIGINT NOT NULL, p INT NOT NULL, v STRING",
        partitioned_by=["p"],
        properties={"format-version": "2"},
    )
    base_rows = PARTITIONS * ROWS_PER_PARTITION
    base = spark.range(0, base_rows, 1, 4).select(
        "id", (F.col("id") % PARTITIONS).cast("int").alias("p"), F.lit("base").alias("v")
    )
    write_table(base, table_name)
    before = {t.data_file.file_path for t in catalog.load_table(table_name).scan().plan_files()}
    assert len(before) == PARTITIONS  # the native write clusters by partition too

    # half the source updates existing ids (every other one), half inserts new ids: every partition
    updates = spark.range(0, base_rows, 2, 4).select("id", (F.col("id") % PARTITIONS).cast("int").alias("p"))
    inserts = spark.range(base_rows, base_rows + base_rows // 2, 1, 4).select(
        "id", (F.col("id") % PARTITIONS).cast("int").alias("p")
    )
    source = updates.unionByName(inserts).withColumn("v", F.lit("merged"))
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "64")  # more tasks than the fixture's 4
    try:
        result = merge_into(source, table_name, "id", mode=mode)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)

    assert (result.updated_rows, result.inserted_rows) == (base_rows // 2, base_rows // 2)
    table = catalog.load_table(table_name)
    data_files = [t.data_file for t in table.scan().plan_files()]
    added = [f for f in data_files if f.file_path not in before]
    touched = {f.partition for f in added}
    assert len(touched) == PARTITIONS
    assert len(added) <= 2 * len(touched), (len(added), len(touched))
    assert result.data_files_added == len(added)

    rows = read_table(spark, table_name).groupBy("v").count().collect()
    assert {r["v"]: r["count"] for r in rows} == {"base": base_rows // 2, "merged": base_rows}
    assert read_table(spark, table_name).select("id").distinct().count() == base_rows + base_rows // 2


def _stage_tasks(spark, group: str) -> list[int]:  # type: ignore[no-untyped-def]
    tracker = spark.sparkContext.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    return [tracker.getStageInfo(s).numTasks for s in sorted(set(stages)) if tracker.getStageInfo(s)]


@pytest.mark.parametrize("adaptive", [True, False])
def test_a_small_merge_runs_as_few_tasks_as_its_rows_need(  # type: ignore[no-untyped-def]
    spark, catalog: Catalog, table_name: str, adaptive: bool
) -> None:
    """Each task costs a Python worker's setup: a 2-row MERGE into a 40-file table with 64 shuffle
    partitions used to run 40 tasks to write 2 rows; adaptive execution now coalesces them."""
    create_table(spark, table_name, "id BIGINT NOT NULL, p INT NOT NULL, v STRING", partitioned_by=["p"])
    write_table(
        spark.range(0, 10 * FILES, 1, 4).select(
            "id", (F.col("id") % FILES).cast("int").alias("p"), F.lit("base").alias("v")
        ),
        table_name,
    )
    source = spark.createDataFrame([(3, 3, "merged"), (1000, 0, "new")], "id BIGINT, p INT, v STRING")
    saved = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    spark.conf.set("spark.sql.shuffle.partitions", "64")
    spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
    spark.sparkContext.setJobGroup(table_name, "merge")
    try:
        result = merge_into(source, table_name, "id", mode="merge-on-read")
    finally:
        spark.sparkContext.setJobGroup("", "")
        for k, v in saved.items():
            spark.conf.set(k, v)
    assert (result.updated_rows, result.inserted_rows) == (1, 1)
    tasks = _stage_tasks(spark, table_name)
    if adaptive:  # the two changed rows arrive in one coalesced task, not one task per file
        assert max(tasks) < FILES, tasks
    else:  # the count fixed up front: one task per file the change may touch
        assert FILES in tasks, tasks
    rows = read_table(spark, table_name).where("v != 'base'").collect()
    assert sorted((r["id"], r["p"], r["v"]) for r in rows) == [(3, 3, "merged"), (1000, 0, "new")]
