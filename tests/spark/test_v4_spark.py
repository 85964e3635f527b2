"""Spark on format-version 4 tables: writes, overwrites, reads with filters and metadata columns,
time travel, the ``icefloe`` data source and SQL, on trees with inline root entries, leaves,
manifest DVs and colocated deletion vectors.

Expected rows come from a model of the table kept in the test (the ids written and deleted), and
from icefloe's own Arrow reader where the two routes must agree.
"""

from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.io.fileio import local_path
from icefloe.spark import create_table, plan_read, read_table, write_table
from icefloe.spec.content import EntryStatus
from icefloe.tree.v4_read import read_root
from tests.spark.helpers import df_rows, icefloe_rows, sorted_rows

UTC = dt.UTC
BASE = dt.datetime(2024, 5, 1, tzinfo=UTC)
DDL = "id BIGINT NOT NULL, ts TIMESTAMP, k STRING, x DOUBLE"


def _data(spark, start: int, n: int, k: str | None = None):  # type: ignore[no-untyped-def]
    return spark.range(start, start + n, 1, 2).select(
        F.col("id"),
        (F.lit(BASE) + F.make_interval(days=(F.col("id") % 6).cast("int"))).alias("ts"),
        (F.lit(k) if k is not None else F.concat(F.lit("k"), (F.col("id") % 3).cast("string"))).alias("k"),
        (F.col("id") * 0.5).alias("x"),
    )


def _model(ids: dict[int, str]) -> list[tuple[object, ...]]:
    return sorted((i, BASE + dt.timedelta(days=i % 6), k, i * 0.5) for i, k in ids.items())


def _default_k(ids: range) -> dict[int, str]:
    return {i: f"k{i % 3}" for i in ids}


def _day(i: int) -> int:
    return (BASE + dt.timedelta(days=i % 6) - dt.datetime(1970, 1, 1, tzinfo=UTC)).days


@pytest.fixture
def v4(spark, catalog: Catalog, table_name: str):  # type: ignore[no-untyped-def]
    """A v4 table partitioned by day: 600 rows in files that go to a leaf, then one single-row file
    that stays inline in the root (at most 4 inline entries)."""
    create_table(
        spark,
        table_name,
        DDL,
        partitioned_by=["days(ts)"],
        properties={"format-version": "4", "write.v4.root.max-inline-entries": "4"},
    )
    write_table(_data(spark, 0, 600), table_name)
    write_table(_data(spark, 600, 1).coalesce(1), table_name)  # one file: an inline root entry
    table = catalog.load_table(table_name)
    assert table.format_version == 4
    return table


