"""The read seam: inheritance rules with exact numbers, v1 snapshots, other writers' tables."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.metadata.files import read_table_metadata
from icefloe.io import FileIO
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree import v3_read, v4_read
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import clear_caches, entries_added_by, live_entries, manifest_refs, read_entries
from icefloe.tree.v3_read import inherit
from tests.tree.helpers import commit, data_file, delete_file, new_metadata
from tests.tree.v4_helpers import commit4


def _mf(**kw: object) -> ManifestFile:
    base: dict = {
        "manifest_path": "m.avro",
        "manifest_length": 1,
        "partition_spec_id": 0,
        "sequence_number": 7,
        "min_sequence_number": 3,
        "added_snapshot_id": 70,
    }
    base.update(kw)
    return ManifestFile(**base)


def _entry(status: EntryStatus, rows: int, first_row_id: int | None = None, **kw: object) -> ManifestEntry:
    f = DataFile(f"f{rows}-{status.name}", "parquet", rows, 1, first_row_id=first_row_id)
    if "content" in kw:
        f = f.with_changes(content=kw.pop("content"))
    values: dict = {"snapshot_id": None, "sequence_number": None, "file_sequence_number": None}
    values.update(kw)
    return ManifestEntry(status, data_file=f, **values)


def test_sequence_number_and_snapshot_id_inheritance() -> None:
    entries = [
        _entry(EntryStatus.ADDED, 1),
        _entry(EntryStatus.ADDED, 2, sequence_number=5, snapshot_id=60),  # explicit data seq kept
        _entry(EntryStatus.EXISTING, 3, sequence_number=4, file_sequence_number=4, snapshot_id=40),
        _entry(EntryStatus.EXISTING, 4),  # invalid in v2: null seq on EXISTING stays null
        _entry(EntryStatus.DELETED, 5, sequence_number=2, file_sequence_number=3, snapshot_id=70),
    ]
    got = inherit(entries, _mf(), 2)
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (70, 7, 7),
        (60, 5, 7),
        (40, 4, 4),
        (70, None, None),
        (70, 2, 3),
    ]


def test_v1_manifests_inherit_zero() -> None:
    entries = [_entry(EntryStatus.ADDED, 1, snapshot_id=3), _entry(EntryStatus.EXISTING, 2, snapshot_id=2)]
    got = inherit(entries, _mf(sequence_number=0), 1)
    assert [(e.sequence_number, e.file_sequence_number) for e in got] == [(0, 0), (0, 0)]
    # a v1 manifest listed in a v2 table's list (sequence number 0) also reads as 0
    got = inherit(entries, _mf(sequence_number=0), 2)
    assert [(e.sequence_number, e.file_sequence_number) for e in got] == [(0, 0), (0, 0)]


def test_first_row_id_inheritance_spec_example() -> None:
    """Manifest ``added1`` of the spec's row lineage example, plus a deleted entry in between."""
    entries = [
        _entry(EntryStatus.EXISTING, 25, first_row_id=800),
        _entry(EntryStatus.ADDED, 50),
        _entry(EntryStatus.DELETED, 30),  # deleted entries neither take nor advance the counter
        _entry(EntryStatus.ADDED, 50),
        _entry(EntryStatus.EXISTING, 10),  # unassigned existing files are assigned too
    ]
    got = inherit(entries, _mf(first_row_id=1000), 3)
    assert [e.data_file.first_row_id for e in got] == [800, 1000, None, 1050, 1100]


def test_first_row_id_not_assigned_without_manifest_value_or_for_deletes() -> None:
    entries = [_entry(EntryStatus.ADDED, 50)]
    assert inherit(entries, _mf(first_row_id=None), 3)[0].data_file.first_row_id is None
    deletes = [_entry(EntryStatus.ADDED, 5, content=FileContent.POSITION_DELETES)]
    got = inherit(deletes, _mf(first_row_id=100, content=ManifestContent.DELETES), 3)
    assert got[0].data_file.first_row_id is None


