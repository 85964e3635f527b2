"""Iceberg Java's REST client on the wire: the requests ``RESTSessionCatalog`` / ``RESTTableOperations``
send, replayed with a plain HTTP client against a real server, and the responses checked for what
Java's strict parsers (``ConfigResponseParser``, ``LoadTableResponseParser``, ``TableMetadataParser``,
``ErrorResponseParser``, ``OAuth2Util``) require.

The bodies are built as Java builds them: ``CreateTableRequest`` sends ``null`` for an absent
location, a staged create commits ``assert-create`` with the whole create update list (``-1`` for
"the one just added", ``add-schema`` with its deprecated ``last-column-id``), an append commits
``add-snapshot`` + ``set-snapshot-ref`` under ``assert-table-uuid`` + ``assert-ref-snapshot-id``
(``null`` while the branch does not exist), path segments are ``URLEncoder``-encoded (a space is
``+``) and namespace levels are joined with ``%1F``.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, OAuthClient, RunningServer, ServerConfig, start_server

JSON = dict[str, Any]
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"

SCHEMA: JSON = {  # SchemaParser.toJson
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"},
    ],
}
BUCKET_SPEC: JSON = {  # PartitionSpecParser.toJson of the unbound spec
    "spec-id": 0,
    "fields": [{"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000}],
}
ID_ORDER: JSON = {  # SortOrderParser.toJson
    "order-id": 1,
    "fields": [{"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}],
}

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


class JavaWire:
    """Sends requests the way Iceberg Java's HTTPClient does, against ``base`` (``.../v1/``)."""

    def __init__(self, base: str, token: str | None = None) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Content-Type"] = "application/json"
        self.session.headers["X-Client-Version"] = "Apache Iceberg 1.10.0"
        if token is not None:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def send(self, method: str, path: str, body: Any = None, **params: str) -> requests.Response:
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method in ("POST", "DELETE") else {}
        return self.session.request(
            method, self.base + path, json=body, params=params or None, headers=headers, timeout=30
        )

    def ok(self, method: str, path: str, body: Any = None, **params: str) -> JSON:
        reply = self.send(method, path, body, **params)
        assert reply.status_code == 200, reply.text
        result: JSON = reply.json()
        return result

    def create_table(self, namespace: str, name: str, **fields: Any) -> JSON:
        body = {
            "name": name,
            "location": None,
            "schema": SCHEMA,
            "partition-spec": None,
            "write-order": None,
            "stage-create": False,
            "properties": {},
        }
        return self.ok("POST", f"namespaces/{namespace}/tables", body | fields)

    def commit(self, path: str, requirements: list[JSON], updates: list[JSON]) -> requests.Response:
        return self.send("POST", path, {"requirements": requirements, "updates": updates})


def java_snapshot(
    table: JSON, snapshot_id: int, parent: int | None, sequence_number: int, records: int
) -> JSON:
    """A snapshot as SnapshotParser.toJson writes an append's."""
    snapshot: JSON = {"sequence-number": sequence_number, "snapshot-id": snapshot_id}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    snapshot |= {
        "timestamp-ms": int(time.time() * 1000),
        "summary": {
            "operation": "append",
            "added-data-files": "1",
            "added-records": str(records),
            "total-records": str(records),
            "total-data-files": str(sequence_number),
        },
        "manifest-list": f"{table['location']}/metadata/snap-{snapshot_id}-1-{uuid.uuid4()}.avro",
        "schema-id": 0,
    }
    return snapshot


def append(
    wire: JavaWire, path: str, table: JSON, snapshot: JSON, branch_head: int | None
) -> requests.Response:
    """The commit ``Table.newAppend().commit()`` sends (UpdateRequirements.forUpdateTable)."""
    requirements = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": branch_head},
    ]
    updates = [
        {"action": "add-snapshot", "snapshot": snapshot},
        {
            "action": "set-snapshot-ref",
            "ref-name": "main",
            "snapshot-id": snapshot["snapshot-id"],
            "type": "branch",
        },
    ]
    return wire.commit(path, requirements, updates)


