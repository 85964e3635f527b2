"""REST view updates applied as Iceberg Java's ViewMetadata.Builder applies them, and the diff
icefloe's REST client sends (applying the diff of two metadata gives the second)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.json_structures import schema_to_dict
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.spec.view_changes import (
    apply_view_updates,
    check_new_view,
    check_view_requirements,
    rebuild_view,
    view_update_dicts,
)
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
    # Iceberg Java refuses these as bad requests (400), so does the server
    with pytest.raises(ValidationError, match="unsupported view format version: 2"):
        apply_view_updates(base, [{"action": "upgrade-format-version", "format-version": 2}])
    with pytest.raises(ValidationError, match="cannot downgrade v1 view to v0"):
        apply_view_updates(base, [{"action": "upgrade-format-version", "format-version": 0}])
    with pytest.raises(ValidationError, match="unsupported view format version: '1'"):
        apply_view_updates(base, [{"action": "upgrade-format-version", "format-version": "1"}])
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


def _replace(sql: str, timestamp_ms: int, *dialects: str, schema: Schema = IDS) -> list[dict[str, Any]]:
    """The updates of Java's ``replaceView``: a schema and a version (one SQL text per dialect) made
    current by ``-1``."""
    version = view_version_to_dict(_version(sql, timestamp_ms)) | {"schema-id": -1}
    version["representations"] = [{"type": "sql", "sql": sql, "dialect": d} for d in dialects or ("spark",)]
    return [
        {"action": "add-schema", "schema": schema_to_dict(schema), "last-column-id": schema.highest_field_id},
        {"action": "add-view-version", "view-version": version},
        {"action": "set-current-view-version", "view-version-id": -1},
    ]


HISTORY = "version.history.num-entries"
DROP = "replace.drop-dialect.allowed"
APPEND = "replace.append-dialect.allowed"


def _props(**values: str) -> dict[str, Any]:
    return {"action": "set-properties", "updates": values}


def _ids(md: ViewMetadata) -> tuple[list[int], list[int]]:
    return [v.version_id for v in md.versions], [vid for _, vid in md.version_log]


def test_ten_versions_are_kept_by_default_and_the_log_follows_them() -> None:
    md = _base()
    for n in range(2, 11):
        md = apply_view_updates(md, _replace(f"SELECT {n}", 1000 * n))
    assert _ids(md) == (list(range(1, 11)), list(range(1, 11)))  # ten: nothing expired yet
    md = apply_view_updates(md, _replace("SELECT 11", 11_000))
    assert _ids(md) == (list(range(2, 12)), list(range(2, 12)))
    assert md.version_log[0] == (2000, 2) and md.current_version_id == 11
    assert [s.schema_id for s in md.schemas] == [0]  # schemas are not expired (all equal here)
    md = apply_view_updates(md, [_props(**{HISTORY: "3"})])
    assert _ids(md) == ([9, 10, 11], [9, 10, 11])  # a smaller size applies at the next commit


def test_expiry_keeps_the_current_version_and_those_the_commit_added() -> None:
    md = apply_view_updates(_base(), [_props(**{HISTORY: "3"})])
    for n in range(2, 6):
        md = apply_view_updates(md, _replace(f"SELECT {n}", 1000 * n))
    assert _ids(md) == ([3, 4, 5], [3, 4, 5])
    md = apply_view_updates(md, [{"action": "set-current-view-version", "view-version-id": 3}])
    assert md.current_version_id == 3 and _ids(md) == ([3, 4, 5], [3, 4, 5, 3])
    # a version added but not made current: the current one (the oldest) stays, version 4 goes
    added = _replace("SELECT 6", 6000)[:2]
    md = apply_view_updates(md, added)
    assert _ids(md) == ([3, 5, 6], [5, 3])  # the log after its last entry naming a dropped version
    # one commit adding more versions than the size keeps them all, and the current one
    md = apply_view_updates(md, [_props(**{HISTORY: "1"})])
    assert _ids(md) == ([3], [3])
    many = [*_replace("SELECT 7", 7000)[:2], *_replace("SELECT 8", 8000)[:2]]  # ids 4 and 5: past 3
    md = apply_view_updates(md, [*many, {"action": "set-current-view-version", "view-version-id": 4}])
    assert (md.current_version_id, *_ids(md)) == (4, [4, 5], [4])
    md = apply_view_updates(md, [_props(comment="next commit")])
    assert _ids(md) == ([4], [4])


@pytest.mark.parametrize("size", ["0", "-1", "ten", "", "1.5"])
def test_the_history_size_must_be_a_positive_integer(size: str) -> None:
    with pytest.raises(ValidationError, match=r"version\.history\.num-entries must be a positive integer"):
        apply_view_updates(_base(), [_props(**{HISTORY: size})])
    base = _base()
    with pytest.raises(ValidationError, match=r"version\.history\.num-entries must be a positive integer"):
        check_new_view(base.with_properties({HISTORY: size}))


def test_a_replace_may_not_drop_a_dialect_unless_the_view_allows_it() -> None:
    md = apply_view_updates(_base(), _replace("SELECT 2", 2000, "spark", "trino"))
    with pytest.raises(ValidationError, match=r"drops the SQL dialect\(s\) \['trino'\]"):
        apply_view_updates(md, _replace("SELECT 3", 3000, "spark"))
    with pytest.raises(ValidationError, match="drops"):  # back to version 1 (spark only) too
        apply_view_updates(md, [{"action": "set-current-view-version", "view-version-id": 1}])
    kept = apply_view_updates(md, _replace("SELECT 3", 3000, "TRINO", "Spark", "hive"))  # any case
    assert kept.current_version().sql_for("hive") == "SELECT 3"
    assert apply_view_updates(md, [_props(comment="x")]).current_version_id == 2  # no new version
    allowed = apply_view_updates(md, [_props(**{DROP: "TRUE"}), *_replace("SELECT 3", 3000, "spark")])
    assert allowed.current_version().representations == (SqlRepresentation("SELECT 3", "spark"),)
    with pytest.raises(ValidationError, match="cannot set both"):
        apply_view_updates(
            md,
            [_props(**{DROP: "true", APPEND: "true"})],
        )


def test_a_version_has_one_sql_text_per_dialect() -> None:
    with pytest.raises(ValidationError, match=r"more than one SQL text for \['spark'\]"):
        apply_view_updates(_base(), _replace("SELECT 2", 2000, "spark", "Spark"))
    twice = ViewVersion(
        1, 1000, 0, (SqlRepresentation("a", "trino"), SqlRepresentation("b", "TRINO")), ("db",)
    )
    with pytest.raises(ValidationError, match="trino"):
        check_new_view(ViewMetadata.new("file:///wh/db/v", twice, IDS, {}))
    check_new_view(_base())


def test_one_log_entry_per_commit_for_the_version_current_at_its_end() -> None:
    md = apply_view_updates(_base(), _replace("SELECT 2", 2000))
    flip = [
        {"action": "set-current-view-version", "view-version-id": 1},
        {"action": "set-current-view-version", "view-version-id": 2},
        {"action": "set-current-view-version", "view-version-id": 1},
    ]
    md = apply_view_updates(md, flip)
    assert [vid for _, vid in md.version_log] == [1, 2, 1]
    assert md.version_log[-1][0] > 2000  # an older version made current again: logged at the commit


def test_rebuild_reuses_equal_schemas_and_versions_as_javas_builder() -> None:
    base = apply_view_updates(_base(), _replace("SELECT 2", 2000, schema=IDS_AND_NAMES))
    assert rebuild_view(base, base) == base
    # what ALTER VIEW ... AS builds: a new schema id for columns an existing schema has
    again = base.with_version(_version("SELECT 3", 3000), IDS)
    assert [s.schema_id for s in again.schemas] == [0, 1, 2]
    rebuilt = rebuild_view(base, again)
    assert [s.schema_id for s in rebuilt.schemas] == [0, 1]
    assert (rebuilt.current_version_id, rebuilt.current_version().schema_id) == (3, 0)
    assert view_update_dicts(base, rebuilt) == [
        {"action": "add-view-version", "view-version": view_version_to_dict(rebuilt.current_version())},
        {"action": "set-current-view-version", "view-version-id": -1},
    ]
    # the first definition again: its version is made current by id, no version is added
    first = base.with_version(_version("SELECT id FROM t", 9000), IDS)
    back = rebuild_view(base, first)
    assert (back.current_version_id, [v.version_id for v in back.versions]) == (1, [1, 2])
    assert view_update_dicts(base, back) == [{"action": "set-current-view-version", "view-version-id": 1}]
    # a schema the change adds is named by -1 in its version, as Java's client names it
    wider = Schema(*IDS_AND_NAMES.fields, NestedField(3, "n", LongType()))
    updates = view_update_dicts(base, base.with_version(_version("SELECT 4", 4000), wider))
    assert [u["action"] for u in updates] == ["add-schema", "add-view-version", "set-current-view-version"]
    assert (updates[0]["schema"]["schema-id"], updates[1]["view-version"]["schema-id"]) == (2, -1)
    with pytest.raises(ValidationError, match="drops"):
        rebuild_view(base, base.with_version(replace(_version("x", 1), representations=()), IDS))


def test_a_view_may_append_the_dialects_a_replace_lacks() -> None:
    md = apply_view_updates(_base(), _replace("SELECT 2", 2000, "spark", "trino"))
    appending = apply_view_updates(md, [_props(**{APPEND: "true"})])
    new = appending.with_version(_version("SELECT 3", 3000), IDS)  # spark only
    rebuilt = rebuild_view(appending, new)
    assert rebuilt.current_version().representations == (
        SqlRepresentation("SELECT 3", "spark"),
        SqlRepresentation("SELECT 2", "trino"),  # the replaced version's, after the new ones
    )
    assert rebuild_view(appending, appending) == appending
    with pytest.raises(ValidationError, match="drops"):  # without the property
        rebuild_view(md, md.with_version(_version("SELECT 3", 3000), IDS))
