"""DDL through icefloe.spark.sql: namespaces, CREATE TABLE (types, comments, NOT NULL, partition
transforms, properties, location), CTAS, DROP, ALTER TABLE, refs, SHOW / DESCRIBE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import AlreadyExists, NoSuchTable, ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import SqlSyntaxError, UnsupportedStatement
from icefloe.spec.snapshots import RefType
from icefloe.spec.sort_order import NullOrder, SortDirection
from icefloe.spec.types import (
    DateType,
    DecimalType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestamptzType,
)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.mark.parametrize("version", [2, 3, 4])
def test_create_table_with_every_clause(
    spark: Any, catalog: Catalog, table_name: str, version: int, tmp_path: Path
) -> None:
    name = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE IF NOT EXISTS {name} (
              id BIGINT NOT NULL COMMENT 'unique id',
              ts TIMESTAMP,
              d DATE,
              category STRING,
              price DECIMAL(9, 2),
              tags ARRAY<STRING>,
              attrs MAP<STRING, INT>,
              point STRUCT<x: DOUBLE, y: DOUBLE>)
            USING iceberg
            PARTITIONED BY (bucket(8, id), days(ts), truncate(2, category), years(d))
            LOCATION '{tmp_path}/loc'
            TBLPROPERTIES ('format-version' = '{version}', 'write.delete.mode' = 'merge-on-read')""",
    )
    t = catalog.load_table(table_name)
    assert t.format_version == version
    assert t.location().rstrip("/").endswith("loc")
    assert t.properties["write.delete.mode"] == "merge-on-read"
    fields = t.schema().fields
    assert [(f.name, f.required, f.doc) for f in fields[:2]] == [
        ("id", True, "unique id"),
        ("ts", False, None),
    ]
    types = [f.field_type for f in fields]
    assert types[:5] == [LongType(), TimestamptzType(), DateType(), StringType(), DecimalType(9, 2)]
    assert (
        isinstance(types[5], ListType) and isinstance(types[6], MapType) and isinstance(types[7], StructType)
    )
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [
        ("id_bucket", "bucket[8]"),
        ("ts_day", "day"),
        ("category_trunc", "truncate[2]"),
        ("d_year", "year"),
    ]
    # IF NOT EXISTS on an existing table changes nothing; without it the statement fails
    sql(spark, f"CREATE TABLE IF NOT EXISTS {name} (x INT) USING iceberg")
    with pytest.raises(AlreadyExists):
        sql(spark, f"CREATE TABLE {name} (x INT) USING iceberg")
    sql(spark, f"DROP TABLE {name} PURGE")
    assert not catalog.table_exists(table_name)
    sql(spark, f"DROP TABLE IF EXISTS {name}")
    with pytest.raises(NoSuchTable):
        sql(spark, f"DROP TABLE {name}")


