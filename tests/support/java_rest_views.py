"""Iceberg Java's REST view requests, for tests: the bodies ``RESTSessionCatalog``'s view builder
sends and what ``LoadViewResponseParser`` / ``ViewMetadataParser`` need of the answers.

``create_view_request`` is ``ImmutableCreateViewRequest`` (``CreateViewRequestParser``);
``replace_view_updates`` is the change list ``ViewMetadata.buildFrom(base).setProperties(...)
.setCurrentVersion(version, schema)`` records, sent with ``UpdateRequirements.forReplaceView``'s
``assert-view-uuid``. Used by ``tests/server/test_java_client_views.py``.
"""

from __future__ import annotations

import time
from typing import Any

JSON = dict[str, Any]

JAVA_VIEW_ENDPOINTS = {  # Endpoint.V1_* of views, as Endpoint.toString spells them
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",  # Iceberg Java 1.11
}


def view_schema(schema_id: int, *columns: tuple[int, str, str]) -> JSON:
    """SchemaParser.toJson of a view's schema (every column optional, as Spark's views have them)."""
    fields = [{"id": i, "name": name, "required": False, "type": kind} for i, name, kind in columns]
    return {"type": "struct", "schema-id": schema_id, "fields": fields}


def view_version(version_id: int, schema_id: int, sql: str, namespace: list[str]) -> JSON:
    """ViewVersionParser.toJson of a Spark view version."""
    return {
        "version-id": version_id,
        "timestamp-ms": int(time.time() * 1000),
        "schema-id": schema_id,
        "summary": {
            "engine-name": "spark",
            "engine-version": "3.5.5",
            "iceberg-version": "Apache Iceberg 1.10.0",
        },
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-catalog": "demo",
        "default-namespace": namespace,
    }


def create_view_request(name: str, schema: JSON, version: JSON, properties: JSON | None = None) -> JSON:
    """CreateViewRequestParser.toJson: no ``location`` field when the builder was given none."""
    return {"name": name, "schema": schema, "view-version": version, "properties": properties or {}}


def replace_view_updates(view_uuid: str, schema: JSON, version: JSON, properties: JSON) -> JSON:
    """The ``CommitViewRequest`` of ``replaceView``: new schema and version, made current by -1."""
    return {
        "requirements": [{"type": "assert-view-uuid", "uuid": view_uuid}],
        "updates": [
            {"action": "set-properties", "updates": properties},
            {
                "action": "add-schema",
                "schema": schema,
                "last-column-id": max(f["id"] for f in schema["fields"]),
            },
            {"action": "add-view-version", "view-version": version | {"schema-id": -1}},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }


def assert_java_readable_view(result: JSON) -> None:
    """What LoadViewResponseParser and ViewMetadataParser.fromJson insist on."""
    assert set(result) >= {"metadata-location", "metadata", "config"}
    md = result["metadata"]
    required = {
        "view-uuid": str,
        "format-version": int,
        "location": str,
        "current-version-id": int,
        "versions": list,
        "version-log": list,
        "schemas": list,
    }
    for key, kind in required.items():
        assert isinstance(md[key], kind), key
    assert md["format-version"] == 1
    assert md["current-version-id"] in [v["version-id"] for v in md["versions"]]
    schema_ids = {s["schema-id"] for s in md["schemas"]}
    for version in md["versions"]:
        assert version["schema-id"] in schema_ids
        assert isinstance(version["default-namespace"], list) and version["representations"]
