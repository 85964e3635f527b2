"""The Iceberg REST catalog client (``load_catalog(type="rest", uri=...)``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icefloe.catalog.rest.catalog import RestCatalog


def __getattr__(attr: str) -> Any:
    # Lazy so that Spark executors importing executor_renewal do not pull in the catalog and table
    # layers (a second of imports per Python worker).
    if attr == "RestCatalog":
        from icefloe.catalog.rest.catalog import RestCatalog

        return RestCatalog
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


__all__ = ["RestCatalog"]
