"""Iceberg Java's view commits on the wire against the rules of Java's ``ViewMetadata.Builder``:
versions beyond ``version.history.num-entries`` expired, a replace dropping a SQL dialect refused
(400) unless ``replace.drop-dialect.allowed``, one SQL text per dialect, no new metadata file for
a commit that changes nothing. Bodies from ``tests.support.java_rest_views`` (``replaceView``'s
``CommitViewRequest``), replayed against a real server (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import SqlViews
from icefloe.spec.view_metadata import view_metadata_to_dict
from tests.support.java_rest_views import (
    assert_java_readable_view,
    create_view_request,
    replace_view_updates,
    view_schema,
    view_version,
)
from tests.support.java_rest_wire import JavaWire, assert_error

IDS = view_schema(0, (1, "id", "long"))
HISTORY = "version.history.num-entries"


def _version(version_id: int, sql: str, *dialects: str) -> dict[str, Any]:
    version = view_version(version_id, 0, sql, ["db"])
    version["representations"] = [{"type": "sql", "sql": sql, "dialect": d} for d in dialects or ("spark",)]
    return version


def _replace(wire: JavaWire, uuid: str, sql: str, *dialects: str, **properties: str) -> Any:
    """``replaceView`` as Java's client sends it (the version id is past the ones it knows)."""
    updates = replace_view_updates(uuid, IDS, _version(2, sql, *dialects), properties)
    return wire.send("POST", "namespaces/db/views/v", updates)


def _ids(result: dict[str, Any]) -> tuple[list[int], list[int]]:
    md = result["metadata"]
    return [v["version-id"] for v in md["versions"]], [e["version-id"] for e in md["version-log"]]


def test_versions_beyond_the_history_size_are_expired(wire: JavaWire, backing_catalog: SqlCatalog) -> None:
    created = wire.ok("POST", "namespaces/db/views", create_view_request("v", IDS, _version(1, "SELECT 1")))
    uuid = created["metadata"]["view-uuid"]
    for n in range(2, 11):
        assert _replace(wire, uuid, f"SELECT {n}").status_code == 200
    assert _ids(wire.ok("GET", "namespaces/db/views/v")) == (list(range(1, 11)), list(range(1, 11)))

    eleventh = _replace(wire, uuid, "SELECT 11")
    assert eleventh.status_code == 200, eleventh.text
    result = eleventh.json()
    assert_java_readable_view(result)
    assert _ids(result) == (list(range(2, 12)), list(range(2, 12)))
    assert result["metadata"]["current-version-id"] == 11
    assert [v["representations"][0]["sql"] for v in result["metadata"]["versions"]] == [
        f"SELECT {n}" for n in range(2, 12)
    ]
    assert wire.ok("GET", "namespaces/db/views/v") == result
    stored, _ = SqlViews(backing_catalog).load(("db", "v"))  # the file the SQL catalog reads
    assert view_metadata_to_dict(stored) == result["metadata"]

    # a smaller history size set with the next replace applies to that commit
    smaller = _replace(wire, uuid, "SELECT 12", **{HISTORY: "2"})
    assert _ids(smaller.json()) == ([11, 12], [11, 12])
    refused = _replace(wire, uuid, "SELECT 13", **{HISTORY: "0"})
    assert_error(refused, 400, "BadRequestException")
    assert HISTORY in refused.json()["error"]["message"]
    assert wire.ok("GET", "namespaces/db/views/v") == smaller.json()


def test_a_replace_dropping_a_dialect_is_refused_unless_allowed(wire: JavaWire) -> None:
    request = create_view_request("v", IDS, _version(1, "SELECT 1", "spark", "trino"))
    created = wire.ok("POST", "namespaces/db/views", request)
    uuid = created["metadata"]["view-uuid"]

    refused = _replace(wire, uuid, "SELECT 2", "spark")
    assert_error(refused, 400, "BadRequestException")
    assert "['trino']" in refused.json()["error"]["message"]
    assert wire.ok("GET", "namespaces/db/views/v") == created  # nothing written

    kept = _replace(wire, uuid, "SELECT 2", "Trino", "spark", "hive")  # dialects compare in any case
    assert kept.status_code == 200, kept.text
    assert kept.json()["metadata"]["current-version-id"] == 2
    # the property set by the same commit allows it, as Java's build() reads the final properties
    allowed = _replace(wire, uuid, "SELECT 3", "spark", **{"replace.drop-dialect.allowed": "true"})
    assert allowed.status_code == 200, allowed.text
    current = allowed.json()["metadata"]["versions"][-1]
    assert (current["version-id"], [r["dialect"] for r in current["representations"]]) == (3, ["spark"])