def test_namespaces_show_and_describe(spark: Any, catalog: Catalog) -> None:
    sql(spark, "CREATE NAMESPACE IF NOT EXISTS icefloe.ddl_ns")
    sql(
        spark,
        "CREATE DATABASE IF NOT EXISTS icefloe.ddl_db COMMENT 'docs' WITH DBPROPERTIES ('owner' = 'me')",
    )
    assert catalog.load_namespace_properties(("ddl_db",))["owner"] == "me"
    assert ("ddl_ns",) in catalog.list_namespaces()
    assert ("ddl_ns",) in rows(sql(spark, "SHOW NAMESPACES IN icefloe"))
    sql(
        spark,
        "CREATE TABLE icefloe.ddl_ns.t (id INT COMMENT 'key', s STRING) USING iceberg PARTITIONED BY (s)",
    )
    assert rows(sql(spark, "SHOW TABLES IN icefloe.ddl_ns")) == [("ddl_ns", "t", False)]
    described = rows(sql(spark, "DESCRIBE TABLE icefloe.ddl_ns.t"))
    assert ("id", "int", "key") in described and ("s", "string", None) in described
    assert ("Part 0", "s", "") in described
    extended = dict((r[0], r[1]) for r in sql(spark, "DESCRIBE TABLE EXTENDED icefloe.ddl_ns.t").collect())
    assert extended["Provider"] == "iceberg" and extended["Name"] == "icefloe.ddl_ns.t"
    sql(
        spark, "ALTER TABLE icefloe.ddl_ns.t SET TBLPROPERTIES ('read.split.target-size' = '1000', 'k' = 'v')"
    )
    props = dict(rows(sql(spark, "SHOW TBLPROPERTIES icefloe.ddl_ns.t")))
    assert props["k"] == "v" and props["read.split.target-size"] == "1000"
    assert rows(sql(spark, "SHOW TBLPROPERTIES icefloe.ddl_ns.t ('k')")) == [("k", "v")]
    sql(spark, "ALTER TABLE icefloe.ddl_ns.t UNSET TBLPROPERTIES ('k')")
    assert "k" not in catalog.load_table("ddl_ns.t").properties
    (create,) = sql(spark, "SHOW CREATE TABLE icefloe.ddl_ns.t").collect()
    assert "PARTITIONED BY (s)" in create[0] and "id INT COMMENT 'key'" in create[0]
    sql(spark, "ALTER TABLE icefloe.ddl_ns.t RENAME TO icefloe.ddl_ns.t2")
    assert catalog.table_exists(("ddl_ns", "t2")) and not catalog.table_exists(("ddl_ns", "t"))
    sql(spark, "DROP NAMESPACE icefloe.ddl_ns CASCADE")
    assert not catalog.namespace_exists(("ddl_ns",))


def test_alter_columns(spark: Any, catalog: Catalog, table_name: str) -> None:
    name = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {name} (id INT NOT NULL, data STRING, point STRUCT<x: DOUBLE, y: DOUBLE>, f FLOAT) "
        "USING iceberg",
    )
    sql(spark, f"ALTER TABLE {name} ADD COLUMNS (note STRING COMMENT 'free text', n INT AFTER id)")
    sql(spark, f"ALTER TABLE {name} ADD COLUMN point.z DOUBLE")
    sql(spark, f"ALTER TABLE {name} RENAME COLUMN data TO payload")
    sql(spark, f"ALTER TABLE {name} RENAME COLUMN point.x TO px")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN n TYPE BIGINT")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN f TYPE DOUBLE")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN payload COMMENT 'the payload'")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN id DROP NOT NULL")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN note FIRST")
    sql(spark, f"ALTER TABLE {name} ALTER COLUMN payload AFTER note")
    sql(spark, f"ALTER TABLE {name} DROP COLUMN point.y")
    sql(spark, f"ALTER TABLE {name} DROP COLUMN f")
    schema = catalog.load_table(table_name).schema()
    assert [(f.name, f.required) for f in schema.fields] == [
        ("note", False),
        ("payload", False),
        ("id", False),
        ("n", False),
        ("point", False),
    ]
    assert schema.find_field("n").field_type == LongType()
    assert schema.find_field("payload").doc == "the payload"
    point = schema.find_field("point").field_type
    assert isinstance(point, StructType) and [f.name for f in point.fields] == ["px", "z"]
    with pytest.raises(ValidationError):
        sql(spark, f"ALTER TABLE {name} ALTER COLUMN n TYPE INT")  # narrowing is refused
    assert catalog.load_table(table_name).schema().find_field("n").field_type == LongType()


