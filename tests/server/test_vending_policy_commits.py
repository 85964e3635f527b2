"""A commit may not move a table to write paths no vended credential can cover.

A server vending through STS scopes each credential with a session policy naming every location
the table writes to, and IAM refuses a policy over 2048 packed characters. A commit making the
policy longer (a long ``write.data.path``, say) is refused with 400 and the table stays where it
was; accepted, it would leave every later credential-vending load of the table answered 400.

Every location adds its prefix three times to the policy and the bucket name once, so within one
bucket the packed length only takes every third value. The test picks a bucket whose name lets
both 2048 and 2049 be reached, and creates it in the STS child's store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.server.vending import ROLE_ARN, table_write_locations
from icefloe.server.vending_policy import MAX_POLICY_CHARS, packed_session_policy, session_policy
from tests.support.sts_server import StsServer
from tests.support.vending_http import DELEGATE, SCHEMA, call, vending_server

WRITE_PATHS = ("write.data.path", "write.metadata.path", "write.object-storage.path")


def _policy_chars(location: str, properties: dict[str, str]) -> int:
    """The packed length of a WRITE grant's policy, however long."""
    policy = session_policy(table_write_locations(location, properties), write=True)
    return len(json.dumps(policy, separators=(",", ":")))


def _write_paths(warehouse: str, count: int, length: int) -> dict[str, str]:
    """``count`` write paths of the table ``db.t`` of ``warehouse``, outside its location, each
    ending in ``length`` characters."""
    return {key: f"{warehouse}/{key.split('.')[1]}/" + "p" * length for key in WRITE_PATHS[:count]}


def _write_paths_of_policy_size(warehouse: str, chars: int) -> dict[str, str] | None:
    """Write paths giving ``db.t`` a policy of exactly ``chars`` characters, or None. Each
    character of a path's tail counts three times per path, so the length follows from one
    measurement per number of paths (and is measured again)."""
    location = f"{warehouse}/db/t"
    for count in (1, 2, 3):
        shortest = _policy_chars(location, _write_paths(warehouse, count, 1))
        length, rest = divmod(chars - shortest, 3 * count)
        if rest == 0 and length >= 0:
            properties = _write_paths(warehouse, count, 1 + length)
            assert _policy_chars(location, properties) == chars
            return properties
    return None


def _bucket_reaching_the_limit() -> tuple[str, dict[str, str], dict[str, str]]:
    """A bucket name, and write paths in it giving policies of exactly 2048 and 2049 characters."""
    for extra in range(12):
        bucket = "policy-limit" + "x" * extra
        at_limit = _write_paths_of_policy_size(f"s3://{bucket}/wh", MAX_POLICY_CHARS)
        over = _write_paths_of_policy_size(f"s3://{bucket}/wh", MAX_POLICY_CHARS + 1)
        if at_limit is not None and over is not None:
            return bucket, at_limit, over
    raise AssertionError("no bucket name reaches both 2048 and 2049 characters")


BUCKET, AT_LIMIT, OVER_LIMIT = _bucket_reaching_the_limit()


def _catalog(directory: Path, sts: StsServer, vend: bool) -> SqlCatalog:
    """A SQLite catalog on ``s3://BUCKET/wh`` with namespace ``db``; ``vend``: through STS."""
    store = boto3.client(
        "s3",
        endpoint_url=sts.endpoint,
        region_name=sts.store_properties["s3.region"],
        aws_access_key_id=sts.access_key,
        aws_secret_access_key=sts.secret_key,
    )
    if BUCKET not in {found["Name"] for found in store.list_buckets()["Buckets"]}:
        store.create_bucket(Bucket=BUCKET)
    role = {ROLE_ARN: sts.role_arn} if vend else {}
    uri = f"sqlite:///{directory / 'catalog.db'}"
    catalog = SqlCatalog("policy", uri=uri, warehouse=f"s3://{BUCKET}/wh", **sts.server_properties, **role)
    catalog.create_namespace("db")
    return catalog


@pytest.fixture
def server(tmp_path: Path, sts: StsServer) -> Iterator[tuple[SqlCatalog, RunningServer]]:
    catalog = _catalog(tmp_path, sts, vend=True)
    try:
        with vending_server(catalog, sts) as running:
            yield catalog, running
    finally:
        catalog.close()


