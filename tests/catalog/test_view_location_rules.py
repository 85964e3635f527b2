"""Views own their metadata files as tables do: no view or table is created, registered or moved
into (or over) another's directory, and no view metadata file is registered under a second name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.errors import ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion

pytestmark = pytest.mark.all_catalogs


def new_view(location: str, schema: Schema, properties: dict[str, str] | None = None) -> ViewMetadata:
    version = ViewVersion(0, 1000, 0, (SqlRepresentation("SELECT 1", "spark"),), ("db",), {})
    return ViewMetadata.new(location, version, schema, properties or {})


def rows(catalog: SqlCatalog) -> list[tuple[str, str]]:
    """(name, type) of every row of the catalog: what a refused call must leave as it was."""
    names = [("table", ".".join(t)) for ns in catalog.list_namespaces() for t in catalog.list_tables(ns)]
    views = SqlViews(catalog)
    names += [("view", ".".join(v)) for ns in catalog.list_namespaces() for v in views.names(ns)]
    return sorted(names)


def files_under(path: str) -> list[str]:
    root = Path(path.removeprefix("file://"))
    return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.mark.parametrize("where", ["equal", "inside", "above"])
def test_a_view_cannot_be_created_over_a_table(sql_catalog: SqlCatalog, schema: Schema, where: str) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", schema, location=f"{sql_catalog.warehouse}/db/sub/t")
    location = {
        "equal": table.location(),
        "inside": f"{table.location()}/views/v",
        "above": f"{sql_catalog.warehouse}/db/sub",
    }[where]
    before = rows(sql_catalog), files_under(sql_catalog.warehouse or "")
    with pytest.raises(ValidationError, match=r"view db\.v: location .* overlaps .* of table db\.t"):
        SqlViews(sql_catalog).create("db.v", new_view(location, schema))
    assert (rows(sql_catalog), files_under(sql_catalog.warehouse or "")) == before


def test_a_metadata_path_in_a_table_is_refused(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", schema)
    md = new_view(f"{sql_catalog.warehouse}/db/v", schema, {"write.metadata.path": f"{table.location()}/m"})
    with pytest.raises(ValidationError, match="overlaps"):
        SqlViews(sql_catalog).create("db.v", md)
    assert rows(sql_catalog) == [("table", "db.t")]


def test_views_cannot_share_a_location(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    with pytest.raises(ValidationError, match=r"view db\.w: .* of view db\.v"):
        views.create("db.w", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    views.create("db.w", new_view(f"{sql_catalog.warehouse}/db/w", schema))  # a place of its own is fine
    assert rows(sql_catalog) == [("view", "db.v"), ("view", "db.w")]


@pytest.mark.parametrize("where", ["equal", "above"])
def test_a_table_cannot_be_created_over_a_view(sql_catalog: SqlCatalog, schema: Schema, where: str) -> None:
    sql_catalog.create_namespace("db")
    view_location = f"{sql_catalog.warehouse}/db/sub/v"
    SqlViews(sql_catalog).create("db.v", new_view(view_location, schema))
    location = view_location if where == "equal" else f"{sql_catalog.warehouse}/db/sub"
    with pytest.raises(ValidationError, match=r"table db\.t: location .* overlaps .* of view db\.v"):
        sql_catalog.create_table("db.t", schema, location=location)
    assert rows(sql_catalog) == [("view", "db.v")]


def test_a_table_cannot_send_its_files_into_a_view(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    view_location = f"{sql_catalog.warehouse}/db/v"
    SqlViews(sql_catalog).create("db.v", new_view(view_location, schema))
    table = sql_catalog.create_table("db.t", schema)
    before = table.metadata_location
    for key in ("write.data.path", "write.metadata.path"):
        with pytest.raises(ValidationError, match=r"of view db\.v"):
            table.set_properties(**{key: view_location})
    with pytest.raises(ValidationError, match=r"of view db\.v"):  # what a REST set-location commits
        sql_catalog.commit_table("db.t", before, replace(table.metadata, location=view_location))
    assert sql_catalog.load_table("db.t").metadata_location == before


def test_a_table_cannot_be_registered_onto_a_view(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    sql_catalog.create_namespace("other")
    table = sql_catalog.create_table("other.t", schema)
    metadata_location = table.metadata_location
    sql_catalog.drop_table("other.t")
    SqlViews(sql_catalog).create("db.v", new_view(table.location(), schema))  # the dropped table's place
    with pytest.raises(ValidationError, match=r"of view db\.v"):
        sql_catalog.register_table("db.t", metadata_location)
    assert rows(sql_catalog) == [("view", "db.v")]


def test_a_view_file_is_registered_under_one_name(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("hr")
    sql_catalog.create_namespace("sales")
    views = SqlViews(sql_catalog)
    first = views.create("hr.v", new_view(f"{sql_catalog.warehouse}/hr/v", schema))
    with pytest.raises(ValidationError, match=r"belongs to view hr\.v"):
        views.register("sales.stolen", first)
    # an older file of the view (no longer its current or previous one) lies in its directory
    md, current = views.load("hr.v")
    for n in (2, 3):
        changed = replace(md, properties={"n": str(n)})
        current = views.replace("hr.v", current, changed)
        md = views.load("hr.v")[0]
    with pytest.raises(ValidationError, match=r"view sales\.stolen: .* overlaps .* of view hr\.v"):
        views.register("sales.stolen", first)
    assert rows(sql_catalog) == [("view", "hr.v")]
    # once the owner is gone the file may be registered again, as Iceberg Java's registerView does
    views.drop("hr.v")
    views.register("sales.kept", current)
    assert views.load("sales.kept")[1] == current


def test_a_table_file_cannot_be_registered_as_a_view(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", schema)
    with pytest.raises(ValidationError, match=r"belongs to table db\.t"):
        SqlViews(sql_catalog).register("db.v", table.metadata_location, new_view(table.location(), schema))
    assert rows(sql_catalog) == [("table", "db.t")]


def test_a_replace_may_not_move_a_view_onto_a_table(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    table = sql_catalog.create_table("db.t", schema)
    views = SqlViews(sql_catalog)
    location = views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    md = views.load("db.v")[0]
    with pytest.raises(ValidationError, match=r"of table db\.t"):
        views.replace("db.v", location, replace(md, location=table.location()))
    assert views.load("db.v")[1] == location
    assert files_under(table.location()) == [table.metadata_location.removeprefix("file://")]


def test_a_replace_in_place_reads_no_table(
    sql_catalog: SqlCatalog, schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cost stays with the commits that move a view: others check nothing."""
    sql_catalog.create_namespace("db")
    sql_catalog.create_table("db.t", schema)
    views = SqlViews(sql_catalog)
    location = views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    md = views.load("db.v")[0]

    def refuse(*args: object) -> None:
        raise AssertionError("a view commit that keeps its location looked at other tables")

    monkeypatch.setattr(sql_catalog, "other_tables", refuse)
    new_location = views.replace("db.v", location, replace(md, properties={"comment": "x"}))
    assert views.load("db.v") == (replace(md, properties={"comment": "x"}), new_location)