def test_partition_fields_order_identifiers_and_refs(spark: Any, catalog: Catalog, table_name: str) -> None:
    name = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {name} (id BIGINT NOT NULL, ts TIMESTAMP, category STRING) USING iceberg")
    sql(spark, f"ALTER TABLE {name} ADD PARTITION FIELD bucket(16, id)")
    sql(spark, f"ALTER TABLE {name} ADD PARTITION FIELD truncate(4, category) AS cat")
    sql(spark, f"ALTER TABLE {name} ADD PARTITION FIELD years(ts)")
    t = catalog.load_table(table_name)
    assert [f.name for f in t.spec().fields] == ["id_bucket_16", "cat", "ts_year"]
    sql(spark, f"ALTER TABLE {name} DROP PARTITION FIELD cat")
    sql(spark, f"ALTER TABLE {name} REPLACE PARTITION FIELD years(ts) WITH days(ts) AS day")
    sql(spark, f"ALTER TABLE {name} DROP PARTITION FIELD bucket(16, id)")
    t = catalog.load_table(table_name)
    live = [f.name for f in t.spec().fields if str(f.transform) != "void"]
    assert live == ["day"]
    sql(spark, f"ALTER TABLE {name} WRITE ORDERED BY category ASC NULLS LAST, id DESC")
    t = catalog.load_table(table_name)
    order = t.sort_order()
    assert [(f.direction, f.null_order) for f in order.fields] == [
        (SortDirection.ASC, NullOrder.NULLS_LAST),
        (SortDirection.DESC, NullOrder.NULLS_LAST),
    ]
    assert t.properties["write.distribution-mode"] == "range"
    sql(spark, f"ALTER TABLE {name} WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id")
    assert catalog.load_table(table_name).properties["write.distribution-mode"] == "hash"
    sql(spark, f"ALTER TABLE {name} SET IDENTIFIER FIELDS id")
    t = catalog.load_table(table_name)
    assert t.schema().identifier_field_ids == (t.schema().find_field("id").field_id,)
    sql(spark, f"ALTER TABLE {name} DROP IDENTIFIER FIELDS id")
    assert catalog.load_table(table_name).schema().identifier_field_ids == ()

    import pyarrow as pa

    t = catalog.load_table(table_name)
    t.append(
        pa.table(
            {
                "id": pa.array([1], pa.int64()),
                "ts": pa.array([None], pa.timestamp("us", "UTC")),
                "category": ["a"],
            }
        )
    )
    first = t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    t.append(
        pa.table(
            {
                "id": pa.array([2], pa.int64()),
                "ts": pa.array([None], pa.timestamp("us", "UTC")),
                "category": ["b"],
            }
        )
    )
    sql(
        spark,
        f"ALTER TABLE {name} CREATE BRANCH audit RETAIN 7 DAYS WITH SNAPSHOT RETENTION 2 SNAPSHOTS 3 DAYS",
    )
    sql(spark, f"ALTER TABLE {name} CREATE TAG release AS OF VERSION {first} RETAIN 30 DAYS")
    sql(spark, f"ALTER TABLE {name} CREATE BRANCH IF NOT EXISTS audit")
    refs = catalog.load_table(table_name).refs()
    audit, release = refs["audit"], refs["release"]
    assert (audit.ref_type, audit.max_ref_age_ms, audit.min_snapshots_to_keep, audit.max_snapshot_age_ms) == (
        RefType.BRANCH,
        7 * 86_400_000,
        2,
        3 * 86_400_000,
    )
    assert (release.ref_type, release.snapshot_id, release.max_ref_age_ms) == (
        RefType.TAG,
        first,
        30 * 86_400_000,
    )
    sql(spark, f"ALTER TABLE {name} REPLACE BRANCH audit AS OF VERSION {first}")
    assert catalog.load_table(table_name).refs()["audit"].snapshot_id == first
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.branch_audit")) == [(1,)]
    sql(spark, f"ALTER TABLE {name} DROP TAG release")
    sql(spark, f"ALTER TABLE {name} DROP BRANCH IF EXISTS audit")
    sql(spark, f"ALTER TABLE {name} DROP BRANCH IF EXISTS audit")
    assert set(catalog.load_table(table_name).refs()) == {"main"}


