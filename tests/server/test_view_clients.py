"""Views through ``icefloe serve`` from two clients: icefloe's ``RestViews`` (read back by the SQL
catalog on the same database, and the other way round) and PyIceberg's ``RestCatalog``; and
``register_table(..., overwrite=True)`` through icefloe's REST client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

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
from icefloe.errors import AlreadyExists, CommitConflict, NoSuchView, ValidationError
from icefloe.server import RunningServer
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.view_changes import view_update_dicts
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


def _replaced(md: ViewMetadata, n: int, *dialects: str) -> ViewMetadata:
    """What Spark's ``ALTER VIEW ... AS`` builds: a new version (and schema id) made current."""
    sql = f"SELECT {n}"
    version = replace(
        _version(sql, 1_700_000_000_000 + n),
        representations=tuple(SqlRepresentation(sql, d) for d in dialects or ("spark",)),
    )
    return md.with_version(version, IDS)


def _shape(md: ViewMetadata) -> tuple[object, ...]:
    """A view's metadata apart from what names its own file (UUID, location)."""
    return md.current_version_id, md.versions, md.version_log, md.schemas, md.properties


def test_the_kept_versions_through_every_client(
    client: RestCatalog, backing_catalog: SqlCatalog, rest_server: RunningServer
) -> None:
    rest, sql = RestViews(client), SqlViews(backing_catalog)
    rest.create("db.r", _metadata(backing_catalog, "r", "SELECT 1"))
    sql.create("db.s", _metadata(backing_catalog, "s", "SELECT 1"))
    for n in range(2, 12):  # ten replaces: eleven versions made, ten kept
        for store, name in ((rest, "db.r"), (sql, "db.s")):
            md, at = store.load(name)
            store.replace(name, at, _replaced(md, n))
    over_rest, _ = sql.load("db.r")
    over_sql, _ = sql.load("db.s")
    assert [v.version_id for v in over_rest.versions] == list(range(2, 12))
    assert [(ts, vid) for ts, vid in over_rest.version_log] == [
        (1_700_000_000_000 + n, n) for n in range(2, 12)
    ]
    assert over_rest.current_version().sql_for("spark") == "SELECT 11"
    assert over_rest.schemas == (IDS,)  # every replace named the same columns: one schema
    assert _shape(over_rest) == _shape(over_sql)  # the SQL catalog commits what the server does
    assert rest.load("db.r")[0] == over_rest

    pyiceberg = PyIcebergRestCatalog("rest", uri=rest_server.uri).load_view("db.r").metadata
    assert [v.version_id for v in pyiceberg.versions] == list(range(2, 12))
    assert [e.version_id for e in pyiceberg.version_log] == list(range(2, 12))
    assert pyiceberg.current_version_id == 11


def test_a_dropped_dialect_is_refused_by_every_client(
    client: RestCatalog, backing_catalog: SqlCatalog
) -> None:
    rest, sql = RestViews(client), SqlViews(backing_catalog)
    for store, name in ((rest, "db.r"), (sql, "db.s")):
        first = replace(
            _version("SELECT 1"),
            representations=(SqlRepresentation("SELECT 1", "spark"), SqlRepresentation("SELECT 1", "trino")),
        )
        location = backing_catalog.default_table_location(("db",), name[3:])
        store.create(name, ViewMetadata.new(location, first, IDS, {}))
        md, at = store.load(name)
        with pytest.raises(ValidationError, match=r"drops the SQL dialect\(s\) \['trino'\]"):
            store.replace(name, at, _replaced(md, 3))
        assert store.load(name) == (md, at)  # nothing committed
        allowed = _replaced(md, 3).with_properties({"replace.drop-dialect.allowed": "true"})
        moved = store.replace(name, at, allowed)
        now, now_at = store.load(name)
        assert now_at == moved != at
        assert now.current_version().representations == (SqlRepresentation("SELECT 3", "spark"),)
    # the server refuses it from a client that does not check (the updates sent as they are)
    md, at = rest.load("db.r")
    body = {
        "requirements": [{"type": "assert-view-uuid", "uuid": md.view_uuid}],
        "updates": [{"action": "remove-properties", "removals": ["replace.drop-dialect.allowed"]}],
    }
    client.http.request("POST", client.routes.view(("db",), "r"), body=body, mutation=True)
    md, at = rest.load("db.r")
    dropping = view_update_dicts(md, _replaced(md, 4, "hive"))
    with pytest.raises(ValidationError, match="drops"):
        client.http.request(
            "POST",
            client.routes.view(("db",), "r"),
            body={"requirements": [], "updates": dropping},
            mutation=True,
        )
    assert rest.load("db.r") == (md, at)
