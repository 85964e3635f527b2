"""Namespace properties a catalog column cannot hold are refused with 400, on every backend.

Found by the deep stateful fuzzing of ``scripts/fuzz_rest_server.py`` on PostgreSQL: an update of
an existing namespace's properties with a NUL character in a key or value failed the insert
(``psycopg.DataError``) and answered 500; SQLite stored it. Both now refuse it before any write.
"""

from __future__ import annotations

import pytest
import requests

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer

EXPECTED = {
    "code": 400,
    "type": "BadRequestException",
    "message": "namespace property 'k' contains a NUL character, which a catalog cannot store",
}


@pytest.mark.parametrize(
    "updates",
    [{"k": "a\x00b"}, {"k\x00": "v"}],
    ids=["in-value", "in-key"],
)
def test_an_update_with_nul_is_refused_and_changes_nothing(
    rest_server: RunningServer, backing_catalog: SqlCatalog, updates: dict[str, str]
) -> None:
    backing_catalog.create_namespace("ns", {"owner": "alice"})
    reply = requests.post(
        f"{rest_server.uri}/v1/namespaces/ns/properties",
        json={"removals": ["owner"], "updates": {"comment": "kept?", **updates}},
        timeout=30,
    )
    assert reply.status_code == 400
    key = next(iter(updates))
    assert reply.json() == {"error": {**EXPECTED, "message": EXPECTED["message"].replace("'k'", repr(key))}}
    assert backing_catalog.load_namespace_properties("ns") == {"owner": "alice"}


def test_a_create_with_nul_is_refused_and_creates_nothing(
    rest_server: RunningServer, backing_catalog: SqlCatalog
) -> None:
    reply = requests.post(
        f"{rest_server.uri}/v1/namespaces",
        json={"namespace": ["ns"], "properties": {"k": "\x00"}},
        timeout=30,
    )
    assert reply.status_code == 400
    assert reply.json() == {"error": EXPECTED}
    assert not backing_catalog.namespace_exists("ns")
    assert backing_catalog.list_namespaces() == []
