"""Vended credentials for tables that write outside their location (``write.data.path``,
``write.metadata.path``, ``write.object-storage.path``), against moto's S3, STS and IAM with
authentication and session policies enforced (``tests/support/sts_server.py``).

Every client holds a catalog token and no storage keys; each assertion on S3 is made with the
credentials the server vended, so a prefix the session policy leaves out is AccessDenied.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRestCatalog

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.support.sts_server import StsServer
from tests.support.vending_http import (
    ADMIN,
    DELEGATE,
    READER,
    SCHEMA,
    call,
    listing,
    outcome,
    s3_with,
    vending_server,
    vending_sql_catalog,
)

ARROW_SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def catalog(tmp_path: Path, sts: StsServer) -> Iterator[SqlCatalog]:
    with vending_sql_catalog(tmp_path, sts) as found:
        yield found


@pytest.fixture
def server(catalog: SqlCatalog, sts: StsServer) -> Iterator[RunningServer]:
    with vending_server(catalog, sts) as running:
        yield running


def create(
    server: RunningServer, name: str, properties: dict[str, str], headers: dict[str, str] = DELEGATE
) -> tuple[int, Any]:
    body = {"name": name, "schema": SCHEMA, "properties": properties}
    return call(server, "POST", "/namespaces/db/tables", body=body, headers=headers)[:2]


def test_a_put_outside_the_table_location_is_access_denied(
    catalog: SqlCatalog, server: RunningServer
) -> None:
    status, body = create(server, "t", {})
    assert status == 200
    location = body["metadata"]["location"]
    assert location == f"{catalog.warehouse}/db/t"
    [credential] = body["storage-credentials"]
    assert credential["prefix"] == location
    s3 = s3_with(credential)
    assert outcome(s3, f"{location}/data/f.parquet") == "ok"
    assert outcome(s3, f"{catalog.warehouse}/db/t2/data/f.parquet") == "AccessDenied"  # a sibling
    assert outcome(s3, f"{catalog.warehouse}/db/t") == "AccessDenied"  # the prefix without its slash
    assert outcome(s3, f"{catalog.warehouse}/elsewhere/f.parquet") == "AccessDenied"
    assert listing(s3, location) == "ok"
    assert listing(s3, f"{catalog.warehouse}/db") == "AccessDenied"


def test_credentials_cover_every_write_path_and_the_longest_prefix_finds_them(
    catalog: SqlCatalog, server: RunningServer, sts: StsServer
) -> None:
    wh = catalog.warehouse
    properties = {
        "write.data.path": f"{wh}/data-tier/t",
        "write.metadata.path": f"{wh}/meta-tier/t",
        "write.object-storage.path": f"{wh}/objects/t",
        "write.folder-storage.path": f"{wh}/db/t/folders",  # inside the location: covered already
    }
    status, body = create(server, "t", properties)
    assert status == 200
    prefixes = [credential["prefix"] for credential in body["storage-credentials"]]
    assert prefixes == [
        f"{wh}/db/t",
        f"{wh}/data-tier/t",
        f"{wh}/meta-tier/t",
        f"{wh}/db/t/folders",
        f"{wh}/objects/t",
    ]
    configs = {json.dumps(credential["config"], sort_keys=True) for credential in body["storage-credentials"]}
    assert len(configs) == 1  # one AssumeRole whose policy covers them all
    assert sts.assume_role_count() == 1
    s3 = s3_with(body["storage-credentials"][0])
    for root in (f"{wh}/db/t", f"{wh}/data-tier/t", f"{wh}/meta-tier/t", f"{wh}/objects/t"):
        assert (outcome(s3, root + "/f"), listing(s3, root)) == ("ok", "ok")
    for outside in (f"{wh}/data-tier/t2/f", f"{wh}/data-tier/f", f"{wh}/meta-tier/u/f", f"{wh}/f"):
        assert outcome(s3, outside) == "AccessDenied"

    # icefloe writes data files under write.data.path and manifests under write.metadata.path
    client = RestCatalog("ice", uri=server.uri, token=ADMIN)
    table = client.load_table("db.t")
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    [task] = table.scan().plan_files()
    assert task.data_file.file_path.startswith(f"{wh}/data-tier/t/")
    assert table.current_snapshot() is not None
    assert table.current_snapshot().manifest_list.startswith(f"{wh}/meta-tier/t/")
    # PyIceberg picks the credential by the longest prefix of the metadata location
    py = PyIcebergRestCatalog("py", uri=server.uri, token=ADMIN)
    py_table = py.load_table("db.t")
    assert py_table.metadata_location.startswith(f"{wh}/meta-tier/t/")
    py_table.append(pa.table({"id": [3]}, schema=ARROW_SCHEMA))
    rows = py.load_table("db.t").scan().to_arrow().sort_by("id").column("id").to_pylist()
    assert rows == [1, 2, 3]
    assert sts.assume_role_count() == 1
    client.close()


def test_a_property_update_moves_what_the_credentials_cover(
    catalog: SqlCatalog, server: RunningServer, sts: StsServer
) -> None:
    wh = catalog.warehouse
    assert create(server, "t", {})[0] == 200
    update = {
        "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"write.data.path": f"{wh}/data-tier/t"}}],
    }
    assert call(server, "POST", "/namespaces/db/tables/t", body=update)[0] == 200
    sts.reset()
    status, body, _ = call(server, "GET", "/namespaces/db/tables/t", READER, headers=DELEGATE)
    assert status == 200
    assert [c["prefix"] for c in body["storage-credentials"]] == [f"{wh}/db/t", f"{wh}/data-tier/t"]
    assert sts.assume_role_count() == 1  # the cached credentials cover the old locations only
    s3 = s3_with(body["storage-credentials"][1])
    assert listing(s3, f"{wh}/data-tier/t") == "ok"
    assert outcome(s3, f"{wh}/data-tier/t/f") == "AccessDenied"  # READ grant: no writes anywhere
    status, renewed, _ = call(server, "GET", "/namespaces/db/tables/t/credentials", READER)
    assert [c["prefix"] for c in renewed["storage-credentials"]] == [f"{wh}/db/t", f"{wh}/data-tier/t"]
    assert renewed["storage-credentials"] == body["storage-credentials"]


@pytest.mark.parametrize(
    "key",
    ["write.data.path", "write.metadata.path", "write.folder-storage.path", "write.object-storage.path"],
)
def test_write_paths_outside_the_warehouse_are_refused_on_create_and_update(
    catalog: SqlCatalog, server: RunningServer, sts: StsServer, key: str
) -> None:
    outside = f"s3://{sts.bucket}/not-the-warehouse/t"
    status, body = create(server, "t", {key: outside})
    assert (status, body["error"]["type"]) == (400, "BadRequestException")
    assert body["error"]["message"] == f"location {outside!r} is outside the catalog's warehouse"
    assert catalog.list_tables("db") == []
    assert create(server, "t", {})[0] == 200
    update = {"requirements": [], "updates": [{"action": "set-properties", "updates": {key: outside}}]}
    status, body, _ = call(server, "POST", "/namespaces/db/tables/t", body=update)
    assert (status, body["error"]["type"]) == (400, "BadRequestException")
    assert key not in catalog.load_table("db.t").metadata.properties
    assert sts.assume_role_count() == 1  # the accepted create only


def test_a_policy_over_the_iam_limit_is_refused_before_sts_is_asked(
    catalog: SqlCatalog, server: RunningServer, sts: StsServer
) -> None:
    wh = catalog.warehouse
    long_path = f"{wh}/data-tier/" + "d" * 700
    status, body = create(server, "t", {"write.data.path": long_path})
    assert (status, body["error"]["type"]) == (400, "BadRequestException")
    assert "over IAM's 2048: no credentials can cover them all" in body["error"]["message"]
    assert catalog.list_tables("db") == []  # asked first, so nothing was created
    assert create(server, "t", {})[0] == 200
    assert create(server, "u", {"write.data.path": long_path}, headers={})[0] == 400  # no delegation
    assert [name for *_, name in catalog.list_tables("db")] == ["t"]
    assert sts.assume_role_count() == 1  # the accepted create only


def test_icefloe_client_with_a_data_path_elsewhere_reads_what_pyiceberg_wrote(
    catalog: SqlCatalog, server: RunningServer
) -> None:
    wh = catalog.warehouse
    client = RestCatalog("ice", uri=server.uri, token=ADMIN)
    schema = Schema(NestedField(1, "id", LongType()))
    client.create_table("db.t", schema, properties={"write.data.path": f"{wh}/data-tier/t"})
    py = PyIcebergRestCatalog("py", uri=server.uri, token=ADMIN)
    py.load_table("db.t").append(pa.table({"id": [4]}, schema=ARROW_SCHEMA))
    reader = RestCatalog("reader", uri=server.uri, token=READER)
    table = reader.load_table("db.t")
    [task] = table.scan().plan_files()
    assert task.data_file.file_path.startswith(f"{wh}/data-tier/t/")
    assert table.scan().to_arrow().column("id").to_pylist() == [4]
    client.close()
    reader.close()


def test_dropping_a_table_stops_vending_but_revokes_nothing(
    catalog: SqlCatalog, server: RunningServer, sts: StsServer
) -> None:
    """STS credentials cannot be revoked one by one (``docs/rest-server.md``, *Revocation*): after
    a purge the server vends nothing more for the table, and what it vended still works until it
    expires, also on the files of a table re-created at the same location."""
    status, body = create(server, "t", {})
    assert status == 200
    location = body["metadata"]["location"]
    held = s3_with(body["storage-credentials"][0])
    assert call(server, "DELETE", "/namespaces/db/tables/t?purgeRequested=true")[0] == 204
    sts.reset()
    assert call(server, "GET", "/namespaces/db/tables/t", headers=DELEGATE)[0] == 404
    assert call(server, "GET", "/namespaces/db/tables/t/credentials")[0] == 404
    assert sts.assume_role_count() == 0
    assert create(server, "t", {})[1]["metadata"]["location"] == location
    assert outcome(held, f"{location}/data/after-the-drop.parquet") == "ok"
