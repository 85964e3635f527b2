"""Spark's table options after a table name (``t WITH ('snapshot-id' = '...')``), which sqlglot does
not parse: Iceberg's read options choose the snapshot (or the appended rows) read, tuning options
change nothing, ``snapshot-property.<key>`` lands in the written snapshot's summary, and anything
else is refused before anything is read or written."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spark import sql
from icefloe.spark.statements import UnsupportedStatement


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(params=[2, 4])
def history(
    spark: Any, catalog: Catalog, table_name: str, request: pytest.FixtureRequest
) -> tuple[str, list[int]]:
    """``icefloe.<table>`` after two appends (ids 1, 2 then 3), a tag on the first, a branch with
    one more row (4); returns its name and the two snapshot ids."""
    t = f"icefloe.{table_name}"
    sql(
        spark,
        f"CREATE TABLE {t} (id BIGINT) USING iceberg TBLPROPERTIES ('format-version' = '{request.param}')",
    )
    sql(spark, f"INSERT INTO {t} VALUES (1), (2)")
    sql(spark, f"INSERT INTO {t} VALUES (3)")
    ids = [s.snapshot_id for s in catalog.load_table(table_name).snapshots()]
    sql(spark, f"ALTER TABLE {t} CREATE TAG first AS OF VERSION {ids[0]}")
    sql(spark, f"ALTER TABLE {t} CREATE BRANCH side")
    sql(spark, f"INSERT INTO {t}.branch_side VALUES (4)")
    return t, ids


def test_read_options_choose_the_snapshot(
    spark: Any, catalog: Catalog, history: tuple[str, list[int]]
) -> None:
    t, (first, second) = history
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('snapshot-id' = '{first}')")) == [(1,), (2,)]
    assert rows(sql(spark, f"SELECT x.id FROM {t} WITH (`snapshot-id` = {first}) x WHERE x.id > 1")) == [(2,)]
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('tag' = 'first')")) == [(1,), (2,)]
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('branch' = 'side')")) == [(1,), (2,), (3,), (4,)]
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('split-size' = '1024', 'lookback' = '10')")) == [
        (1,),
        (2,),
        (3,),
    ]
    created = catalog.load_table(t.split(".", 1)[1]).snapshot_by_id(first)
    assert created is not None
    at = created.timestamp_ms
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('as-of-timestamp' = '{at}')")) == [(1,), (2,)]
    # an incremental read: the rows appended after start-snapshot-id (up to end-snapshot-id)
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ('start-snapshot-id' = '{first}')")) == [(3,)]
    incremental = f"'start-snapshot-id' = '{first}', 'end-snapshot-id' = '{second}'"
    assert rows(sql(spark, f"SELECT id FROM {t} WITH ({incremental})")) == [(3,)]
    # options after the time travel clause, and on one side of a join
    travel = (
        f"SELECT a.id FROM {t} VERSION AS OF {first} WITH ('split-size' = '1') a JOIN {t} b ON a.id = b.id"
    )
    assert rows(sql(spark, travel)) == [(1,), (2,)]


def test_unknown_and_conflicting_read_options_are_refused(spark: Any, history: tuple[str, list[int]]) -> None:
    t, (first, second) = history
    with pytest.raises(ValidationError, match=r"unknown read option.*snapshot_id"):
        sql(spark, f"SELECT id FROM {t} WITH ('snapshot_id' = '{first}')")
    with pytest.raises(ValidationError, match="cannot select a snapshot chosen"):
        sql(spark, f"SELECT id FROM {t} VERSION AS OF {second} WITH ('snapshot-id' = '{first}')")
    with pytest.raises(ValidationError, match="select different snapshots"):
        sql(spark, f"SELECT id FROM {t} WITH ('snapshot-id' = '{first}', 'tag' = 'first')")
    with pytest.raises(ValidationError, match="needs start-snapshot-id"):
        sql(spark, f"SELECT id FROM {t} WITH ('end-snapshot-id' = '{second}')")
    spark.range(2).createOrReplaceTempView("options_spark_side")
    with pytest.raises(UnsupportedStatement, match=r"WITH \(options\) on the Spark table"):
        sql(spark, f"SELECT * FROM {t} JOIN options_spark_side WITH ('k' = 'v') ON true")


def test_write_options_add_snapshot_properties(
    spark: Any, catalog: Catalog, history: tuple[str, list[int]]
) -> None:
    t, _ = history
    name = t.split(".", 1)[1]
    sql(spark, f"INSERT INTO {t} WITH ('snapshot-property.origin' = 'nightly') VALUES (5)")
    assert catalog.load_table(name).current_snapshot().summary["origin"] == "nightly"  # type: ignore[union-attr]
    sql(spark, f"DELETE FROM {t} WITH ('snapshot-property.reason' = 'gdpr') WHERE id = 5")
    summary = catalog.load_table(name).current_snapshot().summary  # type: ignore[union-attr]
    assert (summary["operation"], summary["reason"]) == ("delete", "gdpr")
    before = len(catalog.load_table(name).snapshots())
    with pytest.raises(ValidationError, match=r"unsupported write option.*write-format"):
        sql(spark, f"INSERT INTO {t} WITH ('write-format' = 'orc') VALUES (6)")
    assert len(catalog.load_table(name).snapshots()) == before
    assert rows(sql(spark, f"SELECT id FROM {t}")) == [(1,), (2,), (3,)]
