"""Property test: concurrent commits through the REST server (``icefloe serve`` in-process).

The same scenarios and model as ``tests/txn/test_concurrent_commits_model.py``, with every copy of
the table loaded through a REST client, so commits are applied server-side (fast appends rebased,
v4 commits coalesced). Two variants: commits one after the other in a random order, and commits
from one thread each at once, checked against the order the snapshot log shows.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from tests.support import concurrent_commits as cc
from tests.txn.test_concurrent_commits_model import EXAMPLES, OPERATIONS, SEED, SETUP, Scenario, scenarios

CASES = [(2, False), (3, True), (4, True), (4, False)]
IDS = [f"v{v}-{'grp' if p else 'flat'}" for v, p in CASES]
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,  # @seed fixes the sequence
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _rest_table(server: RunningServer, backing: SqlCatalog, version: int, partitioned: bool) -> cc.Loader:
    """A new base table; the loader opens it through a new REST client each time."""
    if not backing.namespace_exists(("db",)):
        backing.create_namespace(("db",))
    name = f"db.t_{uuid.uuid4().hex[:8]}"
    cc.create_table(RestCatalog("fuzz", uri=server.uri), name, version, partitioned)
    return lambda: RestCatalog("fuzz", uri=server.uri).load_table(name)


@pytest.mark.parametrize("backing_catalog", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("version", "partitioned"), CASES, ids=IDS)
@seed(SEED)
@SETTINGS
@given(scenario=scenarios())
def test_concurrent_commits_through_the_server_match_the_model(
    rest_server: RunningServer,
    backing_catalog: SqlCatalog,
    version: int,
    partitioned: bool,
    scenario: Scenario,
) -> None:
    setup, ops, order = scenario
    cc.run_in_order(_rest_table(rest_server, backing_catalog, version, partitioned), ops, order, setup)


@pytest.mark.parametrize("backing_catalog", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("version", "partitioned"), CASES, ids=IDS)
@seed(SEED)
@SETTINGS
@given(setup=SETUP, ops=st.lists(OPERATIONS, min_size=2, max_size=3))
def test_commits_from_threads_at_once_match_the_model_in_log_order(
    rest_server: RunningServer,
    backing_catalog: SqlCatalog,
    version: int,
    partitioned: bool,
    setup: list[cc.Operation],
    ops: list[cc.Operation],
) -> None:
    cc.run_in_threads(_rest_table(rest_server, backing_catalog, version, partitioned), ops, setup)
