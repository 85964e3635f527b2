"""Position delete rewrite: one position delete file per data file on v2, a no-op on DV tables."""

from __future__ import annotations

import pytest

from icefloe.catalog.base import Catalog
from icefloe.maintenance.rewrite_position_deletes import (
    RewritePositionDeletesResult,
    rewrite_position_delete_files,
)
from icefloe.spec.content import FileContent
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries
from tests.maintenance.helpers import delete_ids, make_table

pytestmark = [pytest.mark.catalog_namespaces("db")]


def _deletes(table: Table) -> list[tuple[str, int | None, int]]:
    md = table.metadata
    return sorted(
        (e.data_file.file_path, e.sequence_number, e.data_file.record_count)
        for e in live_entries(table.io, md, md.current_snapshot())
        if e.data_file.content == FileContent.POSITION_DELETES
    )


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


def test_merges_the_position_deletes_of_each_data_file_v2(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 2, batches=1, rows=6)  # files: a {0, 3}, b {1, 4}, c {2, 5}
    delete_ids(table, {0})
    delete_ids(table, {3})
    delete_ids(table, {1})
    table = table.refresh()
    before = _deletes(table)
    assert len(before) == 3 and _ids(table) == [2, 4, 5]
    head = table.current_snapshot().snapshot_id
    result = rewrite_position_delete_files(table)
    merged = [d for d in before if d[1] in (2, 3)]  # the two files of data file a (sequence 2 and 3)
    assert result.rewritten_delete_files == 2 and result.added_delete_files == 1
    assert result.added_bytes > 0
    assert result.rewritten_bytes == sum(table.io.new_input(p).length for p, _, _ in merged)
    table = table.refresh()
    snap = table.current_snapshot()
    assert snap.operation == "replace" and snap.parent_snapshot_id == head
    after = _deletes(table)
    assert len(after) == 2
    new = [d for d in after if d not in before]
    assert [(seq, count) for _, seq, count in new] == [(3, 2)]  # keeps the highest sequence number
    assert _ids(table) == [2, 4, 5]
    assert rewrite_position_delete_files(table) == RewritePositionDeletesResult()


def test_one_delete_file_per_data_file_is_rewritten_when_asked(catalog: Catalog) -> None:
    """``min_delete_files=1`` (Iceberg's ``rewrite-all``) rewrites data files with a single delete
    file too; the default leaves them, and a larger minimum leaves data files with fewer."""
    table = make_table(catalog, "db.t", 2, batches=1, rows=6)  # files: a {0, 3}, b {1, 4}, c {2, 5}
    delete_ids(table, {0})
    delete_ids(table, {3})
    delete_ids(table, {1})
    table = table.refresh()
    assert rewrite_position_delete_files(table, min_delete_files=3) == RewritePositionDeletesResult()
    before = _deletes(table)
    result = rewrite_position_delete_files(table, min_delete_files=1)
    assert (result.rewritten_delete_files, result.added_delete_files) == (3, 2)
    table = table.refresh()
    after = _deletes(table)
    assert not set(after) & set(before) and sorted(count for _, _, count in after) == [1, 2]
    assert _ids(table) == [2, 4, 5]


@pytest.mark.parametrize("fv", [3, 4])
def test_deletion_vectors_are_left_alone(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv, batches=1, rows=6)
    delete_ids(table, {0})
    delete_ids(table, {3})
    table = table.refresh()
    head = table.current_snapshot().snapshot_id
    assert rewrite_position_delete_files(table) == RewritePositionDeletesResult()
    assert table.refresh().current_snapshot().snapshot_id == head
    assert _ids(table) == [1, 2, 4, 5]
