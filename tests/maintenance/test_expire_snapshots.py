"""Snapshot expiry on real tables (v2, v3, v4): metadata, exactly which files go, and what still reads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from icefloe.catalog.base import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import NotFound, ValidationError
from icefloe.io.fileio import local_path
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.table.table import Table
from icefloe.tree.reachable import reachable_files
from icefloe.tree.read_seam import live_entries
from icefloe.tree.v4_read import read_root
from icefloe.txn.producers import OverwriteFiles
from tests.maintenance.helpers import batch, data_paths, delete_ids, make_table, rows_by_id
from tests.support.interop import read_with_duckdb, read_with_pyiceberg, sorted_rows

pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

REPO = Path(__file__).resolve().parents[2]


def _now_ms() -> int:
    return int(time.time() * 1000) + 1


def _files_on_disk(table: Table) -> set[str]:
    root = Path(local_path(table.location()) or "")
    return {str(p) for p in root.rglob("*") if p.is_file()}


def _local(paths: set[str] | tuple[str, ...]) -> set[str]:
    return {local_path(p) or p for p in paths}


def _needed_files(table: Table) -> set[str]:
    """Every file the table's retained snapshots read, as local paths (metadata.json excluded)."""
    reach = reachable_files(table.io, table.metadata, table.metadata.snapshots)
    return _local(reach.tree | reach.live)


def _rows_of(table: Table, snapshot_id: int) -> list[tuple[object, ...]]:
    got = table.scan(snapshot_id=snapshot_id, columns=("id", "cat", "val")).to_arrow()
    return sorted(tuple(r.values()) for r in got.to_pylist())


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_expire_all_but_current_deletes_what_only_old_snapshots_needed(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=3)  # 3 appends x 3 partitions
    first_files = data_paths(table)
    delete_ids(table, {0, 1, 2, 40})  # v2 position deletes, v3 DVs, v4 colocated DVs
    table.overwrite(batch(1000, 9), overwrite_filter="cat = 'a'")
    table.refresh()
    current = table.current_snapshot()
    assert current is not None
    rows = rows_by_id(table)
    replaced = first_files - data_paths(table)  # the 'a' files the overwrite dropped
    assert len(replaced) == 3
    old_ids = [s.snapshot_id for s in table.snapshots() if s.snapshot_id != current.snapshot_id]
    old_tree = reachable_files(table.io, table.metadata, [table.snapshot_by_id(i) for i in old_ids]).tree
    current_tree = reachable_files(table.io, table.metadata, [current]).tree
    needed_by_old_only = _local(old_tree - current_tree)
    assert needed_by_old_only
    on_disk = _files_on_disk(table)

    result = expire_snapshots(table, older_than=_now_ms())

    table.refresh()
    assert sorted(result.expired_snapshot_ids) == sorted(old_ids)
    assert [s.snapshot_id for s in table.snapshots()] == [current.snapshot_id]
    assert _local(result.deleted_content_files) >= _local(replaced)
    assert _local(result.deleted_metadata_files) == needed_by_old_only
    assert result.failed_deletes == ()
    gone = on_disk - _files_on_disk(table)
    assert gone == _local(result.deleted_metadata_files) | _local(result.deleted_content_files)
    assert _needed_files(table) <= _files_on_disk(table)  # nothing a retained snapshot reads is gone
    assert rows_by_id(table) == rows  # same rows, and on v3+ the same lineage
    for sid in old_ids:
        with pytest.raises(NotFound):
            table.scan(snapshot_id=sid).to_arrow()
    if fv in (2, 3):  # independent readers see the same current rows
        expected = sorted_rows(table.scan().to_arrow())
        assert sorted_rows(read_with_pyiceberg(table.metadata_location)) == expected
        assert sorted_rows(read_with_duckdb(table.metadata_location)) == expected


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_retained_snapshots_still_read_the_same(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=4)
    delete_ids(table, {5, 6})
    table.overwrite(batch(500, 6), overwrite_filter="cat = 'b'")
    table.refresh()
    snaps = table.snapshots()
    keep = [s.snapshot_id for s in snaps[-3:]]
    before = {sid: _rows_of(table, sid) for sid in keep}

    result = expire_snapshots(table, older_than=_now_ms(), retain_last=3)

    table.refresh()
    assert sorted(result.expired_snapshot_ids) == sorted(s.snapshot_id for s in snaps[:-3])
    assert [s.snapshot_id for s in table.snapshots()] == keep
    assert {sid: _rows_of(table, sid) for sid in keep} == before
    assert _needed_files(table) <= _files_on_disk(table)


