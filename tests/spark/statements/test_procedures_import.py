"""CALL icefloe.system.add_files and migrate of session-catalog tables: existing Parquet files become
an icefloe table's without being rewritten, moved or deleted; result columns as Iceberg's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


def _write_source(spark: Any, path: Path, start: int, count: int, files: int) -> None:
    spark.range(start, start + count).selectExpr(
        "id", "cast(id * 10 AS int) AS v", "concat('s', id) AS s"
    ).repartition(files).write.parquet(str(path))


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_add_files_from_a_parquet_directory(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path, fv: int
) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, v INT, s STRING) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '{fv}')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (100, 1000, 'own')")
    src = tmp_path / "src"
    _write_source(spark, src, 0, 6, 2)
    before = {p.name for p in src.iterdir()}
    out = sql(spark, f"CALL icefloe.system.add_files(table => '{t}', source_table => '`parquet`.`{src}`')")
    assert out.columns == ["added_files_count", "changed_partition_count"]
    assert rows(out) == [(2, 1)]
    expected = [(i, i * 10, f"s{i}") for i in range(6)] + [(100, 1000, "own")]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == expected
    table = catalog.load_table(table_name)
    assert "schema.name-mapping.default" in table.properties
    paths = [p for (p,) in rows(sql(spark, f"SELECT file_path FROM {t}.data_files"))]
    assert sum(str(src) in p for p in paths) == 2  # referenced where they are, not copied
    assert {p.name for p in src.iterdir()} == before
    # metrics come from the footers: a selective filter prunes the added files
    assert rows(sql(spark, f"SELECT id FROM {t} WHERE v > 500")) == [(100,)]
    # the same files again are refused, nothing is written
    snapshots = len(table.refresh().snapshots())
    with pytest.raises(ValidationError, match="already exist"):
        sql(spark, f"CALL icefloe.system.add_files('{t}', 'parquet.`{src}`')")
    assert len(table.refresh().snapshots()) == snapshots
    # unless the check is switched off
    out = sql(
        spark,
        f"CALL icefloe.system.add_files(table => '{t}', source_table => '`parquet`.`{src}`', "
        "check_duplicate_files => false)",
    )
    assert rows(out) == [(2, 1)]
    assert rows(sql(spark, f"SELECT count(*), count(DISTINCT id) FROM {t}")) == [(13, 7)]


def test_add_files_by_partition_from_a_session_catalog_table(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    name = table_name.split(".")[-1]
    t = f"icefloe.{table_name}"
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.db")
    spark.range(8).selectExpr("id", "concat('s', id) AS s", "cast(id % 3 AS int) AS p").write.partitionBy(
        "p"
    ).format("parquet").saveAsTable(f"spark_catalog.db.{name}_src")
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, s STRING, p INT) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('format-version' = '3')",
    )
    # only the partition p = 1, from the session-catalog table (files of ids 1, 4, 7)
    out = sql(
        spark,
        f"CALL icefloe.system.add_files(table => '{t}', source_table => 'spark_catalog.db.{name}_src', "
        "partition_filter => map('p', '1'))",
    )
    ((added, changed),) = rows(out)
    assert added >= 1 and changed == 1
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "s1", 1), (4, "s4", 1), (7, "s7", 1)]
    assert rows(sql(spark, f"SELECT DISTINCT partition.p FROM {t}.data_files")) == [(1,)]
    # then the others: two partitions change
    out = sql(spark, f"CALL icefloe.system.add_files('{t}', 'db.{name}_src', map('p', '0'))")
    assert rows(out)[0][1] == 1
    assert rows(sql(spark, f"SELECT id FROM {t} WHERE p = 0")) == [(0,), (3,), (6,)]
    assert spark.table(f"spark_catalog.db.{name}_src").count() == 8  # the source is untouched


def test_add_files_refuses_mismatched_partitioning(
    spark: Any, catalog: Catalog, table_name: str, tmp_path: Path
) -> None:
    t = f"icefloe.{table_name}"
    src = tmp_path / "part"
    spark.range(4).selectExpr("id", "cast(id % 2 AS int) AS p").write.partitionBy("p").parquet(str(src))
    sql(spark, f"CREATE TABLE {t} (id BIGINT, p INT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    with pytest.raises(ValidationError, match="partition columns"):
        sql(spark, f"CALL icefloe.system.add_files('{t}', '`parquet`.`{src}`')")
    sql(spark, f"ALTER TABLE {t} ADD PARTITION FIELD p")
    with pytest.raises(ValidationError, match="partition_filter"):
        sql(spark, f"CALL icefloe.system.add_files('{t}', '`parquet`.`{src}`', map('q', '1'))")
    with pytest.raises(ValidationError, match="no file"):
        sql(spark, f"CALL icefloe.system.add_files('{t}', '`parquet`.`{src}`', map('p', '7'))")
    sql(spark, f"ALTER TABLE {t} REPLACE PARTITION FIELD p WITH bucket(4, id)")
    with pytest.raises(ValidationError, match="identity"):
        sql(spark, f"CALL icefloe.system.add_files('{t}', '`parquet`.`{src}`')")
    table = catalog.load_table(table_name)
    assert table.current_snapshot() is None
    assert "schema.name-mapping.default" not in table.properties
