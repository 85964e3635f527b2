"""Parsing a catalog's reply with the metadata held already: exact repeats are taken, nothing else."""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.spec.json_codec import table_metadata_from_json
from icefloe.spec.json_known import LOG_VALUE_TYPES, SNAPSHOT_VALUE_TYPES, KnownForms, exact_prefix
from tests.spec.test_json_codec import _v2_dict

OLD_ID = 3051729675574597004
NEW_ID = 7051729675574597005


def _reply(format_version: int = 2) -> dict[str, Any]:
    """A commit's reply: the held table (one snapshot) plus one snapshot and its log entries."""
    data = _v2_dict()
    data["format-version"] = format_version
    if format_version >= 3:
        data["next-row-id"] = 10
    new = {
        "sequence-number": 2,
        "snapshot-id": NEW_ID,
        "parent-snapshot-id": OLD_ID,
        "timestamp-ms": 1515100955999,
        "summary": {"operation": "append", "added-records": "5"},
        "manifest-list": "s3://b/wh/t/metadata/snap-2.avro",
        "schema-id": 0,
    }
    if format_version >= 4:
        for snap, n in ((data["snapshots"][0], 1), (new, 2)):
            del snap["manifest-list"]
            snap.update(
                {"root-manifest": f"metadata/root-{n}.parquet", "first-row-id": 5 * n - 5, "added-rows": 5}
            )
        data["metadata-log"][0]["metadata-file"] = "metadata/v1.json"
    data["snapshots"].append(new)
    data["snapshot-log"].append({"timestamp-ms": 1515100955999, "snapshot-id": NEW_ID})
    v2_file = "metadata/v2.json" if format_version >= 4 else "s3://b/wh/t/metadata/v2.json"
    data["metadata-log"].append({"timestamp-ms": 1515100955900, "metadata-file": v2_file})
    data.update({"current-snapshot-id": NEW_ID, "last-sequence-number": 2})
    data["refs"]["main"]["snapshot-id"] = NEW_ID
    return data


def _held(reply: dict[str, Any]) -> Any:
    """What the client held before the commit: the reply without its newest snapshot and entries."""
    before = copy.deepcopy(reply)
    for key in ("snapshots", "snapshot-log", "metadata-log"):
        before[key] = before[key][:-1]
    return table_metadata_from_json(before)


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_the_held_history_is_taken_and_only_the_new_items_parsed(format_version: int) -> None:
    reply = _reply(format_version)
    held = _held(reply)
    parsed = table_metadata_from_json(reply, known=held)
    assert parsed == table_metadata_from_json(reply)  # the same result as without what is held
    assert parsed.snapshots[0] is held.snapshots[0]
    assert parsed.snapshot_log[0] is held.snapshot_log[0]
    assert parsed.metadata_log[0] is held.metadata_log[0]
    assert [s.snapshot_id for s in parsed.snapshots] == [OLD_ID, NEW_ID]
    if format_version >= 4:
        assert parsed.metadata_log[0].metadata_file == "s3://b/wh/t/metadata/v1.json"
        assert parsed.snapshots[1].root_manifest == "s3://b/wh/t/metadata/root-2.parquet"


@pytest.mark.parametrize(
    ("key", "member", "value"),
    [
        ("snapshots", "timestamp-ms", 1515100955771),
        ("snapshots", "manifest-list", "s3://b/wh/t/metadata/snap-forged.avro"),
        ("snapshots", "summary", {"operation": "overwrite"}),
        ("snapshots", "parent-snapshot-id", 1),
        ("snapshot-log", "timestamp-ms", 1),
        ("metadata-log", "metadata-file", "s3://b/wh/t/metadata/forged.json"),
    ],
)
def test_an_altered_old_item_is_parsed_as_the_reply_says(key: str, member: str, value: Any) -> None:
    reply = _reply()
    held = _held(reply)
    reply[key][0][member] = value
    parsed = table_metadata_from_json(reply, known=held)
    assert parsed == table_metadata_from_json(reply)
    assert parsed != table_metadata_from_json(_reply())


@pytest.mark.parametrize(
    ("key", "member"),
    [
        ("snapshots", "sequence-number"),  # held 1: true == 1 and 1.0 == 1 in Python
        ("snapshots", "schema-id"),  # held 0: false == 0
        ("snapshot-log", "timestamp-ms"),
        ("snapshot-log", "snapshot-id"),
        ("metadata-log", "timestamp-ms"),
    ],
)
@pytest.mark.parametrize("impostor", [bool, float])
def test_an_old_number_of_another_json_type_is_refused_as_without_held(
    key: str, member: str, impostor: type
) -> None:
    reply = _reply()
    held = _held(reply)
    original = reply[key][0][member]
    if original not in (0, 1):  # a value a bool equals, and a float holds exactly
        reply[key][0][member] = original = 1
        held = _held(reply)
    reply[key][0][member] = impostor(original)
    assert reply[key][0][member] == original
    with pytest.raises(CorruptMetadata, match="must be an integer"):
        table_metadata_from_json(reply)
    with pytest.raises(CorruptMetadata, match="must be an integer"):
        table_metadata_from_json(reply, known=held)


def test_exact_prefix_needs_equal_values_of_the_allowed_types() -> None:
    forms = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert exact_prefix([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 3}], forms, LOG_VALUE_TYPES) == 2
    assert exact_prefix([{"a": 1, "b": "x"}], forms, LOG_VALUE_TYPES) == 0  # shorter than held
    assert exact_prefix([{"a": True, "b": "x"}, {"a": 2, "b": "y"}], forms, LOG_VALUE_TYPES) == 0
    assert exact_prefix([{"a": 1.0, "b": "x"}, {"a": 2, "b": "y"}], forms, LOG_VALUE_TYPES) == 0
    assert (
        exact_prefix([{"b": "x", "a": 1}, {"a": 2, "b": "y"}], forms, LOG_VALUE_TYPES) == 2
    )  # order is free
    assert exact_prefix([{"a": 1, "b": {"k": "v"}}], [{"a": 1, "b": {"k": "v"}}], SNAPSHOT_VALUE_TYPES) == 1
    assert exact_prefix([{"a": 1, "b": {"k": "v"}}], [{"a": 1, "b": {"k": "v"}}], LOG_VALUE_TYPES) == 0
    assert exact_prefix([], [], LOG_VALUE_TYPES) == 0


