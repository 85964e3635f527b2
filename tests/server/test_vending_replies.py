"""Which credentials a reply carries when it is not freshly computed: ``304 Not Modified`` loads
and replayed idempotent creates, against moto's S3, STS and IAM (authentication and session
policies enforced). Expiry is moved through the clocks of the server's vendor and the client's
FileIO, never by waiting: moto does not expire assumed-role credentials itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.vended import EXPIRES_AT_MS, VendedFileIO
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer, ServerConfig, start_server
from icefloe.server.vending import DURATION_S, StsVendor
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.support.rest_faults import Fault, FaultInjector
from tests.support.sts_server import StsServer, vendor_of
from tests.support.vending_http import (
    ADMIN,
    DELEGATE,
    READER,
    SCHEMA,
    TOKENS,
    call,
    outcome,
    s3_with,
    vending_server,
    vending_sql_catalog,
)

CREATE = {"name": "t", "schema": SCHEMA}
TABLE = "/namespaces/db/tables/t"


@pytest.fixture
def catalog(tmp_path: Path, sts: StsServer) -> Iterator[SqlCatalog]:
    with vending_sql_catalog(tmp_path, sts) as found:
        yield found


@pytest.fixture
def server(catalog: SqlCatalog, sts: StsServer) -> Iterator[RunningServer]:
    with vending_server(catalog, sts) as running:
        yield running


def expires_s(credentials: list[dict[str, Any]]) -> float:
    return int(credentials[0]["config"][EXPIRES_AT_MS]) / 1000


def test_a_304_is_answered_only_while_the_client_holds_the_credentials_vended_now(
    server: RunningServer, sts: StsServer
) -> None:
    assert call(server, "POST", "/namespaces/db/tables", body=CREATE)[0] == 200
    sts.reset()
    vendor = vendor_of(server)
    status, first, headers = call(server, "GET", TABLE, READER, headers=DELEGATE)
    assert status == 200
    etag = headers["ETag"]
    status, body, headers = call(server, "GET", TABLE, READER, headers={**DELEGATE, "If-None-Match": etag})
    assert (status, body, headers["ETag"]) == (304, None, etag)
    plain = call(server, "GET", TABLE, READER, headers={"If-None-Match": etag})
    assert plain[0] == 200 and "storage-credentials" not in plain[1]  # asked for none: holds none
    assert plain[2]["ETag"] != etag
    writer = call(server, "GET", TABLE, ADMIN, headers=DELEGATE)
    assert writer[2]["ETag"] not in (etag, plain[2]["ETag"])  # other credentials, another tag
    assert sts.assume_role_count() == 2  # the reader's and the writer's

    end = expires_s(first["storage-credentials"])
    vendor.clock = lambda: end - vendor.renew_before_s - 1  # the held ones still have the margin
    assert call(server, "GET", TABLE, READER, headers={**DELEGATE, "If-None-Match": etag})[0] == 304
    assert sts.assume_role_count() == 2
    vendor.clock = lambda: end - vendor.renew_before_s  # within it: the server renews them
    status, renewed, headers = call(server, "GET", TABLE, READER, headers={**DELEGATE, "If-None-Match": etag})
    assert status == 200 and headers["ETag"] != etag
    assert sts.assume_role_count() == 3
    assert renewed["metadata"] == first["metadata"]
    fresh = renewed["storage-credentials"]
    assert (
        fresh[0]["config"]["s3.access-key-id"]
        != first["storage-credentials"][0]["config"]["s3.access-key-id"]
    )
    assert expires_s(fresh) == end - vendor.renew_before_s + 3600
    again = call(server, "GET", TABLE, READER, headers={**DELEGATE, "If-None-Match": headers["ETag"]})
    assert again[0] == 304


def test_the_client_renews_sixty_seconds_before_a_short_stamped_expiry(
    tmp_path: Path, sts: StsServer
) -> None:
    """With the shortest lifetime STS grants (900 s) the server stamps expiry in its own clock and
    icefloe's FileIO asks ``GET .../credentials`` once it is within 60 s of it, on its own: it
    sends no ``If-None-Match``, so no 304 ever keeps it on old credentials."""
    catalog = sts.vending_catalog("short", f"sqlite:///{tmp_path / 'catalog.db'}", **{DURATION_S: "900"})
    catalog.create_namespace("db")
    with start_server(ServerConfig(catalog, tokens=TOKENS)) as server:
        vendor = vendor_of(server)
        asked_at = 1_900_000_000.0
        vendor.clock = lambda: asked_at
        client = RestCatalog("ice", uri=server.uri, token=ADMIN)
        table = client.create_table("db.t", Schema(NestedField(1, "id", LongType())))
        io = table.io
        assert isinstance(io, VendedFileIO)
        assert io.properties[EXPIRES_AT_MS] == str(int((asked_at + 900) * 1000))
        sts.reset()
        old_token = io.properties["s3.session-token"]
        io.clock = lambda: asked_at + 900 - 61
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        assert (sts.assume_role_count(), io.properties["s3.session-token"]) == (0, old_token)
        now = asked_at + 900 - 60
        vendor.clock = io.clock = lambda: now
        assert table.scan().to_arrow().column("id").to_pylist() == [1]
        assert sts.assume_role_count() == 1
        assert io.properties["s3.session-token"] != old_token
        assert io.properties[EXPIRES_AT_MS] == str(int((now + 900) * 1000))
        client.close()
    catalog.close()


def test_a_replayed_create_carries_credentials_vended_now(
    server: RunningServer, catalog: SqlCatalog, sts: StsServer
) -> None:
    vendor = vendor_of(server)
    key = {"Idempotency-Key": "0191e0a4-0000-7000-8000-000000000001"}
    status, created, headers = call(
        server, "POST", "/namespaces/db/tables", body=CREATE, headers={**key, **DELEGATE}
    )
    assert status == 200
    original = created["storage-credentials"]
    end = expires_s(original)
    vendor.clock = lambda: end - vendor.renew_before_s  # the original ones are being replaced
    status, replayed, replay_headers = call(
        server, "POST", "/namespaces/db/tables", body=CREATE, headers={**key, **DELEGATE}
    )
    assert status == 200 and catalog.list_tables("db") == [("db", "t")]
    fresh = replayed.pop("storage-credentials")
    created.pop("storage-credentials")
    endpoint = {"client.refresh-credentials-endpoint": "v1/namespaces/db/tables/t/credentials"}
    assert replayed.pop("config") == {**fresh[0]["config"], **endpoint}  # the new ones there too
    created.pop("config")
    assert replayed == created  # the table as created, byte for byte apart from the credentials
    assert [c["prefix"] for c in fresh] == [c["prefix"] for c in original]
    assert fresh[0]["config"]["s3.session-token"] != original[0]["config"]["s3.session-token"]
    assert expires_s(fresh) == end - vendor.renew_before_s + 3600
    assert outcome(s3_with(fresh[0]), replayed["metadata"]["location"] + "/data/f") == "ok"
    assert replay_headers["ETag"] != headers["ETag"]
    assert replay_headers["ETag"] == call(server, "GET", TABLE, ADMIN, headers=DELEGATE)[2]["ETag"]
    status, unasked, _ = call(server, "POST", "/namespaces/db/tables", body=CREATE, headers=key)
    assert status == 200 and unasked == {**created, "config": {}}  # not asked for: none, anywhere
    assert sts.assume_role_count() == 2


def test_the_icefloe_client_retrying_a_lost_create_gets_fresh_credentials(
    catalog: SqlCatalog, sts: StsServer
) -> None:
    """The create lands but its reply is lost (503); the client resends it with the same
    Idempotency-Key, and the replay vends for the moment of the retry."""
    sts.reset()
    faults = FaultInjector()
    moved: list[float] = []

    def replace_credentials() -> None:  # runs before the retry reaches the server
        vendor = faults.app.state.icefloe.vendor
        assert isinstance(vendor, StsVendor)
        moved.append(vendor.clock() + 3600 - vendor.renew_before_s)
        vendor.clock = lambda: moved[0]

    faults.add(Fault("POST", "/namespaces/db/tables", after=503))
    faults.add(Fault("POST", "/namespaces/db/tables", before_call=replace_credentials))
    with start_server(ServerConfig(catalog, tokens=TOKENS), wrap=faults.wrap) as server:
        client = RestCatalog("ice", uri=server.uri, token=ADMIN)
        table = client.create_table("db.t", Schema(NestedField(1, "id", LongType())))
        assert [path for method, path in faults.seen if method == "POST"] == ["/v1/namespaces/db/tables"] * 2
        assert catalog.list_tables("db") == [("db", "t")]
        assert sts.assume_role_count() == 2  # the create's and the replay's
        assert table.io.properties[EXPIRES_AT_MS] == str(int((moved[0] + 3600) * 1000))
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        client.close()


def test_without_a_credentials_endpoint_the_client_renews_by_loading_the_table(
    catalog: SqlCatalog, sts: StsServer
) -> None:
    """A service that does not advertise ``GET .../credentials``: the FileIO near expiry loads the
    table again (its result carries fresh credentials) instead of going on with expiring keys."""
    faults = FaultInjector()
    with start_server(ServerConfig(catalog, tokens=TOKENS), wrap=faults.wrap) as server:
        client = RestCatalog("ice", uri=server.uri, token=ADMIN)
        client.endpoints.discard("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials")
        table = client.create_table("db.t", Schema(NestedField(1, "id", LongType())))
        io = table.io
        assert isinstance(io, VendedFileIO)
        sts.reset()
        faults.seen.clear()
        now = int(io.properties[EXPIRES_AT_MS]) / 1000 - 60
        vendor = faults.app.state.icefloe.vendor
        assert isinstance(vendor, StsVendor)
        vendor.clock = io.clock = lambda: now
        table.append(pa.table({"id": pa.array([1], pa.int64())}))
        assert faults.seen[0] == ("GET", "/v1/namespaces/db/tables/t")
        assert ("GET", "/v1/namespaces/db/tables/t/credentials") not in faults.seen
        assert sts.assume_role_count() == 1
        assert io.properties[EXPIRES_AT_MS] == str(int((now + 3600) * 1000))
        assert "rest.executor-renewal.credentials-uri" not in io.properties  # executors cannot renew
        client.close()
