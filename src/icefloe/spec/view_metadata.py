"""Iceberg view metadata (view spec, format version 1) and its JSON form.

A view is a list of versions, each a SQL text per dialect (``representations``), the schema of its
result, the namespace unqualified names resolve in and a summary; ``current-version-id`` names the
one in force and ``version-log`` records when each became current. The metadata file is JSON like
a table's; Iceberg Java, PyIceberg and icefloe read the same files.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.errors import CorruptMetadata, NotFound, Unsupported
from icefloe.spec.json_fields import as_int, as_list, required, required_int
from icefloe.spec.json_structures import schema_from_dict, schema_to_dict
from icefloe.spec.schema import Schema

VIEW_FORMAT_VERSION = 1
SQL = "sql"


@dataclass(frozen=True)
class SqlRepresentation:
    """The view's query in one SQL dialect."""

    sql: str
    dialect: str


@dataclass(frozen=True)
class ViewVersion:
    """One definition of the view."""

    version_id: int
    timestamp_ms: int
    schema_id: int
    representations: tuple[SqlRepresentation, ...]
    default_namespace: tuple[str, ...]
    summary: dict[str, str] = field(default_factory=dict)
    default_catalog: str | None = None
    other_representations: tuple[dict[str, Any], ...] = ()
    """Representations of a type other than ``sql`` (another engine's, or a later spec's), kept as
    their JSON objects and written back unchanged, so rewriting the view's metadata loses none."""

    def sql_for(self, dialect: str) -> str | None:
        """The SQL text for ``dialect`` (case-insensitive), None when the view has none."""
        for r in self.representations:
            if r.dialect.lower() == dialect.lower():
                return r.sql
        return None


@dataclass(frozen=True)
class ViewMetadata:
    """A view's metadata file."""

    view_uuid: str
    location: str
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[tuple[int, int], ...]  # (timestamp ms, version id)
    schemas: tuple[Schema, ...]
    properties: dict[str, str] = field(default_factory=dict)

    @classmethod
    def new(
        cls, location: str, version: ViewVersion, schema: Schema, properties: dict[str, str]
    ) -> ViewMetadata:
        """A view's first metadata: version 1 with schema 0."""
        first = replace(version, version_id=1, schema_id=0)
        schema = with_schema_id(schema, 0)
        return cls(
            str(uuid.uuid4()), location, 1, (first,), ((first.timestamp_ms, 1),), (schema,), properties
        )

    def current_version(self) -> ViewVersion:
        """The version in force."""
        for v in self.versions:
            if v.version_id == self.current_version_id:
                return v
        raise CorruptMetadata(f"view metadata has no version {self.current_version_id}")

    def schema(self) -> Schema:
        """The current version's schema."""
        wanted = self.current_version().schema_id
        for s in self.schemas:
            if s.schema_id == wanted:
                return s
        raise NotFound(f"view metadata has no schema {wanted}")

    def with_version(self, version: ViewVersion, schema: Schema) -> ViewMetadata:
        """A new version made current (``ALTER VIEW ... AS`` / ``CREATE OR REPLACE VIEW``)."""
        schema_id = max(s.schema_id for s in self.schemas) + 1
        version_id = max(v.version_id for v in self.versions) + 1
        added = replace(version, version_id=version_id, schema_id=schema_id)
        return replace(
            self,
            current_version_id=version_id,
            versions=(*self.versions, added),
            version_log=(*self.version_log, (added.timestamp_ms, version_id)),
            schemas=(*self.schemas, with_schema_id(schema, schema_id)),
        )

    def with_properties(self, properties: dict[str, str]) -> ViewMetadata:
        """The same view with other properties."""
        return replace(self, properties=dict(properties))


def with_schema_id(schema: Schema, schema_id: int) -> Schema:
    """The same columns under another schema id."""
    return Schema(*schema.fields, schema_id=schema_id, identifier_field_ids=schema.identifier_field_ids)


def view_metadata_to_dict(md: ViewMetadata) -> dict[str, Any]:
    """The JSON object of a view metadata file."""
    return {
        "view-uuid": md.view_uuid,
        "format-version": VIEW_FORMAT_VERSION,
        "location": md.location,
        "current-version-id": md.current_version_id,
        "properties": dict(md.properties),
        "versions": [view_version_to_dict(v) for v in md.versions],
        "version-log": [{"timestamp-ms": ts, "version-id": vid} for ts, vid in md.version_log],
        "schemas": [schema_to_dict(s) for s in md.schemas],
    }


def view_metadata_from_dict(data: Any) -> ViewMetadata:
    """Parse a view metadata JSON object."""
    what = "view metadata"
    version = required_int(data, "format-version", what)
    if version != VIEW_FORMAT_VERSION:
        raise Unsupported(f"view format version {version} is not supported (icefloe reads version 1)")
    return ViewMetadata(
        view_uuid=str(required(data, "view-uuid", what)),
        location=str(required(data, "location", what)),
        current_version_id=required_int(data, "current-version-id", what),
        versions=tuple(
            view_version_from_dict(v) for v in as_list(required(data, "versions", what), "versions", what)
        ),
        version_log=tuple(
            (as_int(e["timestamp-ms"], "timestamp-ms", what), as_int(e["version-id"], "version-id", what))
            for e in as_list(data.get("version-log") or [], "version-log", what)
        ),
        schemas=tuple(schema_from_dict(s) for s in as_list(required(data, "schemas", what), "schemas", what)),
        properties={str(k): str(v) for k, v in (data.get("properties") or {}).items()},
    )


def view_version_to_dict(v: ViewVersion) -> dict[str, Any]:
    """The JSON object of a view version (``ViewVersionParser``)."""
    out: dict[str, Any] = {
        "version-id": v.version_id,
        "timestamp-ms": v.timestamp_ms,
        "schema-id": v.schema_id,
        "summary": dict(v.summary),
        "representations": [
            *({"type": SQL, "sql": r.sql, "dialect": r.dialect} for r in v.representations),
            *(dict(r) for r in v.other_representations),
        ],
        "default-namespace": list(v.default_namespace),
    }
    if v.default_catalog is not None:
        out["default-catalog"] = v.default_catalog
    return out


def view_version_from_dict(data: Any) -> ViewVersion:
    """Parse a view version JSON object."""
    what = "view version"
    listed = as_list(required(data, "representations", what), "representations", what)
    for r in listed:
        if not isinstance(r, dict) or not isinstance(r.get("type"), str):
            raise CorruptMetadata(f"a view representation must be a JSON object with a type: {r!r}")
    representations = tuple(
        SqlRepresentation(str(required(r, "sql", what)), str(required(r, "dialect", what)))
        for r in listed
        if r["type"].lower() == SQL
    )
    others = tuple(copy.deepcopy(r) for r in listed if r["type"].lower() != SQL)
    return ViewVersion(
        version_id=required_int(data, "version-id", what),
        timestamp_ms=required_int(data, "timestamp-ms", what),
        schema_id=required_int(data, "schema-id", what),
        representations=representations,
        default_namespace=tuple(
            str(p) for p in as_list(data.get("default-namespace") or [], "namespace", what)
        ),
        summary={str(k): str(v) for k, v in (data.get("summary") or {}).items()},
        default_catalog=data.get("default-catalog"),
        other_representations=others,
    )