def assert_error(reply: requests.Response, code: int, error_type: str) -> None:
    """An ErrorResponseParser-readable body with the type ErrorHandlers maps to the right exception."""
    assert reply.status_code == code, reply.text
    body = reply.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["type"] == error_type
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def assert_java_readable_table(result: JSON, format_version: int) -> None:
    """What LoadTableResponseParser and TableMetadataParser.fromJson insist on."""
    assert set(result) >= {"metadata-location", "metadata", "config"}
    assert isinstance(result["config"], dict)
    assert all(isinstance(v, str) for v in result["config"].values())
    md = result["metadata"]
    assert md["format-version"] == format_version
    required = {
        "table-uuid": str,
        "location": str,
        "last-updated-ms": int,
        "last-column-id": int,
        "schemas": list,
        "current-schema-id": int,
        "partition-specs": list,
        "default-spec-id": int,
        "last-partition-id": int,
        "sort-orders": list,
        "default-sort-order-id": int,
        "properties": dict,
    }
    if format_version >= 2:
        required["last-sequence-number"] = int
    if format_version >= 3:
        required["next-row-id"] = int
    for key, kind in required.items():
        assert isinstance(md[key], kind), key
    assert md["current-schema-id"] in [s["schema-id"] for s in md["schemas"]]
    assert md["default-spec-id"] in [s["spec-id"] for s in md["partition-specs"]]
    assert md["default-sort-order-id"] in [o["order-id"] for o in md["sort-orders"]]
    snapshot_ids = {s["snapshot-id"] for s in md.get("snapshots", [])}
    assert {ref["snapshot-id"] for ref in md.get("refs", {}).values()} <= snapshot_ids
    for ref in md.get("refs", {}).values():
        assert ref["type"] in ("branch", "tag")


@pytest.fixture
def wire(rest_server: RunningServer, backing_catalog: SqlCatalog) -> JavaWire:
    backing_catalog.create_namespace("db")
    return JavaWire(rest_server.uri + "/v1/")


# ---------------------------------------------------------------------------------------------
# GET /v1/config and how Java applies it


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
    assert set(endpoints) == JAVA_TABLE_AND_NAMESPACE_ENDPOINTS | JAVA_SCAN_PLANNING_ENDPOINTS
    for endpoint in endpoints:  # Endpoint.fromString: exactly "<METHOD> <path>"
        method, path = endpoint.split(" ")
        assert method in ("GET", "HEAD", "POST", "DELETE") and path.startswith("/v1/{prefix}/")
    # no view endpoints: with a non-empty list Java calls none of them (listViews answers [])
    assert not any("/views" in e for e in endpoints)


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


# ---------------------------------------------------------------------------------------------
# OAuth2 (OAuth2Manager / OAuth2Util)


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


# ---------------------------------------------------------------------------------------------
# namespaces


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
    pages, token = [], ""
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


# ---------------------------------------------------------------------------------------------
# tables


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


