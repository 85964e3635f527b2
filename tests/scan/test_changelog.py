"""Changelog scans over every kind of commit, on v2, v3 and v4 (inline roots and leaves with manifest DVs).

Expected change records are written out by hand from what each commit does to a ten-row table.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.maintenance.rewrite_data_files import rewrite_data_files
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))
KEYED = Schema(*SCHEMA.fields, identifier_field_ids=[1])
V4_LEAVES = {"write.v4.root.max-inline-entries": "0", "write.v4.leaf.min-live-ratio": "0"}
LAYOUTS = {
    "v2": {"format-version": "2"},
    "v3": {"format-version": "3"},
    "v4": {"format-version": "4"},
    "v4-leaves": {"format-version": "4", **V4_LEAVES},
}
MODES = ("copy-on-write", "merge-on-read")
Change = tuple[str, int, str]


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"{tag}{i}" for i in ids]})


def _table(catalog: Catalog, layout: str, schema: Schema = KEYED) -> Table:
    t = catalog.create_table("db.t", schema, properties=LAYOUTS[layout])
    t.append(_rows(list(range(5)), "a"))
    t.append(_rows(list(range(5, 10)), "b"))
    return t


def _changes(t: Table, start: int, **options: object) -> list[Change]:
    got = t.changelog(start_snapshot_id=start, **options).to_arrow()  # type: ignore[arg-type]
    return [(r["_change_type"], r["id"], r["tag"]) for r in got.to_pylist()]


def _assert_paired(changes: list[Change]) -> None:
    """Every UPDATE_BEFORE is directly followed by the UPDATE_AFTER of the same row."""
    for i, (kind, key, _) in enumerate(changes):
        if kind == "UPDATE_BEFORE":
            assert changes[i + 1][:2] == ("UPDATE_AFTER", key), changes


def _head(t: Table) -> int:
    snap = t.current_snapshot()
    assert snap is not None
    return snap.snapshot_id


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("mode", MODES)
def test_delete_update_merge(catalog: Catalog, layout: str, mode: str) -> None:
    t = _table(catalog, layout)
    start = _head(t)
    t.delete("id in (1, 6)", mode=mode)
    assert sorted(_changes(t, start)) == [("DELETE", 1, "a1"), ("DELETE", 6, "b6")]
    start = _head(t)
    t.update({"tag": pc.binary_join_element_wise(pc.field("tag"), "!", "")}, "id in (2, 7)", mode=mode)
    got = _changes(t, start)
    assert sorted(got) == [
        ("UPDATE_AFTER", 2, "a2!"),
        ("UPDATE_AFTER", 7, "b7!"),
        ("UPDATE_BEFORE", 2, "a2"),
        ("UPDATE_BEFORE", 7, "b7"),
    ]
    _assert_paired(got)
    start = _head(t)
    source = pa.table({"id": pa.array([3, 20], pa.int64()), "tag": ["m3", "m20"]})
    t.merge(source, on="id", when_not_matched_by_source_delete=pc.field("id") == 9, mode=mode)
    assert sorted(_changes(t, start)) == [
        ("DELETE", 9, "b9"),
        ("INSERT", 20, "m20"),
        ("UPDATE_AFTER", 3, "m3"),
        ("UPDATE_BEFORE", 3, "a3"),
    ]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_commit_has_its_ordinal_and_snapshot(catalog: Catalog, layout: str) -> None:
    t = _table(catalog, layout)
    first = t.snapshots()[0].snapshot_id
    t.overwrite(_rows([0, 1, 11], "o"), "id < 2")
    t.delete("id = 5", mode="merge-on-read")
    rewrite_data_files(t)  # a compaction changes no row: nothing, and no ordinal gap in meaning
    t.upsert_with_equality_deletes(_rows([4], "e"), on="id")
    ids = [s.snapshot_id for s in t.snapshots()]
    got = t.changelog(start_snapshot_id=first).to_arrow().to_pylist()
    summary = sorted(
        (r["_change_ordinal"], r["_commit_snapshot_id"], r["_change_type"], r["id"], r["tag"]) for r in got
    )
    expected = [
        (0, ids[1], "INSERT", 5, "b5"),
        (0, ids[1], "INSERT", 6, "b6"),
        (0, ids[1], "INSERT", 7, "b7"),
        (0, ids[1], "INSERT", 8, "b8"),
        (0, ids[1], "INSERT", 9, "b9"),
        (1, ids[2], "INSERT", 11, "o11"),
        (1, ids[2], "UPDATE_AFTER", 0, "o0"),
        (1, ids[2], "UPDATE_AFTER", 1, "o1"),
        (1, ids[2], "UPDATE_BEFORE", 0, "a0"),
        (1, ids[2], "UPDATE_BEFORE", 1, "a1"),
        (2, ids[3], "DELETE", 5, "b5"),
        (4, ids[5], "UPDATE_AFTER", 4, "e4"),
        (4, ids[5], "UPDATE_BEFORE", 4, "a4"),
    ]
    if layout != "v2":
        # v3/v4: an overwrite gives the new rows new row ids (they are inserts, the old rows deletes);
        # identifier fields pair rows only on v2 unless asked for explicitly
        expected = [
            (o, s, {"UPDATE_AFTER": "INSERT", "UPDATE_BEFORE": "DELETE"}.get(c, c), i, tag)
            for o, s, c, i, tag in expected
        ]
        expected.sort()
    assert summary == expected
    assert ids[4] not in {r["_commit_snapshot_id"] for r in got}  # the compaction


@pytest.mark.parametrize("layout", ["v3", "v4", "v4-leaves"])
def test_row_ids_follow_rows_exactly(catalog: Catalog, layout: str) -> None:
    """A v3/v4 update is recognised by _row_id even when the row moves to another file and its key changes."""
    t = _table(catalog, layout, SCHEMA)
    start = _head(t)
    t.update({"id": pc.field("id") + 100}, "id = 3", mode="copy-on-write")
    t.update({"tag": "z"}, "id = 103", mode="merge-on-read")
    got = t.changelog(start_snapshot_id=start, columns=("id", "_row_id")).to_arrow()
    assert got.column_names == ["id", "_row_id", "_change_type", "_change_ordinal", "_commit_snapshot_id"]
    assert [(r["_change_type"], r["id"], r["_row_id"]) for r in got.to_pylist()] == [
        ("UPDATE_BEFORE", 3, 3),
        ("UPDATE_AFTER", 103, 3),
        ("UPDATE_BEFORE", 103, 3),
        ("UPDATE_AFTER", 103, 3),
    ]
    net = t.changelog(start_snapshot_id=start, net_changes=True).to_arrow().to_pylist()
    assert [(r["_change_type"], r["id"], r["tag"]) for r in net] == [
        ("UPDATE_BEFORE", 3, "a3"),
        ("UPDATE_AFTER", 103, "z"),
    ]
    explicit = t.changelog(start_snapshot_id=start, compute_updates=False).to_arrow()
    assert sorted(explicit.column("_change_type").to_pylist()) == ["DELETE", "DELETE", "INSERT", "INSERT"]


def test_v2_updates_need_identifiers(catalog: Catalog) -> None:
    t = _table(catalog, "v2", SCHEMA)
    start = _head(t)
    t.update({"tag": "z"}, "id = 3", mode="merge-on-read")
    assert sorted(_changes(t, start)) == [("DELETE", 3, "a3"), ("INSERT", 3, "z")]
    assert _changes(t, start, identifier_columns=["id"]) == [
        ("UPDATE_BEFORE", 3, "a3"),
        ("UPDATE_AFTER", 3, "z"),
    ]
    with pytest.raises(ValidationError, match="identifier"):
        t.changelog(start_snapshot_id=start, compute_updates=True).to_arrow()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_net_changes_drop_what_came_and_went(catalog: Catalog, layout: str) -> None:
    t = _table(catalog, layout)
    start = _head(t)
    t.append(_rows([30, 31], "n"))
    t.delete("id = 30", mode="merge-on-read")
    t.delete("id = 0", mode="copy-on-write")
    assert sorted(_changes(t, start, net_changes=True)) == [("DELETE", 0, "a0"), ("INSERT", 31, "n31")]
    assert len(_changes(t, start)) == 4
    everything = t.changelog().to_arrow()  # no start: the whole history
    assert everything.num_rows == 10 + 4


@pytest.mark.parametrize("layout", ["v2", "v3", "v4-leaves"])
def test_batch_reader_and_filter(catalog: Catalog, layout: str) -> None:
    t = _table(catalog, layout)
    start = _head(t)
    t.delete("id < 3", mode="merge-on-read")
    t.append(_rows([40, 41], "c"))
    scan = t.changelog(start_snapshot_id=start, filter="id >= 2")
    batches = list(scan.to_arrow_batch_reader(batch_size=1))
    assert all(b.num_rows == 1 for b in batches)
    rows = pa.Table.from_batches(batches, schema=scan.output_schema()).to_pylist()
    assert [(r["_change_type"], r["id"]) for r in rows] == [("DELETE", 2), ("INSERT", 40), ("INSERT", 41)]
    assert scan.count() == 3


@pytest.mark.parametrize("layout", ["v2", "v3", "v4"])
def test_deleted_rows_come_from_their_row_groups_only(catalog: Catalog, layout: str) -> None:
    """Files of many row groups: a merge-on-read change reads the groups holding the deleted rows."""
    props = {**LAYOUTS[layout], "write.parquet.row-group-size-bytes": "4096"}
    t = catalog.create_table("db.groups", SCHEMA, properties=props)
    t.append(_rows(list(range(5000)), "g"))
    start = _head(t)
    t.delete("id >= 1234 and id < 1240", mode="merge-on-read")
    t.update({"tag": "up"}, "id in (7, 4999)", mode="merge-on-read")
    got = sorted(_changes(t, start, compute_updates=False))
    assert got == sorted(
        [("DELETE", i, f"g{i}") for i in range(1234, 1240)]
        + [("DELETE", 7, "g7"), ("DELETE", 4999, "g4999"), ("INSERT", 7, "up"), ("INSERT", 4999, "up")]
    )