def test_round_trip_through_the_seams(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 3)
    f1, f2, f3 = data_file("a", 10), data_file("b", 20), data_file("a", 5)
    md, _ = commit(io, md, TreeChange(added_data_files=[f1, f2]))
    md, _ = commit(io, md, TreeChange(added_data_files=[f3], added_delete_files=[delete_file(f1, dv=True)]))
    snap = md.current_snapshot()
    assert snap is not None
    live = list(live_entries(io, md, snap))
    by_path = {e.data_file.file_path: e for e in live}
    assert by_path[f1.file_path].data_file.first_row_id == 0
    assert by_path[f2.file_path].data_file.first_row_id == 10
    assert by_path[f3.file_path].data_file.first_row_id == 30
    assert (by_path[f1.file_path].sequence_number, by_path[f3.file_path].sequence_number) == (1, 2)
    assert by_path[f3.file_path].snapshot_id == snap.snapshot_id
    deletes = [e for e in live if e.data_file.content != FileContent.DATA]
    assert len(deletes) == 1 and deletes[0].data_file.first_row_id is None
    assert deletes[0].sequence_number == 2
    only_deletes = list(live_entries(io, md, snap, content=ManifestContent.DELETES))
    assert [e.data_file.file_path for e in only_deletes] == [deletes[0].data_file.file_path]
    filtered = list(live_entries(io, md, snap, entry_filter=lambda e: e.data_file.partition == ("b",)))
    assert [e.data_file.file_path for e in filtered] == [f2.file_path]
    skipped = list(
        live_entries(io, md, snap, manifest_filter=lambda m: m.added_snapshot_id != snap.snapshot_id)
    )
    assert {e.data_file.file_path for e in skipped} == {f1.file_path, f2.file_path}


def test_many_manifests_read_in_parallel_keep_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v3_read, "PARALLEL_MANIFESTS", 1)
    io = FileIO()
    md = new_metadata(tmp_path, 2)
    files = [data_file(str(i)) for i in range(6)]
    for f in files:
        md, _ = commit(io, md, TreeChange(added_data_files=[f]))
    snap = md.current_snapshot()
    assert snap is not None
    got = [e.data_file.file_path for e in live_entries(io, md, snap)]
    assert got == [f.file_path for f in reversed(files)]  # newest manifest first


def test_v1_snapshot_listing_manifests_directly(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 1)
    md, _ = commit(io, md, TreeChange(added_data_files=[data_file("a", 3), data_file("b", 4)]))
    md, _ = commit(io, md, TreeChange(added_data_files=[data_file("c", 5)]))
    snap = md.current_snapshot()
    assert snap is not None
    refs = manifest_refs(io, md, snap)
    old_style = snap.__class__(
        snapshot_id=snap.snapshot_id,
        timestamp_ms=snap.timestamp_ms,
        summary=snap.summary,
        parent_snapshot_id=snap.parent_snapshot_id,
        manifests=tuple(m.manifest_path for m in refs),
    )
    direct = manifest_refs(io, md, old_style)
    assert [m.manifest_path for m in direct] == [m.manifest_path for m in refs]
    assert [(m.added_files_count, m.added_rows_count) for m in direct] == [(1, 5), (2, 7)]
    assert [m.added_snapshot_id for m in direct] == [m.added_snapshot_id for m in refs]
    a = [(e.data_file.file_path, e.snapshot_id, e.sequence_number) for e in live_entries(io, md, snap)]
    b = [(e.data_file.file_path, e.snapshot_id, e.sequence_number) for e in live_entries(io, md, old_style)]
    assert a == b and all(seq == 0 for _, _, seq in a)


# -- tables written by other implementations -----------------------------------------------------


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    from tests.support.fixtures import install_acceptance_fixtures

    root = install_acceptance_fixtures()
    return list(json.loads((root / "cases.json").read_text())["cases"])


