"""What Iceberg Java REST clients newer than 1.5.2 (1.6 to 1.11) send and need, over raw HTTP.

``test_java_client_wire.py`` replays 1.5.2's requests (the jars the suite can run); these tests
cover what later clients changed, each as that client's code sends or reads it. Header names are
read with ``http.client``, which keeps them as sent: Iceberg Java looks response headers up in a
case-sensitive map.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.server import RunningServer, ServerConfig, start_server
from icefloe.server.header_case import canonical_header_block
from tests.support.java_rest_wire import SCHEMA, java_snapshot

JAVA_HEADERS = {
    "Content-Type": "application/json",
    "X-Client-Version": "Apache Iceberg 1.11.0 (commit 5ec9bd0903)",
    "X-Client-Git-Commit-Short": "5ec9bd0",
}
"""What every request of Iceberg Java's HTTPClient carries (1.11; the version differs)."""


@pytest.fixture(params=["h11", "httptools"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    """A server on each of uvicorn's HTTP implementations: each writes header names its own way."""
    catalog = SqlCatalog("newer", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    try:
        with start_server(ServerConfig(catalog), http=request.param) as running:
            yield running
    finally:
        catalog.close()


def _send(
    server: RunningServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers as sent, body) of one request below ``/v1/``."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, "/v1/" + path, body=data, headers={**JAVA_HEADERS, **(headers or {})})
        answer = connection.getresponse()
        return answer.status, answer.getheaders(), answer.read()
    finally:
        connection.close()


def _etag(headers: list[tuple[str, str]]) -> str:
    """The ETag as ``RESTSessionCatalog.loadTable`` finds it: ``responseHeaders.get("ETag")``."""
    found = dict(headers).get("ETag")
    assert found is not None, f"no header named exactly 'ETag' in {headers}"
    assert [name for name, _ in headers if name.lower() == "etag"] == ["ETag"]
    return found


def test_freshness_aware_loading_finds_the_etag_under_its_exact_name(server: RunningServer) -> None:
    """Iceberg Java 1.11 caches a loaded table under the ``ETag`` response header, looked up by
    that exact name, and sends it back as ``If-None-Match``; a 304 must carry it too."""
    status, headers, body = _send(server, "POST", "namespaces/db/tables", {"name": "t", "schema": SCHEMA})
    assert status == 200
    created = _etag(headers)
    table = json.loads(body)["metadata"]
    status, headers, _ = _send(server, "GET", "namespaces/db/tables/t?snapshots=all")
    assert status == 200 and _etag(headers) == created
    status, headers, body = _send(
        server, "GET", "namespaces/db/tables/t?snapshots=all", headers={"If-None-Match": created}
    )
    assert (status, body, _etag(headers)) == (304, b"", created)
    commit = {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [
            {"action": "add-snapshot", "snapshot": java_snapshot(table, 7, None, 1, 1)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7},
        ],
    }
    status, headers, _ = _send(server, "POST", "namespaces/db/tables/t", commit)
    assert status == 200
    committed = _etag(headers)
    assert committed != created
    status, headers, body = _send(
        server, "GET", "namespaces/db/tables/t?snapshots=all", headers={"If-None-Match": created}
    )
    assert status == 200 and _etag(headers) == committed
    assert json.loads(body)["metadata"]["current-snapshot-id"] == 7


def test_only_a_header_block_is_respelled() -> None:
    block = b'HTTP/1.1 200 OK\r\ndate: x\r\netag: "a"\r\ncontent-length: 2\r\n\r\n'
    assert (
        canonical_header_block(block)
        == b'HTTP/1.1 200 OK\r\ndate: x\r\nETag: "a"\r\ncontent-length: 2\r\n\r\n'
    )
    body = b'{"etag": "a"}\r\netag: "a"\r\n\r\n'
    assert canonical_header_block(body) is body
    value = b'HTTP/1.1 200 OK\r\nx-note: etag: "a"\r\n\r\n'  # only a line's own name is a name
    assert canonical_header_block(value) == value
    partial = b"HTTP/1.1 200 OK\r\netag: x\r\n"  # not a whole block: never split by uvicorn
    assert canonical_header_block(partial) is partial


def test_encryption_keys_are_added_once_and_removed(server: RunningServer) -> None:
    """Iceberg Java 1.10 commits the keys of a table it encrypts as ``add-encryption-key`` /
    ``remove-encryption-key`` (``MetadataUpdateParser``, ``EncryptedKeyParser``) and reads them
    back from the metadata's ``encryption-keys``."""
    create = {"name": "t", "schema": SCHEMA, "properties": {"format-version": "3"}}
    assert _send(server, "POST", "namespaces/db/tables", create)[0] == 200
    key = {
        "key-id": "k1",
        "encrypted-key-metadata": "AAECAw==",
        "encrypted-by-id": "kek-1",
        "properties": {"algorithm": "AES_GCM"},
    }
    other = {"key-id": "k2", "encrypted-key-metadata": "BAUG"}

    def commit(*updates: dict[str, Any]) -> dict[str, Any]:
        status, _, body = _send(
            server, "POST", "namespaces/db/tables/t", {"requirements": [], "updates": list(updates)}
        )
        assert status == 200, body
        metadata: dict[str, Any] = json.loads(body)["metadata"]
        return metadata

    added = commit({"action": "add-encryption-key", "encryption-key": key})
    assert added["encryption-keys"] == [key]
    again = commit(
        {"action": "add-encryption-key", "encryption-key": {**key, "encrypted-key-metadata": "CQ=="}},
        {"action": "add-encryption-key", "encryption-key": other},
    )
    assert again["encryption-keys"] == [key, other]  # a known key id keeps its key
    removed = commit({"action": "remove-encryption-key", "key-id": "k1"})
    assert removed["encryption-keys"] == [other]
    status, _, body = _send(server, "GET", "namespaces/db/tables/t")
    assert status == 200 and json.loads(body)["metadata"]["encryption-keys"] == [other]
    keyless = {"action": "add-encryption-key", "encryption-key": {"key-id": "x"}}
    refused = {"requirements": [], "updates": [keyless]}
    status, _, body = _send(server, "POST", "namespaces/db/tables/t", refused)
    assert status == 400 and json.loads(body)["error"]["type"] == "BadRequestException"


def test_set_statistics_without_the_top_level_snapshot_id(server: RunningServer) -> None:
    """The spec deprecates ``set-statistics``' own ``snapshot-id`` (1.10 still writes it): the one
    inside ``statistics`` names the snapshot."""
    status, _, body = _send(server, "POST", "namespaces/db/tables", {"name": "t", "schema": SCHEMA})
    table = json.loads(body)["metadata"]
    append = [
        {"action": "add-snapshot", "snapshot": java_snapshot(table, 7, None, 1, 1)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7},
    ]
    assert _send(server, "POST", "namespaces/db/tables/t", {"requirements": [], "updates": append})[0] == 200
    statistics = {
        "snapshot-id": 7,
        "statistics-path": f"{table['location']}/metadata/7.stats",
        "file-size-in-bytes": 100,
        "file-footer-size-in-bytes": 10,
        "blob-metadata": [],
    }
    update = {"action": "set-statistics", "statistics": statistics}
    status, _, body = _send(
        server, "POST", "namespaces/db/tables/t", {"requirements": [], "updates": [update]}
    )
    assert status == 200 and json.loads(body)["metadata"]["statistics"] == [statistics]