def create_changes(md: JSON) -> list[JSON]:
    """RESTSessionCatalog.createChanges of a staged table's metadata."""
    spec = next(s for s in md["partition-specs"] if s["spec-id"] == md["default-spec-id"])
    order = next(o for o in md["sort-orders"] if o["order-id"] == md["default-sort-order-id"])
    changes = [
        {"action": "assign-uuid", "uuid": md["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": md["format-version"]},
        {"action": "add-schema", "schema": md["schemas"][0], "last-column-id": md["last-column-id"]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": md["location"]},
    ]
    if md["properties"]:
        changes.append({"action": "set-properties", "updates": md["properties"]})
    return changes


def test_staged_create_then_the_create_commit_java_sends(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    staged = wire.create_table(
        "db",
        "staged",
        **{
            "partition-spec": BUCKET_SPEC,
            "write-order": ID_ORDER,
            "stage-create": True,
            "properties": {"format-version": "2"},
        },
    )
    assert staged["metadata-location"] is None
    assert_java_readable_table(staged, 2)
    assert not backing_catalog.table_exists("db.staged")
    md = staged["metadata"]
    # RESTSessionCatalog.createChanges(metadata) plus the transaction's own append
    updates = create_changes(md)
    snapshot = java_snapshot(md, 4242, None, 1, 3)
    updates += [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "snapshot-id": 4242, "type": "branch"},
    ]
    reply = wire.commit("namespaces/db/tables/staged", [{"type": "assert-create"}], updates)
    assert reply.status_code == 200, reply.text
    committed = reply.json()
    assert_java_readable_table(committed, 2)
    cmd = committed["metadata"]
    assert cmd["table-uuid"] == md["table-uuid"]
    assert cmd["current-snapshot-id"] == 4242
    assert cmd["refs"] == {"main": {"snapshot-id": 4242, "type": "branch"}}
    assert cmd["last-sequence-number"] == 1
    assert cmd["partition-specs"] == [BUCKET_SPEC]
    assert [o["fields"] for o in cmd["sort-orders"] if o["order-id"] == cmd["default-sort-order-id"]] == [
        ID_ORDER["fields"]
    ]
    assert backing_catalog.load_table("db.staged").metadata.current_snapshot_id == 4242
    # staging or creating over an existing table is AlreadyExists, as Java's own server answers
    again = {"name": "staged", "schema": SCHEMA, "stage-create": True}
    assert_error(wire.send("POST", "namespaces/db/tables", again), 409, "AlreadyExistsException")
    assert_error(
        wire.commit("namespaces/db/tables/staged", [{"type": "assert-create"}], updates),
        409,
        "CommitFailedException",
    )


def test_staged_unpartitioned_v3_create_commits_without_a_snapshot(
    wire: JavaWire, backing_catalog: SqlCatalog
) -> None:
    """Java's createTransaction with no spec, no order and nothing appended: the bare create."""
    staged = wire.create_table("db", "bare", **{"stage-create": True, "properties": {"format-version": "3"}})
    md = staged["metadata"]
    assert_java_readable_table(staged, 3)
    updates = create_changes(md)
    assert updates[4] == {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}
    assert updates[6] == {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}}
    reply = wire.commit("namespaces/db/tables/bare", [{"type": "assert-create"}], updates)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 3)
    committed = reply.json()["metadata"]
    assert committed["table-uuid"] == md["table-uuid"]
    assert committed["next-row-id"] == 0
    assert committed["partition-specs"] == [{"spec-id": 0, "fields": []}]
    assert committed["sort-orders"] == [{"order-id": 0, "fields": []}]
    assert committed.get("snapshots", []) == [] and committed.get("refs", {}) == {}
    assert backing_catalog.load_table("db.bare").metadata.format_version == 3


