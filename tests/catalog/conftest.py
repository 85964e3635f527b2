"""Catalog test fixtures beyond the shared catalog family of ``tests/conftest.py``.

Here ``catalog`` runs every catalog test twice: on the SqlCatalog directly (``sql``) and through
icefloe's REST server and client over the same SqlCatalog (``rest``), so the REST pair passes the
same contract. Tests of the SQL layout itself take ``sql_catalog`` or parametrise
``catalog`` indirectly with ``["sql"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.catalog.base import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sql_catalog_only: the test drives the SqlCatalog's own internals (no REST run)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``catalog`` runs as ``sql`` and ``rest`` unless the test chose (or is marked ``sql_catalog_only``)."""
    if "catalog" not in metafunc.fixturenames:
        return
    if any(m.args and m.args[0] == "catalog" for m in metafunc.definition.iter_markers("parametrize")):
        return
    only_sql = metafunc.definition.get_closest_marker("sql_catalog_only") is not None
    metafunc.parametrize("catalog", ["sql"] if only_sql else ["sql", "rest"], indirect=True)


@pytest.fixture
def catalog(
    request: pytest.FixtureRequest, catalog_uri: str, warehouse: Path, catalog_name: str
) -> Iterator[Catalog]:
    """A SqlCatalog on the test's backend, used directly and through the REST server."""
    cat = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    marker = request.node.get_closest_marker("catalog_namespaces")
    for namespace in marker.args if marker else ():
        cat.create_namespace(namespace)
    if getattr(request, "param", "sql") == "sql":
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
    """A SqlCatalog on the test's backend (tests of the SQL layout itself)."""
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
