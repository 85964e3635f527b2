"""Views through ``icefloe serve`` from two clients: icefloe's ``RestViews`` (read back by the SQL
catalog on the same database, and the other way round) and PyIceberg's ``RestCatalog``; and
``register_table(..., overwrite=True)`` through icefloe's REST client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog
from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
from pyiceberg.schema import Schema as PyIcebergSchema
from pyiceberg.types import LongType as PyIcebergLong
from pyiceberg.types import NestedField as PyIcebergField
from pyiceberg.view.metadata import SQLViewRepresentation
from pyiceberg.view.metadata import ViewVersion as PyIcebergViewVersion

from icefloe.catalog import load_catalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.views import RestViews
from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.errors import AlreadyExists, CommitConflict, NoSuchView
from icefloe.server import RunningServer
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion

IDS = Schema(NestedField(1, "id", LongType()))
IDS_AND_NAMES = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))


@pytest.fixture
def client(rest_server: RunningServer, backing_catalog: SqlCatalog) -> Iterator[RestCatalog]:
    backing_catalog.create_namespace("db")
    cat = load_catalog("c", type="rest", uri=rest_server.uri)
    assert isinstance(cat, RestCatalog)
    yield cat
    cat.close()


def _version(sql: str, timestamp_ms: int = 1_700_000_000_000) -> ViewVersion:
    return ViewVersion(
        1,
        timestamp_ms,
        0,
        (SqlRepresentation(sql, "spark"),),
        ("db",),
        {"engine-name": "test"},
        "spark_catalog",
    )


def _metadata(catalog: SqlCatalog, name: str, sql: str) -> ViewMetadata:
    location = catalog.default_table_location(("db",), name)
    return ViewMetadata.new(location, _version(sql), IDS, {"comment": "ids"})


def test_rest_views_and_sql_views_read_each_others_views(
    client: RestCatalog, backing_catalog: SqlCatalog
) -> None:
    rest, sql = RestViews(client), SqlViews(backing_catalog)
    created_at = rest.create("db.v", _metadata(backing_catalog, "v", "SELECT id FROM t"))
    assert sql.load("db.v") == rest.load("db.v")
    md, location = sql.load("db.v")
    assert location == created_at and "/db/v/metadata/00000-" in location
    assert (md.current_version_id, md.properties, md.schemas) == (1, {"comment": "ids"}, (IDS,))
    assert md.current_version() == _version("SELECT id FROM t")

    sql.create("db.w", _metadata(backing_catalog, "w", "SELECT 1"))
    assert rest.load("db.w") == sql.load("db.w")
    assert rest.names("db") == sql.names("db") == [("db", "v"), ("db", "w")]
    assert rest.exists("db.w") and not rest.exists("db.nope")

    # replace through REST with what Spark's ALTER VIEW builds; the SQL catalog sees the result
    newer = md.with_version(_version("SELECT id, name FROM t", 1_700_000_000_500), IDS_AND_NAMES)
    replaced_at = rest.replace("db.v", location, newer.with_properties({"owner": "x"}))
    md2, at2 = sql.load("db.v")
    assert at2 == replaced_at and "/db/v/metadata/00001-" in at2
    assert md2.current_version().sql_for("spark") == "SELECT id, name FROM t"
    assert [v.version_id for v in md2.versions] == [1, 2]
    assert md2.schema() == Schema(*IDS_AND_NAMES.fields, schema_id=1)
    assert md2.properties == {"owner": "x"}
    assert [vid for _, vid in md2.version_log] == [1, 2]
    with pytest.raises(CommitConflict):  # still pointing at the first file
        rest.replace("db.v", location, newer)

    with pytest.raises(AlreadyExists):
        rest.create("db.w", _metadata(backing_catalog, "w", "SELECT 2"))
    rest.rename("db.w", "db.w2")
    assert sql.names("db") == [("db", "v"), ("db", "w2")]
    rest.drop("db.w2")
    with pytest.raises(NoSuchView):
        rest.drop("db.w2")
    with pytest.raises(NoSuchView):
        rest.load("db.w2")
    assert sql.names("db") == [("db", "v")]


def test_pyiceberg_view_methods(rest_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    backing_catalog.create_namespace("db")
    catalog = PyIcebergRestCatalog("rest", uri=rest_server.uri)
    version = PyIcebergViewVersion(
        version_id=1,
        schema_id=0,
        timestamp_ms=1_700_000_000_000,
        summary={"engine-name": "pyiceberg"},
        representations=[SQLViewRepresentation(type="sql", sql="SELECT id FROM t", dialect="spark")],
        default_namespace=["db"],
    )
    schema = PyIcebergSchema(PyIcebergField(1, "id", PyIcebergLong(), required=False))
    view = catalog.create_view("db.v", schema, version, properties={"comment": "ids"})
    assert view.metadata.current_version_id == 1
    assert catalog.list_views("db") == [("db", "v")]
    assert catalog.view_exists("db.v") and not catalog.view_exists("db.nope")
    loaded = catalog.load_view("db.v")
    assert loaded.metadata.properties == {"comment": "ids"}
    assert loaded.metadata.view_uuid == view.metadata.view_uuid
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("db.v", schema, version)

    md, _ = SqlViews(backing_catalog).load("db.v")  # what PyIceberg created, in the SQL catalog
    assert md.view_uuid == str(view.metadata.view_uuid)
    assert md.current_version().sql_for("spark") == "SELECT id FROM t"
    assert md.current_version().default_namespace == ("db",)
    assert md.schema() == IDS

    catalog.drop_view("db.v")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("db.v")
    assert catalog.list_views("db") == []


def test_register_with_overwrite_through_the_client(client: RestCatalog, backing_catalog: SqlCatalog) -> None:
    table = client.create_table("db.t", IDS)
    first = table.metadata_location
    table.set_properties(k="v")
    second = backing_catalog._table_metadata_location(("db",), "t")
    assert second != first
    with pytest.raises(AlreadyExists):
        client.register_table("db.t", first)
    again = client.register_table("db.t", first, overwrite=True)
    assert again.metadata_location == first
    assert "k" not in again.metadata.properties
    assert client.load_table("db.t").metadata_location == first