def test_appends_assert_the_branch_head_and_a_stale_one_is_commit_failed(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    first = append(wire, path, table, java_snapshot(table, 1001, None, 1, 3), branch_head=None)
    assert first.status_code == 200, first.text
    assert_java_readable_table(first.json(), 2)
    second = append(wire, path, table, java_snapshot(table, 1002, 1001, 2, 5), branch_head=1001)
    assert second.status_code == 200, second.text
    md = second.json()["metadata"]
    assert md["current-snapshot-id"] == 1002
    assert md["last-sequence-number"] == 2
    assert [(s["snapshot-id"], s.get("parent-snapshot-id")) for s in md["snapshots"]] == [
        (1001, None),
        (1002, 1001),
    ]
    assert [entry["snapshot-id"] for entry in md["snapshot-log"]] == [1001, 1002]
    stale = append(wire, path, table, java_snapshot(table, 1003, 1001, 2, 1), branch_head=1001)
    assert_error(stale, 409, "CommitFailedException")
    wrong_uuid = dict(table, **{"table-uuid": str(uuid.uuid4())})
    assert_error(
        append(wire, path, wrong_uuid, java_snapshot(table, 1004, 1002, 3, 1), 1002),
        409,
        "CommitFailedException",
    )
    assert_error(
        append(wire, "namespaces/db/tables/missing", table, java_snapshot(table, 1, None, 1, 1), None),
        404,
        "NoSuchTableException",
    )


def add_column(table: JSON, column: JSON) -> tuple[list[JSON], list[JSON]]:
    """The commit UpdateSchema sends to add ``column`` (id 3) to a table still at SCHEMA."""
    evolved = {"type": "struct", "schema-id": 1, "fields": [*SCHEMA["fields"], column]}
    requirements = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-current-schema-id", "current-schema-id": 0},
    ]
    updates = [
        {"action": "add-schema", "schema": evolved, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
    ]
    return requirements, updates


def test_schema_update_and_property_removal(wire: JavaWire) -> None:
    table = wire.create_table("db", "t", properties={"a": "1", "b": "2"})["metadata"]
    requirements, updates = add_column(
        table, {"id": 3, "name": "ts", "required": False, "type": "timestamptz"}
    )
    updates.append({"action": "remove-properties", "removals": ["a"]})
    reply = wire.commit("namespaces/db/tables/t", requirements, updates)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["current-schema-id"] == 1
    assert md["last-column-id"] == 3
    assert [f["name"] for f in md["schemas"][-1]["fields"]] == ["id", "data", "ts"]
    assert "a" not in md["properties"] and md["properties"]["b"] == "2"
    assert_error(wire.commit("namespaces/db/tables/t", requirements, updates), 409, "CommitFailedException")


def test_replace_table_as_java_builds_the_replacement(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 7, None, 1, 3), None).status_code == 200
    replacement = {
        "type": "struct",
        "schema-id": 1,
        "fields": [{"id": 3, "name": "key", "required": True, "type": "string"}],
    }
    spec = {
        "spec-id": 1,
        "fields": [{"name": "key", "transform": "identity", "source-id": 3, "field-id": 1000}],
    }
    # UpdateRequirements.forReplaceTable: no current-schema / default-spec / ref assertions
    requirements = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
    ]
    updates = [
        {"action": "remove-snapshot-ref", "ref-name": "main"},
        {"action": "add-schema", "schema": replacement, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "set-default-sort-order", "sort-order-id": 0},
        {"action": "set-location", "location": table["location"]},
        {"action": "set-properties", "updates": {"replaced": "true"}},
    ]
    reply = wire.commit(path, requirements, updates)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert_java_readable_table(reply.json(), 2)
    assert md["current-schema-id"] == 1 and md["default-spec-id"] == 1
    assert md["last-partition-id"] == 1000
    assert md.get("refs", {}) == {} and md.get("current-snapshot-id") in (None, -1)
    assert [s["snapshot-id"] for s in md["snapshots"]] == [7]  # history stays
    assert md["properties"]["replaced"] == "true"


def test_expiry_statistics_and_unused_spec_and_schema_removal(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 1, None, 1, 1), None).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 2, 1, 2, 2), 1).status_code == 200
    uuid_req = [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}]
    statistics = {  # StatisticsFileParser.toJson
        "snapshot-id": 2,
        "statistics-path": f"{table['location']}/metadata/stats-2.puffin",
        "file-size-in-bytes": 100,
        "file-footer-size-in-bytes": 20,
        "blob-metadata": [
            {
                "type": "apache-datasketches-theta-v1",
                "snapshot-id": 2,
                "sequence-number": 2,
                "fields": [1],
                "properties": {"ndv": "2"},
            }
        ],
    }
    partition_statistics = {
        "snapshot-id": 2,
        "statistics-path": f"{table['location']}/metadata/pstats-2.parquet",
        "file-size-in-bytes": 50,
    }
    reply = wire.commit(
        path,
        uuid_req,
        [
            {"action": "set-statistics", "snapshot-id": 2, "statistics": statistics},
            {"action": "set-partition-statistics", "partition-statistics": partition_statistics},
        ],
    )
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["statistics"] == [statistics]
    assert md["partition-statistics"] == [partition_statistics]

    # a schema and a spec change, then ExpireSnapshots(cleanExpiredMetadata) drops what no one uses
    evolved = dict(SCHEMA, **{"schema-id": 1, "fields": SCHEMA["fields"][:1]})
    spec = {
        "spec-id": 1,
        "fields": [{"name": "id", "transform": "identity", "source-id": 1, "field-id": 1000}],
    }
    reply = wire.commit(
        path,
        uuid_req,
        [
            {"action": "add-schema", "schema": evolved, "last-column-id": 2},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": spec},
            {"action": "set-default-spec", "spec-id": -1},
        ],
    )
    assert reply.status_code == 200, reply.text
    expire = [
        {"action": "remove-snapshots", "snapshot-ids": [1]},
        {"action": "remove-statistics", "snapshot-id": 2},
        {"action": "remove-partition-statistics", "snapshot-id": 2},
        {"action": "remove-partition-specs", "spec-ids": [0]},
        {"action": "remove-schemas", "schema-ids": [0]},
    ]
    requirements = [
        *uuid_req,
        {"type": "assert-default-spec-id", "default-spec-id": 1},
        {"type": "assert-current-schema-id", "current-schema-id": 1},
    ]
    reply = wire.commit(path, requirements, expire)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert_java_readable_table(reply.json(), 2)
    assert [s["snapshot-id"] for s in md["snapshots"]] == [2]
    assert md.get("statistics", []) == [] and md.get("partition-statistics", []) == []
    assert [s["spec-id"] for s in md["partition-specs"]] == [1]
    assert [s["schema-id"] for s in md["schemas"]] == [1]
    current = [{"action": "remove-schemas", "schema-ids": [1]}]
    assert_error(wire.commit(path, uuid_req, current), 400, "BadRequestException")


