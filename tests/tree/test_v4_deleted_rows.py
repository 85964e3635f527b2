"""v4 rule 8 (facts §4.1): a deleting snapshot's root records what it removed, the next root forgets it.

Read through the read seam as the metadata tables do (every reference's entries plus the rows
removed through DELETED references), each snapshot must show a DELETED row for exactly the files
it removed, stamped with its id and the original sequence numbers and first row id, while the live
entries keep their tracking values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icefloe.io import FileIO
from icefloe.spec.content import DeletionVectorRef, EntryStatus, FileContent, ManifestContent, ManifestEntry
from icefloe.spec.snapshots import Operation
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import dropped_entries, live_entries, manifest_refs, read_entries
from tests.tree.helpers import commit, data_file, new_metadata
from tests.tree.v4_helpers import bits, commit4, head, raw_rows

NO_INLINE = {"write.v4.root.max-inline-entries": "0"}


def _name(e: ManifestEntry) -> str:
    return e.data_file.file_path.rsplit("/", 1)[1].removesuffix(".parquet")


def _entries(io: FileIO, md: TableMetadata) -> list[ManifestEntry]:
    """Every entry the current snapshot shows: its references' rows and its dropped leaves' removals."""
    snap = head(md)
    out = [e for m in manifest_refs(io, md, snap) for e in read_entries(io, md, m)]
    return out + dropped_entries(io, md, snap)


def _deleted(io: FileIO, md: TableMetadata) -> dict[str, tuple[Any, ...]]:
    return {
        _name(e): (e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.first_row_id)
        for e in _entries(io, md)
        if e.status == EntryStatus.DELETED
    }


def _live(io: FileIO, md: TableMetadata) -> dict[str, tuple[Any, ...]]:
    return {
        _name(e): (e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file.first_row_id)
        for e in live_entries(io, md, head(md))
    }


def _remove(io: FileIO, md: TableMetadata, *names: str) -> tuple[TableMetadata, Any]:
    gone = [e for e in live_entries(io, md, head(md)) if _name(e) in names]
    assert len(gone) == len(names)
    return commit4(io, md, TreeChange(removed_entries=gone), operation=Operation.DELETE)


def test_each_snapshot_shows_exactly_the_files_it_deleted(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4)
    leaf = [
        data_file("a", rows=10 * (i + 1), file_path=f"file://{tmp_path}/t/data/f{i}.parquet")
        for i in range(4)
    ]
    md, _ = commit4(io, md, TreeChange(added_data_files=leaf), properties=NO_INLINE)  # 1000: one leaf
    inline = data_file("a", rows=3, file_path=f"file://{tmp_path}/t/data/i1.parquet")
    md, _ = commit4(io, md, TreeChange(added_data_files=[inline]))  # 1001: inline, row ids 100..102
    live = _live(io, md)
    assert live == {
        "f0": (1000, 1, 1, 0),
        "f1": (1000, 1, 1, 10),
        "f2": (1000, 1, 1, 30),
        "f3": (1000, 1, 1, 60),
        "i1": (1001, 2, 2, 100),
    }
    assert _deleted(io, md) == {}

    # 1002: an inline entry (DELETED root row) and a leaf file (manifest DV, deleted_positions)
    md, r = _remove(io, md, "i1", "f1")
    assert _deleted(io, md) == {"i1": (1002, 2, 2, 100), "f1": (1002, 1, 1, 10)}
    assert (r.summary["deleted-data-files"], r.summary["deleted-records"]) == ("2", "23")
    assert r.summary["total-data-files"] == "3"
    assert _live(io, md) == {k: v for k, v in live.items() if k not in ("i1", "f1")}

    # 1003: below the live ratio, so the leaf is rewritten (DELETED rows in the new leaf) and the old
    # leaf's reference is DELETED without deltas (its rows must not show up again)
    md, r = _remove(io, md, "f0", "f3")
    assert _deleted(io, md) == {"f0": (1003, 1, 1, 0), "f3": (1003, 1, 1, 60)}
    assert r.summary["deleted-data-files"] == "2" and r.summary["total-data-files"] == "1"
    assert _live(io, md) == {"f2": (1000, 1, 1, 30)}

    # 1004: the last live file goes, the leaf is dropped: its DELETED reference carries the removal
    md, r = _remove(io, md, "f2")
    assert _deleted(io, md) == {"f2": (1004, 1, 1, 30)}  # not the older f0 / f3 rows of that leaf
    assert r.summary["deleted-data-files"] == "1" and r.summary["total-data-files"] == "0"
    assert _live(io, md) == {}
    assert [(x["content_type"], x["tracking"]["status"]) for x in raw_rows(r.root_manifest_location)] == [
        (3, 2)
    ]

    # 1005: the next root drops every non-live row
    md, r = commit4(io, md, TreeChange(added_data_files=[data_file("b", rows=1)]))
    assert _deleted(io, md) == {}
    assert [x["tracking"]["status"] for x in raw_rows(r.root_manifest_location)] == [1]
    assert r.summary.get("deleted-data-files") is None and r.summary["total-data-files"] == "1"


def test_removing_the_only_equality_delete_of_a_leaf_records_it(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4)
    md, _ = commit4(io, md, TreeChange(added_data_files=[data_file("a", rows=10)]))
    eq = data_file("a", rows=2).with_changes(content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    md, _ = commit4(io, md, TreeChange(added_delete_files=[eq]))  # a delete leaf of one row
    (ref,) = [m for m in manifest_refs(io, md, head(md)) if m.content == ManifestContent.DELETES]
    (eq_entry,) = read_entries(io, md, ref)
    md, r = commit4(io, md, TreeChange(removed_entries=[eq_entry]), operation=Operation.DELETE)
    assert [x["tracking"]["status"] for x in raw_rows(r.root_manifest_location)] == [2, 0]  # leaf DELETED
    deleted = [e for e in _entries(io, md) if e.status == EntryStatus.DELETED]
    assert [(e.data_file.file_path, e.snapshot_id, e.sequence_number) for e in deleted] == [
        (eq.file_path, head(md).snapshot_id, 2)
    ]
    assert r.summary["removed-delete-files"] == "1" and r.summary["removed-equality-deletes"] == "2"


def test_first_v4_commit_emptying_a_legacy_manifest_keeps_its_deleted_rows(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 3)
    f, g = data_file("a", rows=10), data_file("b", rows=20)
    md, _ = commit(io, md, TreeChange(added_data_files=[f]))
    md, _ = commit(io, md, TreeChange(added_data_files=[g]))
    md = md.with_changes(format_version=4)
    gone = next(e for e in live_entries(io, md, head(md)) if e.data_file.file_path == f.file_path)
    md, r = commit4(io, md, TreeChange(removed_entries=[gone]), operation=Operation.DELETE)
    rows = raw_rows(r.root_manifest_location)
    # g's manifest stays a legacy reference; f's emptied manifest was listed by a manifest list, so
    # it gets no DELETED reference, but f itself is a DELETED root row with its tracking kept
    assert [(x["content_type"], x["format_version"], x["tracking"]["status"]) for x in rows] == [
        (3, 0, 0),
        (0, 4, 2),
    ]
    assert _deleted(io, md) == {f.file_path.rsplit("/", 1)[1].removesuffix(".parquet"): (1002, 1, 1, 0)}
    assert list(_live(io, md).values()) == [(1001, 2, 2, 10)]


def test_a_leaf_emptied_by_new_deletion_vectors_records_replaced_rows(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4)
    files = [data_file("a", rows=10, file_path=f"file://{tmp_path}/t/data/f{i}.parquet") for i in range(2)]
    md, _ = commit4(io, md, TreeChange(added_data_files=files), properties=NO_INLINE)
    dvs = {
        f.file_path: DeletionVectorRef(f"file://{tmp_path}/t/data/dv.puffin", 4 + 40 * i, 40, 1)
        for i, f in enumerate(files)
    }
    md, r = commit4(io, md, TreeChange(added_dvs=dvs), operation=Operation.DELETE)
    rows = raw_rows(r.root_manifest_location)
    # every live row of the leaf moved to the root as MODIFIED: the leaf's reference is DELETED and
    # its replaced_positions name the prior versions
    assert [(x["content_type"], x["tracking"]["status"]) for x in rows] == [(3, 2), (0, 4), (0, 4)]
    assert bits(rows[0]["tracking"]["replaced_positions"]) == [0, 1]
    assert rows[0]["tracking"]["deleted_positions"] is None
    replaced = [e for e in dropped_entries(io, md, head(md)) if e.status == EntryStatus.REPLACED]
    assert sorted((_name(e), e.snapshot_id, e.data_file.deletion_vector) for e in replaced) == [
        ("f0", 1001, None),
        ("f1", 1001, None),
    ]
    assert {_name(e): e.data_file.deletion_vector for e in live_entries(io, md, head(md))} == {
        "f0": dvs[files[0].file_path],
        "f1": dvs[files[1].file_path],
    }
    assert r.summary["added-dvs"] == "2" and r.summary.get("deleted-data-files") is None