def test_every_snapshot_of_every_case_matches_its_summary(cases: list[dict]) -> None:
    io = FileIO()
    checked = 0
    for case in cases:
        md = read_table_metadata(io, case["metadata_location"])
        for snap in md.snapshots:
            live = list(live_entries(io, md, snap))
            data = [e for e in live if e.data_file.content == FileContent.DATA]
            assert sum(e.data_file.record_count for e in data) == int(snap.summary["total-records"])
            if "total-data-files" in snap.summary:
                assert len(data) == int(snap.summary["total-data-files"]), case["case"]
            if "total-delete-files" in snap.summary:
                assert len(live) - len(data) == int(snap.summary["total-delete-files"]), case["case"]
            for e in live:
                assert e.snapshot_id is not None
                assert e.sequence_number is not None and e.file_sequence_number is not None
                assert e.sequence_number <= snap.sequence_number
                spec = md.spec_by_id(e.data_file.spec_id)
                assert len(e.data_file.partition) == len(spec.fields)
            checked += 1
    assert checked > 60


def test_v3_row_ids_of_java_table(cases: list[dict]) -> None:
    io = FileIO()
    case = next(c for c in cases if c["case"] == "p04_v3_deletion_vectors")
    md = read_table_metadata(io, case["metadata_location"])
    snap = md.current_snapshot()
    assert snap is not None
    data = [e for e in live_entries(io, md, snap) if e.data_file.content == FileContent.DATA]
    ranges = sorted((e.data_file.first_row_id, e.data_file.record_count) for e in data)
    assert all(fr is not None for fr, _ in ranges)
    for (a, n), (b, _) in itertools.pairwise(ranges):
        assert a + n <= b  # row id ranges never overlap
    assert ranges[-1][0] + ranges[-1][1] <= (md.next_row_id or 0)


def test_read_entries_includes_deleted_entries(cases: list[dict]) -> None:
    io = FileIO()
    case = next(c for c in cases if c["case"] == "p03_v2_cow")
    md = read_table_metadata(io, case["metadata_location"])
    statuses = set()
    for snap in md.snapshots:
        for m in manifest_refs(io, md, snap):
            statuses |= {e.status for e in read_entries(io, md, m)}
    assert EntryStatus.DELETED in statuses and EntryStatus.EXISTING in statuses


# -- errors name the file and the snapshot ----------------------------------------------------------


@pytest.mark.parametrize("fv", [2, 4])
def test_a_corrupt_manifest_is_reported_with_its_location_and_snapshot(tmp_path: Path, fv: int) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, fv, {"write.v4.root.max-inline-entries": "0"})
    write = commit4 if fv >= 4 else commit
    md, _ = write(io, md, TreeChange(added_data_files=[data_file("a"), data_file("b")]))
    snap = md.current_snapshot()
    assert snap is not None
    refs = [m for m in manifest_refs(io, md, snap) if m.manifest_path != snap.root_manifest]
    assert len(refs) == 1
    broken = refs[0].manifest_path
    Path(broken.removeprefix("file://")).write_bytes(b"not a manifest at all")
    with pytest.raises(CorruptMetadata) as caught:
        list(live_entries(io, md, snap))
    assert caught.value.location == broken
    assert caught.value.snapshot_id == snap.snapshot_id
    assert caught.value.context == {"location": broken, "snapshot_id": snap.snapshot_id}


def test_a_corrupt_manifest_list_is_reported_with_its_location_and_snapshot(tmp_path: Path) -> None:
    io = FileIO()
    md, _ = commit(io, new_metadata(tmp_path, 2), TreeChange(added_data_files=[data_file("a")]))
    snap = md.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    Path(snap.manifest_list.removeprefix("file://")).write_bytes(b"Obj\x01garbage")
    clear_caches()  # rewritten in place: the list this process wrote is kept decoded by location
    with pytest.raises(CorruptMetadata) as caught:
        manifest_refs(io, md, snap)
    assert (caught.value.location, caught.value.snapshot_id) == (snap.manifest_list, snap.snapshot_id)