def test_load_with_snapshots_refs_keeps_only_referenced_snapshots(wire: JavaWire) -> None:
    table = wire.create_table("db", "t")["metadata"]
    path = "namespaces/db/tables/t"
    assert append(wire, path, table, java_snapshot(table, 1, None, 1, 1), None).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 2, 1, 2, 2), 1).status_code == 200
    tag = {
        "action": "set-snapshot-ref",
        "ref-name": "v1",
        "snapshot-id": 1,
        "type": "tag",
        "max-ref-age-ms": 86400000,
    }
    assert wire.commit(path, [], [tag]).status_code == 200
    assert append(wire, path, table, java_snapshot(table, 3, 2, 3, 3), 2).status_code == 200
    full = wire.ok("GET", path, snapshots="all")
    assert [s["snapshot-id"] for s in full["metadata"]["snapshots"]] == [1, 2, 3]
    refs_only = wire.ok("GET", path, snapshots="refs")
    assert_java_readable_table(refs_only, 2)
    assert refs_only["metadata-location"] == full["metadata-location"]
    assert [s["snapshot-id"] for s in refs_only["metadata"]["snapshots"]] == [1, 3]
    assert refs_only["metadata"]["refs"] == {
        "main": {"snapshot-id": 3, "type": "branch"},
        "v1": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 86400000},
    }
    assert_error(wire.send("GET", path, snapshots="some"), 400, "BadRequestException")


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
    overwrite = register | {"overwrite": True}  # not served: registration never replaces a table
    assert_error(wire.send("POST", "namespaces/db/register", overwrite), 409, "AlreadyExistsException")

    assert wire.send("DELETE", "namespaces/db/tables/again", purgeRequested="true").status_code == 204
    assert_error(wire.send("GET", "namespaces/db/tables/again", snapshots="all"), 404, "NoSuchTableException")
    # a table in a missing namespace is a missing table, as Java's catalogs answer loadTable
    assert_error(wire.send("GET", "namespaces/nowhere/tables/u"), 404, "NoSuchTableException")
    assert wire.ok("GET", "namespaces/db/tables", pageToken="", pageSize="10") == {"identifiers": []}
    assert not backing_catalog.table_exists("db.again")
    assert not Path(created["metadata-location"].removeprefix("file://")).exists()  # purged


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


def test_v3_create_and_append_carry_row_lineage(wire: JavaWire) -> None:
    created = wire.create_table("db", "v3", properties={"format-version": "3"})
    assert_java_readable_table(created, 3)
    table = created["metadata"]
    assert table["next-row-id"] == 0
    path = "namespaces/db/tables/v3"
    first = java_snapshot(table, 31, None, 1, 3) | {"first-row-id": 0, "added-rows": 3}
    reply = append(wire, path, table, first, None)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 3)
    second = java_snapshot(table, 32, 31, 2, 2) | {"first-row-id": 3, "added-rows": 2}
    reply = append(wire, path, table, second, 31)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["next-row-id"] == 5
    assert [(s["first-row-id"], s["added-rows"]) for s in md["snapshots"]] == [(0, 3), (3, 2)]
    # a v3 column with defaults and a doc, as SchemaParser writes it
    column = {"id": 3, "name": "n", "required": False, "type": "int", "doc": "a count"}
    column |= {"initial-default": 34, "write-default": 35}
    reply = wire.commit(path, *add_column(table, column))
    assert reply.status_code == 200, reply.text
    assert reply.json()["metadata"]["schemas"][-1]["fields"][-1] == column


