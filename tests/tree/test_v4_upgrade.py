"""Upgraded trees: legacy v1–v3 manifests (with v3 deletion vectors) under a v4 root."""

from __future__ import annotations

from pathlib import Path

from icefloe.io import FileIO
from icefloe.scan.planner import plan_files
from icefloe.spec.content import DeletionVectorRef, EntryStatus, ManifestContent
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries, manifest_refs, read_entries
from tests.tree.helpers import commit, data_file, delete_file, new_metadata
from tests.tree.v4_helpers import commit4, head, raw_rows


def _deletes(io: FileIO, md: TableMetadata) -> dict[str, list[str]]:
    tasks = plan_files(io, md, md.current_snapshot())
    return {t.file_path.rsplit("/", 1)[1]: [d.delete_file.file_path for d in t.deletes] for t in tasks}


def test_legacy_manifests_with_v3_dvs_under_a_v4_root(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 3)
    f, g, h = data_file("a", rows=10), data_file("a", rows=20), data_file("b", rows=5)
    md, _ = commit(io, md, TreeChange(added_data_files=[f, g, h]))
    dv_f, dv_g = delete_file(f, dv=True), delete_file(g, dv=True)
    md, _ = commit(io, md, TreeChange(added_delete_files=[dv_f, dv_g]))
    v3_refs = manifest_refs(io, md, head(md))
    expected = {
        f.file_path.rsplit("/", 1)[1]: [dv_f.file_path],
        g.file_path.rsplit("/", 1)[1]: [dv_g.file_path],
        h.file_path.rsplit("/", 1)[1]: [],
    }
    assert _deletes(io, md) == expected

    md = md.with_changes(format_version=4)  # UpgradeFormatVersion(4): metadata only
    assert _deletes(io, md) == expected
    md, r = commit4(io, md, TreeChange(added_data_files=[data_file("c", rows=1)]))
    root = raw_rows(r.root_manifest_location)
    legacy = [
        (x["content_type"], x["format_version"], x["spec_id"], x["tracking"]["status"]) for x in root[:2]
    ]
    assert legacy == [(4, 0, 0, 0), (3, 0, 0, 0)]  # manifest list order: the delete manifest first
    assert [
        (x["tracking"]["snapshot_id"], x["tracking"]["sequence_number"], x["tracking"]["first_row_id"])
        for x in root[:2]
    ] == [(m.added_snapshot_id, m.sequence_number, m.first_row_id) for m in v3_refs]
    assert [x["record_count"] for x in root[:2]] == [2, 3]
    assert (root[2]["content_type"], root[2]["tracking"]["first_row_id"]) == (0, 35)
    assert {k: v for k, v in _deletes(io, md).items() if k in expected} == expected

    # a v4 DV for f: its legacy manifest becomes a v4 leaf with a REPLACED + MODIFIED pair, and the
    # legacy v3 DV is removed (its manifest still holds g's DV, so it stays an Avro manifest)
    legacy_dv = next(e for e in live_entries(io, md, head(md)) if e.data_file.file_path == dv_f.file_path)
    new_dv = DeletionVectorRef("file:///data/v4dv.puffin", 4, 40, 3)
    md, r = commit4(io, md, TreeChange(added_dvs={f.file_path: new_dv}, removed_entries=[legacy_dv]))
    refs = r.manifests
    assert [(m.format_version, m.content, m.status) for m in refs] == [
        (3, ManifestContent.DELETES, EntryStatus.ADDED),  # rewritten legacy deletes (Avro, format 0)
        (4, ManifestContent.DATA, EntryStatus.ADDED),  # the legacy data manifest as a v4 leaf
    ]
    assert refs[0].manifest_path.endswith(".avro") and refs[1].manifest_path.endswith(".parquet")
    assert [(e.data_file.file_path, e.status) for e in read_entries(io, md, refs[0])] == [
        (dv_f.file_path, EntryStatus.DELETED),
        (dv_g.file_path, EntryStatus.EXISTING),
    ]
    leaf = raw_rows(refs[1].manifest_path)
    assert [(x["location"], x["tracking"]["status"], x["tracking"]["first_row_id"]) for x in leaf] == [
        (f.file_path, 3, 0),
        (f.file_path, 4, 0),
        (g.file_path, 0, 10),
        (h.file_path, 0, 30),
    ]
    assert _deletes(io, md)[f.file_path.rsplit("/", 1)[1]] == [new_dv.location]
    assert _deletes(io, md)[g.file_path.rsplit("/", 1)[1]] == [dv_g.file_path]
    assert r.summary["removed-dvs"] == "1" and r.summary["added-dvs"] == "1"
