"""v4 column updates: an UPDATE writes only the changed columns of the changed rows.

Structural checks read the column files and the content entries with pyarrow: statuses, sequence
numbers, ``latest_column_file_snapshot_id``, ``_pos`` values and field ids after a one-column
update, a second update of the same column, an update of another column, a delete after an
update and a compaction. Every state is compared with the rows a plain copy-on-write table holds
after the same statements.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import CommitConflict, CorruptMetadata, ValidationError
from icefloe.formats.arrow_schema import field_id_of
from icefloe.spec.content import ColumnFile, EntryStatus
from icefloe.spec.schema import LAST_UPDATED_SEQ_COLUMN_ID, POS_COLUMN_ID, Schema
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType, StructType
from icefloe.table.table import Table
from icefloe.tree.changes import TreeChange, TreeWriteRequest
from icefloe.tree.read_seam import live_entries
from icefloe.tree.v3_write import write_v3_tree

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "price", DoubleType(), False),
    NestedField(3, "tag", StringType(), False),
    NestedField(4, "info", StructType(NestedField(5, "a", LongType(), False)), False),
)
ON = {
    "format-version": "4",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
    "write.v4.column-updates.enabled": "true",
}
LINEAGE = ("_row_id", "_last_updated_sequence_number")


def _rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "price": pa.array([float(i) for i in ids]),
            "tag": [f"t{i}" for i in ids],
            "info": [{"a": i} for i in ids],
        }
    )


def _pair(catalog: Catalog, name: str, props: dict[str, str] | None = None) -> tuple[Table, Table]:
    """The column-update table and a copy-on-write twin holding the same rows."""
    t = catalog.create_table(f"db.{name}", SCHEMA, properties={**ON, **(props or {})})
    twin = catalog.create_table(f"db.{name}_twin", SCHEMA, properties={"format-version": "4"})
    for table in (t, twin):
        table.append(_rows(10))
        table.append(_rows(10, 10))
    return t, twin


def _state(table: Table) -> list[dict[str, Any]]:
    return table.scan().to_arrow().sort_by("id").to_pylist()


def _entries(table: Table) -> dict[str, Any]:
    """Live data entries by file name."""
    snap = table.current_snapshot()
    assert snap is not None
    return {e.data_file.file_path.rsplit("/", 1)[-1]: e for e in live_entries(table.io, table.metadata, snap)}


def _column_file(table: Table, cf: ColumnFile) -> pa.Table:
    with table.io.new_input(cf.location).open() as f:
        return pq.read_table(f)


def _file_of(table: Table, row_id: int) -> Any:
    rows = table.scan(columns=("id", "_file")).to_arrow().to_pylist()
    path = next(r["_file"] for r in rows if r["id"] == row_id)
    return next(e for e in _entries(table).values() if e.data_file.file_path == path)


def test_one_column_update_writes_a_column_file(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "one")
    before = {r["id"]: r for r in t.scan(columns=("id", *LINEAGE)).to_arrow().to_pylist()}
    base = _file_of(t, 3)
    result = t.update({"price": pc.multiply(pc.field("price"), 10.0)}, "id in (3, 5)")
    twin.update({"price": pc.multiply(pc.field("price"), 10.0)}, "id in (3, 5)")
    assert result.updated_rows == 2 and result.data_files_added == 0 and result.delete_files_added == 0
    assert _state(t) == _state(twin)
    snap = t.current_snapshot()
    assert snap is not None and snap.operation == "overwrite"

    entry = _file_of(t, 3)
    assert entry.status == EntryStatus.MODIFIED
    assert entry.data_file.file_path == base.data_file.file_path
    assert entry.sequence_number == snap.sequence_number  # bumped to the column file's commit
    assert entry.file_sequence_number == base.file_sequence_number
    assert entry.latest_column_file_snapshot_id == snap.snapshot_id
    assert entry.data_file.deletion_vector is None
    (cf,) = entry.data_file.column_files
    assert cf.field_ids == (2,) and cf.file_format == "parquet"
    stored = _column_file(t, cf)
    assert [field_id_of(f) for f in stored.schema] == [2, POS_COLUMN_ID, LAST_UPDATED_SEQ_COLUMN_ID]
    assert stored.column("_last_updated_sequence_number").to_pylist() == [None, None]
    assert stored.column("_pos").to_pylist() == [3, 5]
    assert stored.column("price").to_pylist() == [30.0, 50.0]
    assert cf.file_size_in_bytes == t.io.new_input(cf.location).length
    # the stats of the replaced column are gone from the entry; the others stay
    assert 2 not in (entry.data_file.lower_bounds or {}) and 1 in (entry.data_file.lower_bounds or {})
    # lineage: row ids never change; updated rows take the new sequence number, others keep theirs
    after = {r["id"]: r for r in t.scan(columns=("id", *LINEAGE)).to_arrow().to_pylist()}
    for i, row in after.items():
        assert row["_row_id"] == before[i]["_row_id"]
        expected = snap.sequence_number if i in (3, 5) else before[i]["_last_updated_sequence_number"]
        assert row["_last_updated_sequence_number"] == expected, i


def test_second_update_of_the_same_column_takes_the_rows_over(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "same")
    for table in (t, twin):
        table.update({"price": -1.0}, "id in (1, 2)")
        table.update({"price": -2.0}, "id in (2, 4)")
    assert _state(t) == _state(twin)
    first, second = (s.sequence_number for s in t.snapshots()[-2:])
    (cf,) = _file_of(t, 2).data_file.column_files  # one live column file per field id
    stored = _column_file(t, cf)
    assert stored.column("_pos").to_pylist() == [1, 2, 4]
    assert stored.column("price").to_pylist() == [-1.0, -2.0, -2.0]
    # row 1 was carried over: its lineage is kept, the rows updated now inherit the new number
    assert stored.column("_last_updated_sequence_number").to_pylist() == [first, None, None]
    lineage = {
        r["id"]: r["_last_updated_sequence_number"]
        for r in t.scan(columns=("id", *LINEAGE)).to_arrow().to_pylist()
    }
    assert (lineage[1], lineage[2], lineage[4]) == (first, second, second)
    assert lineage[0] == t.snapshots()[0].sequence_number


def test_update_of_another_column_keeps_both_files(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "other")
    for table in (t, twin):
        table.update({"price": 0.5}, "id = 1")
        table.update({"tag": "x", "info": {"a": -7}}, "id in (1, 6)")
        table.update({"price": 0.25}, "id = 6")
    assert _state(t) == _state(twin)
    files = _file_of(t, 1).data_file.column_files
    assert [cf.field_ids for cf in files] == [(3, 4), (2,)]
    assert _column_file(t, files[0]).column("_pos").to_pylist() == [1, 6]
    price = _column_file(t, files[1])
    assert price.column("_pos").to_pylist() == [1, 6]  # price of row 1 carried over
    assert price.column("price").to_pylist() == [0.5, 0.25]


def test_delete_after_update_wins_over_column_values(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "delete")
    for table in (t, twin):
        table.update({"price": 99.0}, "id in (11, 12)")
        table.delete("id = 12")
    assert _state(t) == _state(twin)
    entry = _file_of(t, 11)
    assert entry.data_file.deletion_vector is not None and entry.data_file.column_files
    assert entry.dv_snapshot_id == t.current_snapshot().snapshot_id  # type: ignore[union-attr]
    assert [r["id"] for r in _state(t) if r["price"] == 99.0] == [11]


def test_compaction_folds_column_files(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "compact")
    for table in (t, twin):
        table.update({"price": 7.0}, "id < 4")
        table.delete("id = 0")
    before = t.scan(columns=("id", "price", "_row_id")).to_arrow().sort_by("id")
    t.maintenance.rewrite_data_files(rewrite_all=True)
    assert _state(t) == _state(twin)
    assert t.scan(columns=("id", "price", "_row_id")).to_arrow().sort_by("id") == before
    assert all(
        not e.data_file.column_files and e.data_file.deletion_vector is None for e in _entries(t).values()
    )


def test_column_file_locations_are_reachable(catalog: Catalog) -> None:
    t, _ = _pair(catalog, "reach")
    t.update({"price": 1.5}, "id = 2")
    (cf,) = _file_of(t, 2).data_file.column_files
    assert t.maintenance.remove_orphan_files(older_than=2**62, dry_run=True).orphan_files == ()
    t.maintenance.rewrite_data_files(rewrite_all=True)
    t.maintenance.expire_snapshots(older_than=2**62, retain_last=1)
    assert not t.io.exists(cf.location)


def test_policy_falls_back_when_a_column_file_is_not_smaller(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "policy", {"write.v4.column-updates.max-size-percent": "1"})
    for table in (t, twin):
        table.update({"price": 3.0}, "id = 3")
    assert _state(t) == _state(twin)
    entry = _file_of(t, 0)
    assert not entry.data_file.column_files and entry.data_file.deletion_vector is not None


def test_property_off_or_copy_on_write_writes_no_column_file(catalog: Catalog) -> None:
    t, _ = _pair(catalog, "off", {"write.v4.column-updates.enabled": "false"})
    t.update({"price": 3.0}, "id = 3")
    assert all(not e.data_file.column_files for e in _entries(t).values())
    t.update({"price": 4.0}, "id = 4", mode="copy-on-write")
    assert all(not e.data_file.column_files for e in _entries(t).values())


def test_concurrent_dv_on_the_same_file_fails_the_column_update(catalog: Catalog) -> None:
    for level in ("serializable", "snapshot"):
        t, _ = _pair(catalog, f"race_{level}", {"write.update.isolation-level": level})
        stale = catalog.load_table(f"db.race_{level}")
        t.delete("id = 1")  # a DV on the first file, committed after ``stale`` was loaded
        with pytest.raises(CommitConflict, match="deletion vector or column files"):
            stale.update({"price": 0.0}, "id = 2")
        t2 = catalog.load_table(f"db.race_{level}")
        stale = catalog.load_table(f"db.race_{level}")
        t2.update({"price": 1.0}, "id = 3")  # a column file on the same file
        with pytest.raises(CommitConflict, match="deletion vector or column files"):
            stale.delete("id = 4")


def test_hostile_column_file_positions_are_corrupt_metadata(catalog: Catalog) -> None:
    t, _ = _pair(catalog, "hostile")
    t.update({"price": 2.0}, "id = 2")
    (cf,) = _file_of(t, 2).data_file.column_files
    bad = pa.table({"price": pa.array([1.0, 2.0]), "_pos": pa.array([2, 99], pa.int64())})
    schema = pa.schema(
        [
            pa.field("price", pa.float64(), metadata={b"PARQUET:field_id": b"2"}),
            pa.field("_pos", pa.int64(), False, metadata={b"PARQUET:field_id": str(POS_COLUMN_ID).encode()}),
        ]
    )
    t.io.delete(cf.location)
    with t.io.new_output(cf.location).create() as f:
        pq.write_table(bad.cast(schema), f)
    with pytest.raises(CorruptMetadata, match="column file positions"):
        t.scan().to_arrow()


def test_v3_tables_refuse_column_files(catalog: Catalog) -> None:
    t = catalog.create_table("db.v3", SCHEMA, properties={"format-version": "3"})
    t.append(_rows(2))
    cf = ColumnFile("file:///nowhere.parquet", "parquet", 1, (2,))
    change = TreeChange(added_column_files={"file:///x.parquet": cf})
    request = TreeWriteRequest(t.io, t.metadata, t.current_snapshot(), change, 1, 2)
    with pytest.raises(ValidationError, match="column files need format version 4"):
        write_v3_tree(request)


def test_merge_update_clauses_write_column_files(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "merge")
    source = pa.table({"id": pa.array([2, 3, 4, 15, 40], pa.int64()), "p": [20.0, 30.0, 40.0, 150.0, 400.0]})
    for table in (t, twin):
        (
            table.merge(source, on="id")
            .when_matched_delete(condition=pc.field("id") == 4)
            .when_matched_update(set={"price": pc.field("source.p")}, condition=pc.field("id") < 10)
            .when_matched_update(set={"tag": "late"})
            .when_not_matched_insert({"id": pc.field("source.id"), "price": pc.field("source.p")})
            .execute()
        )
    assert _state(t) == _state(twin)
    assert len(_state(t)) == 20
    first = _file_of(t, 2).data_file
    (cf,) = first.column_files
    assert (
        cf.field_ids == (2,) and first.deletion_vector is not None and first.deletion_vector.cardinality == 1
    )
    assert _column_file(t, cf).column("_pos").to_pylist() == [2, 3]
    (late,) = _file_of(t, 15).data_file.column_files
    assert late.field_ids == (3,)
    assert _column_file(t, late).column("_pos").to_pylist() == [5]


def test_changelog_of_column_updates(catalog: Catalog) -> None:
    t, _ = _pair(catalog, "changes")
    t.update({"price": -1.0}, "id = 1")
    first = t.current_snapshot()
    assert first is not None
    t.update({"price": -2.0}, "id = 2")  # the new column file carries row 1 over unchanged
    changes = t.changelog(first.snapshot_id, identifier_columns=["id"]).to_arrow()
    rows = sorted((r["_change_type"], r["id"], r["price"]) for r in changes.to_pylist())
    assert rows == [("UPDATE_AFTER", 2, -2.0), ("UPDATE_BEFORE", 2, 2.0)]
    whole = t.changelog(identifier_columns=["id"]).to_arrow()
    kinds = sorted((r["_change_type"], r["id"], r["price"]) for r in whole.to_pylist() if r["id"] in (1, 2))
    assert kinds == [
        ("INSERT", 1, 1.0),
        ("INSERT", 2, 2.0),
        ("UPDATE_AFTER", 1, -1.0),
        ("UPDATE_AFTER", 2, -2.0),
        ("UPDATE_BEFORE", 1, 1.0),
        ("UPDATE_BEFORE", 2, 2.0),
    ]


def test_equality_deletes_and_column_files_never_mix(catalog: Catalog) -> None:
    t, _ = _pair(catalog, "eq")
    t.update({"price": 5.0}, "id = 5")
    files_before = sorted(p.name for p in _warehouse_files(t))
    with pytest.raises(ValidationError, match="column files"):
        t.upsert_with_equality_deletes(_rows(1, 5), on="id")
    assert sorted(p.name for p in _warehouse_files(t)) == files_before  # nothing left behind
    t.maintenance.rewrite_data_files(rewrite_all=True)
    t.upsert_with_equality_deletes(_rows(1, 5), on="id")
    assert [r["price"] for r in _state(t) if r["id"] == 5] == [5.0]
    t.update({"price": 6.0}, "id = 5")  # the file with an equality delete falls back to a DV + row
    assert [r["price"] for r in _state(t) if r["id"] == 5] == [6.0]
    assert all(not e.data_file.column_files for e in _entries(t).values() if e.data_file.record_count > 1)


def _warehouse_files(t: Table) -> list[Path]:
    root = Path(t.metadata.location.removeprefix("file://")) / "data"
    return sorted(root.rglob("*.parquet"))


def test_schema_evolution_after_a_column_file(catalog: Catalog) -> None:
    t, twin = _pair(catalog, "evolve")
    for table in (t, twin):
        table.update({"price": -3.0, "tag": "u"}, "id in (3, 13)")
        with table.update_schema() as update:
            update.add_column("extra", LongType())
            update.rename_column("price", "cost")
        table.update({"extra": 7}, "id = 3")  # a new column in a second column file
        with table.update_schema() as update:
            update.delete_column("tag")  # a column the first column file holds
    assert _state(t) == _state(twin)
    rows = {r["id"]: r for r in _state(t)}
    assert rows[3]["cost"] == -3.0 and rows[3]["extra"] == 7 and "tag" not in rows[3]
    assert rows[13]["cost"] == -3.0 and rows[13]["extra"] is None and rows[4]["cost"] == 4.0
    files = _file_of(t, 3).data_file.column_files
    assert [cf.field_ids for cf in files] == [(2, 3), (6,)]  # extra got id 6 (info.a has 5)
