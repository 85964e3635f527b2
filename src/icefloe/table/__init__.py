"""The user-facing ``Table`` and ``TableTransaction``: reads, writes, evolution, maintenance.

A table holds a commit target, not a catalog (see ``table.table``); ``table.static`` opens a
read-only table from a metadata file with no catalog at all.
"""

from icefloe.table.static import open_static_table
from icefloe.table.table import Table
from icefloe.table.table_transaction import TableTransaction

__all__ = ["Table", "TableTransaction", "open_static_table"]
