"""Several table pointers moved in one database transaction: all of them, or none.

A multi-table commit (the REST ``/transactions/commit``) writes each table's new metadata file
first, then calls ``swap_pointers`` with one ``PointerSwap`` per table. Either every
compare-and-swap (or insert, for a table the transaction creates) succeeds and the transaction
commits, or the first failure raises and the database rolls everything back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from icefloe.catalog.identifiers import Namespace, identifier_to_string, namespace_to_string
from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_engine import TABLE_TYPE
from icefloe.errors import AlreadyExists, CommitConflict, NoSuchTable


@dataclass(frozen=True)
class PointerSwap:
    """Move table ``(namespace, name)`` from ``expected`` (None: create it) to ``new``."""

    namespace: Namespace
    name: str
    expected: str | None
    new: str


def _apply_one(catalog: SqlCatalog, conn: Connection, swap: PointerSwap) -> None:
    t = catalog._t
    where = catalog._row_filter(swap.namespace, swap.name)
    shown = identifier_to_string((*swap.namespace, swap.name))
    if swap.expected is None:
        values: dict[str, Any] = {
            "catalog_name": catalog.name,
            "table_namespace": namespace_to_string(swap.namespace),
            "table_name": swap.name,
            "metadata_location": swap.new,
            "previous_metadata_location": None,
        }
        if catalog._has_type:
            values["iceberg_type"] = TABLE_TYPE
        if conn.execute(select(t.c.table_name).where(*where)).first() is not None:
            raise AlreadyExists(f"table or view {shown!r} already exists")
        conn.execute(insert(t).values(**values))
        return
    stmt = (
        update(t)
        .where(*where, t.c.metadata_location == swap.expected, catalog._table_filter())
        .values(metadata_location=swap.new, previous_metadata_location=swap.expected)
    )
    if conn.execute(stmt).rowcount == 1:
        return
    row = conn.execute(select(t.c.metadata_location).where(*where, catalog._table_filter())).first()
    if row is None:
        raise NoSuchTable(f"cannot commit to table {shown!r}: it does not exist")
    raise CommitConflict(f"table {shown!r} was changed by another commit (now at {row[0]})")


def swap_pointers(catalog: SqlCatalog, swaps: list[PointerSwap]) -> None:
    """Apply every swap in one transaction; CommitConflict / NoSuchTable / AlreadyExists roll back all."""

    def work(conn: Connection) -> None:
        for swap in swaps:
            _apply_one(catalog, conn, swap)

    def verify(conn: Connection) -> bool:
        t = catalog._t
        for swap in swaps:
            row = conn.execute(
                select(t.c.metadata_location).where(*catalog._row_filter(swap.namespace, swap.name))
            ).first()
            if row is None or row[0] != swap.new:
                return False
        return True

    try:
        catalog._run(work, write=True, verify=verify, what=f"multi-table commit of {len(swaps)} tables")
    except IntegrityError:
        raise AlreadyExists("a table created by the transaction already exists") from None