def test_one_sql_text_per_dialect(wire: JavaWire) -> None:
    twice = create_view_request("v", IDS, _version(1, "SELECT 1", "spark", "SPARK"))
    assert_error(wire.send("POST", "namespaces/db/views", twice), 400, "BadRequestException")
    assert wire.send("HEAD", "namespaces/db/views/v").status_code == 404
    uuid = wire.ok("POST", "namespaces/db/views", create_view_request("v", IDS, _version(1, "SELECT 1")))[
        "metadata"
    ]["view-uuid"]
    assert_error(_replace(wire, uuid, "SELECT 2", "spark", "Spark"), 400, "BadRequestException")


def test_an_unsupported_view_format_version_is_a_bad_request(wire: JavaWire) -> None:
    """As Java's ``ViewMetadata.Builder`` (an IllegalArgumentException, 400): a view cannot move to
    a format version this server does not know, nor back; the view is left as it was."""
    created = wire.ok("POST", "namespaces/db/views", create_view_request("v", IDS, _version(1, "SELECT 1")))
    uuid = created["metadata"]["view-uuid"]
    for version in (2, 0):
        upgrade = {
            "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
            "updates": [{"action": "upgrade-format-version", "format-version": version}],
        }
        assert_error(wire.send("POST", "namespaces/db/views/v", upgrade), 400, "BadRequestException")
    assert wire.ok("GET", "namespaces/db/views/v") == created


def test_a_commit_that_changes_nothing_writes_no_file(wire: JavaWire) -> None:
    created = wire.ok("POST", "namespaces/db/views", create_view_request("v", IDS, _version(1, "SELECT 1")))
    uuid = created["metadata"]["view-uuid"]
    # replaceView with the current definition: Java's builder records no change, so the client
    # sends only the requirement, and the server (as Java's CatalogHandlers) commits nothing
    nothing = {"requirements": [{"type": "assert-view-uuid", "uuid": uuid}], "updates": []}
    assert wire.ok("POST", "namespaces/db/views/v", nothing) == created
    current = {
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [{"action": "set-current-view-version", "view-version-id": 1}],
    }
    assert wire.ok("POST", "namespaces/db/views/v", current) == created
    assert wire.ok("GET", "namespaces/db/views/v")["metadata-location"] == created["metadata-location"]


def test_concurrent_replaces_are_applied_one_after_another(wire: JavaWire) -> None:
    """As Java's ``CatalogHandlers``, a replace that loses the race is applied again on the new
    metadata (under its requirements): each of four concurrent replaces loses at most three times,
    within the server's five attempts, so all of them land."""
    created = wire.ok("POST", "namespaces/db/views", create_view_request("v", IDS, _version(1, "SELECT 1")))
    uuid = created["metadata"]["view-uuid"]
    start = threading.Barrier(4)

    def replace(n: int) -> int:
        client = JavaWire(wire.base)
        start.wait()
        return int(_replace(client, uuid, f"SELECT {n}").status_code)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(replace, range(2, 6))) == [200] * 4
    md = wire.ok("GET", "namespaces/db/views/v")["metadata"]
    assert [v["version-id"] for v in md["versions"]] == [1, 2, 3, 4, 5]
    assert sorted(v["representations"][0]["sql"] for v in md["versions"]) == [
        f"SELECT {n}" for n in range(1, 6)
    ]
    assert [e["version-id"] for e in md["version-log"]] == [1, 2, 3, 4, 5]
    assert md["current-version-id"] == 5
    # a requirement that fails is not retried: the view's UUID does not change by waiting
    assert_error(
        _replace(wire, "00000000-0000-0000-0000-000000000000", "SELECT 9"), 409, "CommitFailedException"
    )
