"""icefloe.spark: PySpark integration (session helper, fast read/write paths, data source, streaming).

Importing this package does not import pyspark; the functions below import it when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from icefloe.spark.merge_builder import merge
    from icefloe.spark.read import plan_read, read_table
    from icefloe.spark.rewrite import rewrite_data_files
    from icefloe.spark.row_operations import delete_rows, merge_into, update_rows
    from icefloe.spark.session import register, session
    from icefloe.spark.streaming import stream_writer
    from icefloe.spark.views import create_table, create_view
    from icefloe.spark.write import write_table

__all__ = [
    "create_table",
    "create_view",
    "delete_rows",
    "merge",
    "merge_into",
    "plan_read",
    "read_table",
    "register",
    "rewrite_data_files",
    "session",
    "stream_writer",
    "update_rows",
    "write_table",
]

_EXPORTS = {
    "session": "icefloe.spark.session",
    "register": "icefloe.spark.session",
    "read_table": "icefloe.spark.read",
    "plan_read": "icefloe.spark.read",
    "write_table": "icefloe.spark.write",
    "create_table": "icefloe.spark.views",
    "create_view": "icefloe.spark.views",
    "stream_writer": "icefloe.spark.streaming",
    "delete_rows": "icefloe.spark.row_operations",
    "update_rows": "icefloe.spark.row_operations",
    "merge_into": "icefloe.spark.row_operations",
    "merge": "icefloe.spark.merge_builder",
    "rewrite_data_files": "icefloe.spark.rewrite",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
