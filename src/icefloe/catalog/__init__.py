"""icefloe.catalog layer (see ARCHITECTURE.md): catalogs that map table names to metadata files.

``load_catalog()`` with no arguments gives the embedded default: a SQLite catalog at
``./.icefloe/catalog.db`` with its warehouse at ``./.icefloe/warehouse``. The environment variables
``ICEFLOE_CATALOG_URI`` and ``ICEFLOE_WAREHOUSE`` override both; explicit keyword arguments override
the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from icefloe.errors import Unsupported

if TYPE_CHECKING:
    from icefloe.catalog.base import Catalog
    from icefloe.catalog.sql import SqlCatalog

ENV_CATALOG_URI = "ICEFLOE_CATALOG_URI"
ENV_WAREHOUSE = "ICEFLOE_WAREHOUSE"
DEFAULT_HOME = ".icefloe"


def default_catalog_uri() -> str:
    """``ICEFLOE_CATALOG_URI``, else a SQLite file at ``./.icefloe/catalog.db`` (absolute path)."""
    uri = os.environ.get(ENV_CATALOG_URI)
    if uri:
        return uri
    return "sqlite:///" + os.path.abspath(os.path.join(DEFAULT_HOME, "catalog.db"))


def default_warehouse() -> str:
    """``ICEFLOE_WAREHOUSE``, else ``./.icefloe/warehouse`` (absolute path)."""
    return os.environ.get(ENV_WAREHOUSE) or os.path.abspath(os.path.join(DEFAULT_HOME, "warehouse"))


def load_catalog(name: str | None = "default", **properties: str) -> Catalog:
    """Open a catalog: ``type`` "sql" (``uri`` and ``warehouse`` defaulting as above), "rest" (an
    Iceberg REST catalog service at ``uri``) or "hadoop" (a file-system ``warehouse``). Without a
    ``type``, an ``http(s)://`` URI is a REST service's (as PyIceberg infers it), any other is SQL."""
    props = {k: str(v) for k, v in properties.items()}
    catalog_type = catalog_type_of(props)
    props.pop("type", None)
    if catalog_type == "rest":
        from icefloe.catalog.rest import RestCatalog

        return RestCatalog(name or "rest", **props)
    if catalog_type == "hadoop":
        from icefloe.catalog.hadoop import HadoopCatalog

        return HadoopCatalog(name or "hadoop", **props)
    if catalog_type != "sql":
        raise Unsupported(f"catalog type {catalog_type!r} is not supported ('sql', 'rest', 'hadoop')")
    uri = props.pop("uri", None) or default_catalog_uri()
    warehouse = props.pop("warehouse", None) or default_warehouse()
    from icefloe.catalog.sql import SqlCatalog

    return SqlCatalog(name or "default", uri=uri, warehouse=warehouse, **props)


def catalog_type_of(properties: Mapping[str, str]) -> str:
    """The catalog type catalog properties describe, lower-case: their ``type``, else "rest" for an
    ``http(s)://`` ``uri`` (as PyIceberg infers it), else "sql"."""
    given = str(properties.get("type") or "").strip().lower()
    if given:
        return given
    uri = str(properties.get("uri") or "").strip().lower()
    return "rest" if uri.startswith(("http://", "https://")) else "sql"


def __getattr__(attr: str) -> Any:
    # Lazy so that importing icefloe.table.table does not pull in SQLAlchemy.
    if attr == "SqlCatalog":
        from icefloe.catalog.sql import SqlCatalog

        return SqlCatalog
    if attr == "Catalog":
        from icefloe.catalog.base import Catalog

        return Catalog
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["Catalog", "SqlCatalog", "default_catalog_uri", "default_warehouse", "load_catalog"]
