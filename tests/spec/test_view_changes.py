"""REST view updates applied as Iceberg Java's ViewMetadata.Builder applies them, and the diff
icefloe's REST client sends (applying the diff of two metadata gives the second)."""

from __future__ import annotations

import pytest

from icefloe.errors import CommitConflict, Unsupported, ValidationError
from icefloe.spec.json_structures import schema_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.view_changes import apply_view_updates, check_view_requirements, view_update_dicts
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion, view_version_to_dict

IDS = Schema(NestedField(1, "id", LongType()))
IDS_AND_NAMES = Schema(NestedField(1, "id", LongType()), NestedField(2, "name", StringType()))


def _version(sql: str, timestamp_ms: int) -> ViewVersion:
    return ViewVersion(1, timestamp_ms, 0, (SqlRepresentation(sql, "spark"),), ("db",), {"engine-name": "t"})


def _base() -> ViewMetadata:
    return ViewMetadata.new("file:///wh/db/v", _version("SELECT id FROM t", 1000), IDS, {"a": "1", "b": "2"})


def test_the_clients_diff_applied_gives_the_new_metadata() -> None:
    base = _base()
    new = base.with_version(_version("SELECT id, name FROM t", 2000), IDS_AND_NAMES)
    new = new.with_properties({"a": "1", "c": "3"})
    updates = view_update_dicts(base, new)
    assert [u["action"] for u in updates] == [
        "set-properties",
        "remove-properties",
        "add-schema",
        "add-view-version",
        "set-current-view-version",
    ]
    assert updates[0]["updates"] == {"c": "3"} and updates[1]["removals"] == ["b"]
    assert updates[2]["last-column-id"] == 2 and updates[4]["view-version-id"] == -1
    assert apply_view_updates(base, updates) == new
    assert view_update_dicts(new, new) == []


def test_equal_schemas_and_versions_are_reused_and_minus_one_is_the_last_added() -> None:
    base = _base()
    same_again = [
        {"action": "add-schema", "schema": schema_to_dict(Schema(*IDS.fields, schema_id=7))},
        {
            "action": "add-view-version",
            "view-version": view_version_to_dict(_version("SELECT id FROM t", 5000))
            | {"schema-id": -1, "version-id": 9},
        },
        {"action": "set-current-view-version", "view-version-id": -1},
    ]
    assert apply_view_updates(base, same_again) == base  # already current: nothing changes
    other = [
        {"action": "add-schema", "schema": schema_to_dict(Schema(*IDS_AND_NAMES.fields, schema_id=7))},
        {
            "action": "add-view-version",
            "view-version": view_version_to_dict(_version("SELECT *", 5000)) | {"schema-id": 7},
        },
        {"action": "set-current-view-version", "view-version-id": -1},
        {"action": "set-location", "location": "file:///wh/db/v2"},
    ]
    md = apply_view_updates(base, other)
    assert [s.schema_id for s in md.schemas] == [0, 1]  # the request's schema 7 became 1
    assert [(v.version_id, v.schema_id) for v in md.versions] == [(1, 0), (2, 1)]
    assert md.current_version_id == 2 and md.version_log == ((1000, 1), (5000, 2))
    assert md.location == "file:///wh/db/v2"
    own_id = view_version_to_dict(_version("SELECT 5", 6000)) | {"version-id": 5}
    kept = apply_view_updates(md, [{"action": "add-view-version", "view-version": own_id}])
    assert [v.version_id for v in kept.versions] == [1, 2, 5]  # a free id is kept, as Java does
    back = apply_view_updates(md, [{"action": "set-current-view-version", "view-version-id": 1}])
    assert back.current_version_id == 1 and [vid for _, vid in back.version_log] == [1, 2, 1]


def test_requirements_and_malformed_updates() -> None:
    base = _base()
    check_view_requirements(base, [{"type": "assert-view-uuid", "uuid": base.view_uuid}])
    with pytest.raises(CommitConflict):
        check_view_requirements(base, [{"type": "assert-view-uuid", "uuid": "other"}])
    with pytest.raises(ValidationError):
        check_view_requirements(base, [{"type": "assert-table-uuid", "uuid": base.view_uuid}])
    assert apply_view_updates(base, [{"action": "assign-uuid", "uuid": base.view_uuid}]) == base
    assert apply_view_updates(base, [{"action": "upgrade-format-version", "format-version": 1}]) == base
    with pytest.raises(Unsupported):
        apply_view_updates(base, [{"action": "upgrade-format-version", "format-version": 2}])
    for bad in (
        {"action": "assign-uuid", "uuid": "other"},
        {"action": "set-current-view-version", "view-version-id": -1},
        {"action": "set-current-view-version", "view-version-id": 5},
        {
            "action": "add-view-version",
            "view-version": view_version_to_dict(_version("x", 1)) | {"schema-id": -1},
        },
        {
            "action": "add-view-version",
            "view-version": view_version_to_dict(_version("x", 1)) | {"schema-id": 4},
        },
        {"action": "set-location", "location": ""},
        {"action": "set-properties", "updates": ["a"]},
        {"action": "remove-properties"},
        {"action": "add-spec"},
    ):
        with pytest.raises(ValidationError):
            apply_view_updates(base, [bad])
