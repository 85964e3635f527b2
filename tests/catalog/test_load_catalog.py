"""load_catalog defaults: the embedded SQLite catalog and the environment overrides."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.schema import Schema


def test_embedded_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: Schema) -> None:
    monkeypatch.delenv("ICEFLOE_CATALOG_URI", raising=False)
    monkeypatch.delenv("ICEFLOE_WAREHOUSE", raising=False)
    monkeypatch.chdir(tmp_path)
    catalog = load_catalog()
    try:
        assert isinstance(catalog, SqlCatalog)
        assert catalog.name == "default"
        assert catalog.warehouse == f"file://{tmp_path}/.icefloe/warehouse"
        catalog.create_namespace("ns")
        table = catalog.create_table("ns.t", schema)
        assert table.metadata.location == f"file://{tmp_path}/.icefloe/warehouse/ns/t"
    finally:
        catalog.close()
    db = tmp_path / ".icefloe" / "catalog.db"
    assert db.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_environment_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEFLOE_CATALOG_URI", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("ICEFLOE_WAREHOUSE", str(tmp_path / "envwh"))
    catalog = load_catalog("prod")
    try:
        assert catalog.name == "prod"
        assert catalog.warehouse == f"file://{tmp_path}/envwh"
        catalog.create_namespace("x")
    finally:
        catalog.close()
    assert (tmp_path / "env.db").exists()
    explicit = load_catalog(uri=f"sqlite:///{tmp_path / 'explicit.db'}", warehouse="relative/wh")
    try:
        assert explicit.warehouse == f"file://{Path.cwd()}/relative/wh"
        assert explicit.properties["uri"].endswith("explicit.db")
    finally:
        explicit.close()


def test_unknown_type_and_missing_uri() -> None:
    with pytest.raises(Unsupported, match="hive"):
        load_catalog(type="hive")
    with pytest.raises(ValidationError, match="uri"):
        SqlCatalog("x")


def test_an_http_uri_without_a_type_is_a_rest_service(tmp_path: Path, schema: Schema) -> None:
    """As PyIceberg infers it: ``load_catalog(uri="http://...")`` reaches the REST service (it used
    to hand the URL to SQLAlchemy, which has no ``http`` dialect)."""
    from icefloe.catalog.rest import RestCatalog
    from icefloe.server import ServerConfig, start_server

    backing = SqlCatalog("backing", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    backing.create_namespace("ns")
    backing.create_table("ns.t", schema)
    with start_server(ServerConfig(backing)) as server:
        catalog = load_catalog("lake", uri=server.uri)
        try:
            assert isinstance(catalog, RestCatalog)
            assert catalog.list_tables("ns") == [("ns", "t")]
        finally:
            catalog.close()
    backing.close()
    explicit = load_catalog(type="SQL", uri=f"sqlite:///{tmp_path / 'e.db'}", warehouse=str(tmp_path / "e"))
    assert isinstance(explicit, SqlCatalog)
    explicit.close()
