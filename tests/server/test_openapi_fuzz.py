"""Property-based fuzzing of the server with schemathesis, from the Iceberg REST OpenAPI document
(apache/iceberg ``open-api/rest-catalog-open-api.yaml``, shipped with the server): no request the
spec can describe makes the server answer 5xx or crash; every error is an IcebergErrorResponse."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

SPEC = Path(__file__).resolve().parents[2] / "src" / "icefloe" / "server" / "rest-catalog-open-api.yaml"
PREFIX = "fuzz"
TOKEN = "fuzz-token"
EXAMPLES = 5 if os.environ.get("CI") else 15

# Examples and random generation; the boundary-enumerating coverage phase takes minutes per
# operation on this machine and adds no server code paths the two others miss.
CONFIG = SchemathesisConfig.from_str(
    f"""
[phases.coverage]
enabled = false
[phases.stateful]
enabled = false
[parameters]
prefix = "{PREFIX}"
"""
)
schema = schemathesis.openapi.from_path(SPEC, config=CONFIG)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("fuzz")
    catalog = SqlCatalog("fuzz", uri=f"sqlite:///{root / 'c.db'}", warehouse=str(root / "wh"))
    # the spec's own examples name these, so example-based cases reach real objects
    catalog.create_namespace("accounting")
    catalog.create_namespace(("accounting", "tax"))
    catalog.create_table("accounting.sales", Schema(NestedField(1, "id", LongType())))
    config = ServerConfig(catalog, tokens={TOKEN: Grants()}, prefix=PREFIX, max_request_bytes=256 * 1024)
    with start_server(config) as running:
        yield running
    catalog.close()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_request_makes_the_server_fail(case: Any, server: RunningServer) -> None:
    assert (case.path_parameters or {}).get("prefix", PREFIX) == PREFIX
    response = case.call(base_url=server.uri, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text[:500])
    if response.status_code >= 400 and case.method != "HEAD" and case.path.startswith("/v1/{prefix}"):
        body = response.json()
        assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body


def test_the_server_publishes_the_spec_document(server: RunningServer) -> None:
    import requests

    response = requests.get(server.uri + "/openapi.yaml", timeout=30)
    assert response.status_code == 200
    assert response.content == SPEC.read_bytes()
    assert b"title: Apache Iceberg REST Catalog API" in response.content
