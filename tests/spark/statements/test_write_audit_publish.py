"""Write-audit-publish as Iceberg's Spark writes document it: on a table with ``write.wap.enabled``,
``spark.wap.branch`` sends every write to that branch (and reads come from it once it exists), and
``spark.wap.id`` stages a snapshot no branch points at until ``publish_changes``. Without the table
property both settings are ignored, as in Iceberg (``SparkWriteConf.branch``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def wap_session(spark: Any) -> Iterator[Any]:
    """The session, with the WAP settings cleared again afterwards."""
    yield spark
    for key in ("spark.wap.branch", "spark.wap.id"):
        spark.conf.unset(key)


def wap_table(spark: Any, table_name: str, version: int) -> str:
    """A table with ``write.wap.enabled`` and one row ``(1, 'a')`` on main; its SQL name."""
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"""CREATE TABLE {t} (id BIGINT, data STRING) USING iceberg
            TBLPROPERTIES ('format-version' = '{version}', 'write.wap.enabled' = 'true')""",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1, 'a')")
    return t


@pytest.mark.parametrize("version", [2, 4])
def test_writes_go_to_the_wap_branch_then_fast_forward(
    wap_session: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    spark, t = wap_session, wap_table(wap_session, table_name, version)
    sql(spark, "SET spark.wap.branch = audit")  # the branch does not exist yet: it starts from main
    sql(spark, f"INSERT INTO {t} VALUES (2, 'b'), (3, 'c')")
    sql(spark, f"DELETE FROM {t} WHERE id = 1")
    sql(spark, f"UPDATE {t} SET data = 'B' WHERE id = 2")
    sql(spark, f"MERGE INTO {t} t USING (SELECT 3L AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(2, "B")]  # reads follow the WAP branch
    spark.conf.unset("spark.wap.branch")
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "a")]  # main is untouched
    assert rows(sql(spark, f"SELECT * FROM {t}.branch_audit")) == [(2, "B")]
    sql(spark, f"CALL icefloe.system.fast_forward('{table_name}', 'main', 'audit')")
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(2, "B")]
    # a branch_ name and a WAP branch at once is an error that writes nothing
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH other")
    spark.conf.set("spark.wap.branch", "audit")
    before = catalog.load_table(table_name).metadata_location
    with pytest.raises(ValidationError, match="both branch and WAP branch"):
        sql(spark, f"INSERT INTO {t}.branch_other VALUES (9, 'z')")
    assert catalog.load_table(table_name).metadata_location == before


@pytest.mark.parametrize("version", [2, 3])
def test_a_wap_id_stages_a_snapshot_that_publish_changes_makes_current(
    wap_session: Any, catalog: Catalog, table_name: str, version: int
) -> None:
    spark, t = wap_session, wap_table(wap_session, table_name, version)
    main_before = catalog.load_table(table_name).metadata.current_snapshot_id
    spark.conf.set("spark.wap.id", "nightly-1")
    sql(spark, f"INSERT INTO {t} VALUES (2, 'b')")
    table = catalog.load_table(table_name)
    assert table.metadata.current_snapshot_id == main_before  # staged: main did not move
    assert set(table.metadata.refs) == {"main"}  # and no ref points at the staged snapshot
    (staged,) = [s for s in table.metadata.snapshots if s.summary.get("wap.id") == "nightly-1"]
    assert staged.parent_snapshot_id == main_before
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "a")]
    assert rows(sql(spark, f"SELECT * FROM {t} VERSION AS OF {staged.snapshot_id}")) == [(1, "a"), (2, "b")]
    # both settings at once is Iceberg's error, and nothing is written
    spark.conf.set("spark.wap.branch", "audit")
    with pytest.raises(ValidationError, match="Cannot set both WAP ID and branch"):
        sql(spark, f"INSERT INTO {t} VALUES (3, 'c')")
    spark.conf.unset("spark.wap.branch")
    spark.conf.unset("spark.wap.id")
    assert len(catalog.load_table(table_name).metadata.snapshots) == 2
    out = sql(spark, f"CALL icefloe.system.publish_changes('{table_name}', 'nightly-1')")
    assert rows(out) == [(staged.snapshot_id, staged.snapshot_id)]
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1, "a"), (2, "b")]


def test_wap_settings_are_ignored_without_the_table_property(
    wap_session: Any, catalog: Catalog, table_name: str
) -> None:
    spark, t = wap_session, f"icefloe.{table_name}"
    sql(spark, f"CREATE TABLE {t} (id BIGINT) USING iceberg")
    spark.conf.set("spark.wap.branch", "audit")
    sql(spark, f"INSERT INTO {t} VALUES (1)")
    spark.conf.unset("spark.wap.branch")
    spark.conf.set("spark.wap.id", "ignored")
    sql(spark, f"INSERT INTO {t} VALUES (2)")
    table = catalog.load_table(table_name)
    assert set(table.metadata.refs) == {"main"}
    assert rows(sql(spark, f"SELECT * FROM {t}")) == [(1,), (2,)]
