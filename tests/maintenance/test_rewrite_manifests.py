"""Manifest rewrite on real tables: fewer data manifests, same rows, lineage and sequence numbers kept."""

from __future__ import annotations

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.maintenance.rewrite_manifests import rewrite_manifests
from icefloe.spec.content import ManifestContent
from icefloe.tree.read_seam import live_entries
from icefloe.tree.v3_read import manifest_refs, read_entries
from tests.maintenance.helpers import delete_ids, make_table

pytestmark = [pytest.mark.catalog_namespaces("db")]


def _data_manifests(table: object) -> int:
    md = table.metadata  # type: ignore[attr-defined]
    refs = manifest_refs(table.io, md, md.current_snapshot())  # type: ignore[attr-defined]
    return sum(1 for m in refs if m.content == ManifestContent.DATA)


@pytest.mark.parametrize("fv", [1, 2, 3])
def test_rewrite_manifests_packs_data_manifests(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=4, rows=6)
    if fv >= 2:
        delete_ids(table, {0, 7})
    before_rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    md = table.metadata
    before = {
        (e.data_file.file_path, e.snapshot_id, e.sequence_number, e.data_file.first_row_id)
        for e in live_entries(table.io, md, md.current_snapshot())
    }
    assert _data_manifests(table) == 4
    head = table.current_snapshot().snapshot_id
    result = rewrite_manifests(table)
    assert (result.rewritten_manifests, result.added_manifests) == (4, 1)
    table = table.refresh()
    snap = table.current_snapshot()
    assert snap.operation == "replace" and snap.parent_snapshot_id == head
    assert snap.summary["manifests-replaced"] == "4" and snap.summary["manifests-created"] == "1"
    assert snap.summary["total-records"] == str(24)
    assert _data_manifests(table) == 1
    md = table.metadata
    after = {
        (e.data_file.file_path, e.snapshot_id, e.sequence_number, e.data_file.first_row_id)
        for e in live_entries(table.io, md, md.current_snapshot())
    }
    assert after == before
    assert sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before_rows
    assert len(before_rows) == (22 if fv >= 2 else 24)
    # a second run has a single manifest left: nothing to do, no snapshot
    assert rewrite_manifests(table) == type(result)(0, 0)
    assert table.refresh().current_snapshot().snapshot_id == snap.snapshot_id


def test_rewrite_manifests_of_one_spec(catalog: Catalog) -> None:
    from icefloe.spec.transforms import BucketTransform
    from tests.maintenance.helpers import batch

    table = make_table(catalog, "db.t", 2, batches=2, rows=6)  # two manifests of spec 0
    table.update_spec().add_field("id", BucketTransform(2)).commit()
    table = table.refresh()
    table.append(batch(100, 6))
    table.append(batch(200, 6))
    table = table.refresh()
    md = table.metadata
    specs = sorted(
        m.partition_spec_id
        for m in manifest_refs(table.io, md, md.current_snapshot())  # type: ignore[arg-type]
    )
    assert specs == [0, 0, 1, 1]
    result = rewrite_manifests(table, spec_id=1)
    assert (result.rewritten_manifests, result.added_manifests) == (2, 1)
    table = table.refresh()
    md = table.metadata
    specs = sorted(
        m.partition_spec_id
        for m in manifest_refs(table.io, md, md.current_snapshot())  # type: ignore[arg-type]
    )
    assert specs == [0, 0, 1]
    assert table.scan().to_arrow().num_rows == 24


def test_rewrite_manifests_sorted_by_a_partition_field(catalog: Catalog) -> None:
    """``sort_by`` (Iceberg's procedure argument) orders the entries by partition value before they
    are packed, so each manifest covers few values; rows and entries are unchanged."""
    table = make_table(catalog, "db.t", 2, batches=4, rows=6)  # one file per category per append
    table.set_properties(**{"commit.manifest.target-size-bytes": "1"})  # one entry per manifest
    with pytest.raises(ValidationError, match="sort_by names no partition field: nope"):
        rewrite_manifests(table, sort_by=["nope"])
    before = sorted(r["id"] for r in table.scan().to_arrow().to_pylist())
    result = rewrite_manifests(table.refresh(), sort_by=["cat"])
    assert result.added_manifests == 12
    table = table.refresh()
    md = table.metadata
    snap = md.current_snapshot()
    assert snap is not None
    order = [
        e.data_file.partition[0]
        for m in manifest_refs(table.io, md, snap)
        for e in read_entries(table.io, md, m)
    ]
    assert order == sorted(order) and sorted(set(order)) == ["a", "b", "c"]
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == before
