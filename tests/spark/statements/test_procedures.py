"""CALL icefloe.system.<procedure>: snapshot management, maintenance, registration; result columns as
Iceberg's documentation shows them."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
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
    with pytest.raises(UnsupportedStatement, match="no_such_procedure"):
        sql(spark, f"CALL icefloe.system.no_such_procedure('{table_name}')")


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
    # the documentation's matching and listing arguments: a stray old file is found, the table's
    # own files (spelled file1:// in a file_list_view, declared equal to file://) are not
    table = catalog.load_table(table_name)
    data_dir = f"{table.location().rstrip('/')}/data"
    stray_location = f"{data_dir}/stray.parquet"
    stray = Path(local_path(stray_location) or "")
    stray.write_bytes(b"x")
    os.utime(stray, (time.time() - 5 * 86400, time.time() - 5 * 86400))
    for argument in (
        "prefix_mismatch_mode => 'IGNORE'",
        "equal_schemes => map('file', 'file1')",
        "prefix_listing => true",
    ):
        out = sql(
            spark,
            f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', dry_run => true, {argument})",
        )
        assert [r[0] for r in out.collect()] == [stray_location], argument
    live = [r[0] for r in sql(spark, f"SELECT file_path FROM {t}.data_files").collect()]
    listed = [(p.replace("file:", "file1:", 1), dt.datetime(2000, 1, 1)) for p in [*live, stray_location]]
    spark.createDataFrame(listed, "file_path string, last_modified timestamp").createOrReplaceTempView(
        "files_view"
    )
    view = "file_list_view => 'files_view', dry_run => true"
    with pytest.raises(
        ValidationError, match="under another scheme or authority"
    ):  # ERROR, as Iceberg's default
        sql(spark, f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', {view})")
    out = sql(
        spark,
        f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', {view}, "
        "equal_schemes => map('file1,file', 'file'))",
    )
    assert [r[0] for r in out.collect()] == [stray_location.replace("file:", "file1:", 1)]
    out = sql(
        spark,
        f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', {view}, "
        "prefix_mismatch_mode => 'DELETE')",
    )
    assert sorted(r[0] for r in out.collect()) == sorted(p for p, _ in listed)
    spark.catalog.dropTempView("files_view")
    stray.unlink()
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


def _one_file_appends(catalog: Catalog, table_name: str, batches: list[list[int]]) -> None:
    table = catalog.load_table(table_name)
    for values in batches:
        table.append(pa.table({"id": pa.array(values, pa.int64())}))


@pytest.mark.parametrize("fv", [2, 3])
def test_rewrite_manifests_and_position_delete_files(
    spark: Any, catalog: Catalog, table_name: str, fv: int
) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '{fv}', "
        "'write.delete.mode' = 'merge-on-read')",
    )
    _one_file_appends(catalog, table_name, [[1, 2, 3], [4, 5], [6]])
    assert rows(sql(spark, f"SELECT content, count(*) FROM {t}.manifests GROUP BY content")) == [(0, 3)]
    out = sql(spark, f"CALL icefloe.system.rewrite_manifests(table => '{t}', use_caching => false)")
    assert out.columns == ["rewritten_manifests_count", "added_manifests_count"]
    assert rows(out) == [(3, 1)]
    assert rows(sql(spark, f"SELECT content, count(*) FROM {t}.manifests GROUP BY content")) == [(0, 1)]
    assert rows(sql(spark, f"SELECT operation FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1")) == [
        ("replace",)
    ]
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(i,) for i in range(1, 7)]
    assert rows(sql(spark, f"CALL icefloe.system.rewrite_manifests('{table_name}')")) == [(0, 0)]
    with pytest.raises(ValidationError, match="sort_by names no partition field: category"):
        by_category = "sort_by => array('category')"
        sql(spark, f"CALL icefloe.system.rewrite_manifests(table => '{table_name}', {by_category})")
    # two deletes on the first file: two position delete files (v2) or one DV (v3)
    sql(spark, f"DELETE FROM {t} WHERE id = 1")
    sql(spark, f"DELETE FROM {t} WHERE id = 2")
    deletes = rows(sql(spark, f"SELECT file_path, file_size_in_bytes FROM {t}.delete_files"))
    out = sql(spark, f"CALL icefloe.system.rewrite_position_delete_files('{table_name}')")
    assert out.columns == [
        "rewritten_delete_files_count",
        "added_delete_files_count",
        "rewritten_bytes_count",
        "added_bytes_count",
    ]
    after = rows(sql(spark, f"SELECT file_path, file_size_in_bytes, record_count FROM {t}.delete_files"))
    if fv == 2:
        assert len(deletes) == 2 and len(after) == 1
        assert rows(out) == [(2, 1, sum(d[1] for d in deletes), after[0][1])]
        assert after[0][2] == 2
    else:
        assert len(deletes) == 1 and rows(out) == [(0, 0, 0, 0)]
        assert [a[:2] for a in after] == deletes
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(i,) for i in range(3, 7)]
    # the documentation's options: rewrite-all rewrites a data file's single delete file too
    options = "map('rewrite-all', 'true')"
    out = sql(
        spark, f"CALL icefloe.system.rewrite_position_delete_files(table => '{t}', options => {options})"
    )
    if fv == 2:
        assert rows(out)[0][:2] == (1, 1)
        assert rows(sql(spark, f"SELECT count(*) FROM {t}.delete_files")) == [(1,)]
    else:
        assert rows(out) == [(0, 0, 0, 0)]
    options = "map('min-input-files', '2')"
    out = sql(
        spark, f"CALL icefloe.system.rewrite_position_delete_files(table => '{t}', options => {options})"
    )
    assert rows(out) == [(0, 0, 0, 0)]
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(i,) for i in range(3, 7)]


def test_rewrite_manifests_on_v4_repacks_the_root(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '4', "
        "'write.v4.root.max-inline-entries' = '1', 'write.v4.compaction.enabled' = 'false')",
    )
    _one_file_appends(catalog, table_name, [[1], [2], [3], [4], [5]])
    ((manifests,),) = rows(sql(spark, f"SELECT count(*) FROM {t}.manifests"))
    assert manifests >= 3
    out = sql(spark, f"CALL icefloe.system.rewrite_manifests('{table_name}')")
    assert out.columns == ["rewritten_manifests_count", "added_manifests_count"]
    assert rows(out) == [(manifests, 1)]
    assert rows(sql(spark, f"SELECT count(*) FROM {t}.manifests")) == [(1,)]
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(1,), (2,), (3,), (4,), (5,)]
    assert rows(sql(spark, f"CALL icefloe.system.rewrite_manifests('{table_name}')")) == [(0, 0)]
    with pytest.raises(UnsupportedStatement, match="spec_id and sort_by"):
        sql(spark, f"CALL icefloe.system.rewrite_manifests(table => '{table_name}', spec_id => 0)")
    assert rows(sql(spark, f"CALL icefloe.system.rewrite_position_delete_files('{table_name}')")) == [
        (0, 0, 0, 0)
    ]
    with pytest.raises(UnsupportedStatement, match="rewrite_position_delete_files with where"):
        sql(spark, f"CALL icefloe.system.rewrite_position_delete_files('{table_name}', where => 'id > 1')")
    with pytest.raises(UnsupportedStatement, match=r"option 'partial-progress\.enabled'"):
        sql(
            spark,
            f"""CALL icefloe.system.rewrite_position_delete_files(table => '{table_name}',
                options => map('partial-progress.enabled', 'true'))""",
        )


def test_create_changelog_view(spark: Any, catalog: Catalog, table_name: str) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version' = '3')")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    first = catalog.load_table(table_name).current_snapshot().snapshot_id  # type: ignore[union-attr]
    sql(spark, f"INSERT INTO {t} VALUES (3, 'c')")
    sql(spark, f"UPDATE {t} SET v = 'B' WHERE id = 2")
    view = f"chg_{table_name.split('.')[-1]}"
    out = sql(
        spark,
        f"CALL icefloe.system.create_changelog_view(table => '{t}', changelog_view => '{view}', "
        f"options => map('start-snapshot-id', '{first}'), compute_updates => true, "
        "identifier_columns => array('id'))",
    )
    assert out.columns == ["changelog_view"] and rows(out) == [(view,)]
    got = rows(spark.sql(f"SELECT _change_type, _change_ordinal, id, v FROM {view}"))
    assert got == [
        ("INSERT", 0, 3, "c"),
        ("UPDATE_AFTER", 1, 2, "B"),
        ("UPDATE_BEFORE", 1, 2, "b"),
    ]
    out = sql(spark, f"CALL icefloe.system.create_changelog_view('{table_name}')")
    default = f"{table_name.split('.')[-1]}_changes"
    assert rows(out) == [(default,)]
    assert rows(spark.sql(f"SELECT count(*) FROM {default}")) == [(5,)]


def test_snapshot_and_migrate_parquet_tables(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Any
) -> None:
    name = table_name.split(".")[-1]
    src_dir = tmp_path / "src"
    spark.range(5).selectExpr("id", "cast(id * 10 AS int) AS v", "concat('s', id) AS s").coalesce(
        1
    ).write.parquet(str(src_dir))
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.db")
    spark.sql(f"CREATE TABLE spark_catalog.db.{name}_src USING parquet LOCATION '{src_dir}'")
    expected = [(i, i * 10, f"s{i}") for i in range(5)]
    # snapshot: a new icefloe table over the same files, which icefloe never deletes
    out = sql(spark, f"CALL icefloe.system.snapshot('spark_catalog.db.{name}_src', 'db.{name}_snap')")
    assert out.columns == ["imported_files_count"] and rows(out) == [(1,)]
    snap = catalog.load_table(f"db.{name}_snap")
    assert snap.properties["gc.enabled"] == "false"
    assert [f.name for f in snap.schema().fields] == ["id", "v", "s"]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_snap")) == expected
    ((path,),) = rows(sql(spark, f"SELECT file_path FROM icefloe.db.{name}_snap.data_files"))
    assert path.endswith(".parquet") and str(src_dir) in path  # referenced, not copied
    sql(spark, f"INSERT INTO icefloe.db.{name}_snap VALUES (9, 90, 's9')")
    assert rows(sql(spark, f"SELECT count(*) FROM icefloe.db.{name}_snap WHERE v >= 30")) == [(3,)]
    assert spark.table(f"spark_catalog.db.{name}_src").count() == 5  # the source is untouched
    # snapshot of a directory
    out = sql(
        spark,
        f"CALL icefloe.system.snapshot(source_table => 'parquet.`{src_dir}`', table => 'db.{name}_dir')",
    )
    assert rows(out) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_dir")) == expected
    # a Hive-style partitioned directory: identity partitions, values from the directory names
    part_dir = tmp_path / "part"
    spark.range(6).selectExpr("id", "cast(id % 2 AS int) AS p", "concat('k', id % 3) AS k").coalesce(
        1
    ).write.partitionBy("p", "k").parquet(str(part_dir))
    out = sql(spark, f"CALL icefloe.system.snapshot('parquet.`{part_dir}`', 'db.{name}_part')")
    assert rows(out) == [(6,)]
    part = catalog.load_table(f"db.{name}_part")
    assert [(f.name, str(f.transform)) for f in part.spec().fields] == [("p", "identity"), ("k", "identity")]
    all_rows = [(i, i % 2, f"k{i % 3}") for i in range(6)]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_part")) == all_rows
    assert rows(sql(spark, f"SELECT id FROM icefloe.db.{name}_part WHERE k = 'k1' AND p = 0")) == [(4,)]
    sql(spark, f"DELETE FROM icefloe.db.{name}_part WHERE k = 'k1' AND id > 1")
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_part")) == [r for r in all_rows if r[0] != 4]
    assert spark.read.parquet(str(part_dir)).count() == 6  # the source files are untouched
    # migrate: the same table name in icefloe, the session catalog's table is gone, files stay
    out = sql(spark, f"CALL icefloe.system.migrate('spark_catalog.db.{name}_src')")
    assert out.columns == ["migrated_files_count"] and rows(out) == [(1,)]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_src")) == expected
    assert not spark.catalog.tableExists(f"spark_catalog.db.{name}_src")
    # as Iceberg's migrate, the original is kept under <name>_BACKUP_ (an external table: renamed)
    assert rows(spark.table(f"spark_catalog.db.{name}_src_BACKUP_")) == expected
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_snap WHERE id < 5")) == expected
    # managed tables: tests/spark/statements/test_procedures_import.py


@pytest.mark.parametrize("fv", [2, 4])
def test_rewrite_data_files_sort_strategy(spark: Any, catalog: Catalog, table_name: str, fv: int) -> None:
    from pyspark.sql import functions as F

    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, name STRING) USING iceberg TBLPROPERTIES ('format-version' = '{fv}')",
    )
    for values in ("(1, 'b'), (4, NULL)", "(NULL, 'a'), (3, 'c')", "(4, 'a'), (2, NULL)"):
        sql(spark, f"INSERT INTO {t} VALUES {values}")
    before = rows(sql(spark, f"SELECT * FROM {t}"))
    ((files,),) = rows(sql(spark, f"SELECT count(*) FROM {t}.data_files"))
    with pytest.raises(ValidationError, match="without a valid sort order"):
        sql(spark, f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', strategy => 'sort')")
    # zorder(...): tests/spark/statements/test_procedures_zorder.py
    out = sql(
        spark,
        f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', strategy => 'sort', "
        "sort_order => 'id DESC NULLS LAST,name ASC NULLS FIRST')",
    )
    assert out.collect()[0][:2] == (files, 1)
    assert rows(sql(spark, f"SELECT * FROM {t}")) == before
    ((path,),) = sql(spark, f"SELECT file_path FROM {t}.data_files").collect()
    written = [tuple(r) for r in spark.read.parquet(path).select("id", "name").collect()]  # not lineage
    expected = spark.createDataFrame(before, "id long, name string").orderBy(
        F.col("id").desc_nulls_last(), F.col("name").asc_nulls_first()
    )
    assert written == [tuple(r) for r in expected.collect()]  # Spark's own ORDER BY of the same rows
    # without sort_order the table's write order is used
    sql(spark, f"ALTER TABLE {t} WRITE ORDERED BY name ASC NULLS LAST, id")
    sql(spark, f"INSERT INTO {t} VALUES (0, 'z')")
    sql(spark, f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', strategy => 'sort')")
    ((path,),) = sql(spark, f"SELECT file_path FROM {t}.data_files").collect()
    assert [r[1] for r in spark.read.parquet(path).collect()] == ["a", "a", "b", "c", "z", None, None]


def test_rewrite_table_path_stages_a_copy_that_registers(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, cat STRING) USING iceberg PARTITIONED BY (cat) "
        "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'a'), (3, 'b')")
    sql(spark, f"DELETE FROM {t} WHERE id = 2")
    expected = rows(sql(spark, f"SELECT id, cat FROM {t}"))
    assert expected == [(1, "a"), (3, "b")]
    table = catalog.load_table(table_name)
    source, target, staging = table.location(), f"{table.location()}_copy", f"file://{tmp_path}/staging"
    out = sql(
        spark,
        f"CALL icefloe.system.rewrite_table_path(table => '{table_name}', source_prefix => '{source}', "
        f"target_prefix => '{target}', staging_location => '{staging}')",
    )
    assert out.columns == ["latest_version", "file_list_location"]
    latest = table.metadata_location.rsplit("/", 1)[-1]
    assert rows(out) == [(latest, f"{staging}/file-list")]
    listed = Path(f"{tmp_path}/staging/file-list").read_text().splitlines()
    for line in listed:
        src, dst = line.split(",")
        table.io.new_output(dst).write_bytes(table.io.new_input(src).read())
    assert sum(1 for line in listed if "/data/" in line.split(",")[1]) == 3  # two data files, one delete
    sql(spark, f"DROP TABLE {t} PURGE")  # the copy must not need a single source file
    sql(spark, f"CALL icefloe.system.register_table('{table_name}_copy', '{target}/metadata/{latest}')")
    assert rows(sql(spark, f"SELECT id, cat FROM {t}_copy")) == expected
    with pytest.raises(ValidationError, match="source_prefix"):
        sql(spark, f"CALL icefloe.system.rewrite_table_path('{table_name}_copy', target_prefix => '/x')")
