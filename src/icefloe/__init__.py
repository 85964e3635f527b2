"""icefloe: Apache Iceberg tables (v1–v4) in Python, with Spark as the data plane.

The names most programs need, loaded on first use (``import icefloe`` itself loads nothing)::

    import icefloe
    catalog = icefloe.load_catalog()                 # SQLite + ./.icefloe/warehouse by default
    table = catalog.load_table("db.events")
    table.append(rows, options=icefloe.CommitOptions(branch="audit"))
    static = icefloe.open_static_table("file:///wh/db/t/metadata/00003-x.metadata.json")
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["CommitOptions", "Schema", "Table", "__version__", "load_catalog", "open_static_table"]


def __getattr__(name: str) -> Any:
    if name == "load_catalog":
        from icefloe.catalog import load_catalog

        return load_catalog
    if name in ("Table", "open_static_table"):
        from icefloe import table

        return getattr(table, name)
    if name == "CommitOptions":
        from icefloe.txn.commit_options import CommitOptions

        return CommitOptions
    if name == "Schema":
        from icefloe.spec.schema import Schema

        return Schema
    raise AttributeError(f"module 'icefloe' has no attribute {name!r}")
