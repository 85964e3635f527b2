"""``spark.icefloe.catalog.*`` changed on a running session: SQL, the Python helpers and the
``icefloe`` data source all follow it (two SQLite catalogs, then a Hadoop one), never serving the
previous catalog's table of the same name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import NoSuchTable
from icefloe.spark import jvm_stream, sql
from icefloe.spark.runtime import CATALOG_CONF_PREFIX, catalog_properties, resolve_catalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField


@pytest.fixture
def restored_conf(spark: Any, catalog: Catalog) -> Iterator[dict[str, str]]:
    """The session's catalog settings, put back (and the data source registered with them) after."""
    from icefloe.spark.session_setup import register

    before = catalog_properties(spark)
    try:
        yield before
    finally:
        for key in catalog_properties(spark):
            spark.conf.unset(CATALOG_CONF_PREFIX + key)
        for key, value in before.items():
            spark.conf.set(CATALOG_CONF_PREFIX + key, value)
        register(spark)
        assert resolve_catalog(spark, None) is catalog


def _ids(frame: Any) -> list[int]:
    return sorted(r[0] for r in frame.collect())


def test_catalog_conf_switches_at_runtime(
    spark: Any, catalog: Catalog, tmp_path: Path, restored_conf: dict[str, str]
) -> None:
    assert restored_conf["allow-external-locations"] == "true"  # set at build time, read back too
    sql(spark, "CREATE NAMESPACE IF NOT EXISTS icefloe.switch")
    sql(spark, "CREATE TABLE icefloe.switch.t (id INT) USING iceberg")
    sql(spark, "INSERT INTO icefloe.switch.t VALUES (1)")
    sql(spark, "CREATE TABLE icefloe.switch.only_first (id INT) USING iceberg")
    assert _ids(sql(spark, "SELECT id FROM icefloe.switch.t")) == [1]
    assert _ids(spark.read.format("icefloe").load("switch.t")) == [1]

    # a second SQLite catalog: same table name, other rows
    second_uri, second_wh = f"sqlite:///{tmp_path}/second.db", str(tmp_path / "second-wh")
    spark.conf.set(CATALOG_CONF_PREFIX + "uri", second_uri)
    spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", second_wh)
    sql(spark, "CREATE NAMESPACE icefloe.switch")
    sql(spark, "CREATE TABLE icefloe.switch.t (id INT) USING iceberg")
    sql(spark, "INSERT INTO icefloe.switch.t VALUES (2)")
    assert _ids(sql(spark, "SELECT id FROM icefloe.switch.t")) == [2]
    assert _ids(spark.read.format("icefloe").load("switch.t")) == [2]
    with pytest.raises(NoSuchTable):
        sql(spark, "SELECT id FROM icefloe.switch.only_first")
    second = load_catalog("default", uri=second_uri, warehouse=second_wh)
    assert second.load_table("switch.t").to_arrow().column("id").to_pylist() == [2]
    assert len(list(Path(second_wh, "switch", "t", "metadata").glob("*.metadata.json"))) == 2

    # then a Hadoop catalog: type changes, the SQLite URI is unset
    hadoop_wh = tmp_path / "hadoop-wh"
    spark.conf.set(CATALOG_CONF_PREFIX + "type", "hadoop")
    spark.conf.unset(CATALOG_CONF_PREFIX + "uri")
    spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", str(hadoop_wh))
    assert type(resolve_catalog(spark, None)).__name__ == "HadoopCatalog"
    sql(spark, "CREATE NAMESPACE icefloe.switch")
    sql(spark, "CREATE TABLE icefloe.switch.t (id INT) USING iceberg")
    sql(spark, "INSERT INTO icefloe.switch.t VALUES (3)")
    assert _ids(sql(spark, "SELECT id FROM icefloe.switch.t")) == [3]
    assert _ids(spark.read.format("icefloe").load("switch.t")) == [3]
    assert sorted(p.name for p in (hadoop_wh / "switch" / "t" / "metadata").glob("v*.metadata.json")) == [
        "v1.metadata.json",
        "v2.metadata.json",
    ]

    # and back: the first catalog's table is untouched
    spark.conf.unset(CATALOG_CONF_PREFIX + "type")
    spark.conf.set(CATALOG_CONF_PREFIX + "uri", restored_conf["uri"])
    spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", restored_conf["warehouse"])
    assert _ids(sql(spark, "SELECT id FROM icefloe.switch.t")) == [1]
    assert _ids(spark.read.format("icefloe").load("switch.t")) == [1]
    sql(spark, "DROP NAMESPACE icefloe.switch CASCADE")


