"""Server-side scan planning (``POST .../plan``) answered by icefloe's planner, read by PyIceberg."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog as PyIcebergRest

from icefloe.catalog.sql import SqlCatalog
from icefloe.expressions.json_form import expression_from_json
from icefloe.server import RunningServer, ServerConfig, start_server
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.rest_faults import FaultInjector

PLAN = "/v1/namespaces/db/tables/t/plan"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[RunningServer, SqlCatalog, FaultInjector]]:
    catalog = SqlCatalog("plan", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.t",
        Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType())),
        PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "s")),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"},
    )
    table.append(pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "s": ["a", "b", "a", "c"]}))
    table.delete("id = 1")
    faults = FaultInjector()
    with start_server(ServerConfig(catalog), wrap=faults.wrap) as server:
        yield server, catalog, faults
    catalog.close()


def test_plan_with_filter_and_deletes(setup: tuple[RunningServer, SqlCatalog, FaultInjector]) -> None:
    server, catalog, _ = setup
    body = {"filter": {"type": "eq", "term": "s", "value": "a"}}
    result = requests.post(server.uri + PLAN, json=body, timeout=30).json()
    assert result["status"] == "completed"
    tasks = result["file-scan-tasks"]
    assert len(tasks) == 1  # partition pruning: only s=a
    data = tasks[0]["data-file"]
    assert data["content"] == "data" and data["partition"] == ["a"] and data["record-count"] == 2
    assert data["lower-bounds"] == {"keys": [1, 2], "values": [1, "a"]}
    assert [result["delete-files"][i]["content"] for i in tasks[0]["delete-file-references"]] == [
        "position-deletes"
    ]
    assert tasks[0]["residual-filter"] == body["filter"]
    everything = requests.post(server.uri + PLAN, json={}, timeout=30).json()
    assert len(everything["file-scan-tasks"]) == 3
    direct = catalog.load_table("db.t").scan().plan_files()
    assert sorted(t["data-file"]["file-path"] for t in everything["file-scan-tasks"]) == sorted(
        t.file_path for t in direct
    )


def test_pyiceberg_reads_with_server_side_planning(
    setup: tuple[RunningServer, SqlCatalog, FaultInjector],
) -> None:
    server, _, faults = setup
    client = PyIcebergRest("py", uri=server.uri, **{"scan-planning-mode": "server"})
    rows = client.load_table("db.t").scan(row_filter="s = 'a'").to_arrow().to_pylist()
    assert rows == [{"id": 3, "s": "a"}]
    assert ("POST", PLAN) in faults.seen


def test_plan_errors(setup: tuple[RunningServer, SqlCatalog, FaultInjector]) -> None:
    server, _, _ = setup
    assert requests.post(server.uri + PLAN, json={"filter": {"type": "bogus"}}, timeout=30).status_code == 406
    assert requests.post(server.uri + PLAN, json={"filter": {"type": "eq"}}, timeout=30).status_code == 400
    assert requests.post(server.uri + PLAN, json={"snapshot-id": 42}, timeout=30).status_code == 400
    for method, path in (("GET", PLAN + "/p1"), ("DELETE", PLAN + "/p1")):
        assert requests.request(method, server.uri + path, timeout=30).status_code == 404
    tasks = requests.post(
        server.uri + "/v1/namespaces/db/tables/t/tasks", json={"plan-task": "x"}, timeout=30
    )
    assert tasks.status_code == 404 and tasks.json()["error"]["type"] == "NoSuchPlanTaskException"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (True, "true"),
        (
            {
                "type": "and",
                "left": {"type": "lt", "term": "a", "value": 3},
                "right": {"type": "not-null", "term": "b"},
            },
            "a < 3 AND b IS NOT NULL",
        ),
        (
            {
                "type": "gt-eq",
                "left": {"type": "reference", "name": "a"},
                "right": {"type": "literal", "value": 1},
            },
            "a >= 1",
        ),
        ({"type": "lt", "left": 5, "right": {"type": "reference", "name": "a"}}, "a > 5"),
        (
            {"type": "not-in", "child": {"type": "reference", "name": "s"}, "values": ["x", "y"]},
            "s NOT IN ('x', 'y')",
        ),
        ({"type": "not", "child": {"type": "starts-with", "term": "s", "value": "ab"}}, "NOT (s LIKE 'ab%')"),
    ],
)
def test_filter_json_forms(data: object, text: str) -> None:
    assert str(expression_from_json(data)) == text


def test_completed_plan_is_fetched_and_cancelled_by_its_id(
    setup: tuple[RunningServer, SqlCatalog, FaultInjector],
) -> None:
    server, _, _ = setup
    body = {"filter": {"type": "eq", "term": "s", "value": "a"}}
    planned = requests.post(server.uri + PLAN, json=body, timeout=30).json()
    plan_id = planned.pop("plan-id")
    other = requests.post(server.uri + PLAN, json={}, timeout=30).json()["plan-id"]
    assert isinstance(plan_id, str) and plan_id and other != plan_id
    fetched = requests.get(f"{server.uri}{PLAN}/{plan_id}", timeout=30)
    assert fetched.status_code == 200 and fetched.json() == planned  # the same tasks, no id
    elsewhere = requests.get(f"{server.uri}/v1/namespaces/db/tables/u/plan/{plan_id}", timeout=30)
    assert elsewhere.status_code == 404  # an id is looked up under the table it was planned for
    assert requests.delete(f"{server.uri}{PLAN}/{plan_id}", timeout=30).status_code == 204
    for method in ("GET", "DELETE"):
        gone = requests.request(method, f"{server.uri}{PLAN}/{plan_id}", timeout=30)
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "NoSuchPlanIdException"
    assert requests.get(f"{server.uri}{PLAN}/{other}", timeout=30).json()["status"] == "completed"


def test_the_request_iceberg_java_sends_and_what_its_parser_needs(
    setup: tuple[RunningServer, SqlCatalog, FaultInjector],
) -> None:
    """``RESTTableScan`` (Iceberg Java 1.11 on) always sends a filter (``true`` when none), the
    projected column names, ``case-sensitive``, ``use-snapshot-schema`` and, when asked,
    ``stats-fields`` and ``min-rows-requested``; its parser needs ``status``, binds each task's
    ``residual-filter`` against the data file's spec (a missing one is bound as null, which a
    partitioned file's residual then cannot evaluate), and it releases the plan with DELETE."""
    server, catalog, _ = setup
    snapshot_id = catalog.load_table("db.t").metadata.current_snapshot_id
    body = {
        "snapshot-id": snapshot_id,
        "select": ["id", "s"],
        "filter": True,
        "case-sensitive": True,
        "use-snapshot-schema": False,
        "stats-fields": ["id"],
        "min-rows-requested": 10,
    }
    headers = {"X-Client-Version": "Apache Iceberg 1.11.0", "X-Client-Git-Commit-Short": "5ec9bd0"}
    planned = requests.post(server.uri + PLAN, json=body, headers=headers, timeout=30).json()
    assert planned["status"] == "completed" and "plan-tasks" not in planned
    tasks = planned["file-scan-tasks"]
    assert sorted(t["data-file"]["partition"][0] for t in tasks) == ["a", "b", "c"]
    assert [t["residual-filter"] for t in tasks] == [True, True, True]
    [with_deletes] = [t for t in tasks if "delete-file-references" in t]
    assert with_deletes["data-file"]["partition"] == ["a"]
    assert with_deletes["delete-file-references"] == [0] and len(planned["delete-files"]) == 1
    unfiltered = requests.post(server.uri + PLAN, json={}, timeout=30).json()  # PyIceberg may omit it
    assert [t["residual-filter"] for t in unfiltered["file-scan-tasks"]] == [True, True, True]
    released = requests.delete(f"{server.uri}{PLAN}/{planned['plan-id']}", headers=headers, timeout=30)
    assert (released.status_code, released.content) == (204, b"")
