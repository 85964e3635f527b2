"""Credential vending by ``icefloe serve`` against moto's S3, STS and IAM with authentication on.

Every client here holds a catalog token and no storage keys: what it reads and writes on S3 it
does with the credentials the server vends (moto refuses anything else). AssumeRole requests are
counted at the moto server. Expiry is moved through the clocks of the server's vendor and the
client's FileIO, never by waiting.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.vended import EXPIRES_AT_MS, VendedFileIO
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ValidationError
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.server.vending import (
    DURATION_S,
    ROLE_ARN,
    STATIC_UNSCOPED_KEYS,
    STS_ENDPOINT,
    StsVendor,
    credential_vendor,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.interop import duckdb_connection
from tests.support.sts_server import StsServer, vendor_of

ADMIN = "admin-token"
READER = "reader-token"  # read on db only
OTHER = "other-token"  # write on other only
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])
ICE_SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
TOKENS = {ADMIN: Grants(), READER: Grants({"db": "read"}), OTHER: Grants({"other": "write"})}


def _catalog(tmp_path: Path, sts: StsServer, **vending: str) -> SqlCatalog:
    """A catalog on the store with ``vending`` settings only (no role unless they name one)."""
    catalog: SqlCatalog = sts.vending_catalog(
        "vending", f"sqlite:///{tmp_path / 'catalog.db'}", assume_role=False, **vending
    )
    return catalog


@pytest.fixture
def vending_server(tmp_path: Path, sts: StsServer) -> Iterator[RunningServer]:
    catalog = _catalog(tmp_path, sts, **{ROLE_ARN: sts.role_arn})
    catalog.create_namespace("db")
    catalog.create_namespace("other")
    sts.reset()
    with start_server(ServerConfig(catalog, tokens=TOKENS)) as server:
        yield server
    catalog.close()


def _get(server: RunningServer, path: str, token: str, delegation: str | None) -> tuple[int, Any]:
    request = urllib.request.Request(server.uri + "/v1" + path, headers={"Authorization": f"Bearer {token}"})
    if delegation is not None:
        request.add_header("X-Iceberg-Access-Delegation", delegation)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_pyiceberg_creates_appends_and_reads_with_vended_credentials_only(
    vending_server: RunningServer, sts: StsServer
) -> None:
    client = PyIcebergRestCatalog("py", uri=vending_server.uri, token=ADMIN)
    table = client.create_table("db.t", schema=ARROW_SCHEMA)
    table.append(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=ARROW_SCHEMA))
    table.append(pa.table({"id": [3], "s": ["c"]}, schema=ARROW_SCHEMA))
    rows = client.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]
    assert sts.assume_role_count() == 1  # create, two commits' reloads and the load: one AssumeRole


def test_icefloe_client_writes_and_reads_with_vended_credentials_only(
    vending_server: RunningServer, sts: StsServer
) -> None:
    client = RestCatalog("ice", uri=vending_server.uri, token=ADMIN)
    table = client.create_table("db.t", ICE_SCHEMA)
    assert isinstance(table.io, VendedFileIO)
    assert "s3.session-token" in table.io.properties and "s3.access-key-id" not in client.properties
    table.append(pa.table({"id": pa.array([5, 6], pa.int64()), "s": ["e", "f"]}))
    reader = RestCatalog("reader", uri=vending_server.uri, token=READER)
    rows = reader.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 5, "s": "e"}, {"id": 6, "s": "f"}]
    assert sts.assume_role_count() == 2  # one for write access, one for read access
    client.close()
    reader.close()


def test_no_delegation_header_no_credentials(vending_server: RunningServer, sts: StsServer) -> None:
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_table("db.t", ICE_SCHEMA)
    sts.reset()
    status, body = _get(vending_server, "/namespaces/db/tables/t", ADMIN, None)
    assert status == 200 and body["config"] == {} and "storage-credentials" not in body
    status, body = _get(vending_server, "/namespaces/db/tables/t", ADMIN, "remote-signing")
    assert status == 200 and "storage-credentials" not in body
    assert sts.assume_role_count() == 0
    status, body = _get(
        vending_server, "/namespaces/db/tables/t", ADMIN, "remote-signing, vended-credentials"
    )
    [credential] = body["storage-credentials"]
    assert credential["prefix"] == body["metadata"]["location"]
    assert sorted(credential["config"]) == [
        "s3.access-key-id",
        "s3.endpoint",
        "s3.path-style-access",
        "s3.region",
        "s3.secret-access-key",
        "s3.session-token",
        "s3.session-token-expires-at-ms",
    ]
    assert credential["config"]["s3.endpoint"] == sts.endpoint
    assert credential["config"]["s3.access-key-id"] != sts.access_key


def test_a_result_with_credentials_names_where_java_renews_them(
    vending_server: RunningServer, sts: StsServer
) -> None:
    """Iceberg Java's S3FileIO (1.7 on) renews vended credentials only from the table config's
    ``client.refresh-credentials-endpoint`` (resolved against the catalog URI); its
    ``VendedCredentialsProvider`` then needs exactly one ``s3`` credential with keys, token and
    expiry. The config holds the credentials too: Java before 1.7 and DuckDB read only the config.
    Results without credentials keep an empty config."""
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_namespace("db.a b")
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_table(("db", "a b", "t+1"), ICE_SCHEMA)
    path = "/namespaces/db%1Fa%20b/tables/t%2B1"
    status, body = _get(vending_server, path, ADMIN, "vended-credentials")
    endpoint = "v1/namespaces/db%1Fa%20b/tables/t%2B1/credentials"
    [vended] = body["storage-credentials"]
    assert status == 200
    assert body["config"] == {**vended["config"], "client.refresh-credentials-endpoint": endpoint}
    request = urllib.request.Request(
        f"{vending_server.uri}/{endpoint}?planId=p", headers={"Authorization": f"Bearer {READER}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        [credential] = json.loads(answer.read())["storage-credentials"]
    assert credential["prefix"].startswith("s3")
    for key in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", EXPIRES_AT_MS):
        assert credential["config"][key]
    assert _get(vending_server, path, ADMIN, None)[1]["config"] == {}


def test_credentials_endpoint_checks_the_grant(vending_server: RunningServer, sts: StsServer) -> None:
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_table("db.t", ICE_SCHEMA)
    sts.reset()
    status, body = _get(vending_server, "/namespaces/db/tables/t/credentials", OTHER, None)
    assert (status, body["error"]["type"]) == (403, "ForbiddenException")
    status, body = _get(vending_server, "/namespaces/db/tables/t", OTHER, "vended-credentials")
    assert status == 403
    assert sts.assume_role_count() == 0
    status, body = _get(vending_server, "/namespaces/db/tables/t/credentials", READER, None)
    assert status == 200 and len(body["storage-credentials"]) == 1
    assert sts.assume_role_count() == 1


def test_cache_hit_reuses_and_expired_entry_is_renewed(vending_server: RunningServer, sts: StsServer) -> None:
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_table("db.t", ICE_SCHEMA)
    sts.reset()
    vendor = vendor_of(vending_server)
    first = _get(vending_server, "/namespaces/db/tables/t", READER, "vended-credentials")[1]
    again = _get(vending_server, "/namespaces/db/tables/t/credentials", READER, None)[1]
    assert again["storage-credentials"] == first["storage-credentials"]
    assert sts.assume_role_count() == 1
    expires_s = int(first["storage-credentials"][0]["config"][EXPIRES_AT_MS]) / 1000
    vendor.clock = lambda: expires_s - vendor.renew_before_s - 1  # still outside the margin
    assert _get(vending_server, "/namespaces/db/tables/t", READER, "vended-credentials")[1] == first
    assert sts.assume_role_count() == 1
    vendor.clock = lambda: expires_s - vendor.renew_before_s  # inside it: renewed
    renewed = _get(vending_server, "/namespaces/db/tables/t", READER, "vended-credentials")[1]
    assert sts.assume_role_count() == 2
    assert renewed["storage-credentials"] != first["storage-credentials"]


def test_client_renews_near_expiry_before_its_next_read(
    vending_server: RunningServer, sts: StsServer
) -> None:
    client = RestCatalog("ice", uri=vending_server.uri, token=ADMIN)
    client.create_table("db.t", ICE_SCHEMA).append(pa.table({"id": pa.array([7], pa.int64()), "s": ["g"]}))
    table = client.load_table("db.t")
    io = table.io
    assert isinstance(io, VendedFileIO)
    sts.reset()
    old_token = io.properties["s3.session-token"]
    expires_s = int(io.properties[EXPIRES_AT_MS]) / 1000
    near = expires_s - 30  # inside the client's margin and the server's
    vendor_of(vending_server).clock = lambda: near
    io.clock = lambda: near
    assert table.scan().to_arrow().to_pylist() == [{"id": 7, "s": "g"}]
    assert sts.assume_role_count() == 1
    assert io.properties["s3.session-token"] != old_token
    assert int(io.properties[EXPIRES_AT_MS]) / 1000 > near + 60
    assert table.scan().to_arrow().num_rows == 1  # renewed once, not on every operation
    assert sts.assume_role_count() == 1
    client.close()


def test_properties_shipped_to_executors_are_renewed_first(
    vending_server: RunningServer, sts: StsServer
) -> None:
    """Spark jobs ship ``dict(table.io.properties)`` to executors: reading them renews credentials
    that are about to expire, so executors never start on them."""
    client = RestCatalog("ice", uri=vending_server.uri, token=ADMIN)
    io = client.create_table("db.t", ICE_SCHEMA).io
    assert isinstance(io, VendedFileIO)
    sts.reset()
    before = dict(io.properties)
    assert sts.assume_role_count() == 0
    near = int(before[EXPIRES_AT_MS]) / 1000 - 59
    vendor_of(vending_server).clock = lambda: near
    io.clock = lambda: near
    shipped = dict(io.properties)
    assert sts.assume_role_count() == 1
    assert shipped["s3.session-token"] != before["s3.session-token"]
    assert shipped[EXPIRES_AT_MS] == str(int((near + 3600) * 1000))
    client.close()


def test_sts_failure_is_a_503_error_model(tmp_path: Path, sts: StsServer) -> None:
    catalog = _catalog(tmp_path, sts, **{ROLE_ARN: sts.role_arn, STS_ENDPOINT: "http://127.0.0.1:9"})
    catalog.create_namespace("db")
    catalog.create_table("db.t", ICE_SCHEMA)
    with start_server(ServerConfig(catalog, tokens=TOKENS)) as server:
        status, body = _get(server, "/namespaces/db/tables/t", ADMIN, "vended-credentials")
        assert (status, body["error"]["type"], body["error"]["code"]) == (
            503,
            "ServiceUnavailableException",
            503,
        )
        assert body["error"]["message"].startswith("could not vend storage credentials: STS ")
        assert _get(server, "/namespaces/db/tables/t", ADMIN, None)[0] == 200
        create = urllib.request.Request(
            server.uri + "/v1/namespaces/db/tables",
            data=json.dumps(
                {"name": "u", "schema": {"type": "struct", "schema-id": 0, "fields": []}}
            ).encode(),
            headers={"Authorization": f"Bearer {ADMIN}", "X-Iceberg-Access-Delegation": "vended-credentials"},
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(create, timeout=30)
        assert refused.value.code == 503
        assert catalog.list_tables("db") == [("db", "t")]  # the failed create created nothing
    catalog.close()


def test_static_unscoped_keys_are_vended_only_when_enabled(tmp_path: Path, sts: StsServer) -> None:
    catalog = _catalog(tmp_path, sts, **{STATIC_UNSCOPED_KEYS: "true"})
    catalog.create_namespace("db")
    with start_server(ServerConfig(catalog, tokens=TOKENS)) as server:
        client = PyIcebergRestCatalog("py", uri=server.uri, token=ADMIN)
        table = client.create_table("db.t", schema=ARROW_SCHEMA)
        table.append(pa.table({"id": [9], "s": ["i"]}, schema=ARROW_SCHEMA))
        assert client.load_table("db.t").scan().to_arrow().to_pylist() == [{"id": 9, "s": "i"}]
        body = _get(server, "/namespaces/db/tables/t", ADMIN, "vended-credentials")[1]
        assert body["storage-credentials"][0]["config"] == {**sts.server_properties}
    catalog.close()
    (tmp_path / "plain").mkdir()
    plain = _catalog(tmp_path / "plain", sts)
    plain.create_namespace("db")
    plain.create_table("db.t", ICE_SCHEMA)
    with start_server(ServerConfig(plain, tokens=TOKENS)) as server:
        body = _get(server, "/namespaces/db/tables/t", ADMIN, "vended-credentials")[1]
        assert "storage-credentials" not in body
        keyless = PyIcebergRestCatalog("py", uri=server.uri, token=ADMIN, **sts.store_properties)
        with pytest.raises(OSError, match="AWS Error"):  # moto refuses unsigned requests
            keyless.load_table("db.t").append(pa.table({"id": [1], "s": ["a"]}, schema=ARROW_SCHEMA))
    plain.close()


def test_duckdb_reads_and_writes_with_vended_credentials_only(vending_server: RunningServer) -> None:
    """DuckDB's iceberg extension turns ``storage-credentials`` into a secret scoped to the table
    (endpoint, path style and plain HTTP included); it holds no S3 secret of its own."""
    import duckdb_extension_httpfs

    client = PyIcebergRestCatalog("py", uri=vending_server.uri, token=ADMIN)
    client.create_table("db.t", schema=ARROW_SCHEMA).append(
        pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=ARROW_SCHEMA)
    )
    con = duckdb_connection()
    httpfs = next(Path(str(duckdb_extension_httpfs.__file__)).parent.rglob("httpfs.duckdb_extension"))
    con.execute(f"LOAD '{httpfs}'")
    con.execute(f"CREATE OR REPLACE SECRET vend_token (TYPE iceberg, TOKEN '{ADMIN}')")
    con.execute("DETACH DATABASE IF EXISTS vend")
    con.execute(
        f"ATTACH 'warehouse' AS vend (TYPE iceberg, ENDPOINT '{vending_server.uri}', SECRET vend_token)"
    )
    try:
        assert con.execute("SELECT id, s FROM vend.db.t ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
        con.execute("INSERT INTO vend.db.t VALUES (3, 'c')")
        secrets = con.execute(
            "SELECT type, provider, scope FROM duckdb_secrets() WHERE type = 's3'"
        ).fetchall()
        location = client.load_table("db.t").metadata.location
        assert {(kind, provider, tuple(scope)) for kind, provider, scope in secrets} == {
            ("s3", "iceberg", (location,))  # only vended ones, each scoped to the table
        }
    finally:
        con.execute("DETACH DATABASE vend")
        con.execute("DROP SECRET vend_token")
    rows = client.load_table("db.t").scan().to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]


def test_loads_missing_the_cache_together_share_one_assume_role(
    vending_server: RunningServer, sts: StsServer
) -> None:
    RestCatalog("ice", uri=vending_server.uri, token=ADMIN).create_table("db.t", ICE_SCHEMA)
    sts.reset()
    vendor = vendor_of(vending_server)
    start = threading.Barrier(8)

    def load(_: int) -> str:
        start.wait()
        location = vending_server.app.state.icefloe.catalog.load_table("db.t").metadata.location
        return vendor.credentials([location], False).config["s3.session-token"]

    with ThreadPoolExecutor(8) as pool:
        tokens = set(pool.map(load, range(8)))
    assert len(tokens) == 1
    assert sts.assume_role_count() == 1


def test_configuration_defaults_and_bounds() -> None:
    store = {"s3.endpoint": "http://minio:9000", "s3.region": "eu-west-1"}
    vendor = credential_vendor({**store, ROLE_ARN: "arn:aws:iam::1:role/r"})
    assert isinstance(vendor, StsVendor)
    assert (vendor.endpoint, vendor.region, vendor.duration_s, vendor.renew_before_s, vendor.external_id) == (
        "http://minio:9000",
        "eu-west-1",
        3600,
        300,
        None,
    )
    assert credential_vendor(store) is None
    assert credential_vendor({**store, STATIC_UNSCOPED_KEYS: "false"}) is None
    for duration in ("899", "43201", "soon"):
        with pytest.raises(ValidationError, match="duration-s"):
            credential_vendor({ROLE_ARN: "arn:aws:iam::1:role/r", DURATION_S: duration})