def test_any_catalog_property_is_read_at_runtime(spark: Any, restored_conf: dict[str, str]) -> None:
    spark.conf.set(CATALOG_CONF_PREFIX + "header.X-Trace", "a,b -> c")
    assert catalog_properties(spark) == {**restored_conf, "header.X-Trace": "a,b -> c"}
    spark.conf.unset(CATALOG_CONF_PREFIX + "header.X-Trace")
    assert catalog_properties(spark) == restored_conf


def _table_with(catalog: Catalog, ident: str, ids: list[int]) -> None:
    """Create ``ident`` (one BIGINT column ``id``) in ``catalog`` holding ``ids``; no Spark involved."""
    namespace = ident.split(".")[0]
    if not catalog.namespace_exists((namespace,)):
        catalog.create_namespace((namespace,))
    table = catalog.create_table(ident, Schema(NestedField(1, "id", LongType())))
    table.append(pa.table({"id": pa.array(ids, pa.int64())}))


def test_the_data_source_follows_a_conf_change_at_once(
    spark: Any, catalog: Catalog, tmp_path: Path, restored_conf: dict[str, str]
) -> None:
    """With icefloe's jar, ``format("icefloe")`` right after ``spark.conf.set`` reads and writes the
    catalog the conf names, with no icefloe call in between to register the data source again."""
    if not jvm_stream.loaded(spark):
        pytest.skip("without icefloe's jar the data source follows at the next icefloe call")
    _table_with(catalog, "follow.t", [1])
    second_uri, second_wh = f"sqlite:///{tmp_path}/second.db", str(tmp_path / "second-wh")
    second = load_catalog("default", uri=second_uri, warehouse=second_wh)
    _table_with(second, "follow.t", [2])
    hadoop_wh = str(tmp_path / "hadoop-wh")
    hadoop = load_catalog("default", type="hadoop", warehouse=hadoop_wh)
    _table_with(hadoop, "follow.t", [3])
    try:
        assert _ids(spark.read.format("icefloe").load("follow.t")) == [1]
        spark.conf.set(CATALOG_CONF_PREFIX + "uri", second_uri)
        spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", second_wh)
        assert _ids(spark.read.format("icefloe").load("follow.t")) == [2]
        rows = spark.createDataFrame([(5,)], "id BIGINT")
        rows.write.format("icefloe").mode("append").save("follow.t")
        assert sorted(second.load_table("follow.t").to_arrow().column("id").to_pylist()) == [2, 5]
        # another type of catalog: the SQLite URI is unset, not left behind
        spark.conf.set(CATALOG_CONF_PREFIX + "type", "hadoop")
        spark.conf.unset(CATALOG_CONF_PREFIX + "uri")
        spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", hadoop_wh)
        assert _ids(spark.read.format("icefloe").load("follow.t")) == [3]
        spark.conf.unset(CATALOG_CONF_PREFIX + "type")
        spark.conf.set(CATALOG_CONF_PREFIX + "uri", restored_conf["uri"])
        spark.conf.set(CATALOG_CONF_PREFIX + "warehouse", restored_conf["warehouse"])
        assert _ids(spark.read.format("icefloe").load("follow.t")) == [1]
        assert catalog.load_table("follow.t").to_arrow().column("id").to_pylist() == [1]
    finally:
        catalog.drop_table("follow.t")
        catalog.drop_namespace(("follow",))
