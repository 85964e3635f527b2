"""CALL icefloe.system.compute_table_stats: theta sketches per column in a Puffin file registered
for the snapshot; the result column is Iceberg's ``statistics_file``."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import sql


@pytest.mark.parametrize("fv", [2, 4])
def test_compute_table_stats(spark: Any, catalog: Catalog, table_name: str, fv: int) -> None:
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, data STRING) USING iceberg TBLPROPERTIES ('format-version' = '{fv}')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'a'), (3, NULL)")
    first = catalog.load_table(table_name).current_snapshot().snapshot_id
    sql(spark, f"INSERT INTO {t} VALUES (4, 'c')")
    out = sql(spark, f"CALL icefloe.system.compute_table_stats('{table_name}')")
    assert out.columns == ["statistics_file"]
    ((path,),) = [tuple(r) for r in out.collect()]
    stats = catalog.load_table(table_name).metadata.statistics
    assert [s["statistics-path"] for s in stats] == [path]
    assert [(b["fields"], b["properties"]["ndv"]) for b in stats[0]["blob-metadata"]] == [
        ([1], "4"),
        ([2], "3"),
    ]
    # an older snapshot and one column: a second entry, for that snapshot
    out = sql(
        spark,
        f"CALL icefloe.system.compute_table_stats(table => '{table_name}', snapshot_id => {first}, "
        "columns => array('data'))",
    )
    stats = catalog.load_table(table_name).metadata.statistics
    assert len(stats) == 2
    (older,) = [s for s in stats if s["snapshot-id"] == first]
    assert [(b["fields"], b["properties"]["ndv"]) for b in older["blob-metadata"]] == [([2], "2")]
    rows = sql(spark, f"SELECT id, coalesce(data, '-') FROM {t}").collect()
    assert sorted(tuple(r) for r in rows) == [(1, "a"), (2, "b"), (3, "-"), (3, "a"), (4, "c")]


@pytest.mark.parametrize("fv", [3, 4])
def test_compute_partition_stats(spark: Any, catalog: Catalog, table_name: str, fv: int) -> None:
    import pyarrow.parquet as pq

    from icefloe.io.fileio import local_path

    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version' = '{fv}', 'write.delete.mode' = 'merge-on-read')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'x'), (2, 'x'), (3, 'y')")
    sql(spark, f"DELETE FROM {t} WHERE id = 2")
    out = sql(spark, f"CALL icefloe.system.compute_partition_stats(table => '{table_name}')")
    assert out.columns == ["partition_statistics_file"]
    ((path,),) = [tuple(r) for r in out.collect()]
    table = catalog.load_table(table_name)
    assert [s["statistics-path"] for s in table.metadata.partition_statistics] == [path]
    columns = [
        "partition",
        "data_record_count",
        "data_file_count",
        "position_delete_record_count",
        "dv_count",
    ]
    got = pq.read_table(local_path(path), columns=columns).to_pylist()
    assert [tuple(r.values()) for r in got] == [({"p": "x"}, 2, 1, 1, 1), ({"p": "y"}, 1, 1, 0, 0)]
    assert sorted(tuple(r) for r in sql(spark, f"SELECT * FROM {t}").collect()) == [(1, "x"), (3, "y")]


def test_expire_snapshots_counts_the_statistics_files_it_deletes(
    spark: Any, catalog: Catalog, table_name: str
) -> None:
    t = f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT, p STRING) USING iceberg PARTITIONED BY (p)")
    sql(spark, f"INSERT INTO {t} VALUES (1, 'x')")
    first = catalog.load_table(table_name).current_snapshot().snapshot_id
    sql(spark, f"CALL icefloe.system.compute_table_stats('{table_name}')")
    sql(spark, f"CALL icefloe.system.compute_partition_stats('{table_name}')")
    sql(spark, f"INSERT INTO {t} VALUES (2, 'y')")
    out = sql(
        spark,
        f"CALL icefloe.system.expire_snapshots(table => '{table_name}', snapshot_ids => ARRAY({first}))",
    )
    (counts,) = [tuple(r) for r in out.collect()]
    assert counts[-1] == 2  # the theta sketches and the partition statistics of the expired snapshot
    table = catalog.load_table(table_name)
    assert table.metadata.statistics == () and table.metadata.partition_statistics == ()
