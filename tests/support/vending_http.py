"""Plain HTTP to a vending ``icefloe serve`` and S3 requests on the credentials it vends.

Tests of vending need the raw replies (headers, ``storage-credentials`` exactly as sent) and the
store's own verdict on a vended credential, which no catalog client shows.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, RunningServer, ServerConfig, start_server

if TYPE_CHECKING:
    from tests.support.sts_server import StsServer

ADMIN = "admin-token"
READER = "reader-token"
TOKENS = {ADMIN: Grants(), READER: Grants({"db": "read"})}
"""The server's tokens: ``ADMIN`` holds every grant, ``READER`` may only read namespace ``db``."""
DELEGATE = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "type": "long", "required": False}],
}
"""A one-column table schema as the REST protocol spells it."""


@contextmanager
def vending_sql_catalog(directory: Path, sts: StsServer) -> Iterator[SqlCatalog]:
    """A SQLite catalog on the STS child's warehouse, configured to vend, with namespace ``db``."""
    found: SqlCatalog = sts.vending_catalog("vending", f"sqlite:///{directory / 'catalog.db'}")
    found.create_namespace("db")
    try:
        yield found
    finally:
        found.close()


@contextmanager
def vending_server(catalog: SqlCatalog, sts: StsServer) -> Iterator[RunningServer]:
    """``icefloe serve`` over ``catalog`` with ``TOKENS``, the STS child's records reset first."""
    sts.reset()
    with start_server(ServerConfig(catalog, tokens=TOKENS)) as running:
        yield running


def call(
    server: RunningServer,
    method: str,
    path: str,
    token: str = ADMIN,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """One request below ``/v1``: (status, decoded JSON body or None, response headers)."""
    request = urllib.request.Request(
        server.uri + "/v1" + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            raw = answer.read()
            return answer.status, json.loads(raw) if raw else None, dict(answer.headers)
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None, dict(exc.headers)


def s3_with(credential: dict[str, Any]) -> Any:
    """A boto3 S3 client on one vended credential's keys (and nothing else)."""
    config = credential["config"]
    return boto3.client(
        "s3",
        endpoint_url=config["s3.endpoint"],
        region_name=config["s3.region"],
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )


def _bucket_key(location: str) -> tuple[str, str]:
    bucket, _, key = location.removeprefix("s3://").partition("/")
    return bucket, key


def outcome(s3: Any, location: str) -> str:
    """``ok`` when the credential may PUT an object at ``location``, else S3's error code."""
    bucket, key = _bucket_key(location)
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


def listing(s3: Any, location: str) -> str:
    """``ok`` when the credential may list keys under ``location``, else S3's error code."""
    bucket, key = _bucket_key(location)
    try:
        s3.list_objects_v2(Bucket=bucket, Prefix=key.rstrip("/") + "/")
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"
