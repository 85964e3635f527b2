"""Conflict validation of row-level commits: histories built with producers on SQLite-catalog tables.

Every test plans a change against a base snapshot, commits something else first (the concurrent
commit), then commits the planned change. Conflicts must be non-retryable ``CommitConflict``s that
name the file and leave the table as the concurrent commit left it; non-conflicting changes must
retry and land on top of the concurrent commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.dml.change_builder import MERGE_ON_READ as MOR
from icefloe.dml.copy_on_write import plan_copy_on_write
from icefloe.dml.update import plan_update
from icefloe.errors import CommitConflict, ValidationError
from icefloe.expressions.parser import to_expression
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.io.fileio import local_path
from icefloe.spec.content import DataFile, DeletionVectorRef, EntryStatus, FileContent, ManifestEntry
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Operation
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.table.table_transaction import TableTransaction
from icefloe.tree.locations import LocationProvider
from icefloe.txn import validation
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
from icefloe.txn.delete_writer import (
    POSITION_DELETE_SCHEMA,
    write_deletion_vectors_file,
    write_position_delete_file,
)
from icefloe.txn.equality_deletes import write_equality_delete_files
from icefloe.txn.isolation import IsolationLevel, isolation_level
from icefloe.txn.producers import AppendFiles, OverwriteFiles, RowDelta

pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "cat", StringType(), False))
SERIALIZABLE, SNAPSHOT = IsolationLevel.SERIALIZABLE, IsolationLevel.SNAPSHOT

VERSIONS = [
    pytest.param((2, {}), id="v2"),
    pytest.param((3, {}), id="v3"),
    pytest.param((4, {}), id="v4-inline"),
    pytest.param((4, {"write.v4.root.max-inline-entries": "0"}), id="v4-leaves"),
]
Version = tuple[int, dict[str, str]]


def _rows(ids: range | list[int], cat: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "cat": pa.array([cat] * len(ids), pa.string())})


def _table(catalog: Catalog, version: Version, *, partitioned: bool = False, files: int = 2) -> Table:
    """Files of ten rows each: ids 0-9 (cat a), 10-19 (cat b), 20-29 (cat c); id k at position k % 10."""
    fv, props = version
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat")) if partitioned else None
    t = catalog.create_table(
        "db.t", SCHEMA, partition_spec=spec, properties={"format-version": str(fv), **props}
    )
    for i in range(files):
        t.append(_rows(range(10 * i, 10 * i + 10), "abc"[i]))
    return t


def _ids(table: Table) -> list[int]:
    table.refresh()
    return sorted(table.to_arrow()["id"].to_pylist())


def _entry_with(table: Table, row_id: int) -> ManifestEntry:
    """The live entry of the data file holding ``row_id``."""
    rows = table.scan(columns=("id", "_file")).to_arrow().to_pylist()
    path = next(r["_file"] for r in rows if r["id"] == row_id)
    return next(t.entry for t in table.scan().plan_files() if t.file_path == path)


def _commit(table: Table, action: Any) -> None:
    with table.transaction() as tx:
        tx.add_action(action)


def _plan_cow(table: Table, expr: str, level: IsolationLevel = SERIALIZABLE) -> OverwriteFiles:
    """A copy-on-write delete planned against the current head (not committed)."""
    md = table.metadata
    base = md.current_snapshot()
    assert base is not None
    row_filter = to_expression(expr)
    plan = plan_copy_on_write(table.io, md, base, row_filter)
    assert plan.removed, f"{expr} matches nothing"
    return OverwriteFiles(
        owned_files=[f.file_path for f in plan.added],
        operation=Operation.OVERWRITE if plan.added else Operation.DELETE,
        removed=plan.removed,
        added=plan.added,
        base_snapshot_id=base.snapshot_id,
        conflict_filter=row_filter,
        isolation_level=level,
    )


def _plan_mor(
    table: Table,
    row_ids: list[int],
    level: IsolationLevel = SERIALIZABLE,
    conflict_filter: str | None = None,
) -> RowDelta:
    """A merge-on-read delete of rows of one data file (position delete / DV / v4 colocated DV)."""
    md = table.metadata
    base = md.current_snapshot()
    assert base is not None
    data_file = _entry_with(table, row_ids[0]).data_file
    positions = [i % 10 for i in row_ids]
    common: dict[str, Any] = {
        "base_snapshot_id": base.snapshot_id,
        "isolation_level": level,
        "conflict_filter": to_expression(conflict_filter) if conflict_filter else None,
    }
    if md.format_version == 2:
        f = write_position_delete_file(table.io, md, data_file, positions)
        return RowDelta(added_deletes=[f], owned_files=[f.file_path], **common)
    (dv,) = write_deletion_vectors_file(table.io, md, {data_file.file_path: (data_file, positions)})
    if md.format_version == 3:
        return RowDelta(added_deletes=[dv], owned_files=[dv.file_path], **common)
    assert dv.content_offset is not None and dv.content_size_in_bytes is not None
    ref = DeletionVectorRef(dv.file_path, dv.content_offset, dv.content_size_in_bytes, dv.record_count)
    return RowDelta(added_dvs={data_file.file_path: ref}, owned_files=[dv.file_path], **common)


def _conflict(table: Table, action: Any, *names: str) -> CommitConflict:
    """Commit ``action``: it must fail with a non-retryable conflict naming ``names``, changing nothing."""
    table.refresh()
    before = table.metadata.current_snapshot_id
    with pytest.raises(CommitConflict) as info:
        _commit(table, action)
    assert info.value.retryable is False
    for name in names:
        assert name in str(info.value)
    table.refresh()
    assert table.metadata.current_snapshot_id == before
    for path in action.committed_files():  # files written for the failed change are gone
        local = local_path(path)
        assert local is not None and not Path(local).exists()
    return info.value


def _lands_on_top(table: Table, action: Any) -> None:
    """Commit ``action``: it must succeed as the child of the current head (a retry if needed)."""
    table.refresh()
    head = table.metadata.current_snapshot_id
    _commit(table, action)
    table.refresh()
    snap = table.current_snapshot()
    assert snap is not None and snap.parent_snapshot_id == head


# -- copy-on-write (OverwriteFiles) ----------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_cow_fails_when_a_concurrent_commit_removed_the_file(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    victim = _entry_with(table, 3).data_file.file_path
    planned = _plan_cow(table, "id = 3", SNAPSHOT)
    table.delete("id = 5")  # rewrites the same file first
    _conflict(table, planned, victim)
    assert _ids(table) == [i for i in range(20) if i != 5]


@pytest.mark.parametrize("version", VERSIONS)
def test_cow_fails_when_a_concurrent_commit_deleted_rows_of_the_file(
    catalog: Catalog, version: Version
) -> None:
    table = _table(catalog, version)
    victim = _entry_with(table, 3).data_file.file_path
    planned = _plan_cow(table, "id = 3", SNAPSHOT)
    concurrent = _plan_mor(table, [5])
    _commit(table, concurrent)
    err = _conflict(table, planned, victim)
    if version[0] < 4:
        assert concurrent.added_deletes[0].file_path in str(err)
    else:
        assert "changed the deletion vector or column files of" in str(err)
    assert _ids(table) == [i for i in range(20) if i != 5]  # row 5 stays deleted, row 3 stays


@pytest.mark.parametrize("version", VERSIONS)
def test_cow_ignores_deletes_for_other_files(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    planned = _plan_cow(table, "id = 3")
    _commit(table, _plan_mor(table, [15]))  # another file
    _lands_on_top(table, planned)
    assert _ids(table) == [i for i in range(20) if i not in (3, 15)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("level", [SERIALIZABLE, SNAPSHOT])
def test_cow_against_a_concurrent_matching_append(
    catalog: Catalog, version: Version, level: IsolationLevel
) -> None:
    table = _table(catalog, version)
    planned = _plan_cow(table, "id < 5", level)
    table.append(_rows([2, 100], "a"))
    appended = next(t.file_path for t in table.scan(filter="id = 100").plan_files())
    if level is SERIALIZABLE:
        err = _conflict(table, planned, appended, "serializable")
        assert "id < 5" in str(err) or "LessThan" in str(err)
        assert _ids(table) == sorted([*range(20), 2, 100])
    else:  # snapshot isolation: the new row 2 was not read, so it is not deleted
        _lands_on_top(table, planned)
        assert _ids(table) == sorted([*range(5, 20), 2, 100])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("partitioned", [True, False], ids=["by-cat", "flat"])
def test_overwrite_of_rows_the_base_lacks_fails_on_a_concurrent_matching_write(
    catalog: Catalog, version: Version, partitioned: bool
) -> None:
    """Two overwrites of cat 'd' (no rows yet) planned from one base: serially the second replaces
    the first's row, so committing both would keep a row the second overwrite should remove."""
    _table(catalog, version, partitioned=partitioned)
    first, second = catalog.load_table("db.t"), catalog.load_table("db.t")
    queued = [
        TableTransaction(t).overwrite(_rows([100 + i], "d"), "cat = 'd'")
        for i, t in enumerate((first, second))
    ]
    queued[0].commit()
    with pytest.raises(CommitConflict, match="serializable") as info:
        queued[1].commit()
    assert info.value.retryable is False
    assert _ids(first) == [*range(20), 100]


