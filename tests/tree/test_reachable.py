"""``tree.reachable``: the files snapshots are made of, checked against the planner and the object path."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.spec.content import ManifestFile
from icefloe.table.table import Table
from icefloe.tree import reachable
from icefloe.tree.reachable import reachable_files
from tests.maintenance.helpers import batch, delete_ids, make_table


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _planned_files(table: Table, snapshot_id: int) -> set[str]:
    """Data files a scan reads and every delete file applied to them (DV Puffin files included)."""
    out: set[str] = set()
    for task in table.scan(snapshot_id=snapshot_id).plan_files():
        out.add(task.file_path)
        out.update(d.delete_file.file_path for d in task.deletes)
    return out


def _busy_table(catalog: Catalog, fv: int, props: dict[str, str] | None = None) -> Table:
    table = make_table(catalog, "db.t", fv, batches=3)
    for key, value in (props or {}).items():
        table.set_properties(**{key: value})
    delete_ids(table, {0, 4, 31})  # v2 position deletes, v3 DVs, v4 colocated DVs
    table.overwrite(batch(500, 6), overwrite_filter="cat = 'b'")
    delete_ids(table, {500})
    table.refresh()
    return table


@pytest.mark.parametrize(
    ("fv", "props"),
    [
        (2, None),
        (3, None),
        (4, None),
        (4, {"write.v4.root.max-inline-entries": "0"}),  # leaves, and removals as manifest DVs
    ],
)
def test_live_files_are_what_the_planner_reads(
    catalog: Catalog, fv: int, props: dict[str, str] | None
) -> None:
    table = _busy_table(catalog, fv, props)
    for snapshot in table.snapshots():
        got = reachable_files(table.io, table.metadata, [snapshot]).live
        assert got == _planned_files(table, snapshot.snapshot_id), snapshot.operation


def test_v3_table_upgraded_to_v4_reaches_its_legacy_manifests(catalog: Catalog) -> None:
    table = _busy_table(catalog, 3)
    v3_tree = reachable_files(table.io, table.metadata, [table.current_snapshot()]).tree  # type: ignore[list-item]
    table.upgrade_format_version(4)
    table.append(batch(900, 3))
    table.refresh()
    current = table.current_snapshot()
    assert current is not None and current.root_manifest is not None
    got = reachable_files(table.io, table.metadata, [current])
    legacy = {p for p in v3_tree if p.endswith("-m0.avro") or p.endswith("-m1.avro")}
    assert legacy & got.tree  # the first v4 root still references v3 Avro manifests
    assert got.live == _planned_files(table, current.snapshot_id)


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_columnar_and_object_paths_agree(catalog: Catalog, fv: int, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _busy_table(catalog, fv, {"write.v4.root.max-inline-entries": "2"})
    snapshots = table.snapshots()
    columnar = reachable_files(table.io, table.metadata, snapshots)

    def no_columns(io: object, md: object, ref: ManifestFile) -> None:
        return None  # forced object path

    monkeypatch.setattr(reachable.read_seam, "read_live_columns", no_columns)
    objects = reachable_files(table.io, table.metadata, snapshots)
    assert columnar.live == objects.live and columnar.tree == objects.tree
    assert any(p.endswith(".puffin") for p in columnar.live) == (fv >= 3)
