"""Catalog test fixtures: a throwaway PostgreSQL server, SQLite files, and catalogs over both.

The PostgreSQL part (``postgres_server`` / ``postgres_uri``) is meant to move to tests/conftest.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.base import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.postgres import PostgresServer, PostgresUnavailable, postgres_required, start_postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL 15 server for the whole session (skips, or fails in CI, when unavailable)."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required but unavailable: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_uri(postgres_server: PostgresServer) -> str:
    """SQLAlchemy URI (postgresql+psycopg://) of the session's test database."""
    return postgres_server.uri


@pytest.fixture
def sqlite_uri(tmp_path: Path) -> str:
    """A fresh SQLite catalog file."""
    return f"sqlite:///{tmp_path / 'catalog.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The catalog database URI, once per backend."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return f"sqlite:///{tmp_path / 'catalog.db'}"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """An empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return path


@pytest.fixture
def catalog_name() -> str:
    """A catalog name unique to the test, so tests can share one PostgreSQL database."""
    return f"cat_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["sql", "rest"])
def catalog(
    request: pytest.FixtureRequest, catalog_uri: str, warehouse: Path, catalog_name: str
) -> Iterator[Catalog]:
    """A SqlCatalog over SQLite and over PostgreSQL, used directly and through the REST server."""
    cat = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    if request.param == "sql":
        try:
            yield cat
        finally:
            cat.close()
        return
    from icefloe.catalog.rest import RestCatalog
    from icefloe.server import ServerConfig, start_server

    server = start_server(ServerConfig(cat))
    client = RestCatalog("rest", uri=server.uri)
    try:
        yield client
    finally:
        client.close()
        server.stop()
        cat.close()


@pytest.fixture
def sql_catalog(catalog_uri: str, warehouse: Path, catalog_name: str) -> Iterator[SqlCatalog]:
    """A SqlCatalog over SQLite and over PostgreSQL (tests of the SQL layout itself)."""
    cat = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    try:
        yield cat
    finally:
        cat.close()


@pytest.fixture
def schema() -> Schema:
    """A two-column schema."""
    return Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