@pytest.mark.parametrize("version", VERSIONS)
def test_serializable_cow_accepts_appends_that_cannot_match(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version, partitioned=True)
    planned = _plan_cow(table, "cat = 'a' and id < 5")
    table.append(_rows([100, 101], "a"))  # same partition, ids out of range (metrics)
    table.append(_rows([1, 2], "b"))  # ids in range, other partition
    _lands_on_top(table, planned)
    assert _ids(table) == sorted([*range(5, 20), 1, 2, 100, 101])


@pytest.mark.parametrize("version", VERSIONS[:3])
@pytest.mark.parametrize(
    ("key", "conflicts"),
    [((4, "a"), True), ((14, "b"), False), ((50, "a"), False)],
    ids=["same-partition", "other-partition", "keys-out-of-bounds"],
)
def test_cow_against_a_concurrent_equality_delete(
    catalog: Catalog, version: Version, key: tuple[int, str], conflicts: bool
) -> None:
    table = _table(catalog, version, partitioned=True)
    victim = _entry_with(table, 3).data_file.file_path
    planned = _plan_cow(table, "id = 3")
    md = table.metadata
    keys = pa.table({"id": pa.array([key[0]], pa.int64()), "cat": pa.array([key[1]], pa.string())})
    deletes = write_equality_delete_files(table.io, md, keys, [1, 2])
    base = md.current_snapshot()
    _commit(table, RowDelta(added_deletes=deletes, base_snapshot_id=base.snapshot_id if base else None))
    deleted = {key[0]} & set(range(20))
    if conflicts:
        _conflict(table, planned, victim, deletes[0].file_path)
        assert _ids(table) == [i for i in range(20) if i not in deleted]
    else:
        _lands_on_top(table, planned)
        assert _ids(table) == [i for i in range(20) if i not in deleted | {3}]


