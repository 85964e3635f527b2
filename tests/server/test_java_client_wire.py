"""Iceberg Java's REST client on the wire: config, OAuth2, namespaces, the table lifecycle.

The requests ``RESTSessionCatalog`` sends are replayed with a plain HTTP client against a real
server and the responses checked for what Java's strict parsers (``ConfigResponseParser``,
``LoadTableResponseParser``, ``TableMetadataParser``, ``ErrorResponseParser``, ``OAuth2Util``)
require. Bodies are built as Java builds them (``tests.support.java_rest_wire``):
``CreateTableRequest`` sends ``null`` for an absent location, path segments are
``URLEncoder``-encoded (a space is ``+``) and namespace levels are joined with ``%1F``. Table
commits are in ``test_java_client_commits.py``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, OAuthClient, RunningServer, ServerConfig, start_server
from tests.support.java_rest_views import JAVA_VIEW_ENDPOINTS
from tests.support.java_rest_wire import (
    BUCKET_SPEC,
    ID_ORDER,
    JSON,
    SCHEMA,
    JavaWire,
    append,
    assert_error,
    assert_java_readable_table,
    java_snapshot,
)

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"

# Every endpoint RESTSessionCatalog checks (Endpoint.check / endpoints.contains) for tables and
# namespaces, as Endpoint.toString spells it.
JAVA_TABLE_AND_NAMESPACE_ENDPOINTS = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
}
JAVA_SCAN_PLANNING_ENDPOINTS = {
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
}


def test_config_with_warehouse_advertises_every_endpoint_java_checks(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    warehouse = str(backing_catalog.warehouse)
    config = JavaWire(rest_server.uri + "/v1/").ok("GET", "config", warehouse=warehouse)
    assert config["defaults"] == {}
    assert config["overrides"] == {}  # no prefix: Java's ResourcePaths stays at /v1/
    assert config["idempotency-key-lifetime"] == "PT30M"  # Java then sends Idempotency-Key
    endpoints = config["endpoints"]
    assert len(endpoints) == len(set(endpoints))
    assert set(endpoints) == (
        JAVA_TABLE_AND_NAMESPACE_ENDPOINTS | JAVA_SCAN_PLANNING_ENDPOINTS | JAVA_VIEW_ENDPOINTS
    )
    for endpoint in endpoints:  # Endpoint.fromString: exactly "<METHOD> <path>"
        method, path = endpoint.split(" ")
        assert method in ("GET", "HEAD", "POST", "DELETE") and path.startswith("/v1/{prefix}/")


def test_a_prefix_is_an_override_and_serves_every_route_under_it(backing_catalog: SqlCatalog) -> None:
    with start_server(ServerConfig(backing_catalog, prefix="wh1")) as server:
        wire = JavaWire(server.uri + "/v1/")
        config = wire.ok("GET", "config", warehouse="wh1")
        assert config["overrides"] == {"prefix": "wh1"}
        prefixed = JavaWire(server.uri + "/v1/wh1/")
        assert prefixed.ok("POST", "namespaces", {"namespace": ["p"], "properties": {}}) == {
            "namespace": ["p"],
            "properties": {},
        }
        assert prefixed.send("HEAD", "namespaces/p").status_code == 204
        assert_error(
            JavaWire(server.uri + "/v1/other/").send("GET", "namespaces"), 404, "NoSuchWarehouseException"
        )


@pytest.fixture
def oauth_server(backing_catalog: SqlCatalog) -> Iterator[RunningServer]:
    config = ServerConfig(backing_catalog, clients={"spark": OAuthClient("s3cret", Grants())})
    with start_server(config) as server:
        yield server


def _token_request(server: RunningServer, form: dict[str, str], **headers: str) -> requests.Response:
    return requests.post(server.uri + "/v1/oauth/tokens", data=form, headers=headers, timeout=30)


def _assert_token_response(reply: requests.Response) -> str:
    """OAuth2Util.tokenResponseFromJson + OAuthTokenResponse.validate."""
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["token_type"] == "bearer"
    assert body["issued_token_type"] == ACCESS_TOKEN_TYPE
    assert body["expires_in"] == 3600
    token: str = body["access_token"]
    assert token
    return token


def test_client_credentials_then_token_exchange_refresh(oauth_server: RunningServer) -> None:
    credentials = {"grant_type": "client_credentials", "client_id": "spark", "client_secret": "s3cret"}
    token = _assert_token_response(_token_request(oauth_server, credentials | {"scope": "catalog"}))
    assert JavaWire(oauth_server.uri + "/v1/", token).ok("GET", "config")["overrides"] == {}

    # a scheduled refresh: the live token exchanges itself, sent as bearer and as subject_token
    exchange = {
        "grant_type": TOKEN_EXCHANGE,
        "scope": "catalog",
        "subject_token": token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
    }
    refreshed = _assert_token_response(
        _token_request(oauth_server, exchange, Authorization=f"Bearer {token}")
    )
    assert refreshed != token
    assert JavaWire(oauth_server.uri + "/v1/", refreshed).send("GET", "namespaces").status_code == 200

    # an expired token is exchanged under the client's credentials sent as HTTP Basic
    basic = base64.b64encode(b"spark:s3cret").decode()
    expired = exchange | {"subject_token": "no-longer-valid"}
    renewed = _assert_token_response(_token_request(oauth_server, expired, Authorization=f"Basic {basic}"))
    assert JavaWire(oauth_server.uri + "/v1/", renewed).send("GET", "namespaces").status_code == 200


def test_oauth_errors_are_what_oauth_error_handler_reads(oauth_server: RunningServer) -> None:
    wrong = {
        "grant_type": "client_credentials",
        "client_id": "spark",
        "client_secret": "nope",
        "scope": "catalog",
    }
    reply = _token_request(oauth_server, wrong)
    assert reply.status_code == 401
    assert reply.json()["error"] == "invalid_client"
    bad_basic = base64.b64encode(b"spark:nope").decode()
    exchange = {"grant_type": TOKEN_EXCHANGE, "subject_token": "x", "subject_token_type": ACCESS_TOKEN_TYPE}
    assert (
        _token_request(oauth_server, exchange, Authorization=f"Basic {bad_basic}").json()["error"]
        == "invalid_client"
    )
    assert _token_request(oauth_server, {"grant_type": "password"}).json() == {
        "error": "unsupported_grant_type"
    }
    unauthenticated = JavaWire(oauth_server.uri + "/v1/").send("GET", "namespaces")
    assert_error(unauthenticated, 401, "NotAuthorizedException")


def test_namespace_create_load_exists_update_and_errors(wire: JavaWire) -> None:
    created = wire.ok("POST", "namespaces", {"namespace": ["sales"], "properties": {"owner": "ana"}})
    assert created == {"namespace": ["sales"], "properties": {"owner": "ana"}}
    assert_error(
        wire.send("POST", "namespaces", {"namespace": ["sales"], "properties": {}}),
        409,
        "AlreadyExistsException",
    )
    assert wire.ok("GET", "namespaces/sales") == {"namespace": ["sales"], "properties": {"owner": "ana"}}
    assert wire.send("HEAD", "namespaces/sales").status_code == 204
    assert wire.send("HEAD", "namespaces/nowhere").status_code == 404
    assert_error(wire.send("GET", "namespaces/nowhere"), 404, "NoSuchNamespaceException")
    update = {"removals": ["owner", "absent"], "updates": {"team": "bi"}}
    assert wire.ok("POST", "namespaces/sales/properties", update) == {
        "updated": ["team"],
        "removed": ["owner"],
        "missing": ["absent"],
    }
    both = {"removals": ["team"], "updates": {"team": "ops"}}
    assert_error(wire.send("POST", "namespaces/sales/properties", both), 422, "UnprocessableEntityException")
    assert_error(wire.send("POST", "namespaces/nowhere/properties", update), 404, "NoSuchNamespaceException")
    assert_error(wire.send("GET", "namespaces/nowhere/tables", pageToken=""), 404, "NoSuchNamespaceException")
    wire.create_table("sales", "orders")
    assert_error(wire.send("DELETE", "namespaces/sales"), 409, "NamespaceNotEmptyException")
    assert wire.send("DELETE", "namespaces/sales/tables/orders").status_code == 204
    assert wire.send("DELETE", "namespaces/sales").status_code == 204
    assert_error(wire.send("DELETE", "namespaces/sales"), 404, "NoSuchNamespaceException")


def test_list_namespaces_with_parent_and_pages_as_java_loops(wire: JavaWire) -> None:
    for child in ("a", "b", "c"):
        wire.ok("POST", "namespaces", {"namespace": ["db", child], "properties": {}})
    wire.ok("POST", "namespaces", {"namespace": ["db", "a", "deep"], "properties": {}})
    # without rest-page-size Java still sends pageToken="" and reads every namespace at once
    everything = wire.ok("GET", "namespaces", parent="db", pageToken="")
    assert everything == {"namespaces": [["db", "a"], ["db", "b"], ["db", "c"]]}
    assert wire.ok("GET", "namespaces", parent="db\x1fa", pageToken="") == {
        "namespaces": [["db", "a", "deep"]]
    }
    # with rest-page-size=2 it follows next-page-token until it is absent
    pages: list[list[list[str]]] = []
    token: str | None = ""
    while token is not None:
        page = wire.ok("GET", "namespaces", parent="db", pageToken=token, pageSize="2")
        pages.append(page["namespaces"])
        token = page.get("next-page-token")
    assert pages == [[["db", "a"], ["db", "b"]], [["db", "c"]]]
    assert_error(wire.send("GET", "namespaces", parent="nowhere"), 404, "NoSuchNamespaceException")
    # a nested namespace in a path is its levels joined by %1F (RESTUtil.encodeNamespace)
    assert wire.send("HEAD", "namespaces/db%1Fa%1Fdeep").status_code == 204
    assert wire.ok("GET", "namespaces/db%1Fa") == {"namespace": ["db", "a"], "properties": {}}
    wire.create_table("db%1Fa", "nested")
    assert wire.ok("GET", "namespaces/db%1Fa/tables", pageToken="") == {
        "identifiers": [{"namespace": ["db", "a"], "name": "nested"}]
    }
    assert wire.send("HEAD", "namespaces/db%1Fa/tables/nested").status_code == 204


def test_create_table_as_java_sends_it(wire: JavaWire) -> None:
    result = wire.create_table(
        "db", "events", **{"partition-spec": BUCKET_SPEC, "write-order": ID_ORDER, "properties": {"k": "v"}}
    )
    assert_java_readable_table(result, 2)
    assert result["metadata-location"].endswith(".metadata.json")
    md = result["metadata"]
    assert md["location"].endswith("/db/events")
    assert md["last-column-id"] == 2
    assert md["last-sequence-number"] == 0
    assert md["partition-specs"] == [BUCKET_SPEC]
    assert md["last-partition-id"] == 1000
    assert [o["fields"] for o in md["sort-orders"] if o["order-id"] == md["default-sort-order-id"]] == [
        ID_ORDER["fields"]
    ]
    assert md["properties"]["k"] == "v"
    assert md.get("refs", {}) == {} and md.get("current-snapshot-id") in (None, -1)
    assert_error(
        wire.send("POST", "namespaces/db/tables", {"name": "events", "schema": SCHEMA}),
        409,
        "AlreadyExistsException",
    )
    assert_error(
        wire.send("POST", "namespaces/nowhere/tables", {"name": "t", "schema": SCHEMA}),
        404,
        "NoSuchNamespaceException",
    )


def test_a_space_in_a_name_arrives_as_java_url_encodes_it(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    wire.create_table("db", "my table")
    assert backing_catalog.table_exists(("db", "my table"))
    assert wire.send("HEAD", "namespaces/db/tables/my+table").status_code == 204  # URLEncoder: ' ' -> '+'
    assert wire.send("HEAD", "namespaces/db/tables/my%20table").status_code == 204
    assert wire.ok("GET", "namespaces/db/tables/my+table")["metadata"]["location"].endswith("/db/my table")
    assert wire.send("HEAD", "namespaces/db/tables/my%2Btable").status_code == 404  # a real '+' is %2B


def test_rename_register_exists_drop_and_purge(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    created = wire.create_table("db", "t")
    assert wire.send("HEAD", "namespaces/db/tables/t").status_code == 204
    rename = {"source": {"namespace": ["db"], "name": "t"}, "destination": {"namespace": ["db"], "name": "u"}}
    assert wire.send("POST", "tables/rename", rename).status_code == 204
    assert wire.send("HEAD", "namespaces/db/tables/t").status_code == 404
    assert_error(wire.send("POST", "tables/rename", rename), 404, "NoSuchTableException")
    wire.create_table("db", "other")
    onto_existing = {"source": {"namespace": ["db"], "name": "other"}, "destination": rename["destination"]}
    assert_error(wire.send("POST", "tables/rename", onto_existing), 409, "AlreadyExistsException")
    elsewhere = {"source": onto_existing["source"], "destination": {"namespace": ["nowhere"], "name": "x"}}
    assert_error(wire.send("POST", "tables/rename", elsewhere), 404, "NoSuchNamespaceException")
    assert wire.send("DELETE", "namespaces/db/tables/other").status_code == 204
    assert wire.ok("GET", "namespaces/db/tables", pageToken="") == {
        "identifiers": [{"namespace": ["db"], "name": "u"}]
    }

    # CatalogTests.testRegisterTable: drop (keeping the files), register the last metadata file
    assert wire.send("DELETE", "namespaces/db/tables/u").status_code == 204
    assert_error(wire.send("DELETE", "namespaces/db/tables/u"), 404, "NoSuchTableException")
    register = {"name": "again", "metadata-location": created["metadata-location"], "overwrite": False}
    registered = wire.ok("POST", "namespaces/db/register", register)
    assert_java_readable_table(registered, 2)
    assert registered["metadata-location"] == created["metadata-location"]
    assert registered["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    assert_error(wire.send("POST", "namespaces/db/register", register), 409, "AlreadyExistsException")

    assert wire.send("DELETE", "namespaces/db/tables/again", purgeRequested="true").status_code == 204
    assert_error(wire.send("GET", "namespaces/db/tables/again", snapshots="all"), 404, "NoSuchTableException")
    # a table in a missing namespace is a missing table, as Java's catalogs answer loadTable
    assert_error(wire.send("GET", "namespaces/nowhere/tables/u"), 404, "NoSuchTableException")
    assert wire.ok("GET", "namespaces/db/tables", pageToken="", pageSize="10") == {"identifiers": []}
    assert not backing_catalog.table_exists("db.again")
    assert not Path(created["metadata-location"].removeprefix("file://")).exists()  # purged


def test_register_with_overwrite_points_the_table_at_another_metadata_file(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    created = wire.create_table("db", "t")
    first = created["metadata-location"]
    update = [{"action": "set-properties", "updates": {"k": "v"}}]
    assert wire.commit("namespaces/db/tables/t", [], update).status_code == 200
    second = backing_catalog._table_metadata_location(("db",), "t")
    assert second != first
    register = {"name": "t", "metadata-location": first, "overwrite": True}
    registered = wire.ok("POST", "namespaces/db/register", register)
    assert_java_readable_table(registered, 2)
    assert registered["metadata-location"] == first
    assert registered["metadata"]["properties"] == created["metadata"]["properties"]
    assert wire.ok("GET", "namespaces/db/tables/t")["metadata-location"] == first
    assert backing_catalog._table_metadata_location(("db",), "t") == first
    # the same checks as a plain registration: no second table over t's files, nothing outside
    twin = register | {"name": "u", "metadata-location": second}
    assert_error(wire.send("POST", "namespaces/db/register", twin), 400, "BadRequestException")
    other = wire.create_table("db", "other")["metadata-location"]
    steal = register | {"metadata-location": other}
    assert_error(wire.send("POST", "namespaces/db/register", steal), 400, "BadRequestException")
    outside = register | {"metadata-location": "file:///etc/passwd"}
    assert_error(wire.send("POST", "namespaces/db/register", outside), 400, "BadRequestException")
    assert wire.ok("GET", "namespaces/db/tables/t")["metadata-location"] == first


def test_a_metadata_table_load_falls_back_to_its_base_table(wire: JavaWire) -> None:
    """loadTable("db.t.snapshots"): Java first asks for table "snapshots" in namespace db.t and
    only on NoSuchTableException (not NoSuchNamespaceException) loads db.t itself."""
    wire.create_table("db", "t")
    assert_error(
        wire.send("GET", "namespaces/db%1Ft/tables/snapshots", snapshots="all"), 404, "NoSuchTableException"
    )
    assert wire.send("HEAD", "namespaces/db%1Ft/tables/snapshots").status_code == 404
    assert wire.ok("GET", "namespaces/db/tables/t", snapshots="all")["metadata"]["location"].endswith("/db/t")


def test_a_load_with_the_current_etag_is_not_modified(wire: JavaWire) -> None:
    """RESTSessionCatalog caches a loaded table under its ETag and sends it as If-None-Match;
    a 304 (no body) means its copy is current."""
    created = wire.send("POST", "namespaces/db/tables", {"name": "t", "schema": SCHEMA})
    table = created.json()["metadata"]
    url = wire.base + "namespaces/db/tables/t"
    loaded = wire.session.get(url, params={"snapshots": "all"}, timeout=30)
    etag = loaded.headers["ETag"]
    assert created.headers["ETag"] == etag  # the spec: a create's ETag is good for the next load
    assert etag.startswith('"') and etag.endswith('"')
    same = wire.session.get(url, params={"snapshots": "all"}, headers={"If-None-Match": etag}, timeout=30)
    assert (same.status_code, same.content, same.headers["ETag"]) == (304, b"", etag)
    refs = wire.session.get(url, params={"snapshots": "refs"}, headers={"If-None-Match": etag}, timeout=30)
    assert refs.status_code == 200 and refs.headers["ETag"] != etag  # another view of the table
    committed = append(wire, "namespaces/db/tables/t", table, java_snapshot(table, 5, None, 1, 1), None)
    assert committed.status_code == 200 and committed.headers["ETag"] != etag
    changed = wire.session.get(url, params={"snapshots": "all"}, headers={"If-None-Match": etag}, timeout=30)
    assert changed.status_code == 200 and changed.headers["ETag"] == committed.headers["ETag"]
    assert changed.json()["metadata"]["current-snapshot-id"] == 5


def test_a_retried_mutation_with_its_idempotency_key_is_answered_not_repeated(wire: JavaWire) -> None:
    """HTTPClient retries a POST (429/503, a lost answer) with the same Idempotency-Key."""
    key = {"Idempotency-Key": "0192f2d4-0c7e-7a3b-8d3e-5f0a1b2c3d4e"}
    body: JSON = {"namespace": ["retried"], "properties": {}}
    first = wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30)
    again = wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json() == {"namespace": ["retried"], "properties": {}}
    assert_error(wire.send("POST", "namespaces", body), 409, "AlreadyExistsException")  # a new key

    table = wire.create_table("retried", "t")["metadata"]
    commit_key = {"Idempotency-Key": "0192f2d4-0c7e-7a3b-8d3e-5f0a1b2c3d4f"}
    snapshot = java_snapshot(table, 77, None, 1, 1)
    commit: JSON = {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 77, "type": "branch"},
        ],
    }
    url = wire.base + "namespaces/retried/tables/t"
    committed = wire.session.post(url, json=commit, headers=commit_key, timeout=30)
    replayed = wire.session.post(url, json=commit, headers=commit_key, timeout=30)
    assert (committed.status_code, replayed.status_code) == (200, 200)
    assert replayed.json()["metadata-location"] == committed.json()["metadata-location"]
    assert [
        s["snapshot-id"] for s in wire.ok("GET", "namespaces/retried/tables/t")["metadata"]["snapshots"]
    ] == [77]


def test_an_idempotency_key_reused_for_another_operation_is_refused(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    """Found by the fuzz campaign: a key that had answered a create-namespace was replayed for a
    DELETE of a table (409 "namespace already exists", a status the spec does not document for
    it) and the table stayed. Reusing a key across operations is refused; nothing changes."""
    key = {"Idempotency-Key": "0192f2d4-0c7e-7a3b-8d3e-5f0a1b2c3d50"}
    wire.create_table("db", "kept")
    body: JSON = {"namespace": ["other"], "properties": {}}
    assert wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30).status_code == 200
    dropped = wire.session.delete(wire.base + "namespaces/db/tables/kept", headers=key, timeout=30)
    assert_error(dropped, 400, "BadRequestException")
    assert "POST /v1/namespaces" in dropped.json()["error"]["message"]
    assert backing_catalog.list_tables("db") == [("db", "kept")]
    again = wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30)
    assert again.status_code == 200 and again.json() == {"namespace": ["other"], "properties": {}}


def test_transactions_commit_and_metrics_report(wire: JavaWire) -> None:
    first = wire.create_table("db", "a")["metadata"]
    second = wire.create_table("db", "b")["metadata"]
    changes = []
    for name, table, snapshot_id in (("a", first, 11), ("b", second, 12)):
        snapshot = java_snapshot(table, snapshot_id, None, 1, 1)
        changes.append(
            {
                "identifier": {"namespace": ["db"], "name": name},
                "requirements": [
                    {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
                    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None},
                ],
                "updates": [
                    {"action": "add-snapshot", "snapshot": snapshot},
                    {
                        "action": "set-snapshot-ref",
                        "ref-name": "main",
                        "snapshot-id": snapshot_id,
                        "type": "branch",
                    },
                ],
            }
        )
    assert wire.send("POST", "transactions/commit", {"table-changes": changes}).status_code == 204
    assert wire.ok("GET", "namespaces/db/tables/a")["metadata"]["current-snapshot-id"] == 11
    assert wire.ok("GET", "namespaces/db/tables/b")["metadata"]["current-snapshot-id"] == 12
    assert_error(
        wire.send("POST", "transactions/commit", {"table-changes": changes}), 409, "CommitFailedException"
    )

    report = {  # ReportMetricsRequestParser + ScanReportParser
        "report-type": "scan-report",
        "table-name": "rest.db.a",
        "snapshot-id": 11,
        "filter": True,
        "schema-id": 0,
        "projected-field-ids": [1, 2],
        "projected-field-names": ["id", "data"],
        "metrics": {
            "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 1000}
        },
        "metadata": {},
    }
    assert wire.send("POST", "namespaces/db/tables/a/metrics", report).status_code == 204
    assert wire.ok("GET", "namespaces/db/tables/a/credentials") == {"storage-credentials": []}
