"""The main job (``icefloe.cli.spark_pipeline``) end to end at a small size on the shared session.

The pipeline checks its own row-level results against counts Spark computes independently
(merge updates/inserts, deleted rows, compaction keeps the row count, the streaming stage's bronze,
silver and changelog counts) and exits on a mismatch;
this test also checks the table it leaves behind through PyIceberg.
"""

from __future__ import annotations

from typing import Any

from icefloe.catalog.base import Catalog
from icefloe.cli.spark_pipeline import IDENT, run
from tests.support.interop import read_with_pyiceberg


def test_main_job_small(spark: Any, catalog: Catalog) -> None:
    report = dict(run(rows=20_000, batches=2, spark=spark).lines)
    # 2 ingest jobs + 3 late appends; day-0 overwrite, copy-on-write delete, MERGE; DELETE; compaction
    assert report["operations"] == "append x5, overwrite x3, delete x1, replace x1"
    assert report["snapshots"] == "10"
    first = next(v for k, v in report.items() if k.startswith("rows in the first snapshot"))
    assert first == "10,000"
    updated, inserted = report["  merge"].split(", ")
    assert inserted == "200 inserted"
    assert int(updated.split()[0].replace(",", "")) > 0
    table = catalog.load_table(IDENT)
    rows_now = int(report["rows now"].replace(",", ""))
    assert table.scan().to_arrow().num_rows == rows_now
    assert read_with_pyiceberg(table.metadata_location).num_rows == rows_now
    assert not any(t.deletes for t in table.scan().plan_files())  # compaction retired every DV
    assert len(table.snapshots()) == 3  # expiry kept the last three
    assert report["  expiry"].startswith("7 snapshots, ")
    deleted_content = int(report["  expiry"].split(", ")[1].split()[0])
    assert deleted_content > 0  # at least the files the overwrite, delete and compaction replaced
    # the streaming stage: 3 rounds of 200 trips, 20 corrections in each round after the first
    assert report["  bronze"].startswith("640 events in 3 snapshots")
    assert report["  silver"].startswith("600 trips in 3 snapshots")
    changelog = next(v for k, v in report.items() if k.startswith("  silver changelog"))
    assert changelog == "200 INSERT, 20 UPDATE_BEFORE, 20 UPDATE_AFTER, 0 DELETE"
