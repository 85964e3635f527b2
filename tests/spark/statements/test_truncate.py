"""TRUNCATE TABLE through icefloe.spark.sql: one metadata-only ``delete`` snapshot removing every
live data and delete file, on main or a branch, refused for partitions and views."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement


def _data_files(location: str) -> set[str]:
    """Every file under the table's data directory (what a truncate must neither add nor remove)."""
    root = Path(location.removeprefix("file:")) / "data"
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_truncate_removes_every_live_file_in_one_delete_snapshot(
    spark: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    t = f"icefloe.{table_name}"
    mode = "copy-on-write" if version == 1 else "merge-on-read"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = '{mode}')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    sql(spark, f"INSERT INTO {t} VALUES (4, 'b')")
    sql(spark, f"DELETE FROM {t} WHERE id = 1")
    before = catalog.load_table(table_name)
    live_deletes = int(before.current_snapshot().summary["total-delete-files"])  # type: ignore[union-attr]
    assert live_deletes == (0 if version == 1 else 1)
    files_before = _data_files(before.location())

    assert sql(spark, f"TRUNCATE TABLE {t}").collect() == []

    table = catalog.load_table(table_name)
    snap = table.current_snapshot()
    assert snap is not None and snap.parent_snapshot_id == before.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert len(table.snapshots()) == len(before.snapshots()) + 1
    summary = snap.summary
    assert summary["operation"] == "delete"
    assert summary["deleted-data-files"] == "3"  # copy-on-write rewrote (1, a), (3, a) as (3, a)
    assert summary["deleted-records"] == ("3" if version == 1 else "4")
    assert summary.get("removed-delete-files", "0") == str(live_deletes)
    assert "added-data-files" not in summary and "added-records" not in summary
    assert summary["total-records"] == "0"
    assert summary["total-data-files"] == "0" and summary["total-delete-files"] == "0"
    assert summary["spark.app.id"] == spark.sparkContext.applicationId
    assert _data_files(table.location()) == files_before  # metadata only: no data file written or deleted
    assert sql(spark, f"SELECT * FROM {t}").collect() == []
    old = sql(spark, f"SELECT id FROM {t} VERSION AS OF {before.current_snapshot().snapshot_id}")  # type: ignore[union-attr]
    assert sorted(r[0] for r in old.collect()) == [2, 3, 4]


def test_truncate_of_an_empty_table_commits_an_empty_delete_snapshot(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    # Iceberg Java's DeleteFiles has no "nothing to delete" short cut: it commits a snapshot too
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT) USING iceberg")
    sql(spark, f"TRUNCATE TABLE {t}")
    table = catalog.load_table(table_name)
    (snap,) = table.snapshots()
    assert snap.parent_snapshot_id is None
    assert {k: v for k, v in snap.summary.items() if k != "spark.app.id"} == {
        "operation": "delete",
        "changed-partition-count": "0",
        "total-records": "0",
        "total-files-size": "0",
        "total-data-files": "0",
        "total-delete-files": "0",
        "total-position-deletes": "0",
        "total-equality-deletes": "0",
    }


def test_truncate_of_a_branch_leaves_main_alone(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    sql(spark, f"INSERT INTO {t} VALUES (1), (2)")
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH dev")
    sql(spark, f"INSERT INTO {t}.branch_dev VALUES (3)")
    before = catalog.load_table(table_name)
    main_head = before.current_snapshot()
    dev_files = before.snapshot_by_id(before.refs()["dev"].snapshot_id).summary["total-data-files"]

    sql(spark, f"TRUNCATE TABLE {t}.branch_dev")

    table = catalog.load_table(table_name)
    assert table.current_snapshot() == main_head
    dev = table.snapshot_by_id(table.refs()["dev"].snapshot_id)
    assert dev.summary["operation"] == "delete"
    assert (dev.summary["deleted-data-files"], dev.summary["deleted-records"]) == (dev_files, "3")
    assert dev.summary["total-records"] == "0"
    assert sql(spark, f"SELECT * FROM {t}.branch_dev").collect() == []
    assert sorted(r[0] for r in sql(spark, f"SELECT id FROM {t}").collect()) == [1, 2]


def test_truncate_partition_and_views_and_tags_are_refused(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p)")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a')")
    sql(spark, f"ALTER TABLE {t} CREATE TAG v1")
    sql(spark, f"CREATE VIEW {t}_v AS SELECT id FROM {t}")
    snapshots = len(catalog.load_table(table_name).snapshots())

    with pytest.raises(UnsupportedStatement, match=r"TRUNCATE TABLE \.\.\. PARTITION.*partition management"):
        sql(spark, f"TRUNCATE TABLE {t} PARTITION (p = 'a')")
    with pytest.raises(ValidationError, match=r"'TRUNCATE TABLE' expects a table but .*_v is a view"):
        sql(spark, f"TRUNCATE TABLE {t}_v")
    with pytest.raises(ValidationError, match="tags are read-only"):
        sql(spark, f"TRUNCATE TABLE {t}.tag_v1")

    assert len(catalog.load_table(table_name).snapshots()) == snapshots
    assert sql(spark, f"SELECT id FROM {t}").collect()[0][0] == 1
