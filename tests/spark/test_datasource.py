"""The ``icefloe`` Python data source: DataFrame reader/writer and SQL temporary views."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from icefloe.catalog.base import Catalog
from icefloe.spark import create_table, plan_read, write_table
from icefloe.spark.datasource import MIN_SLOTS, slot_count
from icefloe.spark.views import create_view
from tests.spark.helpers import df_rows, icefloe_rows


def _rows(spark, start: int, n: int):  # type: ignore[no-untyped-def]
    return spark.range(start, start + n, 1, 2).select(
        F.col("id"),
        (F.col("id") % 4).cast("int").alias("grp"),
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("s"),
    )


@pytest.fixture
def grouped(spark, catalog: Catalog, table_name: str):  # type: ignore[no-untyped-def]
    """A table partitioned by ``grp`` holding ids 0..99."""
    create_table(spark, table_name, "id BIGINT NOT NULL, grp INT, s STRING", partitioned_by=["grp"])
    write_table(_rows(spark, 0, 100), table_name)
    return catalog.load_table(table_name)


def test_format_load_reads_every_row(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("icefloe").load(table_name)
    assert df.columns == ["id", "grp", "s"]
    assert df_rows(df) == icefloe_rows(grouped)
    # one input partition per slot: a few small files fill the minimum (test_datasource_slots.py)
    assert len(plan_read(grouped).files) <= MIN_SLOTS
    assert df.rdd.getNumPartitions() == slot_count(grouped.metadata) == MIN_SLOTS


def test_spark_filters_select_rows(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("icefloe").option("table", table_name).load().where("grp = 2 and id > 50")
    assert df_rows(df) == [(i, 2, f"v{i}") for i in range(100) if i % 4 == 2 and i > 50]


def test_columns_and_filter_options(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    df = spark.read.format("icefloe").option("columns", "s, id").option("filter", "id < 3").load(table_name)
    assert df.columns == ["id", "s"]  # table order
    assert df_rows(df) == [(0, "v0"), (1, "v1"), (2, "v2")]


def test_dataframe_writer_append_and_overwrite(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    _rows(spark, 100, 20).write.format("icefloe").mode("append").save(table_name)
    assert [r[0] for r in icefloe_rows(grouped)] == list(range(120))
    _rows(spark, 500, 8).write.format("icefloe").mode("overwrite").option("table", table_name).save()
    assert df_rows(_rows(spark, 500, 8)) == icefloe_rows(grouped)
    (
        _rows(spark, 600, 2)
        .write.format("icefloe")
        .mode("overwrite")
        .option("partition-overwrite", "dynamic")
        .save(table_name)
    )
    rows = icefloe_rows(grouped, ["id", "grp"])
    assert rows == sorted([(i, i % 4) for i in range(500, 508) if i % 4 not in (0, 1)] + [(600, 0), (601, 1)])


def test_dataframe_writer_rejects_bad_input(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    before = grouped.current_snapshot()
    with pytest.raises(Exception, match="required column 'id' is missing"):
        _rows(spark, 0, 5).drop("id").write.format("icefloe").mode("append").save(table_name)
    grouped.refresh()
    assert grouped.current_snapshot() == before


def test_sql_temporary_view(spark, grouped, table_name: str) -> None:  # type: ignore[no-untyped-def]
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW ds_view USING icefloe OPTIONS (table '{table_name}')")
    assert spark.sql("SELECT count(*) FROM ds_view WHERE grp = 1").collect()[0][0] == 25
    spark.sql("INSERT INTO ds_view SELECT id, CAST(id % 4 AS INT), 'sql' FROM range(100, 110)")
    assert len(icefloe_rows(grouped)) == 110
    spark.sql("INSERT OVERWRITE ds_view SELECT id, 0, 'over' FROM range(3)")
    assert icefloe_rows(grouped) == [(0, 0, "over"), (1, 0, "over"), (2, 0, "over")]
    create_view(spark, "ds_view2", table_name)
    assert spark.sql("SELECT sum(id) FROM ds_view2").collect()[0][0] == 3


def test_empty_table_through_the_data_source(spark, catalog: Catalog, table_name: str) -> None:  # type: ignore[no-untyped-def]
    create_table(spark, table_name, "a INT NOT NULL, b STRING")
    df = spark.read.format("icefloe").load(table_name)
    assert df.collect() == []
    assert [f.name for f in df.schema.fields] == ["a", "b"]


def test_catalog_options_naming_a_rest_catalog_drop_the_baked_sql_settings() -> None:
    from icefloe.spark.worker_catalog import catalog_props as _catalog_props

    baked = {"uri": "sqlite:///cat.db", "warehouse": "/wh"}
    rest = {"type": "rest", "uri": "http://h:8181"}
    assert _catalog_props({"catalog-uri": "http://h:8181"}, baked) == rest  # the scheme says REST
    assert _catalog_props({"catalog.type": "REST", "catalog.uri": "http://h:8181"}, baked) == {
        "type": "REST",
        "uri": "http://h:8181",
    }
    assert _catalog_props({"warehouse": "/other"}, baked) == {
        "uri": "sqlite:///cat.db",
        "warehouse": "/other",
    }


def test_catalog_options_naming_another_server_leave_the_sessions_login_behind() -> None:
    """A session on one REST catalog, options naming another: the session's token, client
    credential and extra headers must not be sent there (the same server keeps them)."""
    from icefloe.spark.worker_catalog import catalog_props as _catalog_props

    baked = {
        "type": "rest",
        "uri": "https://a:8181",
        "token": "t0ken-a",
        "credential": "id:s3cret",
        "header.X-Tenant": "a",
        "ssl.cabundle": "/ca.pem",
    }
    assert _catalog_props({"catalog.uri": "https://b:8181"}, baked) == {
        "type": "rest",
        "uri": "https://b:8181",
        "ssl.cabundle": "/ca.pem",
    }
    assert _catalog_props({"catalog.uri": "https://a:8181", "warehouse": "w"}, baked) == {
        **baked,
        "warehouse": "w",
    }