@pytest.mark.parametrize("fv", [3, 4])
def test_superseded_deletion_vectors_are_deleted_once_unreachable(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=1, partitioned=False)  # one data file
    delete_ids(table, {1})
    delete_ids(table, {2})  # merges into a new DV; the first DV's Puffin file is superseded
    table.refresh()
    assert sorted(rows_by_id(table)) == sorted(set(range(30)) - {1, 2})
    puffins = {p for p in _files_on_disk(table) if p.endswith(".puffin")}
    assert len(puffins) == 2

    result = expire_snapshots(table, older_than=_now_ms())

    left = {p for p in _files_on_disk(table) if p.endswith(".puffin")}
    assert len(left) == 1 and _local(result.deleted_content_files) == puffins - left
    assert sorted(rows_by_id(table)) == sorted(set(range(30)) - {1, 2})


def test_v4_file_removed_by_a_manifest_dv_is_deleted_while_its_leaf_stays(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        make_table(catalog, "db.src", 4, batches=0).schema(),
        properties={"format-version": "4", "write.v4.root.max-inline-entries": "0"},
    )
    for k in range(3):
        table.append(batch(100 * k, 3))  # unpartitioned: one data file per append, each in a leaf
    table.append(batch(1000, 3))
    table.refresh()
    files = data_paths(table)
    table.delete("id >= 100 and id < 103")  # removes one file: its leaf's reference gets a manifest DV
    table.refresh()
    gone_file = files - data_paths(table)
    assert len(gone_file) == 1
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = read_root(table.io, table.metadata, snap.root_manifest)
    assert sum(ref.mdv is not None for ref in root.refs) == 1
    leaves_before = {p for p in _files_on_disk(table) if p.endswith("-l0.parquet")}

    result = expire_snapshots(table, older_than=_now_ms())

    assert _local(result.deleted_content_files) == _local(gone_file)
    assert leaves_before & _files_on_disk(table)  # the masked leaf is still referenced and kept
    assert sorted(rows_by_id(table)) == sorted({0, 1, 2, 200, 201, 202, 1000, 1001, 1002})


def test_tagged_and_branch_snapshots_keep_their_files(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=2)
    tagged = table.current_snapshot()
    assert tagged is not None
    table.manage_snapshots().create_tag("v1", tagged.snapshot_id).commit()
    tagged_rows = _rows_of(table, tagged.snapshot_id)
    table.overwrite(batch(900, 3))  # replaces every row: the tag alone keeps the old files alive
    table.refresh()

    result = expire_snapshots(table, older_than=_now_ms())

    table.refresh()
    assert tagged.snapshot_id not in result.expired_snapshot_ids
    assert _rows_of(table, tagged.snapshot_id) == tagged_rows
    assert result.deleted_content_files == ()  # every old data file is live in the tagged snapshot
    table.manage_snapshots().remove_tag("v1").commit()
    again = expire_snapshots(table, older_than=_now_ms())
    assert again.expired_snapshot_ids == (tagged.snapshot_id,)
    assert len(again.deleted_content_files) == 6  # 2 appends x 3 partitions


def test_nothing_to_expire_commits_nothing(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=2)
    location = table.metadata_location
    result = expire_snapshots(table)  # every snapshot is younger than the 5-day default
    assert result.expired_snapshot_ids == () and result.deleted_content_files == ()
    assert catalog.load_table("db.t").metadata_location == location


def test_delete_files_false_only_changes_metadata(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 2, batches=3)
    table.overwrite(batch(0, 3))
    on_disk = _files_on_disk(table)
    result = expire_snapshots(table, older_than=_now_ms(), delete_files=False)
    assert len(result.expired_snapshot_ids) == 3
    assert result.deleted_metadata_files == () and result.deleted_content_files == ()
    assert on_disk <= _files_on_disk(table)


