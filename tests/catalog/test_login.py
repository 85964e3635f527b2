"""Which catalog properties are a login (``catalog.login``), and what FileIO properties keep."""

from __future__ import annotations

from pathlib import Path

from icefloe.catalog.login import has_login, is_login_key, uri_password, without_login
from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField


def test_login_keys_by_name() -> None:
    keys = ["token", "credential", "oauth2-server-uri", "header.X-Tenant", "uri", "warehouse", "scope"]
    assert [k for k in keys if is_login_key(k)] == keys[:4]


def test_a_password_in_the_uri() -> None:
    assert uri_password("postgresql+psycopg://app:pw%40x@db:5432/cat") == "pw%40x"
    assert uri_password("postgresql://app@db/cat") is None
    assert uri_password("sqlite:////tmp/a@b/cat.db") is None
    assert uri_password("not a url: [") is None
    assert uri_password(None) is None
    assert has_login({"uri": "postgresql://app:pw@db/cat"})
    assert not has_login({"uri": "postgresql://app@db/cat", "warehouse": "/wh", "s3.region": "x"})


def test_without_login_keeps_the_rest() -> None:
    props = {
        "uri": "postgresql://app:pw@db/cat",
        "warehouse": "s3://b/wh",
        "s3.endpoint": "http://s3:9000",
        "token": "t",
        "credential": "id:secret",
        "oauth2-server-uri": "https://auth/tokens",
        "header.X-Tenant": "a",
    }
    assert without_login(props) == {"warehouse": "s3://b/wh", "s3.endpoint": "http://s3:9000"}
    assert without_login({"uri": "sqlite:///c.db", "warehouse": "/wh"}) == {
        "uri": "sqlite:///c.db",
        "warehouse": "/wh",
    }


def test_a_catalog_gives_its_fileio_no_login(tmp_path: Path) -> None:
    login = {"token": "t", "header.K": "v"}
    catalog = SqlCatalog("c", f"sqlite:///{tmp_path / 'c.db'}", str(tmp_path / "wh"), **login)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())))
    assert sorted(catalog.properties) == ["header.K", "token", "uri", "warehouse"]
    assert not has_login(table.io.properties)
    catalog.close()
