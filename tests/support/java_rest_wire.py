"""Iceberg Java's REST client on the wire, for tests: its request bodies and what its parsers need.

``JavaWire`` sends requests as ``HTTPClient`` does (JSON bodies, an ``Idempotency-Key`` on
mutations); the builders produce bodies as Java builds them (``SchemaParser``,
``PartitionSpecParser``, ``SnapshotParser``, ``RESTSessionCatalog.createChanges``,
``UpdateRequirements``); the checks hold responses to ``ErrorResponseParser`` and
``TableMetadataParser``. Used by ``tests/server/test_java_client_*.py``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import requests

JSON = dict[str, Any]


SCHEMA: JSON = {  # SchemaParser.toJson
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"},
    ],
}


BUCKET_SPEC: JSON = {  # PartitionSpecParser.toJson of the unbound spec
    "spec-id": 0,
    "fields": [{"name": "id_bucket", "transform": "bucket[16]", "source-id": 1, "field-id": 1000}],
}


ID_ORDER: JSON = {  # SortOrderParser.toJson
    "order-id": 1,
    "fields": [{"transform": "identity", "source-id": 1, "direction": "asc", "null-order": "nulls-first"}],
}


class JavaWire:
    """Sends requests the way Iceberg Java's HTTPClient does, against ``base`` (``.../v1/``)."""

    def __init__(self, base: str, token: str | None = None) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Content-Type"] = "application/json"
        self.session.headers["X-Client-Version"] = "Apache Iceberg 1.10.0"
        if token is not None:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def send(self, method: str, path: str, body: Any = None, **params: str) -> requests.Response:
        headers = {"Idempotency-Key": str(uuid.uuid4())} if method in ("POST", "DELETE") else {}
        return self.session.request(
            method, self.base + path, json=body, params=params or None, headers=headers, timeout=30
        )

    def ok(self, method: str, path: str, body: Any = None, **params: str) -> JSON:
        reply = self.send(method, path, body, **params)
        assert reply.status_code == 200, reply.text
        result: JSON = reply.json()
        return result

    def create_table(self, namespace: str, name: str, **fields: Any) -> JSON:
        body = {
            "name": name,
            "location": None,
            "schema": SCHEMA,
            "partition-spec": None,
            "write-order": None,
            "stage-create": False,
            "properties": {},
        }
        return self.ok("POST", f"namespaces/{namespace}/tables", body | fields)

    def commit(self, path: str, requirements: list[JSON], updates: list[JSON]) -> requests.Response:
        return self.send("POST", path, {"requirements": requirements, "updates": updates})


def java_snapshot(
    table: JSON, snapshot_id: int, parent: int | None, sequence_number: int, records: int
) -> JSON:
    """A snapshot as SnapshotParser.toJson writes an append's."""
    snapshot: JSON = {"sequence-number": sequence_number, "snapshot-id": snapshot_id}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    snapshot |= {
        "timestamp-ms": int(time.time() * 1000),
        "summary": {
            "operation": "append",
            "added-data-files": "1",
            "added-records": str(records),
            "total-records": str(records),
            "total-data-files": str(sequence_number),
        },
        "manifest-list": f"{table['location']}/metadata/snap-{snapshot_id}-1-{uuid.uuid4()}.avro",
        "schema-id": 0,
    }
    return snapshot


def append(
    wire: JavaWire, path: str, table: JSON, snapshot: JSON, branch_head: int | None
) -> requests.Response:
    """The commit ``Table.newAppend().commit()`` sends (UpdateRequirements.forUpdateTable)."""
    requirements = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": branch_head},
    ]
    updates = [
        {"action": "add-snapshot", "snapshot": snapshot},
        {
            "action": "set-snapshot-ref",
            "ref-name": "main",
            "snapshot-id": snapshot["snapshot-id"],
            "type": "branch",
        },
    ]
    return wire.commit(path, requirements, updates)


def assert_error(reply: requests.Response, code: int, error_type: str) -> None:
    """An ErrorResponseParser-readable body with the type ErrorHandlers maps to the right exception."""
    assert reply.status_code == code, reply.text
    body = reply.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["type"] == error_type
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


def assert_java_readable_table(result: JSON, format_version: int) -> None:
    """What LoadTableResponseParser and TableMetadataParser.fromJson insist on."""
    assert set(result) >= {"metadata-location", "metadata", "config"}
    assert isinstance(result["config"], dict)
    assert all(isinstance(v, str) for v in result["config"].values())
    md = result["metadata"]
    assert md["format-version"] == format_version
    required = {
        "table-uuid": str,
        "location": str,
        "last-updated-ms": int,
        "last-column-id": int,
        "schemas": list,
        "current-schema-id": int,
        "partition-specs": list,
        "default-spec-id": int,
        "last-partition-id": int,
        "sort-orders": list,
        "default-sort-order-id": int,
        "properties": dict,
    }
    if format_version >= 2:
        required["last-sequence-number"] = int
    if format_version >= 3:
        required["next-row-id"] = int
    for key, kind in required.items():
        assert isinstance(md[key], kind), key
    assert md["current-schema-id"] in [s["schema-id"] for s in md["schemas"]]
    assert md["default-spec-id"] in [s["spec-id"] for s in md["partition-specs"]]
    assert md["default-sort-order-id"] in [o["order-id"] for o in md["sort-orders"]]
    snapshot_ids = {s["snapshot-id"] for s in md.get("snapshots", [])}
    assert {ref["snapshot-id"] for ref in md.get("refs", {}).values()} <= snapshot_ids
    for ref in md.get("refs", {}).values():
        assert ref["type"] in ("branch", "tag")


def create_changes(md: JSON) -> list[JSON]:
    """RESTSessionCatalog.createChanges of a staged table's metadata."""
    spec = next(s for s in md["partition-specs"] if s["spec-id"] == md["default-spec-id"])
    order = next(o for o in md["sort-orders"] if o["order-id"] == md["default-sort-order-id"])
    changes = [
        {"action": "assign-uuid", "uuid": md["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": md["format-version"]},
        {"action": "add-schema", "schema": md["schemas"][0], "last-column-id": md["last-column-id"]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": order},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": md["location"]},
    ]
    if md["properties"]:
        changes.append({"action": "set-properties", "updates": md["properties"]})
    return changes


def add_column(table: JSON, column: JSON) -> tuple[list[JSON], list[JSON]]:
    """The commit UpdateSchema sends to add ``column`` (id 3) to a table still at SCHEMA."""
    evolved = {"type": "struct", "schema-id": 1, "fields": [*SCHEMA["fields"], column]}
    requirements = [
        {"type": "assert-table-uuid", "uuid": table["table-uuid"]},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-current-schema-id", "current-schema-id": 0},
    ]
    updates = [
        {"action": "add-schema", "schema": evolved, "last-column-id": 3},
        {"action": "set-current-schema", "schema-id": -1},
    ]
    return requirements, updates
