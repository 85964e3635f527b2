"""Spark executors renew vended credentials themselves, against ``icefloe serve`` with vending.

The server runs over moto's S3, STS and IAM with authentication on, so every storage request needs
credentials the server vended. An "executor" here is what a Spark worker builds from the shipped
``table.io.properties`` (``spark.runtime.executor_io``). Expiry is moved through the clocks of the
server's vendor, its token store and the executor's FileIO, never by waiting.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.executor_renewal import (
    CREDENTIALS_URI,
    RENEWAL_PREFIX,
    TABLE_LOCATION,
    TOKEN,
    CatalogTokenExpired,
    executor_file_io,
    renewal_properties,
)
from icefloe.catalog.rest.vended import EXPIRES_AT_MS, VendedFileIO
from icefloe.io.fileio import FileIO
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.server.auth import OAuthClient
from icefloe.spark.runtime import executor_io
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.sts_server import StsServer, vendor_of

ADMIN = "admin-token"
CLIENT_ID, CLIENT_SECRET = "spark-job", "client-s3cret"
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
ROWS = pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})


@pytest.fixture
def server(tmp_path: Path, sts: StsServer) -> Iterator[RunningServer]:
    catalog = sts.vending_catalog("renewal", f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_namespace("db")
    config = ServerConfig(
        catalog, tokens={ADMIN: Grants()}, clients={CLIENT_ID: OAuthClient(CLIENT_SECRET, Grants())}
    )
    with start_server(config) as running:
        yield running
    catalog.close()


def _table_with_rows(server: RunningServer, **login: str) -> tuple[RestCatalog, Table]:
    client = RestCatalog("driver", uri=server.uri, **login)
    client.create_table("db.t", SCHEMA).append(ROWS)
    return client, client.load_table("db.t")


def test_shipped_properties_carry_the_renewal_and_no_client_secret(server: RunningServer) -> None:
    client, table = _table_with_rows(server, credential=f"{CLIENT_ID}:{CLIENT_SECRET}")
    shipped = dict(table.io.properties)
    token = client.http.auth.headers()["Authorization"].removeprefix("Bearer ")
    renewal = {k: v for k, v in shipped.items() if k.startswith(RENEWAL_PREFIX)}
    assert renewal == {
        CREDENTIALS_URI: f"{server.uri}/v1/namespaces/db/tables/t/credentials",
        TABLE_LOCATION: table.metadata.location,
        TOKEN: token,
    }
    assert "credential" not in shipped and "token" not in shipped
    assert all(CLIENT_SECRET not in value for value in shipped.values())
    # neither the token nor the renewal keys reach the table's metadata
    metadata = table.io.new_input(table.metadata_location).read()
    assert token.encode() not in metadata and RENEWAL_PREFIX.encode() not in metadata
    assert not any(key.startswith(RENEWAL_PREFIX) for key in table.metadata.properties)
    client.close()


def test_tls_settings_travel_with_the_renewal() -> None:
    client_properties = {
        "ssl.cabundle": "/etc/ca.pem",
        "ssl.client.cert": "/etc/me.pem",
        "ssl.client.key": "/etc/me.key",
        "ssl.verify": "true",
        "credential": "id:secret",
    }
    shipped = renewal_properties(
        "https://cat/v1/t/credentials", "s3://b/t", {"Authorization": "Bearer T"}, client_properties
    )
    assert shipped == {
        CREDENTIALS_URI: "https://cat/v1/t/credentials",
        TABLE_LOCATION: "s3://b/t",
        TOKEN: "T",
        RENEWAL_PREFIX + "ssl.cabundle": "/etc/ca.pem",
        RENEWAL_PREFIX + "ssl.client.cert": "/etc/me.pem",
        RENEWAL_PREFIX + "ssl.client.key": "/etc/me.key",
        RENEWAL_PREFIX + "ssl.verify": "true",
    }
    assert TOKEN not in renewal_properties("https://cat/c", "s3://b/t", {}, {})  # an open service


def test_executor_renews_against_the_service_and_reads_and_writes(
    server: RunningServer, sts: StsServer
) -> None:
    client, table = _table_with_rows(server, token=ADMIN)
    shipped = dict(table.io.properties)
    io = executor_io(shipped, table.metadata.location)
    assert isinstance(io, VendedFileIO) and io is not table.io
    [data_file] = [task.data_file.file_path for task in table.scan().plan_files()]
    expected = table.io.new_input(data_file).read()
    assert io.new_input(data_file).read() == expected  # on the shipped credentials
    sts.reset()
    near = int(shipped[EXPIRES_AT_MS]) / 1000 - 30  # inside the executor's margin and the server's
    vendor_of(server).clock = lambda: near
    io.clock = lambda: near
    assert io.new_input(data_file).read() == expected
    assert sts.assume_role_count() == 1
    renewed = io.properties
    assert renewed["s3.session-token"] != shipped["s3.session-token"]
    assert renewed["s3.access-key-id"] != shipped["s3.access-key-id"]
    assert renewed[EXPIRES_AT_MS] == str(int((near + 3600) * 1000))
    written = f"{table.metadata.location}/data/from-the-executor.bin"
    io.new_output(written).write_bytes(b"renewed")
    assert table.io.new_input(written).read() == b"renewed"
    assert io.new_input(data_file).read() == expected
    assert sts.assume_role_count() == 1  # renewed once, not on every operation
    client.close()


def test_a_refused_token_says_it_expired_and_what_to_lengthen(server: RunningServer, sts: StsServer) -> None:
    client, table = _table_with_rows(server, credential=f"{CLIENT_ID}:{CLIENT_SECRET}")
    shipped = dict(table.io.properties)
    io = executor_file_io(shipped)
    [data_file] = [task.data_file.file_path for task in table.scan().plan_files()]
    tokens = server.app.state.icefloe.tokens
    later = tokens.clock() + tokens.token_lifetime_s + 1  # the OAuth2 token the driver shipped expired
    tokens.clock = lambda: later
    sts.reset()
    near = int(shipped[EXPIRES_AT_MS]) / 1000 - 30
    io.clock = lambda: near
    with pytest.raises(CatalogTokenExpired, match=r"HTTP 401.*has expired.*--token-lifetime-s.*duration-s"):
        io.new_input(data_file).read()
    assert sts.assume_role_count() == 0
    # the driver, which holds the client secret, fetches a new token and carries on
    assert client.load_table("db.t").scan().to_arrow().num_rows == 2
    client.close()


def test_properties_without_the_renewal_build_a_plain_file_io(server: RunningServer) -> None:
    client, table = _table_with_rows(server, token=ADMIN)
    snapshot = {k: v for k, v in table.io.properties.items() if not k.startswith(RENEWAL_PREFIX)}
    io = executor_io(snapshot, table.metadata.location)
    assert type(io) is FileIO
    [data_file] = [task.data_file.file_path for task in table.scan().plan_files()]
    assert io.new_input(data_file).read() == table.io.new_input(data_file).read()
    client.close()
