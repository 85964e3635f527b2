"""A commit reply read with the client's own snapshot text cut out gives what parsing it whole gives.

Each reply here is built as a catalog could send it, and the result of ``load_reply`` +
``table_metadata_from_json(..., verbatim=...)`` is compared with parsing the whole reply: equal
metadata always, and the arrays left unparsed only where the reply really repeats them as the
metadata's members.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from operator import is_
from typing import Any

import pytest

from icefloe.spec import json_reply
from icefloe.spec.json_codec import (
    table_metadata_from_json,
    table_metadata_json_bytes,
    table_metadata_to_dict,
)
from icefloe.spec.json_reply import load_reply
from icefloe.spec.snapshots import MetadataLogEntry, SnapshotLogEntry, SnapshotRef
from icefloe.spec.table_metadata import TableMetadata
from tests.spec.test_json_fragments import append, base_metadata

LOCATION = "file:///w/t/metadata/00042-x.metadata.json"


def proposed_and_committed(format_version: int, snapshots: int = 30) -> tuple[TableMetadata, TableMetadata]:
    """What a client proposed after ``snapshots`` appends, and what the catalog committed of it
    (its own last-updated-ms and one more metadata-log entry)."""
    rng = random.Random(format_version)
    md = base_metadata(format_version)
    for n in range(snapshots):
        md = append(md, n, rng)
    if format_version >= 4:  # roots as a client holds them: absolute (the file spells them relative)
        absolute = [replace(s, root_manifest=f"{md.location}/{s.root_manifest}") for s in md.snapshots]
        md = md.with_changes(snapshots=tuple(absolute))
    committed = md.with_changes(
        last_updated_ms=md.last_updated_ms + 7,
        metadata_log=(
            *md.metadata_log,
            MetadataLogEntry(md.last_updated_ms, "file:///w/t/metadata/prev.json"),
        ),
    )
    return md, committed


def reply(metadata: bytes, location: str = LOCATION) -> bytes:
    return (
        b'{"metadata-location":'
        + json.dumps(location).encode()
        + b',"config":{},"metadata":'
        + metadata
        + b"}"
    )


def read(data: bytes, known: TableMetadata) -> tuple[TableMetadata, dict[str, int], Any]:
    doc, verbatim = load_reply(data, "metadata", known)
    md = table_metadata_from_json(doc["metadata"], known=known, verbatim=verbatim)
    whole = json.loads(data)
    assert doc["metadata-location"] == whole["metadata-location"]
    return md, verbatim, whole


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_icefloe_reply_repeats_the_history_and_is_not_parsed_again(format_version: int) -> None:
    proposed, committed = proposed_and_committed(format_version)
    md, verbatim, whole = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == {"snapshots": 30, "snapshot-log": 30}
    assert md == committed == table_metadata_from_json(whole["metadata"])
    assert md.snapshots is proposed.snapshots


def test_v1_replies_are_parsed_whole() -> None:
    proposed, committed = proposed_and_committed(1)
    md, verbatim, whole = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == {}
    assert md == table_metadata_from_json(whole["metadata"])


def test_another_spelling_is_parsed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    proposed, committed = proposed_and_committed(2)
    spaced = json.dumps(table_metadata_to_dict(committed), indent=1).encode()

    def never(md: TableMetadata) -> None:
        raise AssertionError("the held text is made only for a reply spelled as icefloe spells it")

    monkeypatch.setattr(json_reply, "known_array_texts", never)
    md, verbatim, _ = read(reply(spaced), proposed)
    assert verbatim == {}
    assert md == committed


def test_a_rebased_snapshot_is_parsed_and_the_rest_reused() -> None:
    proposed, committed = proposed_and_committed(2)
    head = committed.snapshots[-1]
    rebased = replace(head, sequence_number=99)
    committed = committed.with_changes(
        snapshots=(*committed.snapshots[:-1], rebased), last_sequence_number=99
    )
    md, verbatim, _ = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == {"snapshots": 29, "snapshot-log": 30}
    assert md == committed and md.snapshots[-1].sequence_number == 99
    assert all(map(is_, md.snapshots[:29], proposed.snapshots))


def members(metadata: bytes) -> dict[str, Any]:
    """The metadata's members, in order, as raw JSON text (values re-encoded compactly)."""
    return {
        k: json.dumps(v, separators=(",", ":"), ensure_ascii=False) for k, v in json.loads(metadata).items()
    }


def spelled(parts: list[tuple[str, str]]) -> bytes:
    return ("{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in parts) + "}").encode()


