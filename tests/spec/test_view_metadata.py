"""The view metadata JSON codec: what it keeps of representations other than SQL, and what it
refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.spec.view_metadata import (
    SqlRepresentation,
    view_metadata_from_dict,
    view_metadata_to_dict,
    view_version_from_dict,
    view_version_to_dict,
)

SQL_TEXT = {"type": "sql", "sql": "SELECT id FROM db.t", "dialect": "spark"}
# A representation of a type this codec does not know (another engine's, or a later spec's).
PLAN = {"type": "substrait", "plan": "CgRmYWtl", "details": {"engine": ["x", 1, None], "ok": True}}


def _version_json(*representations: dict[str, Any]) -> dict[str, Any]:
    return {
        "version-id": 1,
        "timestamp-ms": 1000,
        "schema-id": 0,
        "summary": {"engine-name": "other"},
        "representations": [copy.deepcopy(r) for r in representations],
        "default-namespace": ["db"],
    }


def test_a_representation_of_an_unknown_type_is_written_back_unchanged() -> None:
    version = view_version_from_dict(_version_json(SQL_TEXT, PLAN))
    assert version.representations == (SqlRepresentation("SELECT id FROM db.t", "spark"),)
    assert version.other_representations == (PLAN,)
    assert view_version_to_dict(version)["representations"] == [SQL_TEXT, PLAN]


def test_the_kept_representation_is_a_copy_of_the_input() -> None:
    source = _version_json(PLAN)
    version = view_version_from_dict(source)
    source["representations"][0]["details"]["engine"].append("changed later")
    assert view_version_to_dict(version)["representations"] == [PLAN]


def test_a_whole_view_file_round_trips_with_its_other_representations() -> None:
    data = {
        "view-uuid": "fa6506c3-7681-40c8-86dc-e36561f83385",
        "format-version": 1,
        "location": "file:///wh/db/v",
        "current-version-id": 2,
        "versions": [_version_json(SQL_TEXT), {**_version_json(PLAN, SQL_TEXT), "version-id": 2}],
        "version-log": [{"timestamp-ms": 1000, "version-id": 1}, {"timestamp-ms": 1000, "version-id": 2}],
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"}
        ]}],
        "properties": {},
    }  # fmt: skip
    written = view_metadata_to_dict(view_metadata_from_dict(data))
    # SQL texts come first, then the others in the order they were read
    assert written["versions"][1]["representations"] == [SQL_TEXT, PLAN]
    assert written["versions"][0]["representations"] == [SQL_TEXT]


@pytest.mark.parametrize(
    "representation",
    [
        {"sql": "SELECT 1", "dialect": "spark"},  # no type
        {"type": 7, "sql": "SELECT 1", "dialect": "spark"},
        "SELECT 1",
        {"type": "sql", "dialect": "spark"},  # SQL without its text
        {"type": "SQL", "sql": "SELECT 1"},  # SQL without its dialect
    ],
)
def test_a_malformed_representation_is_refused(representation: Any) -> None:
    with pytest.raises(CorruptMetadata):
        view_version_from_dict(_version_json(representation))