def test_ctas_and_replace(spark: Any, catalog: Catalog, table_name: str) -> None:
    name = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {name} USING iceberg PARTITIONED BY (k) TBLPROPERTIES ('format-version' = '3') "
        "AS SELECT id, id % 2 AS k FROM range(5)",
    )
    t = catalog.load_table(table_name)
    assert t.format_version == 3 and [f.name for f in t.spec().fields] == ["k"]
    assert rows(sql(spark, f"SELECT k, count(*) FROM {name} GROUP BY k")) == [(0, 3), (1, 2)]
    sql(spark, f"CREATE OR REPLACE TABLE {name} USING iceberg AS SELECT 'x' AS s")
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [("x",)]
    assert [f.name for f in catalog.load_table(table_name).schema().fields] == ["s"]
    sql(spark, f"REPLACE TABLE {name} USING iceberg AS SELECT 2 AS n")
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [(2,)]
    sql(spark, f"ALTER TABLE {name} SET TBLPROPERTIES ('format-version' = '4')")  # an upgrade
    assert catalog.load_table(table_name).format_version == 4
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [(2,)]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_replace_keeps_the_table_and_its_history(
    spark: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    name = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {name} (id BIGINT, k STRING) USING iceberg PARTITIONED BY (k) "
        f"TBLPROPERTIES ('format-version' = '{version}', 'keep' = 'yes')",
    )
    sql(spark, f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    before = catalog.load_table(table_name)
    uuid, (first,) = before.metadata.table_uuid, [s.snapshot_id for s in before.snapshots()]
    # RTAS: new schema (id keeps its field id, n is new), new spec, a new snapshot without parent
    sql(
        spark,
        f"CREATE OR REPLACE TABLE {name} USING iceberg PARTITIONED BY (bucket(2, id)) "
        "TBLPROPERTIES ('extra' = '1') AS SELECT id * 10 AS id, 'x' AS n FROM range(3)",
    )
    t = catalog.load_table(table_name)
    assert t.metadata.table_uuid == uuid and t.format_version == version
    assert [(f.field_id, f.name) for f in t.schema().fields] == [(1, "id"), (3, "n")]
    assert [(f.name, str(f.transform)) for f in t.spec().fields] == [("id_bucket", "bucket[2]")]
    assert t.properties["keep"] == "yes" and t.properties["extra"] == "1"
    snaps = t.snapshots()
    assert snaps[0].snapshot_id == first and len(snaps) == 2
    current = t.current_snapshot()
    assert current is not None and current.parent_snapshot_id is None
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [(0, "x"), (10, "x"), (20, "x")]
    assert rows(sql(spark, f"SELECT id, k FROM {name} VERSION AS OF {first}")) == [(1, "a"), (2, "b")]
    assert rows(sql(spark, f"SELECT count(*) FROM {name}.snapshots")) == [(2,)]
    # plain REPLACE: the new definition and no current snapshot; the old snapshots stay
    sql(spark, f"REPLACE TABLE {name} (id BIGINT, v DOUBLE) USING iceberg")
    t = catalog.load_table(table_name)
    assert t.current_snapshot() is None and len(t.snapshots()) == 2
    assert [(f.field_id, f.name) for f in t.schema().fields] == [(1, "id"), (4, "v")]
    assert t.spec().fields == ()
    assert rows(sql(spark, f"SELECT * FROM {name}")) == []
    sql(spark, f"INSERT INTO {name} VALUES (7, 0.5)")
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [(7, 0.5)]
    assert len(catalog.load_table(table_name).snapshots()) == 3
    # a replacement may read the table it replaces (the rows are read before the commit)
    sql(spark, f"CREATE OR REPLACE TABLE {name} USING iceberg AS SELECT id + 1 AS id, v FROM {name}")
    assert rows(sql(spark, f"SELECT * FROM {name}")) == [(8, 0.5)]
    t = catalog.load_table(table_name)
    assert len(t.snapshots()) == 4 and [f.field_id for f in t.schema().fields] == [1, 4]
    # REPLACE of a table that does not exist fails and creates nothing
    with pytest.raises(NoSuchTable):
        sql(spark, f"REPLACE TABLE {name}_missing (id BIGINT) USING iceberg")
    assert not catalog.table_exists(f"{table_name}_missing")


def test_errors_name_position_and_construct(spark: Any, table_name: str) -> None:
    with pytest.raises(SqlSyntaxError, match="line 2, column"):
        sql(spark, f"SELECT 1;\nSELECT * FROM icefloe.{table_name} WHERE")
    with pytest.raises(UnsupportedStatement, match="USING parquet"):
        sql(spark, f"CREATE TABLE icefloe.{table_name} (x INT) USING parquet")
    with pytest.raises(SqlSyntaxError, match="BRANCH or TAG"):
        sql(
            spark,
            f"CREATE TABLE icefloe.{table_name} (x INT); ALTER TABLE icefloe.{table_name} CREATE BRUNCH b",
        )
