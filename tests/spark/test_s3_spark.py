"""Spark reads and writes tables in an ``s3://`` warehouse on the test S3 server.

Hadoop's S3A connector is not available here, so object-store files go through icefloe's reader and
writer inside Spark tasks (executors get a FileIO from the table's ``s3.*`` properties).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.spark.read import plan_read, read_table
from icefloe.spark.write import commit_staged, stage_dataframe
from tests.support.s3server import S3Server

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("category", pa.string())])


@pytest.fixture
def s3_catalog(tmp_path: Path, s3: S3Server, s3_warehouse: str) -> Iterator[SqlCatalog]:
    cat = SqlCatalog(
        "s3spark", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=s3_warehouse, **s3.properties
    )
    cat.create_namespace("db")
    try:
        yield cat
    finally:
        cat.close()


def test_spark_write_to_object_storage_goes_through_executor_file_io(spark, s3_catalog: SqlCatalog) -> None:  # type: ignore[no-untyped-def]
    table = s3_catalog.create_table("db.w", SCHEMA, properties={"format-version": "3"})
    df = spark.range(0, 200, 1, 4).selectExpr(
        "id", "CASE WHEN id % 2 = 0 THEN 'even' ELSE 'odd' END AS category"
    )
    staged = stage_dataframe(df, table)
    assert staged.route == "arrow"  # no S3A: executors write through icefloe's FileIO
    snap = commit_staged(table, staged, "append")
    assert snap is not None and snap.summary["added-records"] == "200"
    table = s3_catalog.load_table("db.w")
    data = table.scan().to_arrow().sort_by("id")
    assert data["id"].to_pylist() == list(range(200))
    assert data["category"].to_pylist() == ["even" if i % 2 == 0 else "odd" for i in range(200)]
    files = table.inspect.data_files()["file_path"].to_pylist()
    assert files and all(f.startswith(table.location() + "/data/") for f in files)


def test_spark_read_of_object_storage_uses_icefloe_reader_in_tasks(spark, s3_catalog: SqlCatalog) -> None:  # type: ignore[no-untyped-def]
    table = s3_catalog.create_table("db.r", SCHEMA, properties={"format-version": "3"})
    table.append(pa.table({"id": list(range(10)), "category": ["a"] * 5 + ["b"] * 5}, schema=SCHEMA))
    table.append(pa.table({"id": [10, 11], "category": ["c", "c"]}, schema=SCHEMA))
    table.delete("id = 3", mode="merge-on-read")

    plan = plan_read(s3_catalog.load_table("db.r"))
    assert plan.native == [] and len(plan.python) == 2  # no S3A: every file through icefloe's reader

    rows = sorted(tuple(r) for r in read_table(spark, "db.r", catalog=s3_catalog).collect())
    expected = [(i, "a" if i < 5 else "b") for i in range(10) if i != 3] + [(10, "c"), (11, "c")]
    assert rows == expected
    filtered = read_table(spark, "db.r", filter="category = 'c'", columns=["id"], catalog=s3_catalog)
    assert sorted(r.id for r in filtered.collect()) == [10, 11]
