"""Table.delete / update / merge / upsert: results, write modes, other readers, bad input, transactions.

Every scenario keeps a plain-Python model of the rows and compares the table against it through
icefloe, PyIceberg and DuckDB (v2 position deletes, v3 deletion vectors; v4 through icefloe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.interop import read_with_duckdb, read_with_pyiceberg

pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "v", IntegerType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
MODES = ("copy-on-write", "merge-on-read")
Row = tuple[int, str | None, int | None]


def _rows(ids: range | list[int], cats: str = "abc") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "cat": [cats[i % len(cats)] for i in ids],
            "v": pa.array([i * 2 for i in ids], pa.int32()),
        }
    )


def _table(catalog: Catalog, fv: int, partitioned: bool = True, **props: str) -> Table:
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_spec=SPEC if partitioned else None,
        properties={"format-version": str(fv), **props},
    )
    t.append(_rows(range(0, 15)))
    t.append(_rows(range(15, 30)))
    return t


def _model(table: pa.Table) -> dict[int, Row]:
    return {r["id"]: (r["id"], r["cat"], r["v"]) for r in table.to_pylist()}


def _check(table: Table, want: dict[int, Row]) -> None:
    expected = sorted(want.values())
    assert sorted(_model(table.to_arrow()).values()) == expected
    if table.format_version <= 3:
        for reader in (read_with_pyiceberg, read_with_duckdb):
            got = reader(table.metadata_location, columns=["id", "cat", "v"])
            assert sorted(_model(got).values()) == expected, reader.__name__


def _files(table: Table) -> set[str]:
    root = Path(local_path(table.location()) or "")
    return {str(p) for p in root.rglob("*") if p.is_file()}


def _delete_files(table: Table) -> list[dict[str, Any]]:
    return table.metadata_table("delete_files").to_pylist()


# ---------------------------------------------------------------- scenarios against other readers


@pytest.mark.parametrize("fv", [2, 3, 4])
@pytest.mark.parametrize("mode", MODES)
def test_delete_update_merge_read_identically(catalog: Catalog, fv: int, mode: str) -> None:
    table = _table(catalog, fv)
    want = _model(_rows(range(30)))

    result = table.delete("id in (1, 2, 17)", mode=mode)
    assert (result.operation, result.mode, result.deleted_rows) == ("delete", mode, 3)
    for i in (1, 2, 17):
        del want[i]
    _check(table, want)
    if mode == "merge-on-read":
        assert result.data_files_removed == 0 and result.delete_files_added == 3
        assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    else:
        assert result.delete_files_added == 0 and result.data_files_removed == 3

    # whole partitions (files without deletes): metadata-only in both modes
    before = len(_files(table))
    result = table.delete("cat = 'c'", mode=mode)
    assert result.deleted_rows == sum(1 for r in want.values() if r[1] == "c")
    assert result.files_written == [] and result.delete_files_added == 0
    want = {k: r for k, r in want.items() if r[1] != "c"}
    _check(table, want)
    assert len(_files(table)) > before  # only metadata files were added

    # update moving a row to another partition, with an expression and a literal
    result = table.update({"cat": "a", "v": pc.field("v") * 10}, "id in (4, 16, 17)", mode=mode)
    assert result.updated_rows == 2  # 17 is gone
    for i in (4, 16):
        want[i] = (i, "a", i * 20)
    _check(table, want)

    # merge: update matched, insert the rest
    source = pa.table({"id": pa.array([0, 16, 40], pa.int64()), "cat": ["b", "b", "a"], "v": [7, 8, 9]})
    result = table.merge(source, on="id", mode=mode).when_matched_update().when_not_matched_insert().execute()
    assert (result.updated_rows, result.inserted_rows, result.deleted_rows) == (2, 1, 0)
    want |= {0: (0, "b", 7), 16: (16, "b", 8), 40: (40, "a", 9)}
    _check(table, want)

    # upsert by key
    result = table.upsert(
        pa.table({"id": pa.array([40, 41], pa.int64()), "cat": ["a", "b"], "v": [1, 2]}), "id"
    )
    assert (result.updated_rows, result.inserted_rows) == (1, 1)
    want |= {40: (40, "a", 1), 41: (41, "b", 2)}
    _check(table, want)


@pytest.mark.parametrize("fv", [2, 3])
def test_modes_come_from_table_properties(catalog: Catalog, fv: int) -> None:
    table = _table(
        catalog,
        fv,
        partitioned=False,
        **{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"},
    )
    assert table.delete("id = 3").mode == "merge-on-read"
    assert len(_delete_files(table)) == 1
    result = table.update({"v": 0}, "id = 4")
    assert result.mode == "merge-on-read" and result.data_files_removed == 0
    result = (
        table.merge(_rows([5]), on="id").when_matched_update().when_not_matched_insert().execute()
    )  # write.merge.mode unset: copy-on-write
    assert result.mode == "copy-on-write" and result.data_files_removed == 1
    assert table.delete("id = 6", mode="copy-on-write").delete_files_added == 0
    table.set_properties(**{"write.delete.mode": "sometimes"})
    with pytest.raises(ValidationError, match=r"write\.delete\.mode must be"):
        table.delete("id = 7")


def test_copy_on_write_takes_the_deletes_of_removed_files_along(catalog: Catalog) -> None:
    table = _table(catalog, 3, partitioned=False)
    table.delete("id in (1, 2)", mode="merge-on-read")
    table.delete("id = 3", mode="merge-on-read")  # merged into the same file's DV
    dvs = _delete_files(table)
    assert len(dvs) == 1 and dvs[0]["record_count"] == 3
    result = table.delete("id = 5", mode="copy-on-write")
    assert result.delete_files_removed == 1
    assert _delete_files(table) == []  # no DV left pointing at the removed file
    want = _model(_rows(range(30)))
    for i in (1, 2, 3, 5):
        del want[i]
    _check(table, want)


# ---------------------------------------------------------------- merge clauses


@pytest.mark.parametrize("mode", MODES)
def test_merge_clauses(catalog: Catalog, mode: str) -> None:
    table = _table(catalog, 3, partitioned=False)
    want = _model(_rows(range(30)))
    source = pa.table(
        {
            "id": pa.array([1, 2, 3, None, 50], pa.int64()),
            "delta": [10, 20, 30, 40, 50],
            "drop": [False, True, False, False, False],
        }
    )
    result = table.merge(
        source,
        on="id",
        when_matched_update={"v": pc.field("v") + pc.field("source.delta"), "cat": "z"},
        when_matched_delete=pc.field("source.drop"),
        when_not_matched_insert=False,
        when_not_matched_by_source_delete=pc.field("id") >= 25,
        mode=mode,
    )
    assert (result.updated_rows, result.deleted_rows, result.inserted_rows) == (2, 6, 0)
    want[1] = (1, "z", 2 + 10)
    want[3] = (3, "z", 6 + 30)
    for i in (2, 25, 26, 27, 28, 29):
        del want[i]
    _check(table, want)
    # null keys never match: with inserts on, the null-key source row is inserted
    nullable = catalog.create_table(
        "db.n", Schema(NestedField(1, "id", LongType(), False), NestedField(2, "cat", StringType(), False))
    )
    nullable.append(pa.table({"id": pa.array([None, 1], pa.int64()), "cat": ["old", "old"]}))
    result = (
        nullable.merge(pa.table({"id": pa.array([None, 1], pa.int64()), "cat": ["new", "new"]}), on="id")
        .when_matched_update()
        .when_not_matched_insert()
        .execute()
    )
    assert (result.updated_rows, result.inserted_rows) == (1, 1)
    assert sorted(map(str, nullable.to_arrow().to_pylist())) == sorted(
        map(str, [{"id": None, "cat": "old"}, {"id": 1, "cat": "new"}, {"id": None, "cat": "new"}])
    )


def test_merge_into_an_empty_table_inserts(catalog: Catalog) -> None:
    table = catalog.create_table("db.e", SCHEMA, properties={"format-version": "3"})
    result = (
        table.merge(_rows([1, 2]), on=["id", "cat"]).when_matched_update().when_not_matched_insert().execute()
    )
    assert (result.inserted_rows, result.updated_rows) == (2, 0)
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2]


# ---------------------------------------------------------------- bad input and no-ops


@pytest.mark.parametrize("mode", MODES)
def test_bad_update_values_change_nothing(catalog: Catalog, mode: str) -> None:
    table = _table(catalog, 3)
    snapshot, files = table.current_snapshot(), _files(table)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"v": "ten"}, "cannot set column 'v'"),
        ({"v": 1.5}, "cannot set column 'v'"),
        ({"v": 2**40}, "cannot set column 'v'"),
        ({"id": None}, "required column 'id'"),
        ({"nope": 1}, "'nope'"),
        ({"v": pc.field("cat")}, "cannot set column 'v'"),
        ({"v": pc.field("missing")}, "missing"),
    ]
    for assignments, message in cases:
        with pytest.raises(ValidationError, match=message):
            table.update(assignments, "id < 5", mode=mode)
    with pytest.raises(ValidationError, match="'v'"):
        table.merge(
            pa.table({"id": pa.array([1], pa.int64()), "v": ["x"]}), on="id", mode=mode
        ).when_matched_update().when_not_matched_insert().execute()
    assert table.current_snapshot() == snapshot
    assert table.refresh().current_snapshot() == snapshot
    assert _files(table) == files


@pytest.mark.parametrize("fv", [2, 3, 4])
@pytest.mark.parametrize("mode", MODES)
def test_merge_with_duplicate_source_keys_changes_nothing(catalog: Catalog, fv: int, mode: str) -> None:
    table = _table(catalog, fv, partitioned=False)
    snapshot, files = table.current_snapshot(), _files(table)
    source = _rows([2, 20, 20, 50])  # 20 matches one target row twice
    with pytest.raises(
        ValidationError, match=r"2 source rows match the same target row \(key \{'id': 20\}\)"
    ):
        table.merge(source, on="id", mode=mode).when_matched_update().when_not_matched_insert().execute()
    assert table.refresh().current_snapshot() == snapshot
    assert _files(table) == files
    # duplicates that match nothing are inserted; without a matched clause nothing is checked
    result = (
        table.merge(_rows([60, 60]), on="id", mode=mode)
        .when_matched_update()
        .when_not_matched_insert()
        .execute()
    )
    assert result.inserted_rows == 2
    result = table.merge(source, on="id", when_matched_update=False, mode=mode)
    assert result.inserted_rows == 1 and result.updated_rows == 0


@pytest.mark.parametrize("mode", MODES)
def test_changes_that_match_nothing_commit_nothing(catalog: Catalog, mode: str) -> None:
    table = _table(catalog, 3)
    snapshot, files = table.current_snapshot(), _files(table)
    assert not table.delete("id > 1000", mode=mode).changed
    assert not table.update({"v": 1}, "id > 1000", mode=mode).changed
    result = table.merge(_rows([1000]), on="id", when_not_matched_insert=False, mode=mode)
    assert not result.changed and result.snapshot_id is None
    assert table.refresh().current_snapshot() == snapshot
    assert _files(table) == files


def test_merge_on_read_needs_v2(catalog: Catalog) -> None:
    table = _table(catalog, 1, partitioned=False)
    with pytest.raises(ValidationError, match="merge-on-read delete needs format version 2"):
        table.delete("id = 1", mode="merge-on-read")
    result = table.update({"v": 0}, "id = 1")  # copy-on-write works on v1
    assert result.updated_rows == 1
    assert table.scan(filter="id = 1").to_arrow()["v"].to_pylist() == [0]


def test_merge_refuses_ambiguous_or_unknown_input(catalog: Catalog) -> None:
    table = _table(catalog, 3, partitioned=False)
    with pytest.raises(ValidationError, match="both updated and deleted"):
        table.merge(_rows([1]), on="id", when_matched_delete=True)
    with pytest.raises(ValidationError, match="MERGE key 'nope'"):
        table.merge(_rows([1]), on="nope").when_matched_update().when_not_matched_insert().execute()
    with pytest.raises(ValidationError, match=r"source columns \['extra'\]"):
        table.merge(
            _rows([1]).append_column("extra", pa.array([1])), on="id"
        ).when_matched_update().when_not_matched_insert().execute()
    with pytest.raises(ValidationError, match="not a column of the source"):
        table.merge(
            pa.table({"v": pa.array([1], pa.int32())}), on="id"
        ).when_matched_update().when_not_matched_insert().execute()


# ---------------------------------------------------------------- transactions


def test_row_level_changes_in_a_transaction(catalog: Catalog) -> None:
    table = _table(catalog, 3, partitioned=False)
    before = len(table.snapshots())
    with table.transaction() as tx:
        deleted = tx.delete("id < 3", mode="merge-on-read")
        tx.append(_rows([100]))
    assert deleted.deleted_rows == 3
    assert len(table.snapshots()) == before + 2
    assert deleted.snapshot_id == table.snapshots()[-2].snapshot_id
    assert sorted(table.to_arrow()["id"].to_pylist()) == [*range(3, 30), 100]
    with pytest.raises(ValidationError, match="after another change"), table.transaction() as tx:
        tx.append(_rows([200]))
        tx.update({"v": 1}, "id = 200")
    assert 200 not in table.refresh().to_arrow()["id"].to_pylist()


# ---------------------------------------------------------------- case sensitivity


@pytest.mark.parametrize("fv", [2, 3, 4])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("verb", ["delete", "update"])
def test_case_insensitive_filters_bind_again_when_a_commit_is_retried(
    catalog: Catalog, fv: int, mode: str, verb: str
) -> None:
    """``ID`` names column ``id`` when case_sensitive is False, also for the conflict validation of
    the retried commit (serializable: the concurrent append is checked against the filter)."""
    table = _table(catalog, fv)
    want = _model(table.to_arrow())
    with table.transaction() as tx:
        if verb == "delete":
            result = tx.delete("ID = 3 or Cat = 'x'", mode=mode, case_sensitive=False)
            del want[3]
        else:
            result = tx.update({"V": 99}, "ID = 3 or Cat = 'x'", mode=mode, case_sensitive=False)
            want[3] = (3, "a", 99)
        catalog.load_table("db.t").append(_rows([100, 101]))  # concurrent: the commit is retried
    assert (result.deleted_rows, result.updated_rows) == ((1, 0) if verb == "delete" else (0, 1))
    want.update({i: (i, "abc"[i % 3], i * 2) for i in (100, 101)})
    _check(table.refresh(), want)
    snaps = table.snapshots()
    assert snaps[-2].summary["operation"] == "append"  # the concurrent one, below the retried change
    assert (
        snaps[-1].snapshot_id == result.snapshot_id and snaps[-1].parent_snapshot_id == snaps[-2].snapshot_id
    )


@pytest.mark.parametrize("fv", [2, 4])
def test_case_insensitive_overwrite_filter_binds_again_when_retried(catalog: Catalog, fv: int) -> None:
    table = _table(catalog, fv)
    want = _model(table.to_arrow())
    with table.transaction() as tx:
        tx.overwrite(
            _rows([7]).set_column(2, "v", pa.array([70], pa.int32())), "ID = 7", case_sensitive=False
        )
        catalog.load_table("db.t").append(_rows([100]))  # concurrent: the commit is retried
    want.update({7: (7, "b", 70), 100: (100, "b", 200)})
    _check(table.refresh(), want)


@pytest.mark.parametrize("mode", MODES)
def test_case_sensitive_filters_refuse_other_spellings(catalog: Catalog, mode: str) -> None:
    table = _table(catalog, 3)
    before = table.metadata_location
    with pytest.raises(ValidationError, match="ID"):
        table.delete("ID = 3", mode=mode)
    with pytest.raises(ValidationError, match="ID"):
        table.update({"v": 1}, "ID = 4", mode=mode)
    assert table.refresh().metadata_location == before
    assert sorted(table.to_arrow()["id"].to_pylist()) == list(range(30))
