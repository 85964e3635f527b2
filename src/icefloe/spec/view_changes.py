"""Changes to a view as the REST protocol sends them: ``CommitViewRequest`` requirements and updates.

A view commit is a list of updates (``assign-uuid``, ``upgrade-format-version``, ``add-schema``,
``set-location``, ``set-properties``, ``remove-properties``, ``add-view-version``,
``set-current-view-version``) under requirements (``assert-view-uuid``). ``apply_view_updates``
applies them as Iceberg Java's ``ViewMetadata.Builder`` does: an added schema or version equal to
an existing one reuses its id, otherwise a schema gets the next id and a version keeps its own
unless taken, and ``-1`` names the one added last (the server also takes ``-1`` for a version the
request re-added, which Java's builder names by id). A version may hold one SQL text per dialect.
The version log gets one entry per commit, for the version current at its end. Then, as Java's
``build()``: a commit whose current version lacks a SQL dialect the previous current version had is
refused unless ``replace.drop-dialect.allowed`` is true (and refused when
``replace.append-dialect.allowed`` is true too), and versions beyond ``version.history.num-entries``
(default 10, at least 1) are expired, oldest id first, never the current one nor one the commit
added; the version log keeps only its entries after the last one naming an expired version.

``view_update_dicts`` is the other direction: the updates that turn one metadata into another.
``rebuild_view`` is what a catalog commits when a caller replaces a view's metadata by another:
the changes between them applied by the builder, so the SQL catalog, the REST server and the REST
client commit the same metadata; ``check_new_view`` is the builder's checks of a view's first
metadata.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.json_structures import schema_from_dict, schema_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.view_metadata import (
    VIEW_FORMAT_VERSION,
    ViewMetadata,
    ViewVersion,
    view_version_from_dict,
    view_version_to_dict,
    with_schema_id,
)

LAST_ADDED = -1
ASSERT_VIEW_UUID = "assert-view-uuid"
HISTORY_SIZE = "version.history.num-entries"
HISTORY_SIZE_DEFAULT = 10
DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
APPEND_DIALECT_ALLOWED = "replace.append-dialect.allowed"


def check_view_requirements(md: ViewMetadata, requirements: list[Any]) -> None:
    """CommitConflict unless every requirement holds for ``md`` (only ``assert-view-uuid`` exists)."""
    for requirement in requirements:
        if not isinstance(requirement, Mapping) or requirement.get("type") != ASSERT_VIEW_UUID:
            raise ValidationError(f"unknown view requirement {requirement!r}")
        if requirement.get("uuid") != md.view_uuid:
            raise CommitConflict(
                f"requirement failed: the view's UUID is {md.view_uuid}, not {requirement.get('uuid')}"
            )


@dataclass
class _Builder:
    base: ViewMetadata
    md: ViewMetadata
    last_schema: int | None = None
    last_version: int | None = None
    schema_ids: dict[int, int] = field(default_factory=dict)  # schema id in the request -> id assigned
    added_versions: set[int] = field(default_factory=set)
    log_entry: tuple[int, int] | None = None  # (timestamp ms, version id) the commit adds to the log

    def add_schema(self, schema: Schema) -> None:
        same = [s.schema_id for s in self.md.schemas if _same_schema(s, schema)]
        assigned = same[0] if same else max((s.schema_id for s in self.md.schemas), default=-1) + 1
        if not same:
            self.md = replace(self.md, schemas=(*self.md.schemas, with_schema_id(schema, assigned)))
        self.schema_ids[schema.schema_id] = assigned
        self.last_schema = assigned

    def add_version(self, version: ViewVersion) -> None:
        schema_id = version.schema_id
        if schema_id == LAST_ADDED:
            if self.last_schema is None:
                raise ValidationError("add-view-version names the last added schema, but none was added")
            schema_id = self.last_schema
        schema_id = self.schema_ids.get(schema_id, schema_id)
        if all(s.schema_id != schema_id for s in self.md.schemas):
            raise ValidationError(f"view version {version.version_id} names unknown schema {schema_id}")
        check_one_sql_per_dialect(version)
        version = replace(version, schema_id=schema_id)
        same = [v.version_id for v in self.md.versions if _same_version(v, version)]
        if same:
            self.last_version = same[0]
            return
        version_id = version.version_id  # kept unless taken: then past the highest id
        for existing in self.md.versions:
            if existing.version_id >= version_id:
                version_id = existing.version_id + 1
        self.md = replace(self.md, versions=(*self.md.versions, replace(version, version_id=version_id)))
        self.last_version = version_id
        self.added_versions.add(version_id)

    def set_current(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_version is None:
                raise ValidationError("set-current-view-version -1, but no version was added")
            version_id = self.last_version
        found = [v for v in self.md.versions if v.version_id == version_id]
        if not found:
            raise ValidationError(f"the view has no version {version_id}")
        if version_id != self.md.current_version_id:
            added = version_id in self.added_versions
            self.log_entry = (found[0].timestamp_ms if added else int(time.time() * 1000), version_id)
            self.md = replace(self.md, current_version_id=version_id)

    def build(self) -> ViewMetadata:
        """The metadata at the end of the commit: logged, its dialects checked, old versions expired."""
        md = self.md
        if self.log_entry is not None:
            md = replace(md, version_log=(*md.version_log, self.log_entry))
        if not _drop_dialect_allowed(md.properties):
            _check_no_dialect_dropped(self.base.current_version(), md.current_version())
        keep = max(len(self.added_versions | {md.current_version_id}), history_size(md.properties))
        return _expire_versions(md, keep) if len(md.versions) > keep else md


def apply_view_updates(md: ViewMetadata, updates: list[Any]) -> ViewMetadata:
    """``md`` with the REST view updates applied (ValidationError on a malformed one or a commit
    Java's builder refuses)."""
    builder = _Builder(md, md)
    for update in updates:
        if not isinstance(update, Mapping):
            raise ValidationError("a view update must be an object")
        _apply(builder, update)
    return builder.build()


def rebuild_view(base: ViewMetadata, new: ViewMetadata) -> ViewMetadata:
    """What a catalog commits when ``new`` replaces ``base``: the updates from one to the other
    applied as Java's builder applies them (equal schemas and versions reused, the log given one
    entry, old versions expired; ValidationError when a SQL dialect would be dropped). A new current
    version of a view with ``replace.append-dialect.allowed`` gets the SQL texts of the dialects it
    lacks from the version it replaces, as Java's ``setCurrentVersion`` appends them. ``base`` when
    nothing changes."""
    known = {v.version_id for v in base.versions}
    if _flag(new.properties, APPEND_DIALECT_ALLOWED) and new.current_version_id not in known:
        new = _with_previous_dialects(new, base.current_version())
    return apply_view_updates(base, view_update_dicts(base, new))


def _with_previous_dialects(md: ViewMetadata, previous: ViewVersion) -> ViewMetadata:
    current = md.current_version()
    have = _dialects(current)
    kept = tuple(r for r in previous.representations if r.dialect.lower() not in have)
    appended = replace(current, representations=(*current.representations, *kept))
    return replace(md, versions=tuple(appended if v is current else v for v in md.versions))


def check_new_view(md: ViewMetadata) -> None:
    """ValidationError unless Java's builder would build ``md`` as a view's first metadata."""
    for version in md.versions:
        check_one_sql_per_dialect(version)
    _drop_dialect_allowed(md.properties)
    history_size(md.properties)


def check_one_sql_per_dialect(version: ViewVersion) -> None:
    """ValidationError when the version has two SQL texts for one dialect (case-insensitive)."""
    dialects = [r.dialect.lower() for r in version.representations]
    repeated = sorted({d for d in dialects if dialects.count(d) > 1})
    if repeated:
        raise ValidationError(f"view version {version.version_id} has more than one SQL text for {repeated}")


def history_size(properties: Mapping[str, str]) -> int:
    """How many versions the view keeps (``version.history.num-entries``; ValidationError unless a
    positive integer)."""
    text = properties.get(HISTORY_SIZE)
    if text is None:
        return HISTORY_SIZE_DEFAULT
    size = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else 0
    if size < 1:
        raise ValidationError(f"{HISTORY_SIZE} must be a positive integer, not {text!r}")
    return size


def _drop_dialect_allowed(properties: Mapping[str, str]) -> bool:
    """``replace.drop-dialect.allowed`` (ValidationError when ``replace.append-dialect.allowed`` is
    true as well, as Java's builder refuses)."""
    allowed = _flag(properties, DROP_DIALECT_ALLOWED)
    if allowed and _flag(properties, APPEND_DIALECT_ALLOWED):
        raise ValidationError(f"cannot set both {DROP_DIALECT_ALLOWED} and {APPEND_DIALECT_ALLOWED} to true")
    return allowed


def _flag(properties: Mapping[str, str], key: str) -> bool:
    """A boolean view property as Java reads one: true only when it says ``true`` (any case)."""
    return properties.get(key, "").lower() == "true"


def _dialects(version: ViewVersion) -> set[str]:
    return {r.dialect.lower() for r in version.representations}


def _check_no_dialect_dropped(previous: ViewVersion, current: ViewVersion) -> None:
    dropped = _dialects(previous) - _dialects(current)
    if dropped:
        raise ValidationError(
            f"cannot replace the view: its new version drops the SQL dialect(s) {sorted(dropped)} "
            f"(set {DROP_DIALECT_ALLOWED}=true to allow it); previous dialects "
            f"{sorted(_dialects(previous))}, new dialects {sorted(_dialects(current))}"
        )


def _expire_versions(md: ViewMetadata, keep: int) -> ViewMetadata:
    """``md`` with its ``keep`` newest versions by id (the current one always among them), in their
    order, and the version log after its last entry naming a version dropped."""
    newest = sorted(
        (v.version_id for v in md.versions if v.version_id != md.current_version_id), reverse=True
    )
    kept = {md.current_version_id, *newest[: keep - 1]}
    log: list[tuple[int, int]] = []
    for entry in md.version_log:
        log = [*log, entry] if entry[1] in kept else []
    return replace(md, versions=tuple(v for v in md.versions if v.version_id in kept), version_log=tuple(log))


def _apply(builder: _Builder, update: Mapping[str, Any]) -> None:
    action = update.get("action")
    md = builder.md
    if action == "assign-uuid":
        if update.get("uuid") != md.view_uuid:
            raise ValidationError("a view's UUID cannot be reassigned")
    elif action == "upgrade-format-version":
        # as Iceberg Java's ViewMetadata.Builder: a bad request (400), not an unsupported one
        wanted = update.get("format-version")
        if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted < VIEW_FORMAT_VERSION:
            raise ValidationError(f"cannot downgrade v{VIEW_FORMAT_VERSION} view to v{wanted}")
        if wanted != VIEW_FORMAT_VERSION:
            raise ValidationError(f"unsupported view format version: {wanted!r}")
    elif action == "add-schema":
        builder.add_schema(schema_from_dict(_field(update, "schema")))
    elif action == "set-location":
        builder.md = replace(md, location=_text(_field(update, "location"), "location"))
    elif action == "set-properties":
        values = _field(update, "updates")
        if not isinstance(values, Mapping):
            raise ValidationError("set-properties needs an 'updates' object")
        builder.md = md.with_properties({**md.properties, **{str(k): str(v) for k, v in values.items()}})
    elif action == "remove-properties":
        removals = _field(update, "removals")
        if not isinstance(removals, list):
            raise ValidationError("remove-properties needs a 'removals' list")
        builder.md = md.with_properties({k: v for k, v in md.properties.items() if k not in removals})
    elif action == "add-view-version":
        builder.add_version(view_version_from_dict(_field(update, "view-version")))
    elif action == "set-current-view-version":
        version_id = _field(update, "view-version-id")
        if not isinstance(version_id, int) or isinstance(version_id, bool):
            raise ValidationError("set-current-view-version needs an integer 'view-version-id'")
        builder.set_current(version_id)
    else:
        raise ValidationError(f"unknown view update {action!r}")


def view_update_dicts(base: ViewMetadata, new: ViewMetadata) -> list[dict[str, Any]]:
    """The REST view updates that turn ``base`` into ``new`` (as Java's builder records them)."""
    updates: list[dict[str, Any]] = []
    if new.location != base.location:
        updates.append({"action": "set-location", "location": new.location})
    changed = {k: v for k, v in new.properties.items() if base.properties.get(k) != v}
    if changed:
        updates.append({"action": "set-properties", "updates": changed})
    removed = sorted(k for k in base.properties if k not in new.properties)
    if removed:
        updates.append({"action": "remove-properties", "removals": removed})
    known_schemas = {s.schema_id for s in base.schemas}
    added_schemas = [s for s in new.schemas if s.schema_id not in known_schemas]
    for schema in added_schemas:
        updates.append(
            {
                "action": "add-schema",
                "schema": schema_to_dict(schema),
                "last-column-id": schema.highest_field_id,
            }
        )
    last_schema = added_schemas[-1].schema_id if added_schemas else None
    known_versions = {v.version_id for v in base.versions}
    added = [v for v in new.versions if v.version_id not in known_versions]
    for version in added:
        if version.schema_id == last_schema:  # named as the schema added last, as Java's client does
            version = replace(version, schema_id=LAST_ADDED)
        updates.append({"action": "add-view-version", "view-version": view_version_to_dict(version)})
    if new.current_version_id != base.current_version_id:
        last = added and added[-1].version_id == new.current_version_id
        updates.append(
            {
                "action": "set-current-view-version",
                "view-version-id": LAST_ADDED if last else new.current_version_id,
            }
        )
    return updates


def _same_schema(a: Schema, b: Schema) -> bool:
    return a.fields == b.fields and a.identifier_field_ids == b.identifier_field_ids


def _same_version(a: ViewVersion, b: ViewVersion) -> bool:
    """Java's ``sameViewVersion``: same summary, SQL, schema and defaults (id and timestamp aside)."""
    return (
        a.summary == b.summary
        and a.representations == b.representations
        and a.other_representations == b.other_representations
        and a.schema_id == b.schema_id
        and a.default_namespace == b.default_namespace
        and a.default_catalog == b.default_catalog
    )


def _field(update: Mapping[str, Any], key: str) -> Any:
    if key not in update:
        raise ValidationError(f"view update {update.get('action')!r} needs {key!r}")
    return update[key]


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{key!r} must be a non-empty string")
    return value
