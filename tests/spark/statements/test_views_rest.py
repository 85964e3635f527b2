"""Spark SQL views on a REST catalog: ``CREATE VIEW``, ``SELECT`` from it and ``DROP VIEW`` through
icefloe's REST client (``view_store`` gives ``RestViews``), served by ``icefloe serve`` over the
session's SQL catalog, which then holds the view."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.server import ServerConfig, start_server
from icefloe.spark import sql


@pytest.fixture
def rest(catalog: SqlCatalog) -> Iterator[RestCatalog]:
    """A REST client of a server over the session's catalog."""
    with start_server(ServerConfig(catalog)) as server:
        client = load_catalog("icefloe", type="rest", uri=server.uri)
        assert isinstance(client, RestCatalog)
        yield client
        client.close()


def test_create_select_and_drop_a_view_on_a_rest_catalog(
    spark: Any, catalog: SqlCatalog, rest: RestCatalog
) -> None:
    ns = f"rest_views_{uuid.uuid4().hex[:8]}"
    rest.create_namespace(ns)
    sql(spark, f"CREATE TABLE icefloe.{ns}.t (id bigint, name string) USING iceberg", catalog=rest)
    sql(spark, f"INSERT INTO icefloe.{ns}.t VALUES (1, 'a'), (2, 'b'), (3, 'c')", catalog=rest)
    sql(
        spark,
        f"CREATE VIEW icefloe.{ns}.v AS SELECT id, upper(name) AS label FROM icefloe.{ns}.t WHERE id > 1",
        catalog=rest,
    )

    frame = sql(spark, f"SELECT * FROM icefloe.{ns}.v ORDER BY id", catalog=rest)
    assert frame.columns == ["id", "label"]
    assert [tuple(r) for r in frame.collect()] == [(2, "B"), (3, "C")]
    assert [tuple(r) for r in sql(spark, f"SHOW VIEWS IN icefloe.{ns}", catalog=rest).collect()] == [
        (ns, "v", False)
    ]

    md, _ = SqlViews(catalog).load((ns, "v"))  # stored by the server in the SQL catalog
    assert (
        md.current_version().sql_for("spark")
        == f"SELECT id, UPPER(name) AS label FROM icefloe.{ns}.t WHERE id > 1"
    )
    assert [f.name for f in md.schema().fields] == ["id", "label"]
    assert md.location == catalog.default_table_location((ns,), "v")  # the server chose it

    sql(spark, f"DROP VIEW icefloe.{ns}.v", catalog=rest)
    assert SqlViews(catalog).names(ns) == []
    sql(spark, f"DROP TABLE icefloe.{ns}.t", catalog=rest)
    rest.drop_namespace(ns)