def test_the_same_text_elsewhere_is_not_taken_for_the_members() -> None:
    proposed, committed = proposed_and_committed(2)
    parts = members(table_metadata_json_bytes(committed))
    one_less = json.dumps(
        table_metadata_to_dict(committed)["snapshots"][:-1], separators=(",", ":"), ensure_ascii=False
    )
    # the held text first under a nested object, then the real (different) member
    nested = [("x-extra", "{" + json.dumps("snapshots") + ":" + parts["snapshots"] + "}")]
    real = [(k, one_less if k == "snapshots" else v) for k, v in parts.items()]
    for layout, cut in ((nested + real, None), (real + nested, 29)):
        md, verbatim, whole = read(reply(spelled(layout)), proposed)
        assert verbatim.get("snapshots") == cut  # the real member holds all but the newest
        assert md == table_metadata_from_json(whole["metadata"])
        assert len(md.snapshots) == len(committed.snapshots) - 1


def test_an_earlier_duplicate_member_is_not_the_one_kept() -> None:
    proposed, committed = proposed_and_committed(2)
    parts = members(table_metadata_json_bytes(committed))
    changed = json.dumps(table_metadata_to_dict(committed)["snapshots"][1:], separators=(",", ":"))
    layout = [*parts.items(), ("snapshots", changed)]  # JSON objects keep the last duplicate
    md, verbatim, whole = read(reply(spelled(layout)), proposed)
    assert "snapshots" not in verbatim
    assert md == table_metadata_from_json(whole["metadata"])
    assert len(md.snapshots) == len(committed.snapshots) - 1


def test_the_text_inside_a_key_is_not_the_member() -> None:
    proposed, committed = proposed_and_committed(2)
    parts = members(table_metadata_json_bytes(committed))
    # a key ending in an escaped quote and "snapshots": the held array is its value, not the member's
    layout = [(k, v) for k, v in parts.items() if k != "snapshots"]
    text = spelled(layout)[:-1] + b',"x\\"snapshots":' + parts["snapshots"].encode() + b"}"
    md, verbatim, whole = read(reply(text), proposed)
    assert "snapshots" not in verbatim
    assert md.snapshots == () and md == table_metadata_from_json(whole["metadata"])


def test_another_table_location_or_version_is_parsed_whole() -> None:
    proposed, committed = proposed_and_committed(4)
    moved = committed.with_changes(location="file:///w/elsewhere")
    md, verbatim, whole = read(reply(table_metadata_json_bytes(moved)), proposed)
    assert verbatim == {}
    assert md == table_metadata_from_json(whole["metadata"])


# ---------------------------------------------------------------------------------------------
# rebased replies: the client's base, the other writers' snapshots, then the client's rebased one


def absolute_roots(md: TableMetadata) -> TableMetadata:
    """v4 roots as a client holds them (absolute; the file spells them relative)."""
    if md.format_version < 4:
        return md
    held = [
        replace(s, root_manifest=f"{md.location}/{s.root_manifest}") if _relative(s.root_manifest) else s
        for s in md.snapshots
    ]
    return md.with_changes(snapshots=tuple(held))


def _relative(root: str | None) -> bool:
    return root is not None and "://" not in root


def rebased(proposed: TableMetadata, others: int, seed: int = 11) -> TableMetadata:
    """What a catalog commits when ``others`` snapshots of other writers landed on the client's base
    first: the base (the proposal less its newest snapshot), theirs, then the client's newest
    rebased onto them (sequence number, parent, row ids and timestamp of the new head)."""
    rng = random.Random(seed)
    own, own_log = proposed.snapshots[-1], proposed.snapshot_log[-1]
    md = proposed.with_changes(snapshots=proposed.snapshots[:-1], snapshot_log=proposed.snapshot_log[:-1])
    for n in range(others):
        md = absolute_roots(append(md, 500 + n, rng))
    head = md.snapshots[-1] if md.snapshots else None
    moved = replace(
        own,
        sequence_number=md.last_sequence_number + 1,
        parent_snapshot_id=None if head is None else head.snapshot_id,
        timestamp_ms=md.last_updated_ms + 1,
        first_row_id=None if own.first_row_id is None else own.first_row_id + 1000,
    )
    return md.with_changes(
        snapshots=(*md.snapshots, moved),
        snapshot_log=(*md.snapshot_log, SnapshotLogEntry(moved.timestamp_ms, own_log.snapshot_id)),
        metadata_log=(*md.metadata_log, MetadataLogEntry(md.last_updated_ms, "file:///w/t/metadata/m.json")),
        current_snapshot_id=moved.snapshot_id,
        refs={"main": SnapshotRef(moved.snapshot_id)},
        last_sequence_number=moved.sequence_number,
        last_updated_ms=moved.timestamp_ms + 3,
    )