@pytest.mark.parametrize("format_version", [2, 4])
def test_the_next_reply_reuses_the_last_forms_and_still_catches_an_altered_item(format_version: int) -> None:
    """Commit after commit the held lists start with the previous reply's objects; the forms kept
    for them are reused, and a reply that alters one of them is still read as it says."""
    reply = _reply(format_version)
    first = table_metadata_from_json(reply, known=_held(reply))
    following = copy.deepcopy(reply)
    third = dict(following["snapshots"][1], **{"snapshot-id": 9051729675574597006, "sequence-number": 3})
    third["parent-snapshot-id"] = NEW_ID
    following["snapshots"].append(third)
    following["snapshot-log"].append({"timestamp-ms": 1515100956999, "snapshot-id": third["snapshot-id"]})
    held = table_metadata_from_json(following).with_changes(
        snapshots=(*first.snapshots, table_metadata_from_json(following).snapshots[2]),
        snapshot_log=(*first.snapshot_log, table_metadata_from_json(following).snapshot_log[2]),
        metadata_log=first.metadata_log,
    )
    second = table_metadata_from_json(following, known=held)
    assert second == table_metadata_from_json(following)
    assert all(a is b for a, b in zip(second.snapshots, held.snapshots, strict=True))
    assert all(a is b for a, b in zip(second.snapshot_log, held.snapshot_log, strict=True))
    assert second.metadata_log[0] is held.metadata_log[0]
    for key, member, value in (
        ("snapshots", "timestamp-ms", 1),
        ("snapshot-log", "snapshot-id", 5),
        ("metadata-log", "timestamp-ms", 7),
    ):
        altered = copy.deepcopy(following)
        altered[key][0][member] = value
        parsed = table_metadata_from_json(altered, known=held)
        assert parsed == table_metadata_from_json(altered)
        assert parsed != second


def test_a_form_with_a_value_of_another_type_is_never_kept() -> None:
    """exact_prefix checks the reply's types only: a held object whose form holds true or 1.0
    where JSON would say 1 has no form, so it is always parsed again."""
    forms = KnownForms(lambda obj, _: {"n": obj}, lambda form, obj, _: True, LOG_VALUE_TYPES)
    assert forms.form(1, "t") == {"n": 1}
    assert forms.form(True, "t") is None
    assert forms.form(1.0, "t") is None
    assert forms.forms([1, True], "t") is None
    assert forms.forms([1, 2], "t") == [{"n": 1}, {"n": 2}]


def test_forms_are_reused_up_to_the_first_object_that_is_not_the_last_ones() -> None:
    """A rebased commit's reply keeps all but the newest of the last held objects: their forms are
    taken from the last list, the others made, and every list is the forms of its own objects."""
    made: list[int] = []

    def encode(obj: list[int], context: str) -> dict[str, Any]:
        made.append(obj[0])
        return {"n": obj[0]}

    forms: KnownForms[list[int], str] = KnownForms(encode, lambda form, obj, _: True, LOG_VALUE_TYPES)
    held = [[n] for n in range(6)]
    assert forms.forms(held, "t") == [{"n": n} for n in range(6)]
    rebased = [*held[:5], [50], [51], [52]]  # the newest replaced, then others' and the client's
    made.clear()
    assert forms.forms(rebased, "t") == [{"n": n} for n in (0, 1, 2, 3, 4, 50, 51, 52)]
    assert made == [50, 51, 52]
    again = [held[0], [7], *rebased[2:]]  # the second object is another one: from there, looked up
    made.clear()
    assert forms.forms(again, "t") == [{"n": n} for n in (0, 7, 2, 3, 4, 50, 51, 52)]
    assert made == [7]
    assert forms.forms(again[:3], "t") == [{"n": 0}, {"n": 7}, {"n": 2}]  # fewer than the last


def test_threads_holding_their_own_objects_keep_their_own_last_forms() -> None:
    """Appenders in threads of one process each hold their own objects of one table: one thread's
    list does not replace another's, so each looks up only its new objects."""
    made: list[int] = []

    def encode(obj: list[int], context: str) -> dict[str, Any]:
        made.append(obj[0])
        return {"n": obj[0]}

    class Counted(KnownForms[list[int], str]):
        def form(self, obj: list[int], context: str) -> dict[str, Any] | None:
            looked_up.append(obj[0])
            return super().form(obj, context)

    looked_up: list[int] = []
    forms = Counted(encode, lambda form, obj, _: True, LOG_VALUE_TYPES)
    held = {name: [[n] for n in range(4)] for name in ("a", "b")}  # equal, not the same, objects

    def grow(name: str, n: int) -> None:
        held[name] = [*held[name], [n]]
        assert forms.forms(held[name], "t") == [{"n": obj[0]} for obj in held[name]]

    with ThreadPoolExecutor(max_workers=1) as other_thread:  # "b" always appends in that one
        for n in range(10, 13):
            for name in ("a", "b"):
                made.clear()
                looked_up.clear()
                if name == "a":
                    grow(name, n)
                else:
                    other_thread.submit(grow, name, n).result()
                assert made == looked_up == ([0, 1, 2, 3, n] if n == 10 else [n])
