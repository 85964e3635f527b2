"""CALL icefloe.system.<procedure>: snapshot management, maintenance, registration; result columns as
Iceberg's documentation shows them."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def ids(n: int, start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64())})


def test_snapshot_procedures(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    table = catalog.load_table(table_name)
    for i in range(3):
        table.append(ids(2, 10 * i))
    s1, s2, s3 = (s.snapshot_id for s in table.snapshots())
    out = sql(spark, f"CALL icefloe.system.rollback_to_snapshot('{table_name}', {s1})")
    assert out.columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert rows(out) == [(s3, s1)]
    assert rows(sql(spark, f"SELECT count(*) FROM {t}")) == [(2,)]
    out = sql(spark, f"CALL icefloe.system.set_current_snapshot(table => '{t}', snapshot_id => {s3})")
    assert rows(out) == [(s1, s3)]
    ts = table.refresh().snapshot_by_id(s2).timestamp_ms + 1
    out = sql(spark, f"CALL icefloe.system.rollback_to_timestamp('{table_name}', {ts})")
    assert rows(out) == [(s3, s2)]
    out = sql(spark, f"CALL icefloe.system.ancestors_of('{table_name}')")
    assert [r[0] for r in out.collect()] == [s2, s1]
    # cherry-pick a child of the head: a fast-forward
    out = sql(spark, f"CALL icefloe.system.cherrypick_snapshot('{table_name}', {s3})")
    assert out.columns == ["source_snapshot_id", "current_snapshot_id"] and rows(out) == [(s3, s3)]
    # cherry-pick an append that is not a child of the head: a new snapshot with its files
    sql(spark, f"CALL icefloe.system.rollback_to_snapshot('{table_name}', {s1})")
    out = sql(spark, f"CALL icefloe.system.cherrypick_snapshot('{table_name}', {s3})")
    ((src, current),) = [tuple(r) for r in out.collect()]
    assert src == s3 and current not in (s1, s2, s3)
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(0,), (1,), (20,), (21,)]
    # branches: fast_forward
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH dev")
    sql(spark, f"INSERT INTO {t}.branch_dev VALUES (99)")
    dev_head = catalog.load_table(table_name).refs()["dev"].snapshot_id
    out = sql(spark, f"CALL icefloe.system.fast_forward('{table_name}', 'main', 'dev')")
    assert out.columns == ["branch_updated", "previous_ref", "updated_ref"]
    assert rows(out) == [("main", current, dev_head)]
    with pytest.raises(ValidationError):
        sql(spark, f"CALL icefloe.system.rollback_to_snapshot('{table_name}', 12345)")
    with pytest.raises(UnsupportedStatement, match="rewrite_manifests"):
        sql(spark, f"CALL icefloe.system.rewrite_manifests('{table_name}')")


def test_maintenance_procedures(spark: Any, catalog: Catalog, table_name: str, tmp_path: Any) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '3')")
    for i in range(3):
        sql(spark, f"INSERT INTO {t} VALUES ({i}), ({i + 10})")
    ((files_before,),) = rows(sql(spark, f"SELECT count(*) FROM {t}.data_files"))
    assert files_before >= 3
    out = sql(
        spark,
        f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', where => 'id >= 0', "
        "options => map('min-input-files', '2'))",
    )
    assert out.columns[:4] == [
        "rewritten_data_files_count",
        "added_data_files_count",
        "rewritten_bytes_count",
        "failed_data_files_count",
    ]
    rewritten, added = out.collect()[0][:2]
    assert rewritten == files_before and added == 1
    assert rows(sql(spark, f"SELECT count(*) FROM {t}.data_files")) == [(1,)]
    time.sleep(0.01)
    out = sql(
        spark,
        f"CALL icefloe.system.expire_snapshots(table => '{table_name}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)",
    )
    assert out.columns == [
        "deleted_data_files_count",
        "deleted_position_delete_files_count",
        "deleted_equality_delete_files_count",
        "deleted_manifest_files_count",
        "deleted_manifest_lists_count",
        "deleted_statistics_files_count",
    ]
    counts = out.collect()[0]
    assert counts[0] == files_before and counts[4] == 3
    assert len(catalog.load_table(table_name).snapshots()) == 1
    out = sql(spark, f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', dry_run => true)")
    assert out.columns == ["orphan_file_location"] and out.count() == 0
    # a metadata file another table owns is refused; once that table is dropped it registers
    location = catalog.load_table(table_name).metadata_location
    with pytest.raises(ValidationError, match="belongs to table"):
        sql(spark, f"CALL icefloe.system.register_table('{table_name}_copy', '{location}')")
    assert not catalog.table_exists(f"{table_name}_copy")
    sql(spark, f"DROP TABLE {t}")
    out = sql(spark, f"CALL icefloe.system.register_table('{table_name}_copy', '{location}')")
    assert out.columns == ["current_snapshot_id", "total_records_count", "total_data_files_count"]
    assert out.collect()[0][1:] == (6, 1)
    assert rows(sql(spark, f"SELECT count(*) FROM {t}_copy")) == [(6,)]
