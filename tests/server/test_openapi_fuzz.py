"""Property-based fuzzing of the server with schemathesis, from the Iceberg REST OpenAPI document
(apache/iceberg ``open-api/rest-catalog-open-api.yaml``, shipped with the server): no request the
spec can describe makes the server answer 5xx or crash; every error is an IcebergErrorResponse.

These are CI-sized smoke runs, one per operation and one short stateful run along the links of
``tests/support/served_openapi.py`` with the valid bodies of ``tests/support/deep_requests.py``,
which must get deep (create namespace -> create table -> commit -> load, and further);
the search itself, with hundreds of examples per operation and response-schema checks, is
``scripts/fuzz_rest_server.py`` (see docs/rest-server.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, seed, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.core.transport import Response

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import Grants, RunningServer, ServerConfig, start_server
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.support.deep_requests import steer_fresh
from tests.support.served_openapi import served_document

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


def assert_no_failure(response: Response, method: str, path: str) -> None:
    """No 5xx; an error of a catalog route is exactly an IcebergErrorResponse for its status."""
    assert response.status_code < 500, (method, path, response.text[:500])
    if response.status_code >= 400 and method != "HEAD" and path.startswith("/v1/{prefix}"):
        body = response.json()
        assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
        assert isinstance(body["error"]["type"], str) and isinstance(body["error"]["message"], str), body


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
    assert_no_failure(response, case.method, case.path)


def test_the_server_publishes_the_spec_document(server: RunningServer) -> None:
    import requests

    response = requests.get(server.uri + "/openapi.yaml", timeout=30)
    assert response.status_code == 200
    assert response.content == SPEC.read_bytes()
    assert b"title: Apache Iceberg REST Catalog API" in response.content


STATEFUL_CONFIG = SchemathesisConfig.from_str(
    f"""
[parameters]
prefix = "{PREFIX}"
[phases.stateful.inference]
algorithms = []
"""
)
# few scenarios (Hypothesis runs many more state machines than it counts: those that find no
# rule to run are not examples), of up to 15 steps
STATEFUL_SCENARIOS = 3
STATEFUL_SEEDS = tuple(range(20261120, 20261132))
# the operations of a table's life, so that a short run spends its steps on them
TABLE_LIFE = (
    "createNamespace",
    "createTable",
    "updateTable",
    "loadTable",
    "planTableScan",
    "fetchPlanningResult",
    "renameTable",
    "commitTransaction",
)
COMMIT = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"


def _linked_sequences(server: RunningServer, seed_value: int) -> list[tuple[int, str, str, str]]:
    """One seeded run of linked request sequences (each step reusing what an earlier answer named,
    along the served document's links, with ``deep_requests`` bodies); fails on any 5xx or schema
    violation. Returns (depth in its chain of 2xx answers, operation, namespace, table) of every
    accepted step."""
    stateful_schema = schemathesis.openapi.from_dict(served_document(), config=STATEFUL_CONFIG).include(
        operation_id=list(TABLE_LIFE)
    )
    stateful_schema.hook("flatmap_case")(steer_fresh)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    # (depth in its chain of 2xx answers, operation, namespace, table) of every accepted step
    accepted: list[tuple[int, str, str, str]] = []
    answers: list[int] = []

    class Sequences(stateful_schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            self.ok_depth: dict[str, int] = {}

        def before_call(self, case: Any) -> None:
            if case.path_parameters and "prefix" in case.path_parameters:
                case.path_parameters["prefix"] = PREFIX  # the stateful phase ignores [parameters]

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": server.uri, "headers": headers, "timeout": 30}

        def validate_response(self, response: Response, case: Any, **kwargs: Any) -> None:
            answers.append(response.status_code)
            assert_no_failure(response, case.method, case.path)
            if 200 <= response.status_code < 300:
                parent = self.recorder.cases[case.id].parent_id
                if parent is None or parent in self.ok_depth:
                    depth = self.ok_depth.get(parent, 0) + 1 if parent else 1
                    self.ok_depth[case.id] = depth
                    where = case.path_parameters or {}
                    label = f"{case.method} {case.path}"
                    accepted.append((depth, label, where.get("namespace", ""), where.get("table", "")))

    # a fixed seed, not derandomize: derandomized state machines keep replaying one minimal scenario
    seed(seed_value)(Sequences).run(
        settings=settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=15,
            phases=[Phase.generate],  # no shrinking: it would replay steps against a changed catalog
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=False,
            database=None,
        )
    )
    assert len(answers) >= STATEFUL_SCENARIOS
    return accepted


def _reached_deep_states(accepted: list[tuple[int, str, str, str]]) -> bool:
    """A chain of three accepted requests, and a commit accepted (which only a chain through a
    created namespace and table can reach)."""
    deep = max((depth for depth, *_ in accepted), default=0) >= 3
    return deep and any(label == COMMIT for _, label, *_ in accepted)


def test_linked_request_sequences_reach_deep_states_and_fail_nowhere(server: RunningServer) -> None:
    """No 5xx in any seeded run, and the runs get deep: a chain of three accepted requests and an
    accepted commit.

    A seed fixes the choices, not the answers they meet (names made unique per process, a catalog
    other tests have used), so one seed's path differs between a run of this module and of the
    whole suite. Measured over 20 seeds, 19 runs reached depth 3 and 14 an accepted commit; runs
    go on, seed after seed, until the runs so far have reached both (each takes seconds)."""
    accepted: list[tuple[int, str, str, str]] = []
    for seed_value in STATEFUL_SEEDS:
        accepted += _linked_sequences(server, seed_value)
        if _reached_deep_states(accepted):
            return
    raise AssertionError(f"the runs of seeds {STATEFUL_SEEDS} did not get deep: {accepted}")