def test_a_retried_mutation_with_its_idempotency_key_is_answered_not_repeated(wire: JavaWire) -> None:
    """HTTPClient retries a POST (429/503, a lost answer) with the same Idempotency-Key."""
    key = {"Idempotency-Key": "0192f2d4-0c7e-7a3b-8d3e-5f0a1b2c3d4e"}
    body = {"namespace": ["retried"], "properties": {}}
    first = wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30)
    again = wire.session.post(wire.base + "namespaces", json=body, headers=key, timeout=30)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json() == {"namespace": ["retried"], "properties": {}}
    assert_error(wire.send("POST", "namespaces", body), 409, "AlreadyExistsException")  # a new key

    table = wire.create_table("retried", "t")["metadata"]
    commit_key = {"Idempotency-Key": "0192f2d4-0c7e-7a3b-8d3e-5f0a1b2c3d4f"}
    snapshot = java_snapshot(table, 77, None, 1, 1)
    commit = {
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


def test_v1_table_carries_the_single_schema_and_spec_fields_and_appends(wire: JavaWire) -> None:
    created = wire.create_table(
        "db", "v1", **{"partition-spec": BUCKET_SPEC, "properties": {"format-version": "1"}}
    )
    assert_java_readable_table(created, 1)
    table = created["metadata"]
    # TableMetadataParser reads "schema" / "partition-spec" when a v1 file lacks the lists
    assert table["schema"] == table["schemas"][0]
    assert table["partition-spec"] == BUCKET_SPEC["fields"]
    snapshot = java_snapshot(table, 101, None, 1, 2)
    del snapshot["sequence-number"]  # SnapshotParser omits it in v1 (INITIAL_SEQUENCE_NUMBER)
    reply = append(wire, "namespaces/db/tables/v1", table, snapshot, None)
    assert reply.status_code == 200, reply.text
    assert_java_readable_table(reply.json(), 1)
    md = reply.json()["metadata"]
    assert md["current-snapshot-id"] == 101
    assert "sequence-number" not in md["snapshots"][0]


def test_partition_and_sort_order_evolution_as_java_commits_them(wire: JavaWire) -> None:
    table = wire.create_table("db", "evolving", **{"partition-spec": BUCKET_SPEC})["metadata"]
    path = "namespaces/db/tables/evolving"
    uuid_req = {"type": "assert-table-uuid", "uuid": table["table-uuid"]}
    # UpdatePartitionSpec: ALTER TABLE ... ADD PARTITION FIELD truncate(4, data)
    spec = {
        "spec-id": 1,
        "fields": [
            *BUCKET_SPEC["fields"],
            {"name": "data_trunc", "transform": "truncate[4]", "source-id": 2, "field-id": 1001},
        ],
    }
    spec_requirements = [
        uuid_req,
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
    ]
    spec_updates = [{"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1}]
    reply = wire.commit(path, spec_requirements, spec_updates)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert (md["default-spec-id"], md["last-partition-id"]) == (1, 1001)
    assert md["partition-specs"] == [BUCKET_SPEC, spec]
    assert_error(wire.commit(path, spec_requirements, spec_updates), 409, "CommitFailedException")
    # ReplaceSortOrder: ALTER TABLE ... WRITE ORDERED BY id DESC NULLS LAST
    order = {
        "order-id": 1,
        "fields": [
            {"transform": "identity", "source-id": 1, "direction": "desc", "null-order": "nulls-last"}
        ],
    }
    order_requirements = [uuid_req, {"type": "assert-default-sort-order-id", "default-sort-order-id": 0}]
    order_updates = [
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]
    reply = wire.commit(path, order_requirements, order_updates)
    assert reply.status_code == 200, reply.text
    md = reply.json()["metadata"]
    assert md["default-sort-order-id"] == 1
    assert md["sort-orders"] == [{"order-id": 0, "fields": []}, order]
    assert_error(wire.commit(path, order_requirements, order_updates), 409, "CommitFailedException")


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
