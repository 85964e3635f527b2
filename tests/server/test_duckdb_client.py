"""DuckDB's iceberg extension against ``icefloe serve``: CREATE, INSERT, DELETE, UPDATE, SELECT,
each engine (DuckDB, PyIceberg, icefloe's REST client) reading what the others wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from tests.server.conftest import ADMIN_TOKEN
from tests.support.interop import ReaderUnavailable, duckdb_connection


def _duckdb(server: RunningServer) -> Any:
    """The shared DuckDB connection, with ``lake`` attached to the server (afresh)."""
    try:
        import duckdb_extension_httpfs

        con = duckdb_connection()
    except (ImportError, ReaderUnavailable) as exc:  # pragma: no cover - the test extra installs them
        pytest.fail(f"DuckDB with the iceberg and httpfs extensions is required: {exc}")
    httpfs = next(Path(str(duckdb_extension_httpfs.__file__)).parent.rglob("httpfs.duckdb_extension"))
    con.execute(f"LOAD '{httpfs}'")
    con.execute(f"CREATE OR REPLACE SECRET rest_token (TYPE iceberg, TOKEN '{ADMIN_TOKEN}')")
    con.execute("DETACH DATABASE IF EXISTS lake")
    con.execute(f"ATTACH 'warehouse' AS lake (TYPE iceberg, ENDPOINT '{server.uri}', SECRET rest_token)")
    return con


def test_duckdb_pyiceberg_and_icefloe_share_tables(
    token_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    backing_catalog.create_namespace("db")
    con = _duckdb(token_server)
    con.execute("CREATE TABLE lake.db.events (id BIGINT, s VARCHAR)")
    con.execute("INSERT INTO lake.db.events VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
    con.execute("DELETE FROM lake.db.events WHERE id = 2")
    con.execute("UPDATE lake.db.events SET s = 'z' WHERE id = 3")
    expected = [(1, "a"), (3, "z"), (4, "d")]
    assert con.execute("SELECT id, s FROM lake.db.events ORDER BY id").fetchall() == expected

    # PyIceberg reads DuckDB's table (with its deletes) and appends
    pyice = PyIcebergRestCatalog("py", uri=token_server.uri, token=ADMIN_TOKEN)
    table = pyice.load_table("db.events")
    rows = sorted((r["id"], r["s"]) for r in table.scan().to_arrow().to_pylist())
    assert rows == expected
    table.append(pa.table({"id": pa.array([5], pa.int64()), "s": ["e"]}, schema=table.schema().as_arrow()))

    # icefloe's REST client reads both and appends
    client = RestCatalog("ice", uri=token_server.uri, token=ADMIN_TOKEN)
    ours = client.load_table("db.events")
    assert sorted(ours.scan().to_arrow().column("id").to_pylist()) == [1, 3, 4, 5]
    ours.append(pa.table({"id": pa.array([6], pa.int64()), "s": ["f"]}))
    client.close()

    # DuckDB sees everyone's rows; the catalog database has one table with every snapshot
    con = _duckdb(token_server)
    final = con.execute("SELECT id, s FROM lake.db.events ORDER BY id").fetchall()
    assert final == [(1, "a"), (3, "z"), (4, "d"), (5, "e"), (6, "f")]
    assert backing_catalog.list_tables("db") == [("db", "events")]
    assert backing_catalog.load_table("db.events").scan().to_arrow().num_rows == 5


def test_duckdb_reads_icefloe_v3_table_through_rest(
    token_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    client = RestCatalog("ice", uri=token_server.uri, token=ADMIN_TOKEN)
    client.create_namespace("db")
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    table = client.create_table(
        "db.v3", Schema(NestedField(1, "id", LongType())), properties={"format-version": "3"}
    )
    table.append(pa.table({"id": pa.array([10, 20, 30], pa.int64())}))
    table.delete("id = 20")
    client.close()
    con = _duckdb(token_server)
    assert con.execute("SELECT id FROM lake.db.v3 ORDER BY id").fetchall() == [(10,), (30,)]
