"""REST server fixtures: an icefloe SQL catalog (SQLite and PostgreSQL) served on a free port."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from tests.support.java_rest_wire import JavaWire


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backing_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlCatalog]:
    """The SQL catalog the server serves (once per database backend)."""
    if request.param == "postgres":
        catalog_uri = str(request.getfixturevalue("postgres_uri"))
    else:
        catalog_uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    cat = SqlCatalog(f"rest_{uuid.uuid4().hex[:10]}", uri=catalog_uri, warehouse=str(warehouse))
    try:
        yield cat
    finally:
        cat.close()


@pytest.fixture
def rest_server(backing_catalog: SqlCatalog) -> Iterator[RunningServer]:
    """An open (no authentication) REST server over ``backing_catalog``."""
    with start_server(ServerConfig(backing_catalog)) as server:
        yield server


ADMIN_TOKEN = "admin-token"


@pytest.fixture
def token_server(backing_catalog: SqlCatalog) -> Iterator[RunningServer]:
    """A REST server that requires the bearer token ``ADMIN_TOKEN`` (full access)."""
    with start_server(ServerConfig(backing_catalog, tokens={ADMIN_TOKEN: Grants()})) as server:
        yield server


@pytest.fixture
def wire(rest_server: RunningServer, backing_catalog: SqlCatalog) -> JavaWire:
    """Iceberg Java's request shapes against ``rest_server``, with namespace ``db`` created."""
    backing_catalog.create_namespace("db")
    return JavaWire(rest_server.uri + "/v1/")
