"""Iceberg views in the SqlCatalog: rows with ``iceberg_type = 'VIEW'`` naming view metadata files."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from pyiceberg.view.metadata import ViewMetadata as PyIcebergViewMetadata
from sqlalchemy import create_engine, text

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_engine import catalog_tables
from icefloe.catalog.sql_views import NoSuchView, SqlViews
from icefloe.errors import AlreadyExists, CommitConflict, Unsupported, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion

pytestmark = pytest.mark.all_catalogs


def version(sql: str, ts: int) -> ViewVersion:
    return ViewVersion(0, ts, 0, (SqlRepresentation(sql, "spark"),), ("db",), {"engine-name": "icefloe"})


def new_view(location: str, schema: Schema) -> ViewMetadata:
    return ViewMetadata.new(location, version("SELECT id, name FROM db.t", 1000), schema, {"comment": "c"})


def test_a_view_is_a_view_row_with_its_metadata_file(
    sql_catalog: SqlCatalog, schema: Schema, warehouse: Path
) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    location = views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    assert location.startswith(f"{sql_catalog.warehouse}/db/v/metadata/00000-") and location.endswith(
        ".metadata.json"
    )
    with sql_catalog.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT table_namespace, table_name, metadata_location, iceberg_type FROM iceberg_tables "
                "WHERE catalog_name = :name"
            ),
            {"name": sql_catalog.name},
        ).all()
    assert [tuple(r) for r in rows] == [("db", "v", location, "VIEW")]
    written = json.loads(Path(location.removeprefix("file://")).read_text())
    assert written["format-version"] == 1 and written["current-version-id"] == 1
    assert written["versions"][0]["representations"] == [
        {"type": "sql", "sql": "SELECT id, name FROM db.t", "dialect": "spark"}
    ]
    assert written["version-log"] == [{"timestamp-ms": 1000, "version-id": 1}]
    # PyIceberg's model of the view spec reads the file as written
    theirs = PyIcebergViewMetadata.model_validate_json(Path(location.removeprefix("file://")).read_text())
    assert theirs.current_version_id == 1 and tuple(theirs.versions[0].default_namespace) == ("db",)
    assert [f.name for f in theirs.schemas[0].fields] == ["id", "name"]
    md, loaded_from = views.load(("db", "v"))
    assert loaded_from == location and md.schema().fields == schema.fields
    assert md.current_version().sql_for("SPARK") == "SELECT id, name FROM db.t"
    # views are not tables, and the name space is shared
    assert sql_catalog.list_tables("db") == [] and not sql_catalog.table_exists("db.v")
    assert views.names("db") == [("db", "v")] and views.exists("db.v")
    with pytest.raises(AlreadyExists):
        views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v2", schema))
    sql_catalog.create_table("db.t", schema)
    with pytest.raises(AlreadyExists):
        views.create("db.t", new_view(f"{sql_catalog.warehouse}/db/t_view", schema))


def test_replace_rename_drop(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    first = views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    md, _ = views.load("db.v")
    changed = md.with_version(version("SELECT id FROM db.t", 2000), Schema(*schema.fields[:1]))
    second = views.replace("db.v", first, changed)
    assert "/00001-" in second
    md, _ = views.load("db.v")
    assert [v.version_id for v in md.versions] == [1, 2] and md.current_version_id == 2
    assert [f.name for f in md.schema().fields] == ["id"] and md.version_log == ((1000, 1), (2000, 2))
    with pytest.raises(CommitConflict):
        views.replace("db.v", first, changed)  # the pointer moved on
    views.rename("db.v", "db.w")
    assert views.names("db") == [("db", "w")]
    with pytest.raises(NoSuchView):
        views.load("db.v")
    views.drop("db.w")
    assert views.names("db") == []
    with pytest.raises(NoSuchView):
        views.drop("db.w")


@pytest.mark.sql_catalog_only
def test_a_database_without_iceberg_type_has_no_room_for_views(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/v0.db"
    tables, _ = catalog_tables(with_type=False)
    engine = create_engine(uri)
    tables.metadata.create_all(engine)
    engine.dispose()
    catalog = SqlCatalog("v0", uri=uri, warehouse=str(tmp_path / "wh"))
    try:
        with pytest.raises(Unsupported, match="cannot hold views"):
            SqlViews(catalog).names("db")
    finally:
        catalog.close()


def test_a_replace_is_built_as_javas_builder_builds_it(sql_catalog: SqlCatalog, schema: Schema) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    first = views.create("db.v", new_view(f"{sql_catalog.warehouse}/db/v", schema))
    md, _ = views.load("db.v")
    # the same definition again (another timestamp, a new schema id for the same columns): no file
    assert (
        views.replace("db.v", first, md.with_version(version("SELECT id, name FROM db.t", 5000), schema))
        == first
    )
    # two versions kept: the oldest goes, and the log entries before the last one naming it
    at = views.replace(
        "db.v", first, md.with_properties({"comment": "c", "version.history.num-entries": "2"})
    )
    for n, ts in ((2, 2000), (3, 3000)):
        md, _ = views.load("db.v")
        at = views.replace("db.v", at, md.with_version(version(f"SELECT {n}", ts), schema))
    md, _ = views.load("db.v")
    assert [v.version_id for v in md.versions] == [2, 3] and md.version_log == ((2000, 2), (3000, 3))
    assert [s.schema_id for s in md.schemas] == [0]  # equal columns: the first schema, reused
    # a new version that loses the view's only dialect is refused, and nothing is written
    trino = ViewVersion(0, 4000, 0, (SqlRepresentation("SELECT 4", "trino"),), ("db",))
    with pytest.raises(ValidationError, match="drops"):
        views.replace("db.v", at, md.with_version(trino, schema))
    assert views.load("db.v") == (md, at)


def test_metadata_path_and_gzip_as_javas_view_operations(
    sql_catalog: SqlCatalog, schema: Schema, warehouse: Path
) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    elsewhere = f"{sql_catalog.warehouse}/view-metadata/"
    properties = {"write.metadata.path": elsewhere, "write.metadata.compression-codec": "gzip"}
    md = new_view(f"{sql_catalog.warehouse}/db/v", schema).with_properties(properties)
    first = views.create("db.v", md)
    assert first.startswith(f"{sql_catalog.warehouse}/view-metadata/00000-")
    assert first.endswith(".gz.metadata.json")
    written = Path(first.removeprefix("file://")).read_bytes()
    assert json.loads(gzip.decompress(written))["view-uuid"] == md.view_uuid
    assert views.load("db.v") == (md, first)
    plain = md.with_properties({"comment": "c"})  # back to the defaults: plain JSON under the view
    second = views.replace("db.v", first, plain)
    assert second.startswith(f"{sql_catalog.warehouse}/db/v/metadata/00001-")
    assert not second.endswith(".gz.metadata.json")
    assert views.load("db.v") == (plain, second)


def test_a_representation_icefloe_does_not_know_survives_its_rewrites(
    sql_catalog: SqlCatalog, schema: Schema
) -> None:
    sql_catalog.create_namespace("db")
    views = SqlViews(sql_catalog)
    plan = {"type": "substrait", "plan": "CgRmYWtl", "extensions": [{"uri": "x"}]}
    theirs = replace(version("SELECT id, name FROM db.t", 1000), other_representations=(plan,))
    first = views.create("db.v", ViewMetadata.new(f"{sql_catalog.warehouse}/db/v", theirs, schema, {}))
    md, _ = views.load("db.v")
    second = views.replace("db.v", first, md.with_properties({"comment": "changed"}))
    written = json.loads(Path(second.removeprefix("file://")).read_text())
    assert written["properties"] == {"comment": "changed"}
    assert written["versions"][0]["representations"] == [
        {"type": "sql", "sql": "SELECT id, name FROM db.t", "dialect": "spark"},
        plan,
    ]
    # the same SQL without the other representation is another definition: a version of its own
    third = views.replace(
        "db.v", second, views.load("db.v")[0].with_version(version("SELECT id, name FROM db.t", 2000), schema)
    )
    md, _ = views.load("db.v")
    assert third != second and [v.version_id for v in md.versions] == [1, 2]
    assert md.versions[0].other_representations == (plan,)
    assert md.current_version().other_representations == ()
