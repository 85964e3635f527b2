"""The SQL catalog's pointer statements, built once per catalog: every call binds its own table
and sees the database as it is now, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import CommitConflict, NoSuchTable, TableGoneDuringCommit
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

pytestmark = pytest.mark.all_catalogs

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))


def test_the_pointer_moved_by_another_client_is_read_and_swapped_from(
    sql_catalog: SqlCatalog, warehouse: Path
) -> None:
    """One catalog reads and swaps pointers repeatedly while a second client (a separate
    SqlCatalog on the same database) moves them: each call answers the database's current row."""
    sql_catalog.create_namespace("ns")
    sql_catalog.create_namespace(("ns", "deep"))
    first = sql_catalog.create_table("ns.t", SCHEMA).metadata_location
    deep = sql_catalog.create_table("ns.deep.t", SCHEMA).metadata_location
    other = SqlCatalog(sql_catalog.name, uri=str(sql_catalog.properties["uri"]), warehouse=str(warehouse))
    try:
        assert sql_catalog._table_metadata_location(("ns",), "t") == first
        other._swap_metadata_location(("ns",), "t", first, "moved-by-other")
        assert sql_catalog._table_metadata_location(("ns",), "t") == "moved-by-other"
        assert sql_catalog._table_metadata_location(("ns", "deep"), "t") == deep  # bound per call

        with pytest.raises(CommitConflict, match="moved-by-other"):
            sql_catalog._swap_metadata_location(("ns",), "t", first, "stale-writer")
        sql_catalog._swap_metadata_location(("ns",), "t", "moved-by-other", "mine")
        assert other._table_metadata_location(("ns",), "t") == "mine"
        assert other._table_metadata_location(("ns", "deep"), "t") == deep  # the other row untouched
        with sql_catalog.engine.connect() as conn:
            row = conn.execute(
                sql_catalog._pointer.pointer_and_previous,
                sql_catalog._pointer.row(sql_catalog.name, ("ns",), "t"),
            ).one()
        assert tuple(row) == ("mine", "moved-by-other")

        other.drop_table("ns.t")
        with pytest.raises(NoSuchTable):
            sql_catalog._table_metadata_location(("ns",), "t")
        with pytest.raises(TableGoneDuringCommit):
            sql_catalog._swap_metadata_location(("ns",), "t", "mine", "after-drop")
    finally:
        other.close()


def test_a_table_of_the_same_name_in_another_catalog_is_another_row(
    sql_catalog: SqlCatalog, warehouse: Path
) -> None:
    other = SqlCatalog(
        sql_catalog.name + "_other", uri=str(sql_catalog.properties["uri"]), warehouse=str(warehouse)
    )
    try:
        for cat in (sql_catalog, other):
            cat.create_namespace("ns")
        mine = sql_catalog.create_table("ns.t", SCHEMA, location=str(warehouse / "mine")).metadata_location
        theirs = other.create_table("ns.t", SCHEMA, location=str(warehouse / "theirs")).metadata_location
        other._swap_metadata_location(("ns",), "t", theirs, "theirs-moved")
        assert sql_catalog._table_metadata_location(("ns",), "t") == mine
        with pytest.raises(CommitConflict):
            sql_catalog._swap_metadata_location(("ns",), "t", theirs, "wrong-row")
        assert other._table_metadata_location(("ns",), "t") == "theirs-moved"
    finally:
        other.close()
