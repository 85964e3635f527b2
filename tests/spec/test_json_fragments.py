"""Memoised metadata JSON: every write equals the plain ``json.dumps`` of the metadata dict.

``table_metadata_to_json`` reuses the text of snapshots, schemas, specs, sort orders and the
snapshot-log from the table's previous write. These tests drive one table through the changes a
table goes through (appends, expiry in the middle, schema/spec changes, reloads from text with
equal but new objects, format upgrades, summaries with another key order) and compare every
output with the reference encoding computed without any memo.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
from pathlib import Path

import pytest

from icefloe.spec import json_fragments
from icefloe.spec.json_codec import (
    known_array_texts,
    snapshot_to_dict,
    table_metadata_from_json,
    table_metadata_json_bytes,
    table_metadata_json_chunks,
    table_metadata_to_dict,
    table_metadata_to_json,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import MetadataLogEntry, Snapshot, SnapshotLogEntry, SnapshotRef
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.fixtures import corpus_files

FIXTURES = [str(path) for path in corpus_files("*/metadata/*.metadata.json")]


def reference(md: TableMetadata) -> str:
    """The encoding without memo: the contract of ``table_metadata_to_json``."""
    return json.dumps(table_metadata_to_dict(md), separators=(",", ":"), ensure_ascii=False)


def check(md: TableMetadata) -> str:
    text = table_metadata_to_json(md)
    assert text == reference(md)
    chunks = table_metadata_json_chunks(md)
    assert b"".join(chunks) == text.encode("utf-8") == table_metadata_json_bytes(md)
    assert len(chunks) % 2 == 1
    return text


def base_metadata(format_version: int = 2) -> TableMetadata:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))
    return TableMetadata(
        format_version=format_version,
        table_uuid="6b2f58b4-0000-4000-8000-000000000001",
        location="file:///w/t",
        last_updated_ms=1_700_000_000_000,
        last_column_id=2,
        schemas=(schema,),
        current_schema_id=0,
        partition_specs=(PartitionSpec(spec_id=0),),
        default_spec_id=0,
        last_partition_id=999,
        sort_orders=(SortOrder(order_id=0),),
        default_sort_order_id=0,
        next_row_id=0 if format_version >= 3 else None,
    )


def snapshot(n: int, format_version: int, rng: random.Random) -> Snapshot:
    keys = ["operation", "added-data-files", "added-records", "total-records", "ünïcode-key"]
    rng.shuffle(keys[1:])
    summary = {k: ("append" if k == "operation" else str(rng.randrange(10**6))) for k in keys}
    return Snapshot(
        snapshot_id=1000 + n,
        timestamp_ms=1_700_000_000_000 + n,
        summary=summary,
        parent_snapshot_id=1000 + n - 1 if n else None,
        sequence_number=n + 1,
        manifest_list=None if format_version >= 4 else f"file:///w/t/metadata/snap-{n}.avro",
        root_manifest=f"metadata/snap-{n}-root.parquet" if format_version >= 4 else None,
        schema_id=0,
        first_row_id=n * 10 if format_version >= 3 else None,
        added_rows=10 if format_version >= 3 else None,
    )


def append(md: TableMetadata, n: int, rng: random.Random) -> TableMetadata:
    s = snapshot(n, md.format_version, rng)
    return md.with_changes(
        snapshots=(*md.snapshots, s),
        snapshot_log=(*md.snapshot_log, SnapshotLogEntry(s.timestamp_ms, s.snapshot_id)),
        metadata_log=(
            *md.metadata_log,
            MetadataLogEntry(s.timestamp_ms, f"file:///w/t/metadata/{n:05d}.json"),
        ),
        current_snapshot_id=s.snapshot_id,
        refs={"main": SnapshotRef(s.snapshot_id)},
        last_sequence_number=s.sequence_number,
        last_updated_ms=s.timestamp_ms,
    )


@pytest.mark.parametrize("format_version", [1, 2, 3, 4])
def test_growing_table_every_write_matches_the_reference(format_version: int) -> None:
    rng = random.Random(format_version)
    md = base_metadata(format_version)
    check(md)
    for n in range(60):
        md = append(md, n, rng)
        check(md)
        check(md)  # an unchanged table: the very same text again


@pytest.mark.parametrize("format_version", [2, 4])
def test_lists_that_keep_only_the_first_objects_of_the_last_write(format_version: int) -> None:
    """A catalog that rebased a client's newest snapshot answers with the client's base, the other
    writers' snapshots and the rebased one: the text is extended from the last object kept, and
    what all but the last item take up (``head``) is exactly their text."""
    rng = random.Random(11)
    md = base_metadata(format_version)
    for n in range(20):
        md = append(md, n, rng)
    check(md)
    location = md.location
    for keep in (19, 12, 1, 20):
        others = md.with_changes(snapshots=md.snapshots[:keep], snapshot_log=md.snapshot_log[:keep])
        for n in range(100, 103):
            others = append(others, n + keep, rng)
        check(others)
        fragments = json_fragments.fragments_for(others)
        raw = fragments.join(
            f"snapshot-v{format_version}-{location}",
            others.snapshots,
            lambda s: s.snapshot_id,
            lambda s: json.dumps(
                snapshot_to_dict(s, format_version, location), separators=(",", ":"), ensure_ascii=False
            ),
        )
        expected = [snapshot_to_dict(s, format_version, location) for s in others.snapshots]
        assert json.loads(raw.body + b"]") == expected
        assert json.loads(raw.body[: raw.head] + b"]") == expected[:-1]
        kept = fragments._lists[f"snapshot-v{format_version}-{location}"].by_key
        assert sorted(kept) == sorted(s.snapshot_id for s in others.snapshots)  # none dropped is kept
        md = others
    single = md.with_changes(snapshots=md.snapshots[:1], snapshot_log=md.snapshot_log[:1])
    check(single)
    assert json_fragments.fragments_for(single).join("snapshot-log", single.snapshot_log, None, str).head == 0


def test_each_thread_keeps_its_own_memo_of_the_held_text() -> None:
    """Two threads holding equal, not the same, snapshots of one table: each one's text extends its
    own last list (and is exactly the reference)."""
    rng = random.Random(13)
    md = base_metadata(2)
    for n in range(10):
        md = append(md, n, rng)
    copies = {"main": md, "other": table_metadata_from_json(table_metadata_to_json(md))}
    memos: dict[str, list[json_fragments.Fragments]] = {"main": [], "other": []}

    def grow(name: str, n: int) -> None:
        copies[name] = append(copies[name], n, random.Random(n))
        fragments = json_fragments.thread_fragments_for(copies[name])
        memos[name].append(fragments)
        body = fragments.join("snapshot-log", copies[name].snapshot_log, None, _log_json).body
        expected = table_metadata_to_dict(copies[name])["snapshot-log"]
        assert body + b"]" == json.dumps(expected, separators=(",", ":")).encode("utf-8")

    for n in range(20, 24):
        grow("main", n)
        thread = threading.Thread(target=grow, args=("other", n))
        thread.start()
        thread.join()
    assert memos["main"][0] is memos["main"][-1] and memos["main"][0] is not memos["other"][0]
    assert json_fragments.fragments_for(md) is not memos["main"][0]
    kept = memos["main"][-1]._lists["snapshot-log"]
    assert kept.items == copies["main"].snapshot_log
    fresh = base_metadata(2).with_changes(table_uuid="00000000-0000-4000-8000-0000000000ff")
    fresh = append(fresh, 1, rng)
    assert known_array_texts(fresh)  # a REST client's held text: in its thread's memo only
    assert "snapshot-log" in json_fragments.thread_fragments_for(fresh)._lists
    assert "snapshot-log" not in json_fragments.fragments_for(fresh)._lists


def _log_json(e: SnapshotLogEntry) -> str:
    return f'{{"timestamp-ms":{e.timestamp_ms},"snapshot-id":{e.snapshot_id}}}'


def test_expiry_schema_and_spec_changes_and_reloads() -> None:
    rng = random.Random(7)
    md = base_metadata(3)
    for n in range(30):
        md = append(md, n, rng)
    check(md)
    # expire snapshots from the middle and the start: not a prefix any more
    kept = tuple(s for i, s in enumerate(md.snapshots) if i % 3)
    md = md.with_changes(snapshots=kept, snapshot_log=md.snapshot_log[5:])
    check(md)
    # a new schema and a new spec next to the old ones
    schema = Schema(*md.schema().fields, NestedField(3, "x", LongType(), False), schema_id=1)
    spec = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "id"), spec_id=1)
    md = md.with_changes(
        schemas=(*md.schemas, schema), current_schema_id=1, partition_specs=(*md.partition_specs, spec)
    )
    check(md)
    # reload from text: equal objects, none identical
    reloaded = table_metadata_from_json(check(md))
    assert reloaded == md
    check(append(reloaded, 100, rng))
    # a snapshot with the same id but a different summary (e.g. another writer's file)
    changed = dataclasses.replace(md.snapshots[-1], summary={**md.snapshots[-1].summary, "extra": "1"})
    check(md.with_changes(snapshots=(*md.snapshots[:-1], changed)))
    # the same content with the summary keys in another order encodes in that order
    reordered = dataclasses.replace(changed, summary=dict(reversed(list(changed.summary.items()))))
    text = check(md.with_changes(snapshots=(*md.snapshots[:-1], reordered)))
    assert '"extra":"1"' in text
    # an upgrade changes the snapshot keys written (v1 omits sequence numbers)
    check(md.with_changes(format_version=4, location=""))


def test_interleaved_tables_and_a_crowded_memo() -> None:
    rng = random.Random(3)
    tables = [
        base_metadata(2).with_changes(table_uuid=f"00000000-0000-4000-8000-{i:012d}") for i in range(40)
    ]
    for n in range(5):
        for i, md in enumerate(tables):
            tables[i] = append(md, n, rng)
            check(tables[i])
    assert len(json_fragments._fragments) <= json_fragments._FRAGMENT_TABLES


def test_the_memo_keeps_the_tables_written_last() -> None:
    """A table written again is kept longest: the 33rd table evicts the least recently written one."""
    tables = [
        base_metadata(2).with_changes(table_uuid=f"00000000-0000-4000-a000-{i:012d}")
        for i in range(json_fragments._FRAGMENT_TABLES + 1)
    ]
    first, second, *others, newest = tables
    memos = [json_fragments.fragments_for(md) for md in (first, second, *others)]
    assert json_fragments.fragments_for(first) is memos[0]  # first is now the most recent
    json_fragments.fragments_for(newest)  # second leaves
    assert [json_fragments.fragments_for(md) is memo for md, memo in zip(others, memos[2:], strict=True)] == [
        True
    ] * len(others)
    assert json_fragments.fragments_for(first) is memos[0]
    assert json_fragments.fragments_for(second) is not memos[1]


def test_the_memo_is_bounded_by_text_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_fragments, "_FRAGMENT_BYTES", 20_000)
    rng = random.Random(5)
    tables = []
    for i in range(6):
        md = base_metadata(2).with_changes(table_uuid=f"00000000-0000-4000-9000-{i:012d}")
        for n in range(40):  # ~40 snapshots of ~300 bytes: ~12,000 bytes per table
            md = append(md, n, rng)
        check(md)
        tables.append(md)
    assert len(json_fragments._fragments) <= 2
    for md in tables:  # evicted tables are encoded from scratch, still exactly
        check(md)


def test_every_fixture_version_in_file_order_matches_the_reference() -> None:
    # versions of one table share its uuid and snapshot ids: the memo must never leak between them
    for path in FIXTURES:
        md = table_metadata_from_json(Path(path).read_bytes())
        check(md)
        check(table_metadata_from_json(table_metadata_to_json(md)))


@pytest.mark.parametrize("format_version", [3, 4])
def test_v4_writes_metadata_locations_relative_to_the_table(format_version: int) -> None:
    md = append(base_metadata(format_version), 0, random.Random(1))
    inside = "file:///w/t/metadata/snap-1-root.parquet"
    outside = "s3://elsewhere/snap-2-root.parquet"
    snaps = (
        dataclasses.replace(md.snapshots[0], root_manifest=inside, manifest_list=None),
        dataclasses.replace(snapshot(1, format_version, random.Random(2)), root_manifest=outside),
    )
    md = md.with_changes(
        snapshots=snaps,
        metadata_log=(MetadataLogEntry(1, "file:///w/t/metadata/00000-a.metadata.json"),),
    )
    data = json.loads(check(md))
    roots = [s.get("root-manifest") for s in data["snapshots"]]
    logged = data["metadata-log"][0]["metadata-file"]
    if format_version >= 4:  # format/spec.md "Paths in Metadata"
        assert roots == ["metadata/snap-1-root.parquet", outside]
        assert logged == "metadata/00000-a.metadata.json"
    else:
        assert roots == [inside, outside] and logged == "file:///w/t/metadata/00000-a.metadata.json"
    again = table_metadata_from_json(data)
    assert again == md  # resolved against the table location on read
    # a table location ending in "/" is never relativised against (facts Q24: both joins agree then)
    slash = md.with_changes(location="file:///w/t/")
    assert json.loads(check(slash))["snapshots"][0]["root-manifest"] == inside
    # without a table location (v4 allows it) relative locations stay as written
    data["location"] = ""
    if format_version >= 4:
        assert table_metadata_from_json(data).snapshots[0].root_manifest == "metadata/snap-1-root.parquet"


@pytest.mark.parametrize("format_version", [2, 4])
def test_a_metadata_log_trimmed_at_its_start_matches_the_reference(format_version: int) -> None:
    """Once the log holds previous-versions-max entries every write drops the oldest one: the
    entries kept are reused by their file, also when equal but not identical (a reload)."""
    rng = random.Random(11)
    md = base_metadata(format_version)
    for n in range(30):
        md = append(md, n, rng)
        md = md.with_changes(metadata_log=md.metadata_log[-8:])  # a window of 8, as the writer trims
        check(md)
    reloaded = table_metadata_from_json(check(md))
    check(append(reloaded, 30, rng).with_changes(metadata_log=(*reloaded.metadata_log[-7:],)))
    # an entry under a known file but with another timestamp is encoded afresh
    changed = dataclasses.replace(md.metadata_log[-1], timestamp_ms=1)
    text = check(md.with_changes(metadata_log=(*md.metadata_log[:-1], changed)))
    assert json.loads(text)["metadata-log"][-1]["timestamp-ms"] == 1