def test_appends_write_v4_roots_and_read_back(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    first, second = v4.snapshots()
    assert first.root_manifest and second.root_manifest and first.manifest_list is None
    root = read_root(v4.io, v4.metadata, second.root_manifest)
    assert root.refs, "the 600-row append went to leaves"
    assert [e.data_file.record_count for e in root.inline if e.status == EntryStatus.ADDED] == [1]
    want = _model(_default_k(range(601)))
    assert df_rows(read_table(spark, table_name)) == want
    assert icefloe_rows(v4) == want
    assert df_rows(spark.read.format("icefloe").load(table_name)) == want


def test_filters_prune_and_metadata_columns(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    flt = "ts >= '2024-05-03T00:00:00+00:00' and ts < '2024-05-04T00:00:00+00:00' and id > 100"
    full, plan = plan_read(v4), plan_read(v4, row_filter=flt)
    assert 0 < len(plan.files) < len(full.files)
    df = read_table(spark, table_name, filter=flt)
    assert df_rows(df) == [r for r in _model(_default_k(range(601))) if r[0] % 6 == 2 and r[0] > 100]
    cols = ["id", "_row_id", "_last_updated_sequence_number", "_file", "_pos"]
    meta = read_table(spark, table_name, columns=cols)
    got = df_rows(meta, cols)
    assert got == sorted_rows(v4.scan(columns=tuple(cols)).to_arrow(), cols)
    assert sorted(r[1] for r in got) == list(range(601))  # row ids: one range per append
    assert {r[2] for r in got if r[0] < 600} == {1} and {r[2] for r in got if r[0] == 600} == {2}
    # _file / _pos name the row's place in its data file
    for i, _, _, path, pos in got[::97]:
        ids = pq.read_table(local_path(path), columns=["id"]).column("id").to_pylist()
        assert ids[pos] == i
    via_source = spark.read.format("icefloe").option("filter", "id < 5").load(table_name)
    assert df_rows(via_source) == _model(_default_k(range(5)))


def test_overwrites_static_dynamic_and_full(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    ids = _default_k(range(601))
    snap = write_table(
        _data(spark, 0, 50, k="static"), table_name, mode="overwrite", overwrite_filter="id < 50"
    )
    assert snap is not None and snap.summary["operation"] == "overwrite" and snap.root_manifest
    ids.update(dict.fromkeys(range(50), "static"))
    assert df_rows(read_table(spark, table_name)) == _model(ids)
    # dynamic: every day present in the new rows is replaced, the other days are kept
    newer = _data(spark, 1000, 2, k="dyn")  # ids 1000, 1001 -> days 4 and 5 (id % 6)
    replaced_days = {_day(1000), _day(1001)}
    write_table(newer, table_name, mode="overwrite", partition_overwrite="dynamic")
    ids = {i: k for i, k in ids.items() if _day(i) not in replaced_days}
    ids.update({1000: "dyn", 1001: "dyn"})
    assert df_rows(read_table(spark, table_name)) == _model(ids)
    assert icefloe_rows(v4) == _model(ids)
    # through the data source, then a full overwrite
    _data(spark, 2000, 3).write.format("icefloe").mode("append").save(table_name)
    ids.update(_default_k(range(2000, 2003)))
    assert df_rows(spark.read.format("icefloe").load(table_name)) == _model(ids)
    _data(spark, 3000, 4).write.format("icefloe").mode("overwrite").save(table_name)
    assert df_rows(read_table(spark, table_name)) == _model(_default_k(range(3000, 3004)))


def test_reads_apply_v4_deletes(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    ids = _default_k(range(601))
    cols = ["id", "_row_id"]
    row_ids = dict(df_rows(read_table(spark, table_name, columns=cols), cols))
    v4.delete("id in (7, 14, 600)", mode="merge-on-read")  # colocated DVs
    for i in (7, 14, 600):
        del ids[i]
    v4.delete("ts >= '2024-05-02T00:00:00+00:00' and ts < '2024-05-03T00:00:00+00:00'")  # whole files
    ids = {i: k for i, k in ids.items() if i % 6 != 1}
    v4.refresh()
    plan = plan_read(v4)
    assert plan.python, "files with deletion vectors take the route that applies them"
    assert df_rows(read_table(spark, table_name)) == _model(ids)
    assert df_rows(spark.read.format("icefloe").load(table_name)) == _model(ids)
    assert icefloe_rows(v4) == _model(ids)
    lineage = df_rows(read_table(spark, table_name, columns=cols), cols)
    assert lineage == sorted((i, row_ids[i]) for i in ids)  # rows keep their ids across deletes


def test_time_travel_branches_and_tags(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    first, second = v4.snapshots()
    with v4.manage_snapshots() as ms:
        ms.create_tag("before-delete", second.snapshot_id)
    v4.delete("id < 300")
    assert read_table(spark, table_name).count() == 301
    assert read_table(spark, table_name, snapshot_id=first.snapshot_id).count() == 600
    assert read_table(spark, table_name, as_of_timestamp=second.timestamp_ms).count() == 601
    assert df_rows(read_table(spark, table_name, tag="before-delete")) == _model(_default_k(range(601)))
    snap = write_table(_data(spark, 5000, 5), table_name, branch="audit")
    assert snap is not None and snap.root_manifest
    assert read_table(spark, table_name, branch="audit").count() == 306
    assert read_table(spark, table_name).count() == 301


def test_sql_view_insert_and_select(spark, v4, table_name: str) -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW v4_view USING icefloe OPTIONS (table '{table_name}')")
    assert spark.sql("SELECT count(*) FROM v4_view WHERE k = 'k1'").collect()[0][0] == 200
    spark.sql(
        "INSERT INTO v4_view "
        "SELECT id, TIMESTAMP '2024-05-01 00:00:00+00:00', 'sql', 0.0 FROM range(700, 705)"
    )
    v4.refresh()
    assert v4.current_snapshot().root_manifest  # type: ignore[union-attr]
    assert spark.sql("SELECT count(*) FROM v4_view WHERE k = 'sql'").collect()[0][0] == 5
