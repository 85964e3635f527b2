"""v4 write seam, structurally: the Parquet root and leaf files read back raw with pyarrow.

Each test commits TreeChanges through ``write_snapshot_tree`` on a format-version 4 table and
checks the content entries, statuses, tracking values, field ids and manifest-DV bits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.errors import ValidationError
from icefloe.io import FileIO
from icefloe.spec.content import DataFile, DeletionVectorRef, EntryStatus
from icefloe.spec.conversions import to_bytes
from icefloe.spec.snapshots import Operation
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries, manifest_refs, read_entries
from tests.tree.helpers import data_file, new_metadata
from tests.tree.v4_helpers import bits, commit4, field_ids, footer, head, raw_rows, tree_files

INLINE_2 = {"write.v4.root.max-inline-entries": "2"}


def _file(tmp_path: Path, name: str, rows: int = 10, cat: str = "a") -> DataFile:
    return data_file(cat, rows=rows, file_path=f"file://{tmp_path}/t/data/cat={cat}/{name}.parquet")


def _tracking(row: dict[str, Any]) -> tuple[Any, ...]:
    t = row["tracking"]
    return (t["status"], t["snapshot_id"], t["sequence_number"], t["file_sequence_number"], t["first_row_id"])


def _live(io: FileIO, md: TableMetadata) -> dict[str, tuple[Any, ...]]:
    snap = md.current_snapshot()
    assert snap is not None
    return {
        e.data_file.file_path.rsplit("/", 1)[1].removesuffix(".parquet"): (
            e.status,
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            e.data_file.first_row_id,
        )
        for e in live_entries(io, md, snap)
    }


def _entry(io: FileIO, md: TableMetadata, name: str) -> Any:
    snap = md.current_snapshot()
    assert snap is not None
    return next(e for e in live_entries(io, md, snap) if e.data_file.file_path.endswith(f"/{name}.parquet"))


def test_small_append_writes_only_a_root_with_inline_data_entries(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4)
    md, r = commit4(
        io, md, TreeChange(added_data_files=[_file(tmp_path, "f1", 10), _file(tmp_path, "f2", 5, "b")])
    )
    assert r.manifest_list_location is None and r.root_manifest_location is not None
    assert tree_files(tmp_path) == [r.root_manifest_location.rsplit("/", 1)[1]]
    assert r.written_files == [r.root_manifest_location]
    assert (r.first_row_id, r.added_rows) == (0, 15)
    rows = raw_rows(r.root_manifest_location)
    assert [(x["content_type"], x["format_version"], x["location"], x["record_count"]) for x in rows] == [
        (0, 4, "data/cat=a/f1.parquet", 10),
        (0, 4, "data/cat=b/f2.parquet", 5),
    ]
    assert [_tracking(x) for x in rows] == [(1, 1000, 1, 1, 0), (1, 1000, 1, 1, 10)]
    assert [x["partition"] for x in rows] == [{"cat": "a"}, {"cat": "b"}]
    assert [x["spec_id"] for x in rows] == [0, 0]
    assert [x["manifest_info"] for x in rows] == [None, None]
    assert footer(r.root_manifest_location) == {
        "format-version": "4",
        "schema-id": "0",
        "content": "root-manifest",
        "snapshot-id": "1000",
        "sequence-number": "1",
    }
    # every stored field carries its id; all-null optional columns are left out of the file
    assert field_ids(r.root_manifest_location) == {
        "tracking": 147,
        "tracking.status": 0,
        "tracking.snapshot_id": 1,
        "tracking.sequence_number": 3,
        "tracking.file_sequence_number": 4,
        "tracking.first_row_id": 142,
        "content_type": 134,
        "format_version": 157,
        "location": 100,
        "file_format": 101,
        "record_count": 103,
        "file_size_in_bytes": 104,
        "spec_id": 141,
        "partition": 102,
        "partition.cat": 1000,
        "content_stats": 146,
        "content_stats.id": 10200,
        "content_stats.id.value_count": 10204,
    }

    md, r2 = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "f3", 7)]))
    assert len(tree_files(tmp_path)) == 2  # one new file per small commit: the root
    rows = raw_rows(r2.root_manifest_location)
    assert [_tracking(x) for x in rows] == [(0, 1000, 1, 1, 0), (0, 1000, 1, 1, 10), (1, 1001, 2, 2, 15)]
    assert footer(r2.root_manifest_location)["parent-snapshot-id"] == "1000"
    assert (r2.first_row_id, r2.added_rows) == (15, 7)
    assert _live(io, md) == {
        "f1": (EntryStatus.EXISTING, 1000, 1, 1, 0),
        "f2": (EntryStatus.EXISTING, 1000, 1, 1, 10),
        "f3": (EntryStatus.ADDED, 1001, 2, 2, 15),
    }


def test_large_append_writes_a_leaf_whose_rows_inherit_from_the_reference(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4, INLINE_2)
    files = [_file(tmp_path, "f1", 10), _file(tmp_path, "f2", 5), _file(tmp_path, "f3", 7)]
    md, r = commit4(io, md, TreeChange(added_data_files=files))
    (ref,) = r.manifests
    assert len(tree_files(tmp_path)) == 2
    (root_row,) = raw_rows(r.root_manifest_location)
    assert (root_row["content_type"], root_row["format_version"], root_row["file_format"]) == (
        3,
        4,
        "parquet",
    )
    assert root_row["location"] == ref.manifest_path.split("/t/", 1)[1]
    assert root_row["location"].startswith("metadata/") and root_row["location"].endswith("-l0.parquet")
    assert (root_row["record_count"], root_row["spec_id"], root_row["partition"]) == (3, 0, None)
    assert _tracking(root_row) == (1, 1000, 1, 1, 0)
    info = root_row["manifest_info"]
    assert {k: info[k] for k in (*info, "dv", "dv_cardinality")} == {
        "added_files_count": 3,
        "existing_files_count": 0,
        "deleted_files_count": 0,
        "replaced_files_count": 0,
        "modified_files_count": 0,
        "added_rows_count": 22,
        "existing_rows_count": 0,
        "deleted_rows_count": 0,
        "replaced_rows_count": 0,
        "modified_rows_count": 0,
        "min_sequence_number": 1,
        "dv": None,
        "dv_cardinality": None,
    }
    assert root_row["content_stats"]["id"]["value_count"] == 22  # aggregated over the leaf
    ids = field_ids(r.root_manifest_location)
    assert {k: v for k, v in ids.items() if k.startswith("manifest_info")} == {
        "manifest_info": 150,
        "manifest_info.added_files_count": 504,
        "manifest_info.existing_files_count": 505,
        "manifest_info.deleted_files_count": 506,
        "manifest_info.replaced_files_count": 520,
        "manifest_info.modified_files_count": 524,
        "manifest_info.added_rows_count": 512,
        "manifest_info.existing_rows_count": 513,
        "manifest_info.deleted_rows_count": 514,
        "manifest_info.replaced_rows_count": 521,
        "manifest_info.modified_rows_count": 525,
        "manifest_info.min_sequence_number": 516,
    }
    assert "partition" not in ids and "deletion_vector" not in ids
    assert field_ids(ref.manifest_path)["tracking"] == 147 and "tracking.snapshot_id" not in field_ids(
        ref.manifest_path
    )
    leaf = raw_rows(ref.manifest_path)
    assert [_tracking(x) for x in leaf] == [(1, None, None, None, None)] * 3
    assert [x["location"] for x in leaf] == [
        "data/cat=a/f1.parquet",
        "data/cat=a/f2.parquet",
        "data/cat=a/f3.parquet",
    ]
    assert footer(ref.manifest_path)["content"] == "data"
    assert _live(io, md) == {
        "f1": (EntryStatus.ADDED, 1000, 1, 1, 0),
        "f2": (EntryStatus.ADDED, 1000, 1, 1, 10),
        "f3": (EntryStatus.ADDED, 1000, 1, 1, 15),
    }
    # the next small append keeps the leaf reference as EXISTING and goes inline
    md, r2 = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "f4", 4)]))
    rows = raw_rows(r2.root_manifest_location)
    assert [(x["content_type"], _tracking(x)) for x in rows] == [
        (3, (0, 1000, 1, 1, 0)),
        (0, (1, 1001, 2, 2, 22)),
    ]


def test_removing_an_inline_entry_leaves_one_deleted_root_row(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4)
    f1, f2 = _file(tmp_path, "f1", 10), _file(tmp_path, "f2", 5)
    md, _ = commit4(io, md, TreeChange(added_data_files=[f1, f2]))
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f1")]), operation=Operation.DELETE)
    # rule 8: DELETED by this snapshot, sequence numbers and first_row_id of the original kept
    assert [(x["location"], _tracking(x)) for x in raw_rows(r.root_manifest_location)] == [
        ("data/cat=a/f1.parquet", (2, 1001, 1, 1, 0)),
        ("data/cat=a/f2.parquet", (0, 1000, 1, 1, 10)),
    ]
    assert _live(io, md) == {"f2": (EntryStatus.EXISTING, 1000, 1, 1, 10)}
    assert (r.first_row_id, r.added_rows) == (15, 0)
    assert r.summary["deleted-data-files"] == "1" and r.summary["total-data-files"] == "1"
    assert r.summary["deleted-records"] == "10" and r.summary["total-records"] == "5"
    assert [e.data_file.file_path for e in r.removed_entries] == [f1.file_path]
    with pytest.raises(ValidationError, match="not live"):
        commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f2").with_changes(data_file=f1)]))
    # the next root drops the DELETED row
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "f3", 1)]))
    assert [(x["location"], _tracking(x)[0]) for x in raw_rows(r.root_manifest_location)] == [
        ("data/cat=a/f2.parquet", 0),
        ("data/cat=a/f3.parquet", 1),
    ]
    assert r.summary.get("deleted-data-files") is None and r.summary["total-data-files"] == "2"


def _leaf_table(
    tmp_path: Path, n: int = 4, props: dict[str, str] | None = None
) -> tuple[FileIO, TableMetadata]:
    """A table whose first commit wrote f0..f(n-1) (10, 20, 30, ... rows) into one leaf."""
    io, md = FileIO(), new_metadata(tmp_path, 4, props)
    files = [_file(tmp_path, f"f{i}", 10 * (i + 1)) for i in range(n)]
    md, _ = commit4(
        io, md, TreeChange(added_data_files=files), properties={"write.v4.root.max-inline-entries": "0"}
    )
    return io, md


def test_removing_leaf_files_marks_a_cumulative_manifest_dv(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path)  # f0..f3 with 10, 20, 30, 40 rows; first row ids 0, 10, 30, 60
    leaf_path = manifest_refs(io, md, md.current_snapshot())[0].manifest_path  # type: ignore[arg-type]
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f1")]), operation=Operation.DELETE)
    assert len(tree_files(tmp_path)) == 3  # leaf, first root, this root: the leaf is not rewritten
    (row,) = raw_rows(r.root_manifest_location)
    t = row["tracking"]
    assert _tracking(row) == (4, 1000, 1, 1, 0)  # MODIFIED, original snapshot id / sequence numbers
    assert (t["dv_snapshot_id"], bits(t["deleted_positions"]), t["replaced_positions"]) == (1001, [1], None)
    assert (bits(row["manifest_info"]["dv"]), row["manifest_info"]["dv_cardinality"]) == ([1], 1)
    assert (row["manifest_info"]["added_files_count"], row["record_count"]) == (4, 4)  # physical counts
    assert r.manifests[0].manifest_path == leaf_path
    assert row["content_stats"]["id"]["value_count"] == 100
    assert _live(io, md) == {
        "f0": (EntryStatus.ADDED, 1000, 1, 1, 0),
        "f2": (EntryStatus.ADDED, 1000, 1, 1, 30),
        "f3": (EntryStatus.ADDED, 1000, 1, 1, 60),
    }
    # read_entries shows this snapshot's removal as a DELETED row, like a v1-v3 manifest would
    entries = read_entries(io, md, r.manifests[0])
    assert [(e.data_file.file_path.rsplit("/", 1)[1], e.status, e.snapshot_id) for e in entries] == [
        ("f0.parquet", EntryStatus.ADDED, 1000),
        ("f1.parquet", EntryStatus.DELETED, 1001),
        ("f2.parquet", EntryStatus.ADDED, 1000),
        ("f3.parquet", EntryStatus.ADDED, 1000),
    ]

    # the next snapshot carries the reference as EXISTING: cumulative DV kept, deltas cleared
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "g", 1)]))
    row = raw_rows(r.root_manifest_location)[0]
    assert _tracking(row)[0] == 0 and row["tracking"]["dv_snapshot_id"] == 1001
    assert (row["tracking"]["deleted_positions"], bits(row["manifest_info"]["dv"])) == (None, [1])
    assert [e.status for e in read_entries(io, md, r.manifests[0])] == [EntryStatus.ADDED] * 3

    # a second removal extends the DV (2 of 4 live stays at the 0.5 ratio)
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f2")]), operation=Operation.DELETE)
    row = raw_rows(r.root_manifest_location)[0]
    assert (bits(row["manifest_info"]["dv"]), bits(row["tracking"]["deleted_positions"])) == ([1, 2], [2])
    assert (row["tracking"]["dv_snapshot_id"], row["manifest_info"]["dv_cardinality"]) == (1003, 2)


def test_a_leaf_below_the_live_ratio_is_rewritten(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path)
    md, _ = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f1")]))
    old_leaf = raw_rows(head(md).root_manifest)[0]
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f0"), _entry(io, md, "f3")]))
    row, gone = raw_rows(r.root_manifest_location)
    assert _tracking(row) == (1, 1002, 3, 3, 100)  # a new leaf, ADDED by this snapshot
    assert (row["manifest_info"]["dv"], row["manifest_info"]["deleted_files_count"]) == (None, 2)
    assert row["manifest_info"]["existing_files_count"] == 1
    # rule 8: the replaced leaf's reference is DELETED by this snapshot (original sequence numbers
    # and first_row_id, cumulative DV as it was, no deltas: the removals are rows of the new leaf)
    assert gone["location"] == old_leaf["location"]
    assert _tracking(gone) == (2, 1002, 1, 1, 0)
    assert (gone["tracking"]["dv_snapshot_id"], bits(gone["manifest_info"]["dv"])) == (1001, [1])
    assert (gone["tracking"]["deleted_positions"], gone["manifest_info"]) == (None, old_leaf["manifest_info"])
    leaf = raw_rows(r.manifests[0].manifest_path)
    # masked f1 is gone; removed f0/f3 are DELETED by this snapshot; f2 is EXISTING, materialised
    assert [(x["location"].rsplit("/", 1)[1], _tracking(x)) for x in leaf] == [
        ("f0.parquet", (2, 1002, 1, 1, 0)),
        ("f2.parquet", (0, 1000, 1, 1, 30)),
        ("f3.parquet", (2, 1002, 1, 1, 60)),
    ]
    assert r.added_rows == 0
    assert _live(io, md) == {"f2": (EntryStatus.EXISTING, 1000, 1, 1, 30)}
    # removing the last live file drops the leaf: its reference is DELETED, with the removal in
    # the manifest DV and deleted_positions, so read_entries shows the DELETED row
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f2")]))
    (gone,) = raw_rows(r.root_manifest_location)
    assert r.manifests == [] and _live(io, md) == {}
    assert _tracking(gone) == (2, 1003, 3, 3, 100)
    assert (bits(gone["tracking"]["deleted_positions"]), bits(gone["manifest_info"]["dv"])) == ([1], [1])
    assert gone["tracking"]["dv_snapshot_id"] == 1003
    assert r.summary["deleted-data-files"] == "1" and r.summary["total-data-files"] == "0"
    # the next root drops the DELETED reference
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "g", 1)]))
    assert [_tracking(x)[0] for x in raw_rows(r.root_manifest_location)] == [1]


def test_min_live_ratio_one_means_copy_on_write(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path, 3, {"write.v4.leaf.min-live-ratio": "1"})
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f0")]))
    leaf = raw_rows(r.manifests[0].manifest_path)
    assert [(x["location"].rsplit("/", 1)[1], _tracking(x)[0]) for x in leaf] == [
        ("f0.parquet", 2),
        ("f1.parquet", 0),
        ("f2.parquet", 0),
    ]


def test_overwrite_in_root_and_in_a_leaf(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path)  # leaf: f0..f3 (100 rows)
    md, _ = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "i1", 3)]))  # inline, row ids 100..
    change = TreeChange(
        added_data_files=[_file(tmp_path, "n1", 6)],
        removed_entries=[_entry(io, md, "i1"), _entry(io, md, "f3")],
    )
    md, r = commit4(io, md, change, operation=Operation.OVERWRITE)
    rows = raw_rows(r.root_manifest_location)
    assert [(x["content_type"], x["location"].rsplit("/", 1)[1], _tracking(x)) for x in rows] == [
        (3, r.manifests[0].manifest_path.rsplit("/", 1)[1], (4, 1000, 1, 1, 0)),
        (0, "i1.parquet", (2, 1002, 2, 2, 100)),  # the removed inline entry, DELETED
        (0, "n1.parquet", (1, 1002, 3, 3, 103)),
    ]
    assert bits(rows[0]["tracking"]["deleted_positions"]) == [3]
    assert (
        r.summary["added-data-files"],
        r.summary["deleted-data-files"],
        r.summary["total-data-files"],
    ) == (
        "1",
        "2",
        "4",
    )
    assert sorted(_live(io, md)) == ["f0", "f1", "f2", "n1"]


def test_deletion_vectors_replace_and_modify_entries(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path)  # leaf f0..f3
    md, _ = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "i1", 3)]))  # inline
    dv_i = DeletionVectorRef(f"file://{tmp_path}/t/data/dv1.puffin", 4, 40, 2)
    dv_f = DeletionVectorRef(f"file://{tmp_path}/t/data/dv1.puffin", 44, 40, 3)
    dv_n = DeletionVectorRef(f"file://{tmp_path}/t/data/dv2.puffin", 4, 40, 1)
    n1 = _file(tmp_path, "n1", 6)
    change = TreeChange(added_data_files=[n1], added_dvs={_entry(io, md, "i1").data_file.file_path: dv_i})
    change.added_dvs[_entry(io, md, "f2").data_file.file_path] = dv_f
    change.added_dvs[n1.file_path] = dv_n
    md, r = commit4(io, md, change, operation=Operation.OVERWRITE)
    rows = raw_rows(r.root_manifest_location)
    got = [
        (x["content_type"], x["location"].rsplit("/", 1)[1], _tracking(x), x["tracking"]["dv_snapshot_id"])
        for x in rows
    ]
    leaf_name = r.manifests[0].manifest_path.rsplit("/", 1)[1]
    assert got == [
        (3, leaf_name, (4, 1000, 1, 1, 0), 1002),  # MDV marks f2 (position 2) as replaced
        (0, "i1.parquet", (3, 1002, 2, 2, 100), None),  # REPLACED: prior (no) DV, this snapshot
        (0, "i1.parquet", (4, 1001, 2, 2, 100), 1002),  # MODIFIED: new DV, original snapshot
        (0, "f2.parquet", (4, 1000, 1, 1, 30), 1002),  # MODIFIED row of the leaf file, inline
        (0, "n1.parquet", (1, 1002, 3, 3, 103), 1002),  # born with its DV: a single ADDED row
    ]
    assert (bits(rows[0]["tracking"]["replaced_positions"]), rows[0]["tracking"]["deleted_positions"]) == (
        [2],
        None,
    )
    assert bits(rows[0]["manifest_info"]["dv"]) == [2]
    dvs = [x["deletion_vector"] for x in rows]
    assert dvs[1] is None
    assert dict(dvs[2]) == {"location": "data/dv1.puffin", "offset": 4, "size_in_bytes": 40, "cardinality": 2}
    assert (dvs[3]["offset"], dvs[3]["cardinality"], dvs[4]["location"]) == (44, 3, "data/dv2.puffin")
    assert (r.summary["added-dvs"], r.summary["added-position-deletes"], r.summary["added-delete-files"]) == (
        "3",
        "6",
        "3",
    )
    live = {e.data_file.file_path.rsplit("/", 1)[1]: e for e in live_entries(io, md, md.current_snapshot())}  # type: ignore[arg-type]
    assert sorted(live) == [
        "f0.parquet",
        "f1.parquet",
        "f2.parquet",
        "f3.parquet",
        "i1.parquet",
        "n1.parquet",
    ]
    assert live["f2.parquet"].data_file.deletion_vector == dv_f and live["f2.parquet"].dv_snapshot_id == 1002
    assert live["i1.parquet"].status == EntryStatus.MODIFIED and live["i1.parquet"].snapshot_id == 1001

    # a second DV for f2 (now inline) supersedes the first: REPLACED keeps dv_f, MODIFIED has dv2
    dv_f2 = DeletionVectorRef(f"file://{tmp_path}/t/data/dv3.puffin", 4, 48, 5)
    md, r = commit4(io, md, TreeChange(added_dvs={live["f2.parquet"].data_file.file_path: dv_f2}))
    rows = raw_rows(r.root_manifest_location)
    f2_rows = [
        (_tracking(x)[0], x["deletion_vector"]["cardinality"])
        for x in rows
        if x["location"].endswith("f2.parquet")
    ]
    assert f2_rows == [(3, 3), (4, 5)]
    assert (r.summary["added-dvs"], r.summary["removed-dvs"], r.summary["removed-position-deletes"]) == (
        "1",
        "1",
        "3",
    )
    assert _tracking(rows[0]) == (0, 1000, 1, 1, 0) and rows[0]["tracking"]["replaced_positions"] is None


def test_deletion_vector_in_a_rewritten_leaf_is_a_replaced_modified_pair(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path, 2, {"write.v4.leaf.min-live-ratio": "1"})
    dv = DeletionVectorRef(f"file://{tmp_path}/t/data/dv.puffin", 4, 40, 2)
    md, r = commit4(io, md, TreeChange(added_dvs={_entry(io, md, "f1").data_file.file_path: dv}))
    leaf = raw_rows(r.manifests[0].manifest_path)
    assert [
        (x["location"].rsplit("/", 1)[1], _tracking(x), x["tracking"]["dv_snapshot_id"]) for x in leaf
    ] == [
        ("f0.parquet", (0, 1000, 1, 1, 0), None),
        ("f1.parquet", (3, 1001, 1, 1, 10), None),
        ("f1.parquet", (4, 1000, 1, 1, 10), 1001),
    ]
    assert raw_rows(r.root_manifest_location)[0]["manifest_info"]["replaced_files_count"] == 1
    assert _entry(io, md, "f1").data_file.deletion_vector == dv


def test_bad_deletion_vector_changes_are_refused(tmp_path: Path) -> None:
    io, md = _leaf_table(tmp_path, 2)
    dv = DeletionVectorRef("file:///x.puffin", 4, 40, 2)
    f0 = _entry(io, md, "f0")
    with pytest.raises(ValidationError, match="not a live data file"):
        commit4(io, md, TreeChange(added_dvs={"file:///nope.parquet": dv}))
    with pytest.raises(ValidationError, match="both remove"):
        commit4(io, md, TreeChange(removed_entries=[f0], added_dvs={f0.data_file.file_path: dv}))
    pos = data_file("a").with_changes(content=1, file_path="file:///p.parquet")
    with pytest.raises(ValidationError, match="added_dvs"):
        commit4(io, md, TreeChange(added_delete_files=[pos]))
    v3 = new_metadata(tmp_path / "v3", 3)
    with pytest.raises(ValidationError, match="format version 4"):
        commit4(io, v3, TreeChange(added_dvs={"file:///a.parquet": dv}))


def test_compaction_merges_small_leaves_and_keeps_row_lineage(tmp_path: Path) -> None:
    props = {
        "write.v4.root.max-inline-entries": "0",
        "write.v4.compaction.small-leaf-entries": "10",
        "write.v4.compaction.min-small-leaves": "3",
    }
    io, md = FileIO(), new_metadata(tmp_path, 4, props)
    for i in range(3):
        md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, f"f{i}", 10 + i)]))
    assert len(r.manifests) == 3
    before = _live(io, md)
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "f3", 20)]))
    (ref,) = r.manifests
    leaf = raw_rows(ref.manifest_path)
    assert [(x["location"].rsplit("/", 1)[1], _tracking(x)) for x in leaf] == [
        ("f2.parquet", (0, 1002, 3, 3, 21)),
        ("f1.parquet", (0, 1001, 2, 2, 10)),
        ("f0.parquet", (0, 1000, 1, 1, 0)),
        ("f3.parquet", (1, None, None, None, None)),
    ]
    root = raw_rows(r.root_manifest_location)
    assert _tracking(root[0]) == (1, 1003, 4, 4, 33)
    # the three merged leaves leave the tree: DELETED references, original tracking kept
    assert [_tracking(x) for x in root[1:]] == [
        (2, 1003, 3, 3, 21),
        (2, 1003, 2, 2, 10),
        (2, 1003, 1, 1, 0),
    ]
    after = _live(io, md)
    assert {k: v[1:] for k, v in after.items() if k != "f3"} == {k: v[1:] for k, v in before.items()}
    assert after["f3"] == (EntryStatus.ADDED, 1003, 4, 4, 33)
    assert (r.first_row_id, r.added_rows) == (33, 20)


def test_compaction_also_flushes_inline_entries(tmp_path: Path) -> None:
    props = {"write.v4.compaction.small-leaf-entries": "10", "write.v4.compaction.min-small-leaves": "2"}
    io, md = FileIO(), new_metadata(tmp_path, 4, props)
    no_inline = {"write.v4.root.max-inline-entries": "0"}
    md, _ = commit4(
        io, md, TreeChange(added_data_files=[_file(tmp_path, f"a{i}", 1) for i in range(3)]), no_inline
    )
    md, _ = commit4(
        io, md, TreeChange(added_data_files=[_file(tmp_path, f"b{i}", 1) for i in range(3)]), no_inline
    )
    no_compaction = {"write.v4.compaction.enabled": "false"}
    md, _ = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "c0", 1)]), no_compaction)  # inline
    assert [x["content_type"] for x in raw_rows(head(md).root_manifest)] == [3, 3, 0]
    before = _live(io, md)
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "d0", 1)]))
    root = raw_rows(r.root_manifest_location)
    assert [(x["content_type"], x["tracking"]["status"]) for x in root] == [(3, 1), (3, 2), (3, 2)]
    after = _live(io, md)
    assert {k: v[2:] for k, v in after.items() if k != "d0"} == {k: v[2:] for k, v in before.items()}
    assert after["d0"] == (EntryStatus.ADDED, 1003, 4, 4, 7)


def test_policy_properties_are_validated(tmp_path: Path) -> None:
    io = FileIO()
    for key, value in [
        ("write.v4.root.max-inline-entries", "-1"),
        ("write.v4.leaf.target-entries", "3000000"),
        ("write.v4.leaf.min-live-ratio", "1.5"),
        ("write.v4.compaction.enabled", "maybe"),
        ("write.v4.manifest-dv.encoding", "bogus"),
    ]:
        md = new_metadata(tmp_path, 4, {key: value})
        with pytest.raises(
            ValidationError, match=key.rsplit(".", 1)[0] if "encoding" not in key else "encoding"
        ):
            commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "f")]))
    assert tree_files(tmp_path) == []


def test_leaves_roll_at_the_target_entries(tmp_path: Path) -> None:
    props = {"write.v4.root.max-inline-entries": "0", "write.v4.leaf.target-entries": "2"}
    io, md = FileIO(), new_metadata(tmp_path, 4, props)
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, f"f{i}", 10) for i in range(5)]))
    assert [(m.record_count, m.first_row_id) for m in r.manifests] == [(2, 0), (2, 20), (1, 40)]
    assert [v[4] for v in _live(io, md).values()] == [0, 10, 20, 30, 40]


def test_a_failed_write_leaves_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4, INLINE_2)
    from icefloe.tree import v4_leaves

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(v4_leaves.TreeFiles, "write_root", boom)
    with pytest.raises(RuntimeError):
        commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, f"f{i}") for i in range(3)]))
    assert tree_files(tmp_path) == []


def test_removals_look_only_into_leaves_whose_bounds_may_hold_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.spec.conversions import to_bytes
    from icefloe.spec.types import LongType
    from icefloe.tree import v4_write

    io, md = FileIO(), new_metadata(tmp_path, 4, {"write.v4.root.max-inline-entries": "0"})
    for k in range(3):
        files = [
            _file(tmp_path, f"f{k}{j}", 10).with_changes(
                lower_bounds={1: to_bytes(LongType(), 100 * k + j)},
                upper_bounds={1: to_bytes(LongType(), 100 * k + j)},
            )
            for j in range(2)
        ]
        md, r = commit4(io, md, TreeChange(added_data_files=files))
    seen: list[str] = []
    real = v4_write.locate

    def spy(io_: Any, md_: Any, ref: Any, paths: set[str]) -> dict[str, int]:
        seen.append(ref.manifest_path)
        return real(io_, md_, ref, paths)

    monkeypatch.setattr(v4_write, "locate", spy)
    leaf_of_f1 = r.manifests[1].manifest_path  # newest leaf first: f2*, f1*, f0*
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f11")]))
    assert seen == [leaf_of_f1]
    assert sorted(_live(io, md)) == ["f00", "f01", "f10", "f20", "f21"]
    seen.clear()
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f00"), _entry(io, md, "f21")]))
    assert len(seen) == 2 and sorted(_live(io, md)) == ["f01", "f10", "f20"]


def test_compaction_merges_leaves_of_one_size_tier(tmp_path: Path) -> None:
    props = {
        "write.v4.root.max-inline-entries": "0",
        "write.v4.compaction.small-leaf-entries": "100",
        "write.v4.compaction.min-small-leaves": "2",
    }
    io, md = FileIO(), new_metadata(tmp_path, 4, props)
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, f"big{i}", 1) for i in range(10)]))
    big = r.manifests[0].manifest_path  # 10 entries: tier 3 (8 <= 10 < 16)
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "s1", 1)]))  # tier 0
    assert [m.record_count for m in r.manifests] == [1, 10]
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "s2", 1)]))  # s1 alone in tier 0
    assert [m.record_count for m in r.manifests] == [1, 1, 10]
    md, r = commit4(io, md, TreeChange(added_data_files=[_file(tmp_path, "s3", 1)]))  # s1 + s2 merge
    assert [(m.record_count, m.manifest_path == big) for m in r.manifests] == [(3, False), (10, True)]
    assert [x["location"].rsplit("/", 1)[1] for x in raw_rows(r.manifests[0].manifest_path)] == [
        "s2.parquet",
        "s1.parquet",
        "s3.parquet",
    ]


def _bounded_file(tmp_path: Path, name: str, low: int) -> DataFile:
    """A data file with v1–v3 metric maps: ids ``low .. low + 9``, no nulls."""
    return _file(tmp_path, name).with_changes(
        null_value_counts={1: 0},
        lower_bounds={1: to_bytes(LongType(), low)},
        upper_bounds={1: to_bytes(LongType(), low + 9)},
    )


def _tight_bounds_paths(path: str | None) -> list[str]:
    return [p for p in field_ids(path) if p.endswith(".tight_bounds")]


def test_stats_from_v3_metrics_leave_tight_bounds_out_of_compact_roots(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4, INLINE_2)
    leaf_files = [_bounded_file(tmp_path, f"f{i}", 10 * i) for i in range(3)]
    md, _ = commit4(io, md, TreeChange(added_data_files=leaf_files))  # 3 > 2 inline: a leaf
    md, r = commit4(io, md, TreeChange(added_data_files=[_bounded_file(tmp_path, "g", 100)]))  # inline
    rows = raw_rows(r.root_manifest_location)
    assert [(x["content_type"], x["content_stats"]["id"]["lower_bound"]) for x in rows] == [(3, 0), (0, 100)]
    assert rows[0]["content_stats"]["id"]["upper_bound"] == 29  # aggregated over the leaf
    assert _tight_bounds_paths(r.root_manifest_location) == []  # unknown everywhere: not stored
    ref = next(m for m in manifest_refs(io, md, head(md)) if m.manifest_path.endswith("-l0.parquet"))
    assert ref.content_stats is not None and ref.content_stats[1].tight_bounds is None

    # under a manifest DV the aggregated bounds are known to be loose
    md, r = commit4(io, md, TreeChange(removed_entries=[_entry(io, md, "f1")]), operation=Operation.DELETE)
    rows = raw_rows(r.root_manifest_location)
    assert [x["content_stats"]["id"]["tight_bounds"] for x in rows] == [False, None]
    assert _tight_bounds_paths(r.root_manifest_location) == ["content_stats.id.tight_bounds"]
