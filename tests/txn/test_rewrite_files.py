"""RewriteFiles (operation ``replace``): validation against concurrent commits, sequence numbers kept."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import CommitConflict, ValidationError
from icefloe.io.fileio import local_path
from icefloe.maintenance.rewrite_data_files import RewritePlan, commit_rewrite, plan_rewrite, write_group
from icefloe.spec.content import DataFile, FileContent
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries
from icefloe.txn.rewrite_files import RewriteFiles
from tests.maintenance.helpers import batch, data_paths, delete_ids, make_table, rows_by_id


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _prepare(table: Table) -> tuple[RewritePlan, list[DataFile]]:
    """Plan and write a full rewrite without committing it."""
    plan = plan_rewrite(table.io, table.metadata, table.current_snapshot())
    added = [f for g in plan.groups for f in write_group(table.io, table.metadata, g, plan.target_file_size)]
    assert added
    return plan, added


def _exists(f: DataFile) -> bool:
    return Path(local_path(f.file_path)).exists()


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_concurrent_deletes_on_a_rewritten_file_fail_the_rewrite(catalog: Catalog, fv: int) -> None:
    table = make_table(catalog, "db.t", fv)
    plan, added = _prepare(table)
    other = catalog.load_table("db.t")
    delete_ids(other, {7})  # a concurrent row delete in a file being rewritten
    expected = rows_by_id(other)
    with pytest.raises(CommitConflict, match="concurrent"):
        commit_rewrite(table, plan, added)
    assert not any(_exists(f) for f in added)  # the rewrite's files are gone
    assert rows_by_id(table.refresh()) == expected
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]


def test_concurrent_removal_of_a_rewritten_file_fails(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3)
    plan, added = _prepare(table)
    catalog.load_table("db.t").delete("cat = 'b'")
    with pytest.raises(CommitConflict, match="removed by a concurrent commit"):
        commit_rewrite(table, plan, added)
    assert not any(_exists(f) for f in added)
    assert sorted(rows_by_id(table.refresh())) == [i for i in range(90) if i % 3 != 1]


def test_concurrent_append_is_kept(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3)
    before = rows_by_id(table)
    plan, added = _prepare(table)
    catalog.load_table("db.t").append(batch(1000, 3))
    result = commit_rewrite(table, plan, added)
    assert result.snapshot is not None and result.snapshot.operation == "replace"
    after = rows_by_id(table)
    assert sorted(after) == [*range(90), 1000, 1001, 1002]
    assert {i: after[i] for i in before} == before


def test_concurrent_equality_delete_still_applies_to_rewritten_rows(catalog: Catalog) -> None:
    from icefloe.dml.upsert import delete_by_key

    table = make_table(catalog, "db.t", 2, partitioned=False)
    base_seq = table.current_snapshot().sequence_number  # type: ignore[union-attr]
    plan, added = _prepare(table)
    delete_by_key(catalog.load_table("db.t"), pa.table({"id": pa.array([5, 40], pa.int64())}), on=["id"])
    commit_rewrite(table, plan, added)
    table.refresh()
    # the new files keep the starting sequence number, lower than the equality delete's
    seqs = {
        e.sequence_number
        for e in live_entries(table.io, table.metadata, table.current_snapshot())  # type: ignore[arg-type]
        if e.data_file.content == FileContent.DATA
    }
    assert seqs == {base_seq}
    assert sorted(rows_by_id(table)) == sorted(set(range(90)) - {5, 40})


def test_rewrite_cannot_add_rows_or_delete_files(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3)
    plan, added = _prepare(table)
    location = table.metadata_location
    bigger = added[0].with_changes(record_count=10_000)
    action = RewriteFiles(removed_data=plan.removed_data, added=[bigger, *added[1:]])
    with pytest.raises(ValidationError, match="cannot add rows"), table.transaction() as tx:
        tx.add_action(action)
    as_delete = added[0].with_changes(content=FileContent.POSITION_DELETES)
    with pytest.raises(ValidationError, match="data files only"), table.transaction() as tx:
        tx.add_action(RewriteFiles(removed_data=plan.removed_data, added=[as_delete]))
    with pytest.raises(ValidationError, match="at least one data file"), table.transaction() as tx:
        tx.add_action(RewriteFiles(added=[]))
    assert table.refresh().metadata_location == location
    assert data_paths(table) == {e.data_file.file_path for e in plan.removed_data}
