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
from typing import Any

import pytest

from icefloe.spec.json_codec import (
    table_metadata_from_json,
    table_metadata_json_bytes,
    table_metadata_to_dict,
)
from icefloe.spec.json_reply import load_reply
from icefloe.spec.snapshots import MetadataLogEntry
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


def read(data: bytes, known: TableMetadata) -> tuple[TableMetadata, frozenset[str], Any]:
    doc, verbatim = load_reply(data, "metadata", known)
    md = table_metadata_from_json(doc["metadata"], known=known, verbatim=verbatim)
    whole = json.loads(data)
    assert doc["metadata-location"] == whole["metadata-location"]
    return md, verbatim, whole


@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_icefloe_reply_repeats_the_history_and_is_not_parsed_again(format_version: int) -> None:
    proposed, committed = proposed_and_committed(format_version)
    md, verbatim, whole = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == {"snapshots", "snapshot-log"}
    assert md == committed == table_metadata_from_json(whole["metadata"])
    assert md.snapshots is proposed.snapshots


def test_v1_replies_are_parsed_whole() -> None:
    proposed, committed = proposed_and_committed(1)
    md, verbatim, whole = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert verbatim == frozenset()
    assert md == table_metadata_from_json(whole["metadata"])


def test_another_spelling_is_parsed_whole() -> None:
    proposed, committed = proposed_and_committed(2)
    spaced = json.dumps(table_metadata_to_dict(committed), indent=1).encode()
    md, verbatim, _ = read(reply(spaced), proposed)
    assert verbatim == frozenset()
    assert md == committed


def test_a_rebased_snapshot_is_parsed_and_the_rest_reused() -> None:
    proposed, committed = proposed_and_committed(2)
    head = committed.snapshots[-1]
    rebased = replace(head, sequence_number=99)
    committed = committed.with_changes(
        snapshots=(*committed.snapshots[:-1], rebased), last_sequence_number=99
    )
    md, verbatim, _ = read(reply(table_metadata_json_bytes(committed)), proposed)
    assert "snapshots" not in verbatim
    assert md == committed and md.snapshots[-1].sequence_number == 99


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
    one_less = json.dumps(table_metadata_to_dict(committed)["snapshots"][:-1], separators=(",", ":"))
    # the held text first under a nested object, then the real (different) member
    nested = [("x-extra", "{" + json.dumps("snapshots") + ":" + parts["snapshots"] + "}")]
    real = [(k, one_less if k == "snapshots" else v) for k, v in parts.items()]
    for layout in (nested + real, real + nested):
        md, verbatim, whole = read(reply(spelled(layout)), proposed)
        assert "snapshots" not in verbatim
        assert md == table_metadata_from_json(whole["metadata"])
        assert len(md.snapshots) == len(committed.snapshots) - 1


def test_an_earlier_duplicate_member_is_not_the_one_kept() -> None:
    proposed, committed = proposed_and_committed(2)
    parts = members(table_metadata_json_bytes(committed))
    one_less = json.dumps(table_metadata_to_dict(committed)["snapshots"][:-1], separators=(",", ":"))
    layout = [*parts.items(), ("snapshots", one_less)]  # JSON objects keep the last duplicate
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
    assert verbatim == frozenset()
    assert md == table_metadata_from_json(whole["metadata"])
