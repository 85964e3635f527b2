"""The statement suite's scenarios through a REST catalog: Spark SQL run with ``catalog=`` an icefloe
REST client of ``icefloe serve`` over the session's SQL catalog. Every commit Spark makes goes through
the server, so each scenario also checks what a direct reader of the backing SQL catalog sees."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.io.fileio import local_path
from icefloe.server import ServerConfig, start_server
from icefloe.spark import sql

Row = tuple[Any, ...]


def rows(df: Any) -> list[Row]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.fixture(scope="module")
def server_uri(catalog: SqlCatalog) -> Iterator[str]:
    """One server over the session's catalog for the module's tests."""
    with start_server(ServerConfig(catalog)) as server:
        yield server.uri


@pytest.fixture
def rest(server_uri: str) -> Iterator[RestCatalog]:
    """A fresh REST client of the module's server."""
    client = load_catalog("icefloe", type="rest", uri=server_uri)
    assert isinstance(client, RestCatalog)
    yield client
    client.close()


def direct_rows(catalog: SqlCatalog, ident: str) -> list[Row]:
    """The table's rows as a direct reader of the backing SQL catalog sees them."""
    table = catalog.load_table(ident).scan().to_arrow()
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_ddl_dml_and_time_travel(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog, server_uri: str, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    run = lambda text: sql(spark, text, catalog=rest)  # noqa: E731
    run(
        f"""CREATE TABLE {t} (id BIGINT NOT NULL, category STRING, amount INT) USING iceberg
            PARTITIONED BY (category)
            TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read',
                           'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')"""
    )
    assert rows(run(f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 30)")) == [(3, 3)]
    first = catalog.load_table(table_name).metadata.current_snapshot_id
    assert rows(run(f"DELETE FROM {t} WHERE id = 1")) == [(1,)]
    assert rows(run(f"UPDATE {t} SET amount = amount + 1 WHERE id = 3")) == [(1,)]
    assert direct_rows(catalog, table_name) == [(2, "a", 20), (3, "b", 31)]
    # schema evolution and partition evolution
    run(f"ALTER TABLE {t} ADD COLUMN note STRING")
    run(f"ALTER TABLE {t} RENAME COLUMN amount TO total")
    run(f"ALTER TABLE {t} ADD PARTITION FIELD bucket(4, id)")
    run(f"INSERT INTO {t} VALUES (4, 'c', 40, 'x')")
    assert rows(run(f"SELECT * FROM {t}")) == [(2, "a", 20, None), (3, "b", 31, None), (4, "c", 40, "x")]
    table = catalog.load_table(table_name)
    assert [f.name for f in table.schema().fields] == ["id", "category", "total", "note"]
    assert len(table.metadata.partition_specs) == 2
    # MERGE merge-on-read, then copy-on-write
    spark.createDataFrame([(2, 200), (5, 50)], "id long, v int").createOrReplaceTempView("rest_src")
    merge = f"""MERGE INTO {t} AS tgt USING rest_src AS src ON tgt.id = src.id
                WHEN MATCHED THEN UPDATE SET total = src.v
                WHEN NOT MATCHED THEN INSERT (id, category, total) VALUES (src.id, 'm', src.v)"""
    assert rows(run(merge)) == [(2, 1, 0, 1)]
    run(f"ALTER TABLE {t} SET TBLPROPERTIES ('write.merge.mode' = 'copy-on-write')")
    spark.createDataFrame([(3, 300), (6, 60)], "id long, v int").createOrReplaceTempView("rest_src")
    assert rows(run(merge)) == [(2, 1, 0, 1)]
    expected = [
        (2, "a", 200, None),
        (3, "b", 300, None),
        (4, "c", 40, "x"),
        (5, "m", 50, None),
        (6, "m", 60, None),
    ]
    assert rows(run(f"SELECT * FROM {t}")) == expected
    assert direct_rows(catalog, table_name) == expected
    # time travel
    assert rows(run(f"SELECT id, amount FROM {t} VERSION AS OF {first}")) == [(1, 10), (2, 20), (3, 30)]
    ts = catalog.load_table(table_name).snapshot_by_id(first).timestamp_ms
    assert rows(run(f"SELECT count(*) FROM {t} TIMESTAMP AS OF {ts / 1000}")) == [(3,)]
    # metadata tables
    snapshot_ids = [s.snapshot_id for s in catalog.load_table(table_name).snapshots()]
    assert [
        r[0] for r in run(f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at").collect()
    ] == snapshot_ids
    assert [
        r[0] for r in run(f"SELECT snapshot_id FROM {t}.history ORDER BY made_current_at").collect()
    ] == snapshot_ids
    for meta in ("files", "manifests", "refs", "partitions", "entries"):  # as a direct reader sees them
        query = f"SELECT * FROM {t}.{meta}"
        assert sorted(map(repr, run(query).collect())) == sorted(map(repr, sql(spark, query).collect())), meta
    # INSERT OVERWRITE (static partition)
    run(f"INSERT OVERWRITE {t} PARTITION (category = 'm') SELECT 7, 70, 'o'")
    assert direct_rows(catalog, table_name) == [*expected[:3], (7, "m", 70, "o")]
    # PyIceberg's REST client of the same server reads what Spark committed (v2 positional deletes)
    from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog

    peer = PyIcebergRestCatalog("peer", uri=server_uri).load_table(table_name)
    assert sorted(tuple(r.values()) for r in peer.scan().to_arrow().to_pylist()) == [
        *expected[:3],
        (7, "m", 70, "o"),
    ]


def test_procedures_branches_and_write_audit_publish(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    run = lambda text: sql(spark, text, catalog=rest)  # noqa: E731
    run(f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '2')")
    for i in range(3):
        run(f"INSERT INTO {t} VALUES ({10 * i}), ({10 * i + 1})")
    s1, s2, s3 = (s.snapshot_id for s in catalog.load_table(table_name).snapshots())
    assert rows(run(f"CALL icefloe.system.rollback_to_snapshot('{table_name}', {s1})")) == [(s3, s1)]
    assert catalog.load_table(table_name).metadata.current_snapshot_id == s1
    assert rows(run(f"SELECT id FROM {t}")) == [(0,), (1,)]
    assert rows(run(f"CALL icefloe.system.set_current_snapshot(table => '{t}', snapshot_id => {s2})")) == [
        (s1, s2)
    ]
    ((source, picked),) = rows(run(f"CALL icefloe.system.cherrypick_snapshot('{table_name}', {s3})"))
    assert (source, picked) == (s3, s3)  # a child of the head: fast-forwarded
    assert [r[0] for r in run(f"CALL icefloe.system.ancestors_of('{table_name}')").collect()] == [s3, s2, s1]
    # branches and tags
    run(f"ALTER TABLE {t} CREATE BRANCH dev")
    run(f"ALTER TABLE {t} CREATE TAG v1")
    run(f"INSERT INTO {t}.branch_dev VALUES (99)")
    refs = catalog.load_table(table_name).refs()
    assert set(refs) == {"main", "dev", "v1"} and refs["v1"].snapshot_id == s3
    assert rows(run(f"SELECT count(*) FROM {t} VERSION AS OF 'dev'")) == [(7,)]
    assert rows(run(f"SELECT count(*) FROM {t} VERSION AS OF 'v1'")) == [(6,)]
    assert rows(run(f"CALL icefloe.system.fast_forward('{table_name}', 'main', 'dev')")) == [
        ("main", s3, refs["dev"].snapshot_id)
    ]
    assert direct_rows(catalog, table_name) == [(0,), (1,), (10,), (11,), (20,), (21,), (99,)]
    # write-audit-publish: a staged snapshot, published
    run(f"ALTER TABLE {t} SET TBLPROPERTIES ('write.wap.enabled' = 'true')")
    spark.conf.set("spark.wap.id", "rest-wap")
    try:
        run(f"INSERT INTO {t} VALUES (100)")
    finally:
        spark.conf.unset("spark.wap.id")
    (staged,) = [
        s for s in catalog.load_table(table_name).snapshots() if s.summary.get("wap.id") == "rest-wap"
    ]
    assert rows(run(f"SELECT count(*) FROM {t}")) == [(7,)]
    out = run(f"CALL icefloe.system.publish_changes('{table_name}', 'rest-wap')")
    assert rows(out) == [(staged.snapshot_id, staged.snapshot_id)]
    assert rows(run(f"SELECT count(*) FROM {t}")) == [(8,)]
    # maintenance
    ((files_before,),) = rows(run(f"SELECT count(*) FROM {t}.data_files"))
    out = run(
        f"CALL icefloe.system.rewrite_data_files(table => '{table_name}', "
        "options => map('min-input-files', '2'))"
    )
    assert out.collect()[0][:2] == (files_before, 1)
    out = run(
        f"CALL icefloe.system.expire_snapshots(table => '{table_name}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)"
    )
    assert out.collect()[0][4] > 0  # manifest lists deleted
    table = catalog.load_table(table_name)
    assert {s.snapshot_id for s in table.snapshots()} >= {table.metadata.current_snapshot_id}
    assert (
        rows(run(f"CALL icefloe.system.remove_orphan_files(table => '{table_name}', dry_run => true)")) == []
    )
    assert direct_rows(catalog, table_name) == [(0,), (1,), (10,), (11,), (20,), (21,), (99,), (100,)]
    location = catalog.load_table(table_name).location()
    run(f"DROP TABLE {t} PURGE")
    assert not catalog.table_exists(table_name)
    left = [p for p in Path(local_path(location) or "").rglob("*") if p.is_file()]
    assert left == []  # the server purged every file (empty directories may stay, as in Iceberg)


def test_commits_through_one_client_are_seen_by_another(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog, server_uri: str, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    other = load_catalog("icefloe", type="rest", uri=server_uri)
    try:
        sql(spark, f"CREATE TABLE {t} (id BIGINT, data STRING) USING iceberg", catalog=rest)
        held = rest.load_table(table_name)  # loaded before Spark commits through the other client
        sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')", catalog=other)
        assert held.refresh().scan().to_arrow().num_rows == 2
        # Spark on the first client sees what the other committed, and commits on top of it
        sql(spark, f"UPDATE {t} SET data = 'B' WHERE id = 2", catalog=other)
        assert rows(sql(spark, f"SELECT * FROM {t}", catalog=rest)) == [(1, "a"), (2, "B")]
        sql(spark, f"DELETE FROM {t} WHERE id = 1", catalog=rest)
        assert rows(sql(spark, f"SELECT * FROM {t}", catalog=other)) == [(2, "B")]
        # a commit on the stale table object of the first client lands on top of Spark's
        import pyarrow as pa

        sql(spark, f"INSERT INTO {t} VALUES (3, 'c')", catalog=other)
        held.append(pa.table({"id": pa.array([4], pa.int64()), "data": ["d"]}))
        assert direct_rows(catalog, table_name) == [(2, "B"), (3, "c"), (4, "d")]
        # the SQL catalog's own commits are seen by Spark through REST too
        catalog.load_table(table_name).append(pa.table({"id": pa.array([5], pa.int64()), "data": ["e"]}))
        assert rows(sql(spark, f"SELECT id FROM {t}", catalog=rest)) == [(2,), (3,), (4,), (5,)]
        assert rows(sql(spark, f"SELECT count(*) FROM {t}.snapshots", catalog=rest)) == [
            (len(catalog.load_table(table_name).snapshots()),)
        ]
    finally:
        other.close()


def test_python_api_and_streaming_through_rest(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog, server_uri: str, table_name: str, tmp_path: Path
) -> None:
    from icefloe.spark import (
        create_view,
        delete_rows,
        merge_into,
        read_table,
        rewrite_data_files,
        stream_writer,
        write_table,
    )

    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, data STRING) USING iceberg", catalog=rest)
    frame = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, data string")
    write_table(frame, table_name, catalog=rest)
    write_table(spark.createDataFrame([(4, "d")], "id long, data string"), table_name, catalog=rest)
    assert delete_rows(spark, table_name, "id = 1", catalog=rest).deleted_rows == 1
    merge_into(
        spark.createDataFrame([(2, "B"), (5, "e")], "id long, data string"), table_name, on="id", catalog=rest
    )
    rewrite_data_files(spark, table_name, rewrite_all=True, catalog=rest)
    expected = [(2, "B"), (3, "c"), (4, "d"), (5, "e")]
    assert rows(read_table(spark, table_name, catalog=rest)) == expected
    assert direct_rows(catalog, table_name) == expected
    # a micro-batch writer and the data source's streaming sink, each committing through REST
    write = stream_writer(table_name, query_id="rest-q", catalog=rest)
    batch = spark.createDataFrame([(6, "f")], "id long, data string")
    write(batch, 0)
    write(batch, 0)  # a replay commits nothing
    assert direct_rows(catalog, table_name) == [*expected, (6, "f")]
    (
        spark.createDataFrame([(7, "g")], "id long, data string")
        .write.format("icefloe")
        .option("table", table_name)
        .option("catalog.type", "rest")
        .option("catalog.uri", server_uri)
        .mode("append")
        .save()
    )
    assert direct_rows(catalog, table_name) == [*expected, (6, "f"), (7, "g")]
    # an http(s) catalog URI alone names a REST catalog: batch read and streaming sink
    source = tmp_path / "in"
    source.mkdir()
    (source / "0.json").write_text('{"id": 8, "data": "h"}\n')
    query = (
        spark.readStream.schema("id BIGINT, data STRING")
        .json(str(source))
        .writeStream.format("icefloe")
        .option("table", table_name)
        .option("catalog-uri", server_uri)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    everything = [*expected, (6, "f"), (7, "g"), (8, "h")]
    assert direct_rows(catalog, table_name) == everything
    read = spark.read.format("icefloe").option("table", table_name).option("catalog-uri", server_uri).load()
    assert rows(read) == everything
    create_view(spark, "rest_catalog_view", table_name, catalog_uri=server_uri)
    assert rows(spark.table("rest_catalog_view")) == everything
    spark.catalog.dropTempView("rest_catalog_view")
    # a streaming read of the REST table (append snapshots only: skip the DELETE and MERGE ones)
    query = (
        spark.readStream.format("icefloe")
        .option("catalog-uri", server_uri)
        .option("skip-delete-snapshots", "true")
        .option("skip-overwrite-snapshots", "true")
        .load(table_name)
        .writeStream.format("memory")
        .queryName("rest_catalog_stream")
        .option("checkpointLocation", str(tmp_path / "read-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    streamed = sorted(r[0] for r in spark.sql("SELECT id FROM rest_catalog_stream").collect())
    spark.catalog.dropTempView("rest_catalog_stream")
    assert streamed == [1, 2, 3, 4, 6, 7, 8]  # the rows of the appends (5 came in the MERGE's overwrite)
    sql(spark, f"DROP TABLE {t} PURGE", catalog=rest)


def test_namespaces_replace_and_row_level_metadata(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog
) -> None:
    ns = f"rest_sql_{uuid.uuid4().hex[:8]}"
    t = f"icefloe.{ns}.t"
    run = lambda text: sql(spark, text, catalog=rest)  # noqa: E731
    run(f"CREATE DATABASE icefloe.{ns} COMMENT 'docs' WITH DBPROPERTIES ('owner' = 'me')")
    assert catalog.load_namespace_properties((ns,))["owner"] == "me"
    run(
        f"""CREATE TABLE {t} (id BIGINT COMMENT 'key', s STRING) USING iceberg PARTITIONED BY (s)
            TBLPROPERTIES ('format-version' = '3', 'write.delete.mode' = 'merge-on-read')"""
    )
    assert rows(run(f"SHOW TABLES IN icefloe.{ns}")) == [(ns, "t", False)]
    assert ("id", "bigint", "key") in rows(run(f"DESCRIBE TABLE {t}"))
    run(f"ALTER TABLE {t} SET TBLPROPERTIES ('k' = 'v')")
    assert rows(run(f"SHOW TBLPROPERTIES {t} ('k')")) == [("k", "v")]
    # deletion vectors written through REST, seen by the row-level metadata tables
    run(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a')")
    run(f"DELETE FROM {t} WHERE id = 1")
    run(f"DELETE FROM {t} WHERE id = 2")
    assert rows(run(f"SELECT pos, partition.s FROM {t}.position_deletes")) == [(0, "a"), (0, "b")]
    ids = [s.snapshot_id for s in catalog.load_table((ns, "t")).snapshots()]
    assert rows(run(f"SELECT id, _change_type, _commit_snapshot_id FROM {t}.changes")) == [
        (1, "DELETE", ids[1]),
        (1, "INSERT", ids[0]),
        (2, "DELETE", ids[2]),
        (2, "INSERT", ids[0]),
        (3, "INSERT", ids[0]),
    ]
    # statistics procedures commit statistics files through the server
    ((path,),) = rows(run(f"CALL icefloe.system.compute_table_stats('{ns}.t')"))
    ((partition_path,),) = rows(run(f"CALL icefloe.system.compute_partition_stats('{ns}.t')"))
    metadata = catalog.load_table((ns, "t")).metadata
    assert [s["statistics-path"] for s in metadata.statistics] == [path]
    assert [s["statistics-path"] for s in metadata.partition_statistics] == [partition_path]
    # CTAS, RTAS and RENAME
    run(f"CREATE TABLE {t}2 USING iceberg PARTITIONED BY (k) AS SELECT id, id % 2 AS k FROM range(5)")
    run(f"CREATE OR REPLACE TABLE {t}2 USING iceberg AS SELECT id * 10 AS id FROM {t}2 WHERE k = 1")
    replaced = catalog.load_table((ns, "t2"))
    assert len(replaced.snapshots()) == 2 and direct_rows(catalog, f"{ns}.t2") == [(10,), (30,)]
    run(f"ALTER TABLE {t}2 RENAME TO icefloe.{ns}.t3")
    assert catalog.list_tables(ns) == [(ns, "t"), (ns, "t3")]
    run(f"DROP NAMESPACE icefloe.{ns} CASCADE")
    assert not catalog.namespace_exists((ns,))
