"""The Iceberg REST catalog client (``load_catalog(type="rest", uri=...)``)."""

from __future__ import annotations

from icefloe.catalog.rest.catalog import RestCatalog

__all__ = ["RestCatalog"]