def _multi_file_position_deletes(table: Table, positions: dict[str, list[int]]) -> DataFile:
    """One v2 position delete file for several data files of one partition (no referenced file)."""
    paths = sorted(positions)
    rows = pa.table(
        {
            "file_path": pa.array([p for p in paths for _ in positions[p]], pa.string()),
            "pos": pa.array([x for p in paths for x in sorted(positions[p])], pa.int64()),
        }
    )
    md = table.metadata
    path = LocationProvider(md).new_data_file_path(extension="parquet")
    f = write_parquet_data_file(
        table.io,
        path,
        rows,
        POSITION_DELETE_SCHEMA,
        0,
        (),
        md.properties,
        content=FileContent.POSITION_DELETES,
    )
    assert f.referenced_data_file is None
    return f


def test_cow_and_mor_against_a_concurrent_multi_file_position_delete(catalog: Catalog) -> None:
    table = _table(catalog, (2, {}), files=3)
    a, b = (_entry_with(table, i).data_file.file_path for i in (0, 10))
    cow = _plan_cow(table, "id = 3")
    mor = _plan_mor(table, [13])
    base = table.metadata.current_snapshot_id
    multi = _multi_file_position_deletes(table, {a: [5], b: [6]})
    _commit(table, RowDelta(added_deletes=[multi], base_snapshot_id=base))
    _conflict(table, cow, a, multi.file_path)
    _conflict(table, mor, b, multi.file_path)
    assert _ids(table) == [i for i in range(30) if i not in (5, 16)]