def _create(server: RunningServer) -> None:
    body = {"name": "t", "schema": SCHEMA}
    assert call(server, "POST", "/namespaces/db/tables", body=body)[0] == 200


def _set_properties(properties: dict[str, str]) -> dict[str, Any]:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": properties}]}


def test_the_paths_reach_the_limit_exactly() -> None:
    location = f"s3://{BUCKET}/wh/db/t"
    assert len(packed_session_policy(table_write_locations(location, AT_LIMIT), write=True)) == 2048
    assert _policy_chars(location, OVER_LIMIT) == 2049


def test_a_commit_at_2049_characters_is_refused_and_the_table_does_not_move(
    server: tuple[SqlCatalog, RunningServer], sts: StsServer
) -> None:
    catalog, running = server
    _create(running)
    before = catalog.load_table("db.t").metadata_location
    status, body, _ = call(running, "POST", "/namespaces/db/tables/t", body=_set_properties(OVER_LIMIT))
    assert status == 400
    assert body["error"]["type"] == "BadRequestException" and body["error"]["code"] == 400
    located = ", ".join(repr(location) for location in (f"s3://{BUCKET}/wh/db/t", *OVER_LIMIT.values()))
    assert body["error"]["message"] == (
        f"the session policy for the table's locations {located} would be 2049 characters, over "
        "IAM's 2048: no credentials can cover them all. Keep write.data.path and "
        "write.metadata.path under the table location, or shorter"
    )
    change = {"identifier": {"namespace": ["db"], "name": "t"}, **_set_properties(OVER_LIMIT)}
    status, body, _ = call(running, "POST", "/transactions/commit", body={"table-changes": [change]})
    assert (status, body["error"]["type"]) == (400, "BadRequestException")
    assert catalog.load_table("db.t").metadata_location == before
    status, body, _ = call(running, "GET", "/namespaces/db/tables/t", headers=DELEGATE)
    assert status == 200 and len(body["storage-credentials"]) == 1


def test_a_commit_at_2048_characters_commits_and_vends(
    server: tuple[SqlCatalog, RunningServer], sts: StsServer
) -> None:
    catalog, running = server
    _create(running)
    status, body, _ = call(running, "POST", "/namespaces/db/tables/t", body=_set_properties(AT_LIMIT))
    assert status == 200 and AT_LIMIT.items() <= body["metadata"]["properties"].items()
    assert AT_LIMIT.items() <= catalog.load_table("db.t").metadata.properties.items()
    sts.reset()
    status, body, _ = call(running, "GET", "/namespaces/db/tables/t", headers=DELEGATE)
    assert status == 200
    assert [c["prefix"] for c in body["storage-credentials"]] == [
        f"s3://{BUCKET}/wh/db/t",
        *AT_LIMIT.values(),
    ]
    assert sts.assume_role_count() == 1


def test_without_sts_vending_the_policy_length_is_no_rule(tmp_path: Path, sts: StsServer) -> None:
    """A server vending nothing (or its own unscoped keys) has no session policy to fit."""
    catalog = _catalog(tmp_path, sts, vend=False)
    try:
        with vending_server(catalog, sts) as running:
            _create(running)
            update = _set_properties(OVER_LIMIT)
            assert call(running, "POST", "/namespaces/db/tables/t", body=update)[0] == 200
    finally:
        catalog.close()


def test_registering_metadata_past_the_limit_is_refused(server: tuple[SqlCatalog, RunningServer]) -> None:
    """Register names metadata written elsewhere (here: by the catalog, past the server): it must
    fit one session policy as a create or a commit must."""
    catalog, running = server
    arrow_schema = pa.schema([pa.field("id", pa.int64())])
    written = catalog.create_table("db.written", arrow_schema, properties=OVER_LIMIT).metadata_location
    status, body, _ = call(
        running, "POST", "/namespaces/db/register", body={"name": "x", "metadata-location": written}
    )
    assert (status, body["error"]["type"]) == (400, "BadRequestException")
    assert body["error"]["message"].startswith("the session policy for the table's locations ")
    assert call(running, "GET", "/namespaces/db/tables/x")[0] == 404
