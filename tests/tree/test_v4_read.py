"""v4 read seam: inheritance, manifest DVs, inline entries, copy-on-write trees, leaf pruning.

Trees are written by hand with the byte layer (as another writer might) and read back through
the version-neutral seam: ``manifest_refs``, ``read_entries``, ``live_entries``, ``plan_files``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.errors import CorruptMetadata
from icefloe.expressions.parser import parse
from icefloe.formats.v4 import mumbling
from icefloe.formats.v4.content_entry import ContentRow, write_content_entries
from icefloe.formats.v4.content_stats import ColumnStats
from icefloe.io import FileIO
from icefloe.scan.planner import PlanStats, plan_files
from icefloe.spec.content import (
    DataFile,
    DeletionVectorRef,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import LongType
from icefloe.tree import v4_read
from icefloe.tree.changes import TreeChange
from icefloe.tree.read_seam import live_entries, manifest_refs, read_entries
from icefloe.tree.v4_read import stats_manifest_filter
from tests.tree.helpers import SCHEMA, data_file, new_metadata
from tests.tree.v4_helpers import commit4, head

E = EntryStatus


def _df(name: str, rows: int, **kw: Any) -> DataFile:
    return data_file("a", rows=rows, file_path=f"file:///data/{name}.parquet", **kw)


def _e(
    status: EntryStatus, name: str, rows: int, sid: int | None = None, seq: int | None = None, **kw: object
) -> ManifestEntry:
    fseq = kw.pop("fseq", seq)
    dv_sid = kw.pop("dv_sid", None)
    return ManifestEntry(status, sid, seq, fseq, _df(name, rows, **kw), dv_sid)  # type: ignore[arg-type]


def _counts(rows: list[ManifestEntry]) -> dict[str, int]:
    """The reference counts a writer records for a leaf holding ``rows`` (readers check them)."""
    out = {"record_count": len(rows)}
    for name in ("added", "existing", "deleted", "replaced", "modified"):
        mine = [e for e in rows if e.status.name.lower() == name]
        out[f"{name}_files_count"] = len(mine)
        out[f"{name}_rows_count"] = sum(e.data_file.record_count for e in mine)
    return out


def _ref(path: str, **kw: object) -> ManifestFile:
    base: dict[str, object] = {
        "manifest_path": path,
        "manifest_length": 100,
        "partition_spec_id": 0,
        "sequence_number": 7,
        "min_sequence_number": 2,
        "added_snapshot_id": 70,
        "added_files_count": 3,
        "existing_files_count": 1,
        "deleted_files_count": 1,
        "added_rows_count": 19,
        "existing_rows_count": 3,
        "deleted_rows_count": 4,
        "format_version": 4,
        "first_row_id": 1000,
    }
    base.update(kw)
    return ManifestFile(**base)  # type: ignore[arg-type]


def _write(md: TableMetadata, path: Path, rows: list[ContentRow], kind: str, **kw: object) -> str:
    write_content_entries(str(path), rows, table_schema=SCHEMA, specs=md.partition_specs, kind=kind, **kw)  # type: ignore[arg-type]
    return f"file://{path}"


def _snapshot_with_root(md: TableMetadata, root: str) -> tuple[TableMetadata, Snapshot]:
    snap = Snapshot(
        snapshot_id=77, timestamp_ms=1, sequence_number=7, root_manifest=root, first_row_id=0, added_rows=0
    )
    return md.with_changes(snapshots=(snap,), current_snapshot_id=77, last_sequence_number=7), snap


def test_leaf_rows_inherit_from_the_reference_and_the_mdv_hides_rows(tmp_path: Path) -> None:
    md = new_metadata(tmp_path, 4)
    rows = [
        _e(E.ADDED, "a", 10),  # all inherited
        _e(E.EXISTING, "b", 3, sid=5, seq=2, first_row_id=500),
        _e(E.DELETED, "c", 4, sid=9, seq=3),  # deleted rows neither take nor advance row ids
        _e(E.ADDED, "d", 5, seq=4, fseq=None),  # explicit data sequence number; masked by the MDV
        _e(E.ADDED, "e", 1),
    ]
    leaf = _write(md, tmp_path / "leaf.parquet", list(rows), "leaf")
    mdv = mumbling.encode([3])
    ref = _ref(leaf, mdv=mdv, dv_snapshot_id=76, deleted_positions=mdv, status=E.MODIFIED, **_counts(rows))
    root = _write(md, tmp_path / "root.parquet", [ref], "root", snapshot_id=77, sequence_number=7)
    md, snap = _snapshot_with_root(md, root)
    got = [
        (
            e.data_file.file_path[-9:],
            e.status,
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            e.data_file.first_row_id,
        )
        for e in live_entries(FileIO(), md, snap)
    ]
    assert got == [
        ("a.parquet", E.ADDED, 70, 7, 7, 1000),
        ("b.parquet", E.EXISTING, 5, 2, 2, 500),
        ("e.parquet", E.ADDED, 70, 7, 7, 1015),
    ]
    (mref,) = manifest_refs(FileIO(), md, snap)
    assert (mref.status, mref.added_snapshot_id, mref.dv_snapshot_id, mref.first_row_id) == (
        E.MODIFIED,
        70,
        76,
        1000,
    )
    statuses = [
        (e.data_file.file_path[-9:], e.status, e.snapshot_id) for e in read_entries(FileIO(), md, mref)
    ]
    assert statuses == [
        ("a.parquet", E.ADDED, 70),
        ("b.parquet", E.EXISTING, 5),
        ("c.parquet", E.DELETED, 9),
        ("d.parquet", E.DELETED, 76),  # removed through the MDV by snapshot 76
        ("e.parquet", E.ADDED, 70),
    ]
    # without this snapshot's delta, an older masked row is simply not there
    older = mref.with_changes(deleted_positions=None, status=E.EXISTING)
    assert [e.data_file.file_path[-9:] for e in read_entries(FileIO(), md, older)] == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
        "e.parquet",
    ]


def test_copy_on_write_trees_from_other_writers_and_colocated_dvs(tmp_path: Path) -> None:
    md = new_metadata(tmp_path, 4)
    dv_old = DeletionVectorRef("file:///data/dv1.puffin", 4, 30, 1)
    dv_new = DeletionVectorRef("file:///data/dv2.puffin", 4, 38, 3)
    rows = [
        _e(E.REPLACED, "x", 10, sid=80, seq=6, first_row_id=0, deletion_vector=dv_old, dv_sid=75),
        _e(E.MODIFIED, "x", 10, sid=60, seq=6, first_row_id=0, deletion_vector=dv_new, dv_sid=80),
        _e(E.EXISTING, "y", 5, sid=60, seq=6, first_row_id=10),
    ]
    leaf = _write(md, tmp_path / "leaf.parquet", list(rows), "leaf")
    ref = _ref(leaf, added_snapshot_id=80, sequence_number=8, first_row_id=15, **_counts(rows))
    root = _write(md, tmp_path / "root.parquet", [ref], "root", snapshot_id=77, sequence_number=7)
    md, snap = _snapshot_with_root(md, root)
    live = list(live_entries(FileIO(), md, snap))
    assert [(e.data_file.file_path[-9:], e.status, e.snapshot_id, e.dv_snapshot_id) for e in live] == [
        ("x.parquet", E.MODIFIED, 60, 80),
        ("y.parquet", E.EXISTING, 60, None),
    ]
    tasks = plan_files(FileIO(), md, snap)
    deletes = {
        t.file_path[-9:]: [(d.delete_file.file_path, d.delete_file.referenced_data_file) for d in t.deletes]
        for t in tasks
    }
    assert deletes == {"x.parquet": [("file:///data/dv2.puffin", "file:///data/x.parquet")], "y.parquet": []}


def test_inline_root_entries_and_their_synthetic_reference(tmp_path: Path) -> None:
    md = new_metadata(tmp_path, 4)
    eq = _df("eq", 2).with_changes(content=FileContent.EQUALITY_DELETES, equality_ids=(1,))
    rows: list[ContentRow] = [
        _e(E.EXISTING, "i1", 4, sid=60, seq=5, first_row_id=40),
        _e(E.REPLACED, "i2", 4, sid=77, seq=6, first_row_id=44),
        ManifestEntry(E.EXISTING, 70, 6, 6, eq),
    ]
    root = _write(md, tmp_path / "root.parquet", rows, "root", snapshot_id=77, sequence_number=7)
    md, snap = _snapshot_with_root(md, root)
    refs = manifest_refs(FileIO(), md, snap)
    assert [(r.manifest_path, r.content, r.added_files_count, r.replaced_files_count) for r in refs] == [
        (root, ManifestContent.DATA, 0, 1),
        (root, ManifestContent.DELETES, 0, 0),
    ]
    assert [e.data_file.file_path[-10:] for e in read_entries(FileIO(), md, refs[0])] == [
        "i1.parquet",
        "i2.parquet",
    ]
    assert [e.data_file.file_path[-10:] for e in read_entries(FileIO(), md, refs[1])] == ["eq.parquet"]
    live = [(e.data_file.file_path[-10:], e.status) for e in live_entries(FileIO(), md, snap)]
    assert live == [("i1.parquet", E.EXISTING), ("eq.parquet", E.EXISTING)]
    (task,) = plan_files(FileIO(), md, snap)
    assert [d.delete_file.file_path for d in task.deletes] == ["file:///data/eq.parquet"]  # data seq 5 < 6


def _bounded(tmp_path: Path, name: str, lo: int, hi: int) -> DataFile:
    return data_file(
        "a",
        rows=10,
        file_path=f"file://{tmp_path}/t/data/{name}.parquet",
        lower_bounds={1: to_bytes(LongType(), lo)},
        upper_bounds={1: to_bytes(LongType(), hi)},
        null_value_counts={1: 0},
    )


def test_planning_skips_leaves_on_aggregated_stats(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4, {"write.v4.root.max-inline-entries": "0"})
    for k in range(3):
        files = [_bounded(tmp_path, f"f{k}{j}", 100 * k + 10 * j, 100 * k + 10 * j + 9) for j in range(2)]
        md, r = commit4(io, md, TreeChange(added_data_files=files))
    refs = r.manifests
    assert [(m.content_stats[1].lower_bound, m.content_stats[1].upper_bound) for m in refs] == [  # type: ignore[index]
        (200, 219),
        (100, 119),
        (0, 19),
    ]
    stats = PlanStats()
    tasks = plan_files(io, md, md.current_snapshot(), parse("id >= 105 and id < 112"), stats=stats)
    assert sorted(t.file_path.rsplit("/", 1)[1] for t in tasks) == ["f10.parquet", "f11.parquet"]
    assert (stats.manifests_total, stats.manifests_skipped, stats.files_considered) == (3, 2, 2)
    # under an MDV the bounds are loose but still valid: the leaf is kept, its live files filtered
    victim = next(e for e in live_entries(io, md, head(md)) if e.data_file.file_path.endswith("f10.parquet"))
    md, r = commit4(io, md, TreeChange(removed_entries=[victim]))
    modified = next(m for m in r.manifests if m.status == E.MODIFIED)
    assert modified.content_stats[1] == ColumnStats(100, 119, False, 20, 0)  # type: ignore[index]
    stats = PlanStats()
    tasks = plan_files(io, md, md.current_snapshot(), parse("id >= 105 and id < 112"), stats=stats)
    assert [t.file_path.rsplit("/", 1)[1] for t in tasks] == ["f11.parquet"]
    assert (stats.manifests_total, stats.manifests_skipped) == (3, 2)
    keep = stats_manifest_filter(md.schema(), parse("id > 1000"))
    assert [keep(m) for m in manifest_refs(io, md, md.current_snapshot())] == [False, False, False]  # type: ignore[arg-type]


def test_unpartitioned_files_inline_and_in_leaves(tmp_path: Path) -> None:
    io, md = FileIO(), new_metadata(tmp_path, 4, {"write.v4.root.max-inline-entries": "2"})
    u = [
        data_file(None, rows=3, spec_id=1, file_path=f"file://{tmp_path}/t/data/u{i}.parquet")
        for i in range(3)
    ]
    md, r = commit4(io, md, TreeChange(added_data_files=u[:1]))
    md, r = commit4(io, md, TreeChange(added_data_files=u[1:]))  # 3 root-level entries > 2: a leaf
    (ref,) = r.manifests
    assert (ref.partition_spec_id, ref.record_count, ref.first_row_id) == (1, 3, 3)  # u0 keeps row id 0
    got = [
        (e.data_file.spec_id, e.data_file.partition, e.data_file.first_row_id)
        for e in live_entries(io, md, head(md))
    ]
    assert got == [(1, (), 0), (1, (), 3), (1, (), 6)]


class _NoFiles:
    """A FileIO that reads nothing: a root found in the cache needs none, one that is not fails."""

    def new_input(self, location: str) -> Any:
        raise LookupError(f"read {location}")


def test_the_sixteen_roots_used_last_are_kept(tmp_path: Path) -> None:
    """A hit refreshes a root, so the least recently used one is read again after a seventeenth."""
    v4_read.clear_root_cache()
    md = new_metadata(tmp_path, 4)
    roots = [
        v4_read.RootContents(f"file:///t/metadata/root-{i}.parquet", 100 + i, (), (), {}) for i in range(17)
    ]
    for root in roots[:16]:
        v4_read.remember_written_root(md, root)
    assert v4_read.read_root(_NoFiles(), md, roots[0].location) is roots[0]  # now the most recent
    v4_read.remember_written_root(md, roots[16])
    kept = [r for r in roots if r is not roots[1]]
    assert [v4_read.read_root(_NoFiles(), md, r.location) is r for r in kept] == [True] * 16
    with pytest.raises(CorruptMetadata, match=r"root-1\.parquet: cannot read the root manifest: LookupError"):
        v4_read.read_root(_NoFiles(), md, roots[1].location)
    v4_read.clear_root_cache()
