"""Iceberg views on icefloe's catalog through icefloe.spark.sql: DDL, reading, SHOW / DESCRIBE, and
the view metadata the SQL catalog stores (what Iceberg Java's JDBC catalog reads)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.errors import AlreadyExists, NoSuchTable, NotFound
from icefloe.spark import sql
from tests.spark.helpers import drop_namespace_with_contents

Row = tuple[Any, ...]


def rows(df: Any) -> list[Row]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, v) for v in r])


@pytest.fixture
def ns(catalog: SqlCatalog) -> Iterator[str]:
    """A namespace of the test's own, holding table ``t`` (id, name) with four rows."""
    name = f"views_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(name)
    yield name
    drop_namespace_with_contents(catalog, name)


def make_table(spark: Any, ns: str) -> None:
    sql(spark, f"CREATE TABLE icefloe.{ns}.t (id bigint, name string) USING iceberg")
    sql(spark, f"INSERT INTO icefloe.{ns}.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")


def test_create_select_describe_show_and_the_stored_metadata(
    spark: Any, catalog: SqlCatalog, ns: str
) -> None:
    make_table(spark, ns)
    v = f"icefloe.{ns}.v"
    sql(
        spark,
        f"""CREATE VIEW {v} (id COMMENT 'the id', label) COMMENT 'upper names'
            TBLPROPERTIES ('owner' = 'team') AS SELECT id, upper(name) FROM icefloe.{ns}.t WHERE id > 1""",
    )
    frame = sql(spark, f"SELECT * FROM {v}")
    assert frame.columns == ["id", "label"]
    assert rows(frame) == [(2, "B"), (3, "C"), (4, "D")]
    # a view in joins, under an alias, with the query's own filter pushed down to the table
    joined = sql(
        spark, f"SELECT x.label, t.name FROM {v} x JOIN icefloe.{ns}.t t ON x.id = t.id WHERE x.id < 4"
    )
    assert rows(joined) == [("B", "b"), ("C", "c")]
    # what the catalog holds: an iceberg_type = 'VIEW' row naming view metadata
    md, location = SqlViews(catalog).load((ns, "v"))
    assert "/metadata/00000-" in location
    version = md.current_version()
    assert version.sql_for("spark") == f"SELECT id, UPPER(name) FROM icefloe.{ns}.t WHERE id > 1"
    assert version.default_catalog == "spark_catalog" and version.summary["engine-name"] == "Spark"
    assert [(f.name, f.doc) for f in md.schema().fields] == [("id", "the id"), ("label", None)]
    assert md.properties == {
        "comment": "upper names",
        "owner": "team",
        "spark.query-column-names": "id,upper(name)",
    }
    assert not catalog.table_exists((ns, "v"))
    assert rows(sql(spark, f"SHOW VIEWS IN icefloe.{ns}")) == [(ns, "v", False)]
    assert rows(sql(spark, f"DESCRIBE {v}")) == [("id", "bigint", "the id"), ("label", "string", None)]
    assert [tuple(r) for r in sql(spark, f"DESCRIBE EXTENDED {v}").collect()] == [
        ("id", "bigint", "the id"),
        ("label", "string", None),
        ("", "", ""),
        ("# Detailed View Information", "", ""),
        ("Comment", "upper names", ""),
        ("View Catalog and Namespace", f"spark_catalog.{spark.catalog.currentDatabase()}", ""),
        ("View Query Output Columns", "[id, upper(name)]", ""),
        ("View Properties", "[owner=team]", ""),
        ("Created By", f"Spark {spark.version}", ""),
    ]
    assert rows(sql(spark, f"SHOW TBLPROPERTIES {v}")) == [
        ("comment", "upper names"),
        ("owner", "team"),
        ("spark.query-column-names", "id,upper(name)"),
    ]
    assert rows(sql(spark, f"SHOW TBLPROPERTIES {v} ('owner')")) == [("owner", "team")]
    shown = sql(spark, f"SHOW CREATE TABLE {v}").collect()[0][0]
    assert shown == (
        f"CREATE VIEW icefloe.{ns}.v (\n  id COMMENT 'the id',\n  label)\nCOMMENT 'upper names'\n"
        f"TBLPROPERTIES (\n  'owner' = 'team')\nAS\nSELECT id, UPPER(name) FROM icefloe.{ns}.t WHERE id > 1\n"
    )


def test_unqualified_names_resolve_where_the_view_was_made_and_views_nest(spark: Any, ns: str) -> None:
    make_table(spark, ns)
    try:
        sql(spark, f"USE icefloe.{ns}")
        sql(spark, "CREATE VIEW evens AS SELECT id FROM t WHERE id % 2 = 0")
        sql(spark, "CREATE VIEW big_evens AS SELECT id * 10 AS id FROM evens")
        assert rows(sql(spark, "SHOW VIEWS")) == [(ns, "big_evens", False), (ns, "evens", False)]
    finally:
        sql(spark, "USE spark_catalog")
    assert rows(sql(spark, f"SELECT * FROM icefloe.{ns}.big_evens")) == [(20,), (40,)]


def test_replace_alter_rename_and_drop(spark: Any, catalog: SqlCatalog, ns: str) -> None:
    make_table(spark, ns)
    v = f"icefloe.{ns}.v"
    sql(spark, f"CREATE VIEW {v} AS SELECT id FROM icefloe.{ns}.t WHERE id = 1")
    with pytest.raises(AlreadyExists):
        sql(spark, f"CREATE VIEW {v} AS SELECT 1 AS one")
    with pytest.raises(AlreadyExists):
        sql(spark, f"CREATE VIEW icefloe.{ns}.t AS SELECT 1 AS one")  # tables and views share names
    sql(spark, f"CREATE VIEW IF NOT EXISTS {v} AS SELECT 1 AS one")
    assert rows(sql(spark, f"SELECT * FROM {v}")) == [(1,)]
    sql(spark, f"CREATE OR REPLACE VIEW {v} AS SELECT name FROM icefloe.{ns}.t WHERE id = 2")
    assert rows(sql(spark, f"SELECT * FROM {v}")) == [("b",)]
    sql(spark, f"ALTER VIEW {v} SET TBLPROPERTIES ('a' = '1', 'b' = '2')")
    sql(spark, f"ALTER VIEW {v} UNSET TBLPROPERTIES ('a')")
    sql(spark, f"ALTER VIEW {v} AS SELECT id, name FROM icefloe.{ns}.t WHERE id = 3")
    assert rows(sql(spark, f"SELECT * FROM {v}")) == [(3, "c")]
    md, _ = SqlViews(catalog).load((ns, "v"))
    assert [ver.version_id for ver in md.versions] == [1, 2, 3] and md.current_version_id == 3
    assert md.properties == {"b": "2", "spark.query-column-names": "id,name"}
    sql(spark, f"ALTER VIEW {v} RENAME TO icefloe.{ns}.w")
    assert rows(sql(spark, f"SHOW VIEWS IN icefloe.{ns}")) == [(ns, "w", False)]
    with pytest.raises(NoSuchTable):
        sql(spark, f"SELECT * FROM {v}")
    sql(spark, f"DROP VIEW icefloe.{ns}.w")
    sql(spark, f"DROP VIEW IF EXISTS icefloe.{ns}.w")
    with pytest.raises(NotFound, match="does not exist"):
        sql(spark, f"DROP VIEW icefloe.{ns}.w")
    assert rows(sql(spark, f"SHOW VIEWS IN icefloe.{ns}")) == []
    assert rows(sql(spark, f"SELECT count(*) FROM icefloe.{ns}.t")) == [(4,)]  # the table is untouched
