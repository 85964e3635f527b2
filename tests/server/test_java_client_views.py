"""Iceberg Java's REST client on the wire: the view lifecycle.

``RESTSessionCatalog``'s view requests (``CreateViewRequest``, ``CommitViewRequest`` with
``assert-view-uuid``, list with Java's paging loop, ``HEAD``, ``/views/rename``, drop) replayed
against a real server (SQLite and PostgreSQL), bodies from ``tests.support.java_rest_views``, the
answers held to what ``LoadViewResponseParser``, ``ViewMetadataParser`` and ``ErrorHandlers`` read.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from tests.support.java_rest_views import (
    JAVA_VIEW_ENDPOINTS,
    assert_java_readable_view,
    create_view_request,
    replace_view_updates,
    view_schema,
    view_version,
)
from tests.support.java_rest_wire import JavaWire, assert_error

IDS = view_schema(0, (1, "id", "long"))
IDS_AND_DATA = view_schema(1, (1, "id", "long"), (2, "data", "string"))


def _create(wire: JavaWire, name: str, sql: str = "SELECT id FROM t") -> dict[str, object]:
    request = create_view_request(name, IDS, view_version(1, 0, sql, ["db"]), {"comment": "ids"})
    return wire.ok("POST", "namespaces/db/views", request)


def test_config_advertises_the_view_endpoints(wire: JavaWire) -> None:
    endpoints = wire.ok("GET", "config")["endpoints"]
    assert set(endpoints) >= JAVA_VIEW_ENDPOINTS
    assert len(endpoints) == len(set(endpoints))


def test_create_load_exists_and_replace(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    version = view_version(1, 0, "SELECT id FROM t", ["db"])
    created = wire.ok(
        "POST", "namespaces/db/views", create_view_request("v", IDS, version, {"comment": "ids"})
    )
    assert_java_readable_view(created)
    md = created["metadata"]
    location = f"file://{backing_catalog.warehouse.removeprefix('file://')}/db/v"
    assert created["config"] == {}
    assert created["metadata-location"].startswith(location + "/metadata/00000-")
    assert md["location"] == location
    assert (md["current-version-id"], md["properties"], md["schemas"]) == (1, {"comment": "ids"}, [IDS])
    assert md["versions"] == [version]
    assert md["version-log"] == [{"timestamp-ms": version["timestamp-ms"], "version-id": 1}]
    assert wire.ok("GET", "namespaces/db/views/v") == created
    assert wire.send("HEAD", "namespaces/db/views/v").status_code == 204
    assert wire.send("HEAD", "namespaces/db/views/nope").status_code == 404
    # the SQL catalog holds the same file
    stored, stored_at = SqlViews(backing_catalog).load(("db", "v"))
    assert (stored.view_uuid, stored_at) == (md["view-uuid"], created["metadata-location"])

    # replaceView: a new schema and version, made current with -1
    second = view_version(2, 1, "SELECT id, data FROM t", ["db"])
    replace = replace_view_updates(md["view-uuid"], IDS_AND_DATA, second, {"owner": "x"})
    replaced = wire.ok("POST", "namespaces/db/views/v", replace)
    assert_java_readable_view(replaced)
    new = replaced["metadata"]
    assert replaced["metadata-location"].startswith(location + "/metadata/00001-")
    assert new["view-uuid"] == md["view-uuid"]
    assert new["current-version-id"] == 2
    assert new["schemas"] == [IDS, IDS_AND_DATA]
    assert new["versions"] == [version, second]
    assert [e["version-id"] for e in new["version-log"]] == [1, 2]
    assert new["properties"] == {"comment": "ids", "owner": "x"}
    assert wire.ok("GET", "namespaces/db/views/v") == replaced

    # back to the first definition: Java's builder finds the equal schema and version, so it only
    # sets the current version by id
    again = {
        "requirements": [{"type": "assert-view-uuid", "uuid": md["view-uuid"]}],
        "updates": [{"action": "set-current-view-version", "view-version-id": 1}],
    }
    back = wire.ok("POST", "namespaces/db/views/v", again)["metadata"]
    assert back["current-version-id"] == 1
    assert [v["version-id"] for v in back["versions"]] == [1, 2]
    assert [s["schema-id"] for s in back["schemas"]] == [0, 1]
    assert [e["version-id"] for e in back["version-log"]] == [1, 2, 1]

    # a stale UUID is CommitFailedException; unknown updates are BadRequestException
    stale = replace_view_updates("00000000-0000-0000-0000-000000000000", IDS, version, {})
    assert_error(wire.send("POST", "namespaces/db/views/v", stale), 409, "CommitFailedException")
    bad = {"requirements": [], "updates": [{"action": "set-current-view-version", "view-version-id": 9}]}
    assert_error(wire.send("POST", "namespaces/db/views/v", bad), 400, "BadRequestException")
    missing = replace_view_updates(md["view-uuid"], IDS, version, {})
    assert_error(wire.send("POST", "namespaces/db/views/nope", missing), 404, "NoSuchViewException")
    assert wire.ok("GET", "namespaces/db/views/v")["metadata"] == back


def test_list_with_java_paging(wire: JavaWire) -> None:
    for name in ("c", "a", "b"):
        _create(wire, name)
    wire.create_table("db", "t")  # tables are not views
    first = wire.ok("GET", "namespaces/db/views", pageToken="", pageSize="2")
    assert first["identifiers"] == [{"namespace": ["db"], "name": "a"}, {"namespace": ["db"], "name": "b"}]
    rest = wire.ok("GET", "namespaces/db/views", pageToken=first["next-page-token"], pageSize="2")
    assert rest == {"identifiers": [{"namespace": ["db"], "name": "c"}]}
    assert wire.ok("GET", "namespaces/db/views", pageToken="")["identifiers"] == [
        {"namespace": ["db"], "name": n} for n in ("a", "b", "c")
    ]
    assert_error(wire.send("GET", "namespaces/nowhere/views"), 404, "NoSuchNamespaceException")


def test_names_tables_and_views_share(wire: JavaWire) -> None:
    _create(wire, "v")
    wire.create_table("db", "t")
    assert_error(
        wire.send(
            "POST",
            "namespaces/db/views",
            create_view_request("v", IDS, view_version(1, 0, "SELECT 1", ["db"])),
        ),
        409,
        "AlreadyExistsException",
    )
    assert_error(
        wire.send(
            "POST",
            "namespaces/db/views",
            create_view_request("t", IDS, view_version(1, 0, "SELECT 1", ["db"])),
        ),
        409,
        "AlreadyExistsException",
    )
    table_request = {"name": "v", "schema": IDS, "properties": {}}
    assert_error(wire.send("POST", "namespaces/db/tables", table_request), 409, "AlreadyExistsException")
    assert wire.send("HEAD", "namespaces/db/tables/v").status_code == 404
    assert_error(wire.send("GET", "namespaces/db/views/t"), 404, "NoSuchViewException")


def test_rename_and_drop(wire: JavaWire) -> None:
    created = _create(wire, "v")
    _create(wire, "other")
    rename = {"source": {"namespace": ["db"], "name": "v"}, "destination": {"namespace": ["db"], "name": "w"}}
    assert wire.send("POST", "views/rename", rename).status_code == 204
    assert_error(wire.send("GET", "namespaces/db/views/v"), 404, "NoSuchViewException")
    assert wire.ok("GET", "namespaces/db/views/w") == created
    assert_error(wire.send("POST", "views/rename", rename), 404, "NoSuchViewException")
    onto = {"source": rename["destination"], "destination": {"namespace": ["db"], "name": "other"}}
    assert_error(wire.send("POST", "views/rename", onto), 409, "AlreadyExistsException")
    elsewhere = {"source": rename["destination"], "destination": {"namespace": ["nowhere"], "name": "x"}}
    assert_error(wire.send("POST", "views/rename", elsewhere), 404, "NoSuchNamespaceException")
    assert wire.send("DELETE", "namespaces/db/views/w").status_code == 204
    assert_error(wire.send("DELETE", "namespaces/db/views/w"), 404, "NoSuchViewException")
    assert wire.ok("GET", "namespaces/db/views", pageToken="") == {
        "identifiers": [{"namespace": ["db"], "name": "other"}]
    }


def test_register_view_names_an_existing_metadata_file(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    """Iceberg Java 1.11's ``registerView``: ``RegisterViewRequest`` (``name``,
    ``metadata-location``) answered with the ``LoadViewResult`` of that very file, no new file."""
    created = _create(wire, "v")
    assert wire.send("DELETE", "namespaces/db/views/v").status_code == 204
    location = created["metadata-location"]
    request = {"name": "again", "metadata-location": location}
    registered = wire.ok("POST", "namespaces/db/register-view", request)
    assert registered == {**created, "metadata-location": location}
    assert wire.ok("GET", "namespaces/db/views/again") == registered
    assert SqlViews(backing_catalog).load("db.again")[1] == location
    assert_error(wire.send("POST", "namespaces/db/register-view", request), 409, "AlreadyExistsException")
    wire.create_table("db", "t")
    on_table = {"name": "t", "metadata-location": location}
    assert_error(wire.send("POST", "namespaces/db/register-view", on_table), 409, "AlreadyExistsException")
    missing = {"name": "m", "metadata-location": location.replace("00000-", "00009-")}
    assert_error(wire.send("POST", "namespaces/db/register-view", missing), 404, "NotFoundException")
    outside = {"name": "o", "metadata-location": "file:///elsewhere/v.metadata.json"}
    assert_error(wire.send("POST", "namespaces/db/register-view", outside), 400, "BadRequestException")
    nowhere = {"name": "x", "metadata-location": location}
    assert_error(
        wire.send("POST", "namespaces/nowhere/register-view", nowhere), 404, "NoSuchNamespaceException"
    )


def test_locations_and_identifiers_are_checked_as_for_tables(wire: JavaWire) -> None:
    outside = create_view_request("v", IDS, view_version(1, 0, "SELECT 1", ["db"])) | {
        "location": "file:///tmp/x"
    }
    assert_error(wire.send("POST", "namespaces/db/views", outside), 400, "BadRequestException")
    dotted = create_view_request("..", IDS, view_version(1, 0, "SELECT 1", ["db"]))
    assert_error(wire.send("POST", "namespaces/db/views", dotted), 400, "BadRequestException")
    uuid = _create(wire, "v")["metadata"]["view-uuid"]
    move = {
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [{"action": "set-location", "location": "file:///etc"}],
    }
    assert_error(wire.send("POST", "namespaces/db/views/v", move), 400, "BadRequestException")


@pytest.fixture
def granted_server(backing_catalog: SqlCatalog) -> Iterator[RunningServer]:
    tokens = {"admin": Grants(), "sales": Grants({"sales": "write"})}
    with start_server(ServerConfig(backing_catalog, tokens=tokens)) as server:
        yield server


def test_grants_apply_to_views(granted_server: RunningServer, backing_catalog: SqlCatalog) -> None:
    backing_catalog.create_namespace("db")
    backing_catalog.create_namespace("sales")
    admin = JavaWire(granted_server.uri + "/v1/", token="admin")
    sales = JavaWire(granted_server.uri + "/v1/", token="sales")
    _create(admin, "v")
    assert sales.ok(
        "POST",
        "namespaces/sales/views",
        create_view_request("s", IDS, view_version(1, 0, "SELECT 1", ["sales"])),
    )
    assert_error(sales.send("GET", "namespaces/db/views/v"), 403, "ForbiddenException")
    assert_error(sales.send("GET", "namespaces/db/views"), 403, "ForbiddenException")
    assert_error(sales.send("DELETE", "namespaces/db/views/v"), 403, "ForbiddenException")
    into_db = {
        "source": {"namespace": ["sales"], "name": "s"},
        "destination": {"namespace": ["db"], "name": "s"},
    }
    assert_error(sales.send("POST", "views/rename", into_db), 403, "ForbiddenException")
    assert_error(
        JavaWire(granted_server.uri + "/v1/").send("GET", "namespaces/db/views/v"),
        401,
        "NotAuthorizedException",
    )


def test_nested_namespaces_and_spaces_arrive_as_java_encodes_them(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    backing_catalog.create_namespace(("db", "sub"))
    request = create_view_request("my view", IDS, view_version(1, 0, "SELECT 1", ["db", "sub"]))
    created = wire.ok("POST", "namespaces/db%1Fsub/views", request)
    assert created["metadata"]["location"].endswith("/db/sub/my view")
    assert SqlViews(backing_catalog).names(("db", "sub")) == [("db", "sub", "my view")]
    assert wire.send("HEAD", "namespaces/db%1Fsub/views/my+view").status_code == 204  # URLEncoder
    assert wire.ok("GET", "namespaces/db%1Fsub/views/my%20view") == created
    assert wire.ok("GET", "namespaces/db%1Fsub/views", pageToken="") == {
        "identifiers": [{"namespace": ["db", "sub"], "name": "my view"}]
    }
