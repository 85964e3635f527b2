"""The server refuses: missing or wrong tokens, namespaces outside a token's grants, identifiers
with '/', '..' or NUL, locations outside the warehouse, oversized requests. Errors are ErrorModels."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.formats.metadata.files import read_table_metadata, write_table_metadata
from icefloe.io.fileio import FileIO
from icefloe.server import Grants, OAuthClient, RunningServer, ServerConfig, start_server
from tests.support.java_rest_views import create_view_request, view_version

ADMIN, SALES_WRITER, HR_READER = "admin", "sales-w", "hr-r"
LIMIT = 64 * 1024
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog(
        "secure", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "warehouse")
    )
    config = ServerConfig(
        catalog,
        tokens={
            ADMIN: Grants(),
            SALES_WRITER: Grants({"sales": "write"}),
            HR_READER: Grants({"hr": "read"}),
        },
        clients={"etl": OAuthClient("pw", Grants({"sales": "read"}))},
        max_request_bytes=LIMIT,
    )
    with start_server(config) as running:
        yield running
    catalog.close()


def call(
    server: RunningServer, method: str, path: str, token: str | None = ADMIN, **kw: Any
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.request(method, server.uri + path, headers=headers, timeout=30, **kw)


def error_of(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] == response.status_code and isinstance(error["message"], str), error
    return dict(error)


def _setup(server: RunningServer) -> None:
    for ns in ("sales", "hr"):
        assert call(server, "POST", "/v1/namespaces", json={"namespace": [ns]}).status_code == 200
    for ns in ("sales", "hr"):
        response = call(server, "POST", f"/v1/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/config"),
        ("GET", "/v1/namespaces"),
        ("GET", "/v1/namespaces/sales"),
        ("GET", "/v1/namespaces/sales/tables/t"),
        ("POST", "/v1/namespaces/sales/tables/t"),
        ("DELETE", "/v1/namespaces/sales/tables/t"),
        ("POST", "/v1/transactions/commit"),
    ],
)
@pytest.mark.parametrize("token", [None, "wrong"])
def test_requests_without_a_valid_token_are_refused(
    server: RunningServer, method: str, path: str, token: str | None
) -> None:
    _setup(server)
    response = call(server, method, path, token=token, json={})
    assert response.status_code == 401
    assert error_of(response)["type"] == "NotAuthorizedException"
    assert call(server, "GET", "/v1/namespaces/sales/tables/t").status_code == 200  # nothing was dropped


def test_namespace_grants(server: RunningServer) -> None:
    _setup(server)
    # the sales writer works in sales ...
    create = {"name": "t2", "schema": SCHEMA}
    assert call(server, "POST", "/v1/namespaces/sales/tables", SALES_WRITER, json=create).status_code == 200
    assert call(server, "GET", "/v1/namespaces/sales/tables/t", SALES_WRITER).status_code == 200
    # ... and can neither read nor write hr
    for method, path, body in (
        ("GET", "/v1/namespaces/hr/tables/t", None),
        ("GET", "/v1/namespaces/hr/tables", None),
        ("POST", "/v1/namespaces/hr/tables", create),
        ("DELETE", "/v1/namespaces/hr/tables/t", None),
        ("POST", "/v1/namespaces/hr/properties", {"updates": {"a": "b"}}),
    ):
        response = call(server, method, path, SALES_WRITER, json=body)
        assert response.status_code == 403, (method, path, response.text)
        assert error_of(response)["type"] == "ForbiddenException"
    listed = call(server, "GET", "/v1/namespaces", SALES_WRITER).json()["namespaces"]
    assert listed == [["sales"]]
    # a rename out of a granted namespace into another is refused as a whole
    rename = {
        "source": {"namespace": ["sales"], "name": "t"},
        "destination": {"namespace": ["hr"], "name": "moved"},
    }
    assert call(server, "POST", "/v1/tables/rename", SALES_WRITER, json=rename).status_code == 403
    # the hr reader reads hr but cannot change it
    assert call(server, "GET", "/v1/namespaces/hr/tables/t", HR_READER).status_code == 200
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    assert call(server, "POST", "/v1/namespaces/hr/tables/t", HR_READER, json=commit).status_code == 403
    assert call(server, "POST", "/v1/namespaces/hr/tables/t", ADMIN, json=commit).status_code == 200
    # a multi-table transaction touching a namespace without write grant is refused whole
    both = {
        "table-changes": [
            {**commit, "identifier": {"namespace": ["sales"], "name": "t"}},
            {**commit, "identifier": {"namespace": ["hr"], "name": "t"}},
        ]
    }
    assert call(server, "POST", "/v1/transactions/commit", SALES_WRITER, json=both).status_code == 403
    loaded = call(server, "GET", "/v1/namespaces/sales/tables/t").json()
    assert "k" not in loaded["metadata"].get("properties", {})


def test_oauth2_tokens_carry_the_clients_grants(server: RunningServer) -> None:
    _setup(server)
    form = {"grant_type": "client_credentials", "client_id": "etl", "client_secret": "pw", "scope": "catalog"}
    token = requests.post(server.uri + "/v1/oauth/tokens", data=form, timeout=30).json()["access_token"]
    assert call(server, "GET", "/v1/namespaces/sales/tables/t", token).status_code == 200
    assert call(server, "GET", "/v1/namespaces/hr/tables/t", token).status_code == 403
    assert call(server, "DELETE", "/v1/namespaces/sales/tables/t", token).status_code == 403
    bad = requests.post(server.uri + "/v1/oauth/tokens", data={**form, "client_secret": "no"}, timeout=30)
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"


@pytest.mark.parametrize("level", ["a/b", "..", "a\x00b", "a..b", ""])
def test_bad_namespace_names_are_refused(server: RunningServer, level: str) -> None:
    response = call(server, "POST", "/v1/namespaces", json={"namespace": [level]})
    assert response.status_code == 400
    assert error_of(response)["type"] == "BadRequestException"
    assert call(server, "GET", "/v1/namespaces").json()["namespaces"] == []


@pytest.mark.parametrize("name", ["a/b", "..", "x\x00y", "../../etc"])
def test_bad_table_names_are_refused(server: RunningServer, name: str) -> None:
    _setup(server)
    response = call(server, "POST", "/v1/namespaces/sales/tables", json={"name": name, "schema": SCHEMA})
    assert response.status_code == 400, response.text
    listed = call(server, "GET", "/v1/namespaces/sales/tables").json()["identifiers"]
    assert listed == [{"namespace": ["sales"], "name": "t"}]


@pytest.mark.parametrize("path", ["/v1/namespaces/%2E%2E/tables/t", "/v1/namespaces/sales/tables/a%00b"])
def test_bad_identifiers_in_paths_are_refused(server: RunningServer, path: str) -> None:
    _setup(server)
    response = call(server, "GET", path)
    assert response.status_code in (400, 404)
    error_of(response)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/namespaces/sales/tables/t%2Fcredentials"),  # was 405 (the credentials route)
        ("DELETE", "/v1/namespaces/sales/tables/t%2Fmetrics"),  # was 405
        ("GET", "/v1/namespaces/sales%2Ftables"),  # was 200: the tables of 'sales'
        ("DELETE", "/v1/namespaces/sales%2Ftables%2Ft"),  # was 204: dropped sales.t
        ("POST", "/v1/namespaces/sales/tables/t%2fplan%2Fx"),
    ],
)
def test_encoded_slashes_in_paths_are_refused_before_routing(
    server: RunningServer, method: str, path: str
) -> None:
    """Found by the fuzz campaign: the router matched the decoded path, so an encoded '/' in an
    identifier reached another route (405, undocumented) or another object."""
    _setup(server)
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    response = call(server, method, path, json=commit if method == "POST" else None)
    assert response.status_code == 400, response.text
    assert error_of(response) == {
        "message": "a path segment holds an encoded '/', which no identifier may contain",
        "type": "BadRequestException",
        "code": 400,
    }
    loaded = call(server, "GET", "/v1/namespaces/sales/tables/t")
    assert loaded.status_code == 200 and "k" not in loaded.json()["metadata"].get("properties", {})


def test_requests_the_server_cannot_carry_out_are_400_where_the_spec_lists_no_406(
    server: RunningServer,
) -> None:
    """Found by the fuzz campaign: upgrade-format-version to -9717 answered 406, which the spec
    does not document for a table commit (only for the namespace, rename and planning calls)."""
    _setup(server)
    before = call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata-location"]
    upgrade = {"requirements": [], "updates": [{"action": "upgrade-format-version", "format-version": -9717}]}
    response = call(server, "POST", "/v1/namespaces/sales/tables/t", json=upgrade)
    assert response.status_code == 400, response.text
    assert error_of(response) == {
        "message": "format-version -9717 is not supported (supported: 1 to 4)",
        "type": "BadRequestException",
        "code": 400,
    }
    assert call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata-location"] == before
    both = {"table-changes": [{**upgrade, "identifier": {"namespace": ["sales"], "name": "t"}}]}
    response = call(server, "POST", "/v1/transactions/commit", json=both)
    assert (response.status_code, error_of(response)["type"]) == (400, "BadRequestException")
    assert call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata-location"] == before


def test_locations_outside_the_warehouse_are_refused(server: RunningServer, tmp_path: Path) -> None:
    _setup(server)
    outside = str(tmp_path / "elsewhere")
    loaded = call(server, "GET", "/v1/namespaces/sales/tables/t").json()
    inside = loaded["metadata"]["location"]
    attempts = [
        ("/v1/namespaces/sales/tables", {"name": "x", "schema": SCHEMA, "location": outside}),
        ("/v1/namespaces/sales/tables", {"name": "x", "schema": SCHEMA, "location": inside + "/../../../x"}),
        (
            "/v1/namespaces/sales/tables",
            {"name": "x", "schema": SCHEMA, "properties": {"write.metadata.path": outside}},
        ),
        ("/v1/namespaces", {"namespace": ["evil"], "properties": {"location": outside}}),
        ("/v1/namespaces/sales/register", {"name": "x", "metadata-location": outside + "/v1.metadata.json"}),
        ("/v1/namespaces/sales/tables/t", {"updates": [{"action": "set-location", "location": outside}]}),
        (
            "/v1/namespaces/sales/tables/t",
            {"updates": [{"action": "set-properties", "updates": {"write.data.path": outside}}]},
        ),
    ]
    for path, body in attempts:
        response = call(server, "POST", path, json=body)
        assert response.status_code == 400, (path, body, response.text)
        assert "warehouse" in error_of(response)["message"] or ".." in error_of(response)["message"]
    assert not (tmp_path / "elsewhere").exists()
    assert call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata"]["location"] == inside


def test_register_refuses_metadata_that_writes_outside_the_warehouse(
    server: RunningServer, tmp_path: Path
) -> None:
    """A metadata file inside the warehouse whose write paths point outside it is refused, as a
    create or commit setting those paths is: registering it would let writers through this server
    put files anywhere."""
    _setup(server)
    loaded = call(server, "GET", "/v1/namespaces/sales/tables/t").json()
    outside = str(tmp_path / "elsewhere")
    md = read_table_metadata(FileIO(), loaded["metadata-location"])
    evil = dataclasses.replace(md, properties={**md.properties, "write.data.path": outside})
    location = write_table_metadata(FileIO(), md.location, evil, loaded["metadata-location"])
    response = call(
        server, "POST", "/v1/namespaces/sales/register", json={"name": "x", "metadata-location": location}
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["message"] == f"location {outside!r} is outside the catalog's warehouse"
    assert call(server, "HEAD", "/v1/namespaces/sales/tables/x").status_code == 404


def test_oversized_and_malformed_requests(server: RunningServer) -> None:
    _setup(server)
    big = {"namespace": ["big"], "properties": {"k": "x" * (LIMIT + 1)}}
    response = call(server, "POST", "/v1/namespaces", json=big)
    assert response.status_code == 413
    error_of(response)
    response = call(server, "POST", "/v1/namespaces", data=b"{not json")
    assert response.status_code == 400
    # an unknown action or requirement is a malformed request (the spec documents no 406 here)
    before = call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata-location"]
    response = call(server, "POST", "/v1/namespaces/sales/tables/t", json={"updates": [{"action": "bogus"}]})
    assert response.status_code == 400
    assert error_of(response) == {
        "message": "unknown table update action 'bogus'",
        "type": "BadRequestException",
        "code": 400,
    }
    response = call(
        server, "POST", "/v1/namespaces/sales/tables/t", json={"requirements": [{"type": ""}], "updates": []}
    )
    assert response.status_code == 400
    assert error_of(response) == {
        "message": "unknown table requirement ''",
        "type": "BadRequestException",
        "code": 400,
    }
    assert call(server, "GET", "/v1/namespaces/sales/tables/t").json()["metadata-location"] == before
    response = call(server, "GET", "/v1/nowhere")
    assert response.status_code == 404
    error_of(response)


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


def test_register_view_cannot_reach_a_view_of_another_namespace(
    server: RunningServer, tmp_path: Path
) -> None:
    """A writer of sales may not name hr's view metadata file as a view of sales: it would then read
    hr's SQL and schema, and its replaces would write into hr's view directory."""
    _setup(server)
    version = view_version(1, 0, "SELECT salary FROM hr.t", ["hr"])
    created = call(
        server, "POST", "/v1/namespaces/hr/views", json=create_view_request("pay", SCHEMA, version)
    )
    assert created.status_code == 200, created.text
    before = _files(tmp_path / "warehouse")
    stolen = {"name": "pay", "metadata-location": created.json()["metadata-location"]}
    response = call(server, "POST", "/v1/namespaces/sales/register-view", SALES_WRITER, json=stolen)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["type"] == "BadRequestException"
    assert error["message"].endswith(
        "belongs to view hr.pay: registering it again would let two owners change and delete the same files"
    )
    assert call(server, "GET", "/v1/namespaces/sales/views/pay").status_code == 404
    assert call(server, "GET", "/v1/namespaces/sales/views").json()["identifiers"] == []
    assert _files(tmp_path / "warehouse") == before


def test_a_view_cannot_be_created_over_a_table_of_another_namespace(server: RunningServer) -> None:
    _setup(server)
    hr_table = call(server, "GET", "/v1/namespaces/hr/tables/t").json()["metadata"]["location"]
    version = view_version(1, 0, "SELECT 1", ["sales"])
    for location in (hr_table, f"{hr_table}/metadata"):
        request = create_view_request("v", SCHEMA, version) | {"location": location}
        response = call(server, "POST", "/v1/namespaces/sales/views", SALES_WRITER, json=request)
        assert response.status_code == 400, response.text
        assert error_of(response)["message"].startswith(f"view sales.v: location {location!r} overlaps")
    assert call(server, "GET", "/v1/namespaces/sales/views").json()["identifiers"] == []
