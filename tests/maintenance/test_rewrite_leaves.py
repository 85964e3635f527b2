"""rewrite_manifests on v4 tables: the root's inline entries and small leaves re-packed into one leaf
by the write seam's compaction; rows, lineage and sequence numbers kept; planning still prunes."""

from __future__ import annotations

import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import Unsupported
from icefloe.maintenance.rewrite_manifests import rewrite_manifests
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries, manifest_refs
from tests.maintenance.helpers import SCHEMA, batch, delete_ids

pytestmark = [pytest.mark.catalog_namespaces("db")]


def _shape(table: Table) -> tuple[int, int]:
    """(leaf references, synthetic references for inline entries) of the current root."""
    snap = table.current_snapshot()
    assert snap is not None
    refs = manifest_refs(table.io, table.metadata, snap)
    inline = sum(1 for m in refs if m.manifest_path == snap.root_manifest)
    return len(refs) - inline, inline


def _entries(table: Table) -> set[tuple[str, int | None, int | None, int | None, int | None]]:
    md = table.metadata
    return {
        (
            e.data_file.file_path,
            e.snapshot_id,
            e.sequence_number,
            e.file_sequence_number,
            e.data_file.first_row_id,
        )
        for e in live_entries(table.io, md, md.current_snapshot())
    }


def _rows(table: Table) -> list[dict[str, object]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: int(r["id"]))  # type: ignore[call-overload]


def test_rewrite_manifests_v4_repacks_inline_entries_and_small_leaves(catalog: Catalog) -> None:
    # two inline entries at most and no automatic compaction: every third append flushes a leaf
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        properties={
            "format-version": "4",
            "write.v4.root.max-inline-entries": "2",
            "write.v4.compaction.enabled": "false",
        },
    )
    for k in range(7):
        table.append(batch(10 * k, 10))
    table = table.refresh()
    delete_ids(table, {3, 65})
    table = table.refresh()
    leaves, inline = _shape(table)
    assert leaves >= 2 and inline == 1
    before_rows, before_entries = _rows(table), _entries(table)
    head = table.current_snapshot().snapshot_id
    result = rewrite_manifests(table)
    assert (result.rewritten_manifests, result.added_manifests) == (leaves + inline, 1)
    table = table.refresh()
    snap = table.current_snapshot()
    assert snap.operation == "replace" and snap.parent_snapshot_id == head
    assert _shape(table) == (1, 0)
    assert _rows(table) == before_rows and len(before_rows) == 68
    assert _entries(table) == before_entries
    # the new leaf still prunes by column metrics: one file (of the ten) for one id
    assert len(table.scan("id = 42").plan_files()) == 1
    assert [r["id"] for r in table.scan("id = 42").to_arrow().to_pylist()] == [42]
    # once packed there is nothing left to do: no snapshot
    assert rewrite_manifests(table) == type(result)(0, 0)
    assert table.refresh().current_snapshot().snapshot_id == snap.snapshot_id
    assert table.properties["write.v4.compaction.enabled"] == "false"  # the overrides were per commit


def test_rewrite_manifests_v4_refuses_spec_and_sort_options(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "4"})
    table.append(batch(0, 3))
    with pytest.raises(Unsupported, match="spec_id and sort_by"):
        rewrite_manifests(table.refresh(), spec_id=0)
    assert _shape(table.refresh()) == (0, 1)  # nothing written
