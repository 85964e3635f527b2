"""CALL icefloe.system.add_files and migrate of session-catalog tables: existing Parquet files become
an icefloe table's without being rewritten, moved or deleted; result columns as Iceberg's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spark import sql


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.fixture
def session_name(spark: Any, table_name: str) -> Iterator[str]:
    """A name for session-catalog tables in ``db``; afterwards the session-catalog tables starting
    with it are dropped and their directories in Spark's warehouse removed (migrated tables leave
    their files there on purpose)."""
    name = table_name.split(".")[-1]
    spark.sql("CREATE DATABASE IF NOT EXISTS spark_catalog.db")
    yield name
    for t in spark.catalog.listTables("spark_catalog.db"):
        if t.name.lower().startswith(name.lower()) and not t.isTemporary:
            spark.sql(f"DROP TABLE spark_catalog.db.`{t.name}`")
    warehouse = Path(local_path(spark.conf.get("spark.sql.warehouse.dir")) or ".") / "db.db"
    for path in warehouse.glob(f"{name.lower()}*"):
        shutil.rmtree(path)


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
    spark: Any, catalog: Catalog, table_name: str, session_name: str
) -> None:
    name = session_name
    t = f"icefloe.{table_name}"
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


def _table_type(spark: Any, name: str) -> str:
    info = {r[0].strip(): str(r[1]).strip() for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    return info["Type"].upper()


def _files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet")}


@pytest.mark.parametrize("fv", [2, 4])
def test_migrate_a_managed_table_keeps_its_files_and_a_backup(
    spark: Any, catalog: Catalog, session_name: str, fv: int
) -> None:
    name = session_name
    src = f"spark_catalog.db.{name}"
    spark.range(6).selectExpr("id", "concat('s', id) AS s").repartition(2).write.format(
        "parquet"
    ).saveAsTable(src)
    assert _table_type(spark, src) == "MANAGED"
    location = Path(spark.sql(f"DESCRIBE TABLE EXTENDED {src}").where("col_name = 'Location'").first()[1][5:])
    files = _files_under(location)
    expected = [(i, f"s{i}") for i in range(6)]
    out = sql(spark, f"CALL icefloe.system.migrate('{src}', map('format-version', '{fv}'))")
    assert out.columns == ["migrated_files_count"] and rows(out) == [(2,)]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}")) == expected
    assert catalog.load_table(f"db.{name}").metadata.format_version == fv
    # the original is kept as <name>_BACKUP_, an external table over the same files
    backup = f"spark_catalog.db.{name}_BACKUP_"
    assert not spark.catalog.tableExists(src)
    assert _table_type(spark, backup) == "EXTERNAL"
    assert rows(spark.table(backup)) == expected
    assert _files_under(location) == files
    # dropping the backup deletes no file: the icefloe table still reads every row
    spark.sql(f"DROP TABLE {backup}")
    assert _files_under(location) == files
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}")) == expected
    sql(spark, f"DELETE FROM icefloe.db.{name} WHERE id = 2")
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}")) == [r for r in expected if r[0] != 2]


def test_migrate_a_partitioned_managed_table_with_drop_backup_and_backup_names(
    spark: Any, catalog: Catalog, session_name: str
) -> None:
    name = session_name
    frame = spark.range(6).selectExpr("id", "cast(id % 2 AS int) AS p")
    frame.write.partitionBy("p").format("parquet").saveAsTable(f"spark_catalog.db.{name}_a")
    frame.write.partitionBy("p").format("parquet").saveAsTable(f"spark_catalog.db.{name}_b")
    expected = [(i, i % 2) for i in range(6)]
    # drop_backup: no backup table is kept, the files stay for the icefloe table
    out = sql(
        spark, f"CALL icefloe.system.migrate(table => 'spark_catalog.db.{name}_a', drop_backup => true)"
    )
    assert rows(out)[0][0] >= 2
    assert not spark.catalog.tableExists(f"spark_catalog.db.{name}_a")
    assert not spark.catalog.tableExists(f"spark_catalog.db.{name}_a_BACKUP_")
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_a")) == expected
    assert rows(sql(spark, f"SELECT id FROM icefloe.db.{name}_a WHERE p = 1")) == [(1,), (3,), (5,)]
    assert [f.name for f in catalog.load_table(f"db.{name}_a").spec().fields] == ["p"]
    # backup_table_name: the backup is an external, partitioned table under that name
    sql(spark, f"CALL icefloe.system.migrate(table => 'db.{name}_b', backup_table_name => '{name}_old')")
    assert rows(spark.table(f"spark_catalog.db.{name}_old")) == expected
    assert rows(spark.sql(f"SELECT id FROM spark_catalog.db.{name}_old WHERE p = 0")) == [(0,), (2,), (4,)]
    assert rows(sql(spark, f"SELECT * FROM icefloe.db.{name}_b")) == expected


def test_migrate_refuses_an_existing_backup_name_writing_nothing(
    spark: Any, catalog: Catalog, session_name: str
) -> None:
    name = session_name
    spark.range(3).write.format("parquet").saveAsTable(f"spark_catalog.db.{name}")
    spark.range(1).write.format("parquet").saveAsTable(f"spark_catalog.db.{name}_taken")
    with pytest.raises(ValidationError, match="exists"):
        sql(
            spark,
            f"CALL icefloe.system.migrate('spark_catalog.db.{name}', backup_table_name => '{name}_taken')",
        )
    assert not catalog.table_exists(f"db.{name}")
    assert rows(spark.table(f"spark_catalog.db.{name}")) == [(0,), (1,), (2,)]
    assert _table_type(spark, f"spark_catalog.db.{name}") == "MANAGED"
