"""The SQL catalog's hot statements, built once per catalog with bound parameters.

Loading a table's pointer and compare-and-swapping it run on every commit (a REST server runs
them once per coalesced batch). Building ``select(...).where(column == value, ...)`` anew costs
more Python than the query costs SQLite: every ``==`` builds and coerces an expression and every
new statement object computes its cache key again before the compiled form is found. The
statements here are built once, with ``bindparam`` placeholders for the table's identity and
the locations, so each execution only binds values (``PointerStatements.row`` and friends) and
reuses the compiled statement from the engine's cache. The SQL sent is the same as before: one
``SELECT`` or one conditional ``UPDATE`` per call, on SQLite and PostgreSQL alike, so a pointer
moved by another client is seen on the next call (nothing is cached but the statement text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, Update, bindparam, or_, select, true, update

from icefloe.catalog.identifiers import Namespace, namespace_to_string
from icefloe.catalog.sql_engine import TABLE_TYPE

# bound-parameter names; distinct from the column names, which an UPDATE's SET clause reserves
_CATALOG = "row_catalog"
_NAMESPACE = "row_namespace"
_NAME = "row_name"
_EXPECTED = "expected_location"
_NEW = "new_location"


def table_type_filter(tables: Table, has_type: bool) -> ColumnElement[bool]:
    """Rows that are tables: ``iceberg_type`` is TABLE or NULL (any row without the column)."""
    if not has_type:
        return true()
    return or_(tables.c.iceberg_type == TABLE_TYPE, tables.c.iceberg_type.is_(None))


@dataclass(frozen=True)
class PointerStatements:
    """Reading and swapping one table's metadata pointer, as statements built once."""

    pointer: Select[Any]
    """``metadata_location`` of the table row (bind with ``row``)."""
    pointer_and_previous: Select[Any]
    """``metadata_location, previous_metadata_location`` of the table row (bind with ``row``)."""
    swap: Update
    """Move the pointer from an expected location to a new one (bind with ``swap_values``)."""

    @staticmethod
    def build(tables: Table, has_type: bool) -> PointerStatements:
        """The statements for the ``iceberg_tables`` table ``tables``."""
        c = tables.c
        where = (
            c.catalog_name == bindparam(_CATALOG),
            c.table_namespace == bindparam(_NAMESPACE),
            c.table_name == bindparam(_NAME),
            table_type_filter(tables, has_type),
        )
        swap = (
            update(tables)
            .where(*where, c.metadata_location == bindparam(_EXPECTED))
            .values(metadata_location=bindparam(_NEW), previous_metadata_location=bindparam(_EXPECTED))
        )
        return PointerStatements(
            pointer=select(c.metadata_location).where(*where),
            pointer_and_previous=select(c.metadata_location, c.previous_metadata_location).where(*where),
            swap=swap,
        )

    @staticmethod
    def row(catalog: str, namespace: Namespace, name: str) -> dict[str, str]:
        """The parameters naming one table row."""
        return {_CATALOG: catalog, _NAMESPACE: namespace_to_string(namespace), _NAME: name}

    @staticmethod
    def swap_values(catalog: str, namespace: Namespace, name: str, expected: str, new: str) -> dict[str, str]:
        """The parameters of ``swap``: the row, the location it must hold and the new one."""
        return {**PointerStatements.row(catalog, namespace, name), _EXPECTED: expected, _NEW: new}