def test_bad_arguments_change_nothing(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=2)
    location = table.metadata_location
    with pytest.raises(ValidationError, match="retain_last"):
        expire_snapshots(table, retain_last=0)
    current = table.current_snapshot()
    assert current is not None
    with pytest.raises(ValidationError, match="head of branch 'main'"):
        expire_snapshots(table, snapshot_ids=[current.snapshot_id])
    with pytest.raises(ValidationError, match="datetime"):
        expire_snapshots(table, older_than="yesterday")  # type: ignore[arg-type]
    assert catalog.load_table("db.t").metadata_location == location


def test_concurrent_commit_is_retained(catalog: Catalog) -> None:
    stale = make_table(catalog, "db.t", 3, batches=2)
    other = catalog.load_table("db.t")
    other.append(batch(500, 3))  # lands after ``stale`` loaded: the expiry retries on top of it
    newest = other.current_snapshot()
    assert newest is not None
    result = expire_snapshots(stale, older_than=_now_ms())
    fresh = catalog.load_table("db.t")
    assert [s.snapshot_id for s in fresh.snapshots()] == [newest.snapshot_id]
    assert len(result.expired_snapshot_ids) == 2
    assert len(rows_by_id(fresh)) == 63
    assert _needed_files(fresh) <= _files_on_disk(fresh)


@pytest.mark.parametrize("fv", [3, 4])
def test_crash_while_deleting_leaves_a_readable_table(catalog: SqlCatalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=3)
    table.overwrite(batch(0, 6))
    table.refresh()
    rows = rows_by_id(table)
    uri = catalog.properties["uri"]
    script = textwrap.dedent(
        f"""
        import os, time
        from icefloe.catalog import load_catalog
        from icefloe.io.fileio import FileIO
        from icefloe.maintenance.expire_snapshots import expire_snapshots
        calls = []
        real = FileIO.delete
        def dying_delete(self, location, missing_ok=False):
            calls.append(location)
            if len(calls) == 3:
                os._exit(9)  # killed in the middle of the file deletion
            real(self, location, missing_ok)
        FileIO.delete = dying_delete
        catalog = load_catalog("{catalog.name}", uri="{uri}", warehouse="{catalog.warehouse}")
        expire_snapshots(catalog.load_table("db.t"), older_than=int(time.time() * 1000) + 1)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    fresh = catalog.load_table("db.t")
    assert len(fresh.snapshots()) == 1  # the expiry committed before it started deleting
    assert rows_by_id(fresh) == rows
    assert _needed_files(fresh) <= _files_on_disk(fresh)


@pytest.mark.parametrize("fv", [2, 4])
def test_a_file_named_in_two_spellings_is_not_deleted(catalog: Catalog, fv: int) -> None:
    # An engine that spells local paths file:/x re-commits a file another wrote as file:///x:
    # the old snapshot expires, but the file is live in the new one under its other name.
    table = make_table(catalog, "db.t", fv, batches=1, partitioned=False)
    snap = table.current_snapshot()
    assert snap is not None
    (entry,) = list(live_entries(table.io, table.metadata, snap))
    path = local_path(entry.data_file.file_path) or ""
    respelled = entry.data_file.with_changes(file_path="file:" + path)
    assert respelled.file_path != entry.data_file.file_path
    with table.transaction() as tx:
        tx.add_action(OverwriteFiles(removed=[entry], added=[respelled], base_snapshot_id=snap.snapshot_id))
    rows = rows_by_id(table)

    result = expire_snapshots(table, older_than=_now_ms())

    assert result.expired_snapshot_ids == (snap.snapshot_id,)
    assert result.deleted_content_files == ()
    assert Path(local_path(entry.data_file.file_path) or "").exists()
    assert rows_by_id(table) == rows


def test_gc_disabled_refuses_deleting_files_but_allows_metadata_expiry(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=2)
    table.set_properties(**{"gc.enabled": "false"})  # the table's files may be shared
    table.overwrite(batch(0, 3))
    location, on_disk = table.metadata_location, _files_on_disk(table)
    with pytest.raises(ValidationError, match=r"gc\.enabled=false"):
        expire_snapshots(table, older_than=_now_ms())
    assert catalog.load_table("db.t").metadata_location == location and _files_on_disk(table) == on_disk
    result = expire_snapshots(table, older_than=_now_ms(), delete_files=False)
    assert len(result.expired_snapshot_ids) == 2 and on_disk <= _files_on_disk(table)