# -- the entries one snapshot added ---------------------------------------------------------------


def _added_by_full_read(io: FileIO, md: TableMetadata, snap: Snapshot) -> list[ManifestEntry]:
    """The oracle: every live entry of the snapshot, kept when it is ADDED by the snapshot itself."""
    live = live_entries(io, md, snap)
    return [e for e in live if e.status == EntryStatus.ADDED and e.snapshot_id == snap.snapshot_id]


@pytest.mark.parametrize(
    ("fv", "max_inline"),
    [(2, "100"), (4, "100"), (4, "0"), (4, "3")],
    ids=["v2", "v4-inline", "v4-leaves", "v4-spill"],
)
def test_entries_added_by_a_snapshot_are_its_own_added_files(
    tmp_path: Path, fv: int, max_inline: str
) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, fv, {"write.v4.root.max-inline-entries": max_inline})
    write = commit4 if fv >= 4 else commit
    for batch in ([data_file("a"), data_file("b")], [data_file("c")], [data_file("a"), data_file("d")]):
        md, _ = write(io, md, TreeChange(added_data_files=batch))
    snap = md.current_snapshot()
    assert snap is not None
    expected = _added_by_full_read(io, md, snap)
    assert len(expected) == 2
    clear_caches()  # the root is decoded from its file, not taken from the writer's memory
    assert entries_added_by(io, md, snap) == expected
    assert entries_added_by(io, md, snap) == expected  # with the root cached by the full read


def test_inline_entries_added_decodes_only_the_snapshots_rows(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 4)
    for batch in ([data_file("a"), data_file("b")], [data_file("c")]):
        md, _ = commit4(io, md, TreeChange(added_data_files=batch))
    snap = md.current_snapshot()
    assert snap is not None
    clear_caches()
    found = v4_read.inline_entries_added(io, md, snap)
    assert found is not None
    assert [e.data_file.file_path for e in found] == [
        e.data_file.file_path for e in _added_by_full_read(io, md, snap)
    ]
    assert all(e.snapshot_id == snap.snapshot_id for e in found)


def test_inline_entries_added_probes_a_root_that_carries_many_rows(tmp_path: Path) -> None:
    """Of a root over a long head, only the rows the snapshot added are taken."""
    io = FileIO()
    md = new_metadata(tmp_path, 4, {"write.v4.root.max-inline-entries": "1000"})
    carried = [data_file(f"c{i}") for i in range(40)]
    md, _ = commit4(io, md, TreeChange(added_data_files=carried))
    md, _ = commit4(io, md, TreeChange(added_data_files=[data_file("x"), data_file("y")]))
    snap = md.current_snapshot()
    assert snap is not None
    clear_caches()
    found = v4_read.inline_entries_added(io, md, snap)
    assert found == _added_by_full_read(io, md, snap)
    assert found is not None and len(found) == 2


@pytest.mark.parametrize("max_inline", ["0", "100"])
def test_inline_entries_added_defers_to_the_full_read_when_rows_are_elsewhere(
    tmp_path: Path, max_inline: str
) -> None:
    """Files in leaves, or delete files, are not found among the root's own rows: None."""
    io = FileIO()
    md = new_metadata(tmp_path, 4, {"write.v4.root.max-inline-entries": max_inline})
    f1 = data_file("a")
    md, _ = commit4(io, md, TreeChange(added_data_files=[f1]))
    change = (
        TreeChange(added_data_files=[data_file("b")])
        if max_inline == "0"
        else TreeChange(
            added_data_files=[data_file("b")],
            added_delete_files=[
                data_file("a").with_changes(content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
            ],
        )
    )
    md, _ = commit4(io, md, change)
    snap = md.current_snapshot()
    assert snap is not None
    clear_caches()
    assert v4_read.inline_entries_added(io, md, snap) is None
    assert entries_added_by(io, md, snap) == _added_by_full_read(io, md, snap)