def test_mor_targets_of_a_multi_file_position_delete_are_read_from_the_file(catalog: Catalog) -> None:
    table = _table(catalog, (2, {}), files=3)
    a, b = (_entry_with(table, i).data_file.file_path for i in (0, 10))
    base = table.metadata.current_snapshot_id
    planned = RowDelta(
        added_deletes=[_multi_file_position_deletes(table, {a: [1], b: [2]})], base_snapshot_id=base
    )
    _commit(table, _plan_mor(table, [15]))  # file b got deletes first
    _conflict(table, planned, b)
    assert _ids(table) == [i for i in range(30) if i != 15]


# -- merge-on-read (RowDelta) ----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_mor_fails_when_a_concurrent_commit_removed_the_file(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    victim = _entry_with(table, 3).data_file.file_path
    planned = _plan_mor(table, [3], SNAPSHOT)
    table.delete("id < 10")  # drops the whole file
    _conflict(table, planned, victim)
    assert _ids(table) == list(range(10, 20))


@pytest.mark.parametrize("version", VERSIONS)
def test_mor_fails_on_a_concurrent_delete_for_the_same_file(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    victim = _entry_with(table, 1).data_file.file_path
    first, second = _plan_mor(table, [1], SNAPSHOT), _plan_mor(table, [2], SNAPSHOT)
    _commit(table, first)
    _conflict(table, second, victim)
    assert _ids(table) == [i for i in range(20) if i != 1]  # the first DV was not lost


@pytest.mark.parametrize("version", VERSIONS)
def test_mor_deletes_of_different_files_both_commit(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    first, second = _plan_mor(table, [1]), _plan_mor(table, [12, 13])
    _commit(table, first)
    _lands_on_top(table, second)
    assert _ids(table) == [i for i in range(20) if i not in (1, 12, 13)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("level", [SERIALIZABLE, SNAPSHOT])
def test_mor_against_a_concurrent_matching_append(
    catalog: Catalog, version: Version, level: IsolationLevel
) -> None:
    table = _table(catalog, version)
    planned = _plan_mor(table, [1], level, conflict_filter="id < 2")
    table.append(_rows([0], "z"))
    appended = next(t.file_path for t in table.scan(filter="cat = 'z'").plan_files())
    if level is SERIALIZABLE:
        _conflict(table, planned, appended)
        assert _ids(table) == sorted([*range(20), 0])
    else:
        _lands_on_top(table, planned)
        assert _ids(table) == sorted([0, 0, *range(2, 20)])


def _concurrent_equality_delete(table: Table, key: tuple[int, str]) -> DataFile:
    """Commit an equality delete of (id, cat) = ``key`` as a concurrent commit; returns its file."""
    md = table.metadata
    keys = pa.table({"id": pa.array([key[0]], pa.int64()), "cat": pa.array([key[1]], pa.string())})
    deletes = write_equality_delete_files(table.io, md, keys, [1, 2])
    _commit(table, RowDelta(added_deletes=deletes, base_snapshot_id=md.current_snapshot_id))
    return deletes[0]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("level", [SERIALIZABLE, SNAPSHOT])
@pytest.mark.parametrize(
    ("key", "conflicts"),
    [((4, "a"), True), ((14, "b"), False), ((50, "a"), False)],
    ids=["same-partition", "other-partition", "keys-out-of-bounds"],
)
def test_mor_against_a_concurrent_equality_delete(
    catalog: Catalog, version: Version, level: IsolationLevel, key: tuple[int, str], conflicts: bool
) -> None:
    """A DV'd file's rows may be re-inserted by the same change (update): a concurrent equality
    delete that applies to the file is a conflict at every isolation level. The planned RowDelta
    names its target by path only, so the file's partition and bounds are looked up."""
    table = _table(catalog, version, partitioned=True)
    victim = _entry_with(table, 3).data_file.file_path
    planned = _plan_mor(table, [3], level)
    eq = _concurrent_equality_delete(table, key)
    deleted = {key[0]} & set(range(20))
    if conflicts:
        _conflict(table, planned, victim, eq.file_path, "equality delete")
        assert _ids(table) == [i for i in range(20) if i not in deleted]
    else:
        _lands_on_top(table, planned)
        assert _ids(table) == [i for i in range(20) if i not in deleted | {3}]


@pytest.mark.parametrize("version", [VERSIONS[1], VERSIONS[3]])
@pytest.mark.parametrize("level", [SERIALIZABLE, SNAPSHOT])
def test_planned_merge_on_read_update_against_a_concurrent_equality_delete(
    catalog: Catalog, version: Version, level: IsolationLevel
) -> None:
    """The update's producer carries its planned target files; the concurrent delete of row 3
    must not be undone by the update re-inserting row 3 with a new value."""
    table = _table(catalog, version, partitioned=True)
    md = table.metadata
    change = plan_update(table.io, md, md.current_snapshot(), {"cat": "a"}, to_expression("id = 3"), MOR)
    producer = change.producer(md)
    assert isinstance(producer, RowDelta) and producer.isolation_level is SERIALIZABLE
    assert [f.file_path for f in producer.target_files] == [_entry_with(table, 3).data_file.file_path]
    producer.isolation_level = level
    eq = _concurrent_equality_delete(table, (3, "a"))
    _conflict(table, producer, eq.file_path)
    assert _ids(table) == [i for i in range(20) if i != 3]


@pytest.mark.parametrize("version", VERSIONS[2:])
def test_v4_removal_that_empties_a_leaf_or_the_root_is_in_the_history(
    catalog: Catalog, version: Version
) -> None:
    """The deleting snapshot's DELETED root row / DELETED leaf reference records the removal."""
    table = _table(catalog, version, files=1)
    victim = _entry_with(table, 3).data_file.file_path
    base = table.metadata.current_snapshot_id
    planned = _plan_mor(table, [3])
    table.delete("id < 10")  # the only file: an inline entry, or the last live row of its leaf
    md = table.metadata
    snaps = validation.concurrent_snapshots(md, md.current_snapshot(), base, "main")
    history = validation.read_concurrent_history(table.io, md, snaps, include_appends=False)
    assert [k[0] for k in history.removed] == [victim]
    _conflict(table, planned, victim, "was removed by a concurrent commit")
    assert _ids(table) == []


def test_mor_may_retire_the_dv_it_replaces(catalog: Catalog) -> None:
    """v3: the second delete of a file merges the old DV and retires it; that DV is not a conflict."""
    table = _table(catalog, (3, {}))
    _commit(table, _plan_mor(table, [1]))
    old = next(d.delete_file for t in table.scan().plan_files() for d in t.deletes)
    data_file = _entry_with(table, 0).data_file
    table.append(_rows([100], "z"))  # concurrent, and the RowDelta below names no base at all
    (merged,) = write_deletion_vectors_file(
        table.io, table.metadata, {data_file.file_path: (data_file, [1, 2])}
    )
    retire = ManifestEntry(EntryStatus.EXISTING, None, None, None, old)
    _lands_on_top(table, RowDelta(added_deletes=[merged], removed_deletes=[retire]))
    assert _ids(table) == [0, *range(3, 20), 100]
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert (summary["added-dvs"], summary["removed-dvs"]) == ("1", "1")


def test_retired_delete_file_removed_concurrently(catalog: Catalog) -> None:
    table = _table(catalog, (3, {}))
    _commit(table, _plan_mor(table, [1]))
    old = next(d.delete_file for t in table.scan().plan_files() for d in t.deletes)
    base = table.metadata.current_snapshot_id
    data_file = _entry_with(table, 0).data_file
    (merged,) = write_deletion_vectors_file(
        table.io, table.metadata, {data_file.file_path: (data_file, [1, 2])}
    )
    retire = ManifestEntry(EntryStatus.EXISTING, None, None, None, old)
    planned = RowDelta(added_deletes=[merged], removed_deletes=[retire], base_snapshot_id=base)
    table.delete("id < 10")  # drops the data file and its DV
    _conflict(table, planned, data_file.file_path)
    assert _ids(table) == list(range(10, 20))


# -- appends, history, efficiency ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_plain_append_never_conflicts(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    queued = TableTransaction(table).append(_rows([3, 4], "a"))  # data written, not committed
    _commit(table, _plan_cow(table, "id < 5"))
    queued.commit()
    assert _ids(table) == sorted([*range(5, 20), 3, 4])


@pytest.mark.parametrize("version", VERSIONS)
def test_same_transaction_append_is_not_concurrent(catalog: Catalog, version: Version) -> None:
    table = _table(catalog, version)
    planned = _plan_cow(table, "id < 5")  # serializable; the append below matches its filter
    with table.transaction() as tx:
        tx.append(_rows([3], "a"))
        tx.add_action(planned)
    assert _ids(table) == [3, *range(5, 20)]
    assert [s.operation for s in table.snapshots()[-2:]] == ["append", "overwrite"]


def test_base_that_is_no_longer_an_ancestor(catalog: Catalog) -> None:
    table = _table(catalog, (2, {}))
    first = table.snapshots()[0].snapshot_id
    planned = _plan_cow(table, "id = 13")
    base = planned.base_snapshot_id
    table.manage_snapshots().rollback_to_snapshot(first).commit()
    _conflict(table, planned, f"no longer descends from snapshot {base}")
    assert _ids(table) == list(range(10))


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[3]])
def test_validation_reads_only_what_concurrent_snapshots_wrote(
    catalog: Catalog, version: Version, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog, version, files=3)
    read: list[int] = []
    listed: list[int] = []
    real_read, real_refs = validation.read_entries_many, validation.manifest_refs

    def counting_read(io: Any, md: Any, manifests: Any) -> Any:
        read.extend(m.added_snapshot_id for m in manifests)
        return real_read(io, md, manifests)

    def counting_refs(io: Any, md: Any, snapshot: Any) -> Any:
        listed.append(snapshot.snapshot_id)
        return real_refs(io, md, snapshot)

    monkeypatch.setattr(validation, "read_entries_many", counting_read)
    monkeypatch.setattr(validation, "manifest_refs", counting_refs)

    _lands_on_top(table, _plan_cow(table, "id = 3"))  # nothing concurrent: nothing read
    assert (read, listed) == ([], [])

    def run(level: IsolationLevel, target: int) -> list[int]:
        planned = _plan_cow(table, f"id = {target}", level)
        for i in range(3):
            table.append(_rows([200 + i], "z"))
        appends = [s.snapshot_id for s in table.snapshots()[-3:]]
        _lands_on_top(table, planned)
        return appends

    run(SNAPSHOT, 13)  # appends are not read at all under snapshot isolation
    assert (read, listed) == ([], [])
    appends = run(SERIALIZABLE, 23)  # only the manifests the three appends wrote
    assert set(read) == set(appends) and sorted(listed) == sorted(appends)
    assert _ids(table) == sorted([i for i in range(30) if i not in (3, 13, 23)] + [200, 201, 202] * 2)


# -- isolation levels ------------------------------------------------------------------------------


def test_isolation_level_from_table_properties(catalog: Catalog) -> None:
    table = _table(catalog, (2, {}), files=0)
    md = table.metadata
    assert isolation_level(md, "delete") is SERIALIZABLE
    table.set_properties(
        **{"write.delete.isolation-level": " Snapshot ", "write.merge.isolation-level": "serializable"}
    )
    md = table.metadata
    assert [isolation_level(md, op) for op in ("delete", "update", "merge")] == [
        SNAPSHOT,
        SERIALIZABLE,
        SERIALIZABLE,
    ]
    table.set_properties(**{"write.update.isolation-level": "read-committed"})
    with pytest.raises(ValidationError, match=r"write\.update\.isolation-level.*'read-committed'"):
        isolation_level(table.metadata, "update")
    with pytest.raises(ValidationError, match="upsert"):
        isolation_level(table.metadata, "upsert")


@pytest.mark.parametrize("version", [VERSIONS[0], VERSIONS[3]])
def test_history_records_removals_by_leaf_rewrite_and_manifest_dv(catalog: Catalog, version: Version) -> None:
    fv, props = version
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = catalog.create_table(
        "db.t", SCHEMA, partition_spec=spec, properties={"format-version": str(fv), **props}
    )
    table.append(
        pa.table({"id": pa.array(range(30), pa.int64()), "cat": ["a"] * 10 + ["b"] * 10 + ["c"] * 10})
    )
    base = table.metadata.current_snapshot_id
    a, b = (_entry_with(table, i).data_file.file_path for i in (0, 10))
    table.delete("cat = 'a'")  # whole file: v4 marks it in the leaf's manifest DV
    table.delete("id = 15")  # rewrites b: v4 rewrites the leaf (REPLACED ratio) or marks it
    table.append(_rows([100], "c"))
    b2 = _entry_with(table, 16).data_file.file_path
    c2 = _entry_with(table, 100).data_file.file_path
    md = table.metadata
    snaps = validation.concurrent_snapshots(md, md.current_snapshot(), base, "main")
    assert [s.operation for s in snaps] == ["append", "overwrite", "delete"]
    full = validation.read_concurrent_history(table.io, md, snaps, include_appends=True)
    assert {k[0]: c.snapshot.operation for k, c in full.removed.items()} == {a: "delete", b: "overwrite"}
    assert sorted(c.entry.data_file.file_path for c in full.added_data) == sorted([b2, c2])
    assert full.added_deletes == [] and full.dv_changes == {}
    without_appends = validation.read_concurrent_history(table.io, md, snaps, include_appends=False)
    assert [c.entry.data_file.file_path for c in without_appends.added_data] == [b2]
    assert without_appends.removed.keys() == full.removed.keys()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("concurrent", ["replace", "append"])
def test_serializable_ignores_data_rewritten_by_compaction(
    catalog: Catalog, version: Version, concurrent: str
) -> None:
    """A ``replace`` snapshot re-adds rows that existed already: its files are not new data."""
    table = _table(catalog, version, files=1)
    table.append(_rows([10, 20], "b"))  # bounds [10, 20]: may match id = 15, holds no such row
    planned = _plan_cow(table, "id = 3 or id = 15")
    md = table.metadata
    same_rows = write_data_files(table.io, md, prepare_arrow_table(md, _rows([10, 20], "b")))
    if concurrent == "replace":
        compaction = OverwriteFiles(
            operation=Operation.REPLACE,
            removed=[_entry_with(table, 10)],
            added=same_rows,
            base_snapshot_id=md.current_snapshot_id,
        )
        _commit(table, compaction)
        _lands_on_top(table, planned)
        assert _ids(table) == [i for i in range(10) if i != 3] + [10, 20]
    else:
        _commit(table, AppendFiles(files=same_rows))
        _conflict(table, planned, same_rows[0].file_path, "serializable")
        assert _ids(table) == [*range(10), 10, 10, 20, 20]
