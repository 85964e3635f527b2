"""The write seam (v1–v3): new manifests, removal rewriting, merge append, row ids, summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.errors import ValidationError
from icefloe.formats.avro.manifest import read_manifest_header
from icefloe.formats.avro.manifest_list import read_manifest_list_header
from icefloe.io import FileIO
from icefloe.spec.content import EntryStatus, FileContent, ManifestContent
from icefloe.tree.changes import TreeChange, TreeWriteRequest
from icefloe.tree.read_seam import live_entries, manifest_refs, read_entries
from icefloe.tree.write_seam import write_snapshot_tree
from tests.tree.helpers import commit, data_file, delete_file, new_metadata

MERGE_PROPS = {"commit.manifest.min-count-to-merge": "3"}


def _live_paths(io: FileIO, md) -> set[str]:  # type: ignore[no-untyped-def]
    snap = md.current_snapshot()
    return {e.data_file.file_path for e in live_entries(io, md, snap)} if snap else set()


@pytest.mark.parametrize("format_version", [1, 2, 3])
def test_fast_appends(tmp_path: Path, format_version: int) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, format_version)
    f1, f2, f3 = data_file("a", 10), data_file("b", 20), data_file(None, 30, spec_id=1)
    md, r1 = commit(io, md, TreeChange(added_data_files=[f1, f2, f3]))
    assert len(r1.manifests) == 2  # one per spec
    assert r1.manifest_list_location and r1.manifest_list_location in r1.written_files
    assert "/t/metadata/snap-1000-1-" in r1.manifest_list_location
    assert all(m.manifest_path in r1.written_files for m in r1.manifests)
    md, r2 = commit(io, md, TreeChange(added_data_files=[data_file("a", 5)]))
    assert len(r2.manifests) == 3
    assert [m.manifest_path for m in r2.manifests[1:]] == [m.manifest_path for m in r1.manifests]
    assert r2.written_files == [r2.manifests[0].manifest_path, r2.manifest_list_location]
    seqs = [m.sequence_number for m in r2.manifests]
    assert seqs == ([0, 0, 0] if format_version == 1 else [2, 1, 1])
    header = read_manifest_list_header(io.new_input(r2.manifest_list_location or ""))
    assert (header.snapshot_id, header.parent_snapshot_id, header.format_version) == (
        1001,
        1000,
        format_version,
    )
    manifest_header = read_manifest_header(io.new_input(r2.manifests[0].manifest_path))
    assert manifest_header.format_version == format_version
    assert len(_live_paths(io, md)) == 4
    assert r2.summary["added-data-files"] == "1" and r2.summary["total-records"] == "65"
    assert r2.summary["total-data-files"] == "4" and r2.summary["changed-partition-count"] == "1"
    if format_version == 3:
        assert (r1.first_row_id, r1.added_rows) == (0, 60)
        assert (r2.first_row_id, r2.added_rows) == (60, 5)
        assert md.next_row_id == 65
    else:
        assert r2.first_row_id is None and r2.added_rows is None


def test_removal_rewrites_only_the_manifest_holding_the_file(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 3)
    a1, a2, a3 = data_file("a", 10), data_file("a", 20), data_file("a", 30)
    b1 = data_file("b", 40)
    md, r1 = commit(io, md, TreeChange(added_data_files=[a1, a2, a3]))
    md, r2 = commit(io, md, TreeChange(added_data_files=[b1]))
    snap2 = md.current_snapshot()
    assert snap2 is not None
    victim = next(e for e in live_entries(io, md, snap2) if e.data_file.file_path == a2.file_path)
    md, r3 = commit(io, md, TreeChange(removed_entries=[victim]))
    assert len(r3.manifests) == 2
    assert r3.manifests[0].manifest_path == r2.manifests[0].manifest_path  # b's manifest reused
    rewritten = r3.manifests[1]
    assert rewritten.manifest_path != r1.manifests[0].manifest_path
    assert rewritten.added_snapshot_id == 1002 and rewritten.sequence_number == 3
    assert (rewritten.added_files_count, rewritten.existing_files_count, rewritten.deleted_files_count) == (
        0,
        2,
        1,
    )
    assert rewritten.min_sequence_number == 1
    entries = {e.data_file.file_path: e for e in read_entries(io, md, rewritten)}
    deleted = entries[a2.file_path]
    assert deleted.status == EntryStatus.DELETED and deleted.snapshot_id == 1002
    assert (deleted.sequence_number, deleted.file_sequence_number) == (1, 1)
    assert deleted.data_file.first_row_id == 10
    kept = entries[a3.file_path]
    assert kept.status == EntryStatus.EXISTING and kept.snapshot_id == 1000
    assert (kept.sequence_number, kept.file_sequence_number, kept.data_file.first_row_id) == (1, 1, 30)
    # the rewritten manifest keeps explicit values: nothing is left to inheritance
    from icefloe.formats.avro.manifest import read_manifest

    raw = read_manifest(io.new_input(rewritten.manifest_path))
    assert all(e.sequence_number == 1 and e.snapshot_id is not None for e in raw)
    assert _live_paths(io, md) == {a1.file_path, a3.file_path, b1.file_path}
    assert r3.summary["deleted-data-files"] == "1" and r3.summary["deleted-records"] == "20"
    assert r3.summary["removed-files-size"] == "2000"
    assert r3.summary["total-records"] == "80" and r3.summary["total-data-files"] == "3"
    assert r3.added_rows == 40  # the rewritten manifest is assigned ids for its existing rows
    assert [e.data_file.file_path for e in r3.removed_entries] == [a2.file_path]


def test_manifest_without_live_files_is_dropped_next_commit(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2)
    a = data_file("a")
    md, _ = commit(io, md, TreeChange(added_data_files=[a]))
    md, _ = commit(io, md, TreeChange(added_data_files=[data_file("b")]))
    snap = md.current_snapshot()
    assert snap is not None
    victim = next(e for e in live_entries(io, md, snap) if e.data_file.file_path == a.file_path)
    md, r = commit(io, md, TreeChange(removed_entries=[victim]))
    assert [m.deleted_files_count for m in r.manifests] == [0, 1]
    md, r = commit(io, md, TreeChange(added_data_files=[data_file("c")]))
    assert len(r.manifests) == 2 and all(m.deleted_files_count == 0 for m in r.manifests)


def test_missing_removal_fails_and_cleans_up(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2)
    md, _ = commit(io, md, TreeChange(added_data_files=[data_file("a")]))
    snap = md.current_snapshot()
    assert snap is not None
    entry = next(iter(live_entries(io, md, snap)))
    ghost = entry.with_changes(data_file=entry.data_file.with_changes(file_path="file:///data/ghost.parquet"))
    before = set(io.list_prefix(f"{md.location}/metadata"))
    with pytest.raises(ValidationError, match="ghost"):
        commit(io, md, TreeChange(added_data_files=[data_file("a")], removed_entries=[ghost]))
    assert set(io.list_prefix(f"{md.location}/metadata")) == before


def test_delete_files_go_to_delete_manifests(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 3)
    f = data_file("a", 100)
    md, _ = commit(io, md, TreeChange(added_data_files=[f]))
    dv = delete_file(f, rows=3, dv=True)
    md, r = commit(io, md, TreeChange(added_delete_files=[dv]))
    deletes = [m for m in r.manifests if m.content == ManifestContent.DELETES]
    assert len(deletes) == 1 and deletes[0].first_row_id is None
    assert r.added_rows == 0
    assert r.summary["added-dvs"] == "1" and r.summary["added-delete-files"] == "1"
    assert r.summary["added-position-deletes"] == "3" and r.summary["total-position-deletes"] == "3"
    assert r.summary["total-delete-files"] == "1" and "added-position-delete-files" not in r.summary
    # remove the DV again: the delete manifest is rewritten
    snap = md.current_snapshot()
    assert snap is not None
    dv_entry = next(e for e in live_entries(io, md, snap) if e.data_file.content != FileContent.DATA)
    md, r = commit(io, md, TreeChange(removed_entries=[dv_entry]))
    assert r.summary["removed-dvs"] == "1" and r.summary["total-delete-files"] == "0"
    with pytest.raises(ValidationError):
        commit(io, new_metadata(tmp_path / "v1", 1), TreeChange(added_delete_files=[dv]))


def test_merge_append_bin_packs_small_manifests(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2, MERGE_PROPS)
    f1, f2, f3 = data_file("a", 1), data_file("a", 2), data_file("b", 3)
    md, r = commit(io, md, TreeChange(added_data_files=[f1]), merge=True)
    md, r = commit(io, md, TreeChange(added_data_files=[f2]), merge=True)
    assert len(r.manifests) == 2  # below min-count-to-merge
    md, r = commit(io, md, TreeChange(added_data_files=[f3]), merge=True)
    assert len(r.manifests) == 1
    merged = r.manifests[0]
    assert (merged.added_files_count, merged.existing_files_count) == (1, 2)
    assert merged.sequence_number == 3 and merged.min_sequence_number == 1
    assert r.written_files == [merged.manifest_path, r.manifest_list_location]
    entries = {e.data_file.file_path: e for e in read_entries(io, md, merged)}
    assert entries[f3.file_path].status == EntryStatus.ADDED and entries[f3.file_path].sequence_number == 3
    assert entries[f1.file_path].status == EntryStatus.EXISTING
    assert (entries[f1.file_path].sequence_number, entries[f1.file_path].snapshot_id) == (1, 1000)
    assert (entries[f2.file_path].sequence_number, entries[f2.file_path].snapshot_id) == (2, 1001)
    # the intermediate manifest of this commit was deleted; the older ones stay (earlier snapshots)
    assert not any("-m0.avro" in p and p not in r.written_files for p in [merged.manifest_path])
    assert _live_paths(io, md) == {f1.file_path, f2.file_path, f3.file_path}


def test_merge_respects_target_size_and_specs(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2, {**MERGE_PROPS})
    for i in range(4):
        md, r = commit(io, md, TreeChange(added_data_files=[data_file("a", i + 1)]))
    md, r = commit(io, md, TreeChange(added_data_files=[data_file(None, 9, spec_id=1)]))
    sizes = [m.manifest_length for m in r.manifests]
    target = sizes[1] * 2 + 10  # room for two spec-0 manifests per bin
    md, r = commit(
        io,
        md,
        TreeChange(added_data_files=[data_file("a", 7)]),
        merge=True,
        properties={"commit.manifest.target-size-bytes": str(target)},
    )
    spec0 = [m for m in r.manifests if m.partition_spec_id == 0]
    spec1 = [m for m in r.manifests if m.partition_spec_id == 1]
    assert len(spec1) == 1  # a single manifest of another spec is never merged
    assert len(spec0) == 3  # five spec-0 manifests packed in bins of at most two
    assert sum((m.added_files_count or 0) + (m.existing_files_count or 0) for m in spec0) == 5
    reused = [m for m in spec0 if m.added_snapshot_id != 1005]
    assert len(reused) == 1 and reused[0].added_snapshot_id == 1000  # the odd one left in its own bin
    assert spec0[0].added_files_count == 1 and spec0[0].existing_files_count == 1
    assert len(_live_paths(io, md)) == 6


def test_merge_can_be_disabled_by_property(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2, {**MERGE_PROPS, "commit.manifest-merge.enabled": "false"})
    for _ in range(4):
        md, r = commit(io, md, TreeChange(added_data_files=[data_file("a")]), merge=True)
    assert len(r.manifests) == 4


def test_large_append_rolls_manifests(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2, {"commit.manifest.target-size-bytes": "2000"})
    files = [data_file("a") for _ in range(60)]
    md, r = commit(io, md, TreeChange(added_data_files=files))
    assert len(r.manifests) > 1
    assert sum(m.added_files_count or 0 for m in r.manifests) == 60
    assert _live_paths(io, md) == {f.file_path for f in files}


def test_v3_explicit_first_row_id_and_upgraded_manifests(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 2)
    f1 = data_file("a", 10)
    md, _ = commit(io, md, TreeChange(added_data_files=[f1]))
    md = md.with_changes(format_version=3, next_row_id=0)  # upgrade: old manifest has no first_row_id
    f2 = data_file("a", 5)
    md, r = commit(io, md, TreeChange(added_data_files=[f2]))
    assert [m.first_row_id for m in r.manifests] == [0, 5]
    assert r.added_rows == 15 and md.next_row_id == 15
    snap = md.current_snapshot()
    assert snap is not None
    ids = {e.data_file.file_path: e.data_file.first_row_id for e in live_entries(io, md, snap)}
    assert ids == {f2.file_path: 0, f1.file_path: 5}
    # the next commit keeps the assigned ids
    md, r = commit(io, md, TreeChange(added_data_files=[data_file("b", 1)]))
    assert [m.first_row_id for m in r.manifests] == [15, 0, 5] and r.added_rows == 1


def test_v1_table_summary_and_missing_parent_totals(tmp_path: Path) -> None:
    io = FileIO()
    md = new_metadata(tmp_path, 1)
    md, r = commit(io, md, TreeChange(added_data_files=[data_file("a", 4)]))
    assert r.summary == {
        "added-data-files": "1",
        "added-records": "4",
        "added-files-size": "400",
        "changed-partition-count": "1",
        "total-records": "4",
        "total-files-size": "400",
        "total-data-files": "1",
        "total-delete-files": "0",
        "total-position-deletes": "0",
        "total-equality-deletes": "0",
    }
    parent = md.current_snapshot()
    assert parent is not None
    bare = parent.__class__(**{**{k: getattr(parent, k) for k in parent.__slots__}, "summary": {}})
    result = write_snapshot_tree(
        TreeWriteRequest(io, md, bare, TreeChange(added_data_files=[data_file("b")]), 9, 0)
    )
    assert "total-records" not in result.summary and result.summary["added-records"] == "10"
    assert len(manifest_refs(io, md, parent)) == 1


class _CountingIO(FileIO):
    """A FileIO that records which files were opened for reading."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def new_input(self, location: str):  # type: ignore[no-untyped-def]
        self.opened.append(location)
        return super().new_input(location)


def test_removal_reads_only_manifests_whose_summaries_may_hold_the_file(tmp_path: Path) -> None:
    io = _CountingIO()
    md = new_metadata(tmp_path, 2)
    a, b = data_file("a"), data_file("b")
    md, ra = commit(io, md, TreeChange(added_data_files=[a]))
    md, rb = commit(io, md, TreeChange(added_data_files=[b]))
    snap = md.current_snapshot()
    assert snap is not None
    victim = next(e for e in live_entries(io, md, snap) if e.data_file.file_path == b.file_path)
    io.opened.clear()
    md, r = commit(io, md, TreeChange(removed_entries=[victim]))
    assert ra.manifests[0].manifest_path not in io.opened  # partition "a" cannot hold "b"
    assert rb.manifests[0].manifest_path in io.opened
    assert r.manifests[1].manifest_path == ra.manifests[0].manifest_path
