"""Batches start from the state the server last saw; a pointer another writer moved is still seen.

The server does not read the table's pointer before each batch: it starts from the metadata it
last wrote and lets the compare-and-swap catch a pointer moved by anyone else (here a commit made
straight to the SQL catalog, as another process would). These tests run on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import requests

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer
from icefloe.server.context import ServerState
from icefloe.server.known_state import KnownStates
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))
TIMEOUT_S = 60.0


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def _ids(catalog: SqlCatalog) -> list[int]:
    return sorted(catalog.load_table("db.t").scan().to_arrow()["id"].to_pylist())


def _head(catalog: SqlCatalog) -> int | None:
    return catalog.load_table("db.t").metadata.current_snapshot_id


def _set_property_if_head_is(server: RunningServer, head: int | None, value: str) -> requests.Response:
    body: dict[str, Any] = {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": head}],
        "updates": [{"action": "set-properties", "updates": {"k": value}}],
    }
    return requests.post(server.uri + "/v1/namespaces/db/tables/t", json=body, timeout=TIMEOUT_S)


def _create_table(server: RunningServer, catalog: SqlCatalog) -> ServerState:
    """Create ``db.t`` (v2) straight in the catalog; the server's state."""
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    state: ServerState = server.app.state.icefloe
    return state


def test_sequential_commits_read_the_pointer_once(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    state = _create_table(rest_server, backing_catalog)
    with RestCatalog("c", uri=rest_server.uri) as client:
        table = client.load_table("db.t")
        for i in range(4):
            table.append(_rows(i))
    assert state.coalescer.batches == 4
    assert state.coalescer.state_reads == 1  # the first batch; the others start from what it wrote
    assert _ids(backing_catalog) == [0, 1, 2, 3]


def test_a_commit_made_straight_to_the_catalog_between_two_rest_commits_is_not_lost(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    state = _create_table(rest_server, backing_catalog)
    with RestCatalog("c", uri=rest_server.uri) as client:
        table = client.load_table("db.t")
        table.append(_rows(1))  # the server now knows the table at this commit
        backing_catalog.load_table("db.t").append(_rows(2))  # another writer moves the pointer
        reads = state.coalescer.state_reads
        table.append(_rows(3))  # from the client's (now stale) head: the swap loses, then a rebase
        assert state.coalescer.state_reads == reads + 1
    assert _ids(backing_catalog) == [1, 2, 3]
    md = backing_catalog.load_table("db.t").metadata
    assert len(md.snapshots) == 3
    assert [s.parent_snapshot_id for s in md.snapshots][1:] == [s.snapshot_id for s in md.snapshots][:-1]


def test_a_refusal_rests_on_fresh_state_and_a_commit_valid_only_there_is_accepted(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    _create_table(rest_server, backing_catalog)
    with RestCatalog("c", uri=rest_server.uri) as client:
        client.load_table("db.t").append(_rows(1))
    seen_by_server = _head(backing_catalog)
    backing_catalog.load_table("db.t").append(_rows(2))  # behind the server's back
    moved = _head(backing_catalog)

    # valid on the server's last state, not on the table's: refused (409), nothing written
    stale = _set_property_if_head_is(rest_server, seen_by_server, "stale")
    assert stale.status_code == 409, stale.text
    assert "k" not in backing_catalog.load_table("db.t").metadata.properties

    backing_catalog.load_table("db.t").append(_rows(3))  # and once more
    # refused on the server's last state, valid on the table's: accepted
    current = _set_property_if_head_is(rest_server, _head(backing_catalog), "current")
    assert current.status_code == 200, current.text
    md = backing_catalog.load_table("db.t").metadata
    assert md.properties["k"] == "current"
    assert moved in {s.snapshot_id for s in md.snapshots}
    assert _ids(backing_catalog) == [1, 2, 3]


def test_known_states_forget_the_least_recently_used_table() -> None:
    known = KnownStates(size=2)
    md: Any = object()  # stands for a TableMetadata: the store only keeps it
    known.put((("db",), "a"), "a1", md)
    known.put((("db",), "b"), "b1", md)
    assert known.get((("db",), "a")) == ("a1", md)  # a is now the most recently used
    known.put((("db",), "c"), "c1", md)
    assert known.get((("db",), "b")) is None
    assert known.get((("db",), "a")) == ("a1", md)
    known.forget((("db",), "a"))
    assert known.get((("db",), "a")) is None
    assert len(known) == 1