def same_as_whole(data: bytes, proposed: TableMetadata) -> tuple[TableMetadata, dict[str, int]]:
    """The reply read with ``proposed`` held: exactly what parsing it whole gives."""
    md, verbatim, whole = read(data, proposed)
    assert md == table_metadata_from_json(whole["metadata"])
    assert table_metadata_to_dict(md) == table_metadata_to_dict(table_metadata_from_json(whole["metadata"]))
    return md, verbatim


@pytest.mark.parametrize("others", [1, 5])
@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_a_rebased_reply_takes_the_clients_base_and_parses_the_rest(format_version: int, others: int) -> None:
    proposed, _ = proposed_and_committed(format_version)
    committed = rebased(proposed, others)
    md, verbatim = same_as_whole(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == {"snapshots": 29, "snapshot-log": 29}
    assert md == committed
    assert all(map(is_, md.snapshots[:29], proposed.snapshots))
    assert all(map(is_, md.snapshot_log[:29], proposed.snapshot_log))
    assert [s.snapshot_id for s in md.snapshots[29:]] == [s.snapshot_id for s in committed.snapshots[29:]]


def test_v1_rebased_replies_are_parsed_whole() -> None:
    proposed, _ = proposed_and_committed(1)
    _, verbatim = same_as_whole(reply(table_metadata_json_bytes(rebased(proposed, 2))), proposed)
    assert verbatim == {}


def test_an_empty_base_has_nothing_to_cut() -> None:
    proposed, _ = proposed_and_committed(2, snapshots=1)  # the table's first snapshot, rebased
    md, verbatim = same_as_whole(reply(table_metadata_json_bytes(rebased(proposed, 3))), proposed)
    assert verbatim == {} and len(md.snapshots) == 4
    empty = proposed.with_changes(snapshots=(), snapshot_log=(), current_snapshot_id=None, refs={})
    md, verbatim = same_as_whole(reply(table_metadata_json_bytes(proposed)), empty)
    assert verbatim == {} and md.snapshots == proposed.snapshots


def test_more_snapshots_after_the_clients_own_are_parsed_after_all_of_it() -> None:
    proposed, committed = proposed_and_committed(3)
    later = absolute_roots(append(committed, 900, random.Random(2)))  # coalesced after the client's
    md, verbatim = same_as_whole(reply(table_metadata_json_bytes(later)), proposed)
    assert verbatim == {"snapshots": 30, "snapshot-log": 30}
    assert md == later and all(map(is_, md.snapshots[:30], proposed.snapshots))


def with_snapshots(parts: dict[str, str], text: str) -> bytes:
    """The metadata of ``parts`` with ``text`` as its snapshots."""
    return spelled([(k, text if k == "snapshots" else v) for k, v in parts.items()])


def one_character_changed(text: str, at: int) -> str:
    """``text`` with the digit at or after ``at`` changed (still valid JSON, another value)."""
    while not text[at].isdigit():
        at += 1
    return text[:at] + ("7" if text[at] != "7" else "8") + text[at + 1 :]


@pytest.mark.parametrize("which", [0, 14, 28, 29])
def test_an_item_that_differs_by_one_character_is_not_taken(which: int) -> None:
    """One digit of one item (of the base, or the proposed newest) changed: only the items before
    it could be the held ones, and neither cut holds fewer, so the reply is parsed whole."""
    proposed, _ = proposed_and_committed(2)
    committed = rebased(proposed, 2) if which < 29 else proposed_and_committed(2)[1]
    parts = members(table_metadata_json_bytes(committed))
    items = json.loads(parts["snapshots"])
    item = json.dumps(items[which], separators=(",", ":"), ensure_ascii=False)
    changed = one_character_changed(item, item.index('"timestamp-ms"') + 15)
    text = parts["snapshots"].replace(item, changed)
    assert text != parts["snapshots"]
    md, verbatim = same_as_whole(reply(with_snapshots(parts, text)), proposed)
    assert verbatim.get("snapshots") == (29 if which == 29 else None)
    assert md.snapshots[which].timestamp_ms != proposed.snapshots[which].timestamp_ms


def test_a_prefix_that_only_partly_matches_is_parsed_whole() -> None:
    """The held text breaks off inside an item: the first held items, then part of one."""
    proposed, _ = proposed_and_committed(2)
    committed = rebased(proposed, 2)
    parts = members(table_metadata_json_bytes(committed))
    items = json.loads(parts["snapshots"])
    items[10]["summary"]["extra"] = "1"  # the 11th item grows a member at its end
    text = json.dumps(items, separators=(",", ":"), ensure_ascii=False)
    md, verbatim = same_as_whole(reply(with_snapshots(parts, text)), proposed)
    assert "snapshots" not in verbatim and verbatim.get("snapshot-log") == 29
    assert md.snapshots[10].summary["extra"] == "1"


def test_reordered_snapshots_are_parsed_whole() -> None:
    proposed, _ = proposed_and_committed(4)
    committed = rebased(proposed, 3)
    swapped = list(committed.snapshots)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    md, verbatim = same_as_whole(
        reply(table_metadata_json_bytes(committed.with_changes(snapshots=tuple(swapped)))), proposed
    )
    assert "snapshots" not in verbatim
    assert [s.snapshot_id for s in md.snapshots] == [s.snapshot_id for s in swapped]


def test_the_held_text_inside_a_string_is_not_found() -> None:
    """A string value spelling the held prefix (escaped, as JSON must) holds no unescaped
    ``"snapshots":``; an unknown member holding it as a string is kept as the reply says."""
    proposed, _ = proposed_and_committed(3)
    committed = rebased(proposed, 1)
    parts = members(table_metadata_json_bytes(committed))
    base = table_metadata_to_dict(committed)["snapshots"][:29]
    held = '"snapshots":' + json.dumps(base, separators=(",", ":"), ensure_ascii=False)
    layout = [("x-note", json.dumps(held)), *parts.items()]
    md, verbatim = same_as_whole(reply(spelled(layout)), proposed)
    assert verbatim == {"snapshots": 29, "snapshot-log": 29}
    assert md.extra["x-note"] == held


def test_a_held_prefix_under_a_key_ending_in_an_escaped_quote_is_not_the_member() -> None:
    """The marker lands as the first item of another member: the real one is parsed."""
    proposed, _ = proposed_and_committed(2)
    committed = rebased(proposed, 2)
    parts = members(table_metadata_json_bytes(committed))
    text = b'{"x\\"snapshots":' + parts["snapshots"].encode() + b"," + spelled(list(parts.items()))[1:]
    md, verbatim = same_as_whole(reply(text), proposed)
    assert "snapshots" not in verbatim and md == committed.with_changes(
        extra={'x"snapshots': json.loads(parts["snapshots"])}
    )


@pytest.mark.parametrize("kept_first", [False, True])
def test_duplicate_members_of_a_rebased_reply(kept_first: bool) -> None:
    """The held prefix under one of two ``snapshots`` members: taken only when it is the last one
    (the one a JSON object keeps)."""
    proposed, _ = proposed_and_committed(2)
    committed = rebased(proposed, 2)
    parts = members(table_metadata_json_bytes(committed))
    other = json.dumps(table_metadata_to_dict(committed)["snapshots"][2:], separators=(",", ":"))
    extra = ("snapshots", other)
    layout = [extra, *parts.items()] if kept_first else [*parts.items(), extra]
    md, verbatim = same_as_whole(reply(spelled(layout)), proposed)
    assert verbatim.get("snapshots") == (29 if kept_first else None)
    assert len(md.snapshots) == (len(committed.snapshots) if kept_first else len(committed.snapshots) - 2)


def test_a_rebased_reply_at_another_location_is_parsed_whole() -> None:
    proposed, _ = proposed_and_committed(4)
    moved = rebased(proposed, 2).with_changes(location="file:///w/elsewhere")
    _, verbatim = same_as_whole(reply(table_metadata_json_bytes(moved)), proposed)
    assert verbatim == {}


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_commit_after_commit_each_rebased(format_version: int) -> None:
    """A client's next proposal is the last reply's metadata plus its new snapshot, answered rebased
    again: every reply reads as its whole parse, cutting the base each time (the memos of forms and
    text start from the last reply's very objects)."""
    proposed, _ = proposed_and_committed(format_version, snapshots=5)
    rng = random.Random(format_version + 20)
    for round_ in range(6):
        committed = rebased(proposed, 1 + round_ % 3, seed=round_)
        md, verbatim = same_as_whole(reply(table_metadata_json_bytes(committed)), proposed)
        base = len(proposed.snapshots) - 1
        assert verbatim == {"snapshots": base, "snapshot-log": base}
        assert md == committed
        proposed = absolute_roots(append(md, 2000 + round_ * 10, rng))


def test_a_reply_that_is_not_json_fails_as_json_loads_fails() -> None:
    """Cut or not, a broken reply raises the error ``json.loads`` gives for the reply itself."""
    proposed, _ = proposed_and_committed(2)
    data = reply(table_metadata_json_bytes(rebased(proposed, 2)))
    broken = data[:-40] + b"}"
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(broken)
    with pytest.raises(json.JSONDecodeError) as raised:
        load_reply(broken, "metadata", proposed)
    assert str(raised.value) == str(expected.value)
