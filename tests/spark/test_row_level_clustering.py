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
