"""Upsert and delete by key through equality delete files, checked against an independent model.

The model is a dict keyed by the key tuple, applied step by step; after every round the table is
read through icefloe (and, for v2/v3, DuckDB) and must hold exactly the model's rows. Time travel
to every round must give that round's model state.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.spec.content import FileContent
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.interop import READERS, read_with_duckdb, read_with_iceberg_rust
from tests.tree.v4_helpers import raw_rows

pytestmark = [pytest.mark.all_catalogs, pytest.mark.catalog_namespaces("db")]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "v", LongType(), False),
    NestedField(4, "score", DoubleType(), False),
    identifier_field_ids=[1],
)
COLUMNS = ["id", "cat", "v"]
Row = tuple[Any, ...]
Model = dict[Row, Row]

PARTITIONINGS: dict[str, tuple[PartitionSpec | None, list[str] | None]] = {
    "unpartitioned": (None, None),  # key: the identifier field id
    "identity": (PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat")), ["id", "cat"]),
    "bucket": (PartitionSpec(PartitionField(1, 1000, BucketTransform(4), "id_bucket")), None),
}


def _create(
    catalog: Catalog,
    fv: int,
    spec: PartitionSpec | None = None,
    schema: Schema = SCHEMA,
    properties: dict[str, str] | None = None,
) -> Table:
    props = {"format-version": str(fv), **(properties or {})}
    return catalog.create_table("db.t", schema, partition_spec=spec, properties=props)


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": pa.array([r[1] for r in rows], pa.string()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def _rows_of(table: pa.Table) -> list[Row]:
    return sorted((tuple(r[c] for c in COLUMNS) for r in table.select(COLUMNS).to_pylist()), key=repr)


def _model_rows(model: Model) -> list[Row]:
    return sorted(model.values(), key=repr)


def _key(row: Row, on: list[str] | None) -> Row:
    return tuple(row[COLUMNS.index(c)] for c in (on or ["id"]))


def _upsert_model(model: Model, rows: list[Row], on: list[str] | None) -> Model:
    """The expected state after an upsert: every row with one of the keys goes, the new rows come."""
    out = dict(model)
    for row in rows:
        out[_key(row, on)] = row
    return out


def _data_dir(table: Table) -> set[str]:
    root = Path(table.location().removeprefix("file://").removeprefix("file:")) / "data"
    return {str(p) for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def _local(path: str) -> str:
    return path.removeprefix("file://").removeprefix("file:")


# ---------------------------------------------------------------------------------------------
# repeated upserts against the model


@pytest.mark.parametrize("partitioning", sorted(PARTITIONINGS))
@pytest.mark.parametrize("fv", [2, 3, 4])
def test_five_rounds_of_overlapping_upserts_match_the_model(
    catalog: Catalog, fv: int, partitioning: str
) -> None:
    spec, on = PARTITIONINGS[partitioning]
    table = _create(catalog, fv, spec)
    rng = random.Random(f"{fv}-{partitioning}")
    initial = [(i, "abc"[i % 3], i) for i in range(20)]
    table.append(_arrow(initial))
    model: Model = {_key(r, on): r for r in initial}
    history: list[tuple[int, list[Row]]] = []
    for round_no in range(1, 6):
        ids = sorted(rng.sample(range(30), 12))  # overlaps earlier rounds and adds new ids
        # usually the same category as before; sometimes a row moves to another one
        rows = [
            (i, "abc"[(i + (round_no if rng.random() < 0.3 else 0)) % 3], 100 * round_no + i) for i in ids
        ]
        result = table.upsert_with_equality_deletes(_arrow(rows), on=on)
        model = _upsert_model(model, rows, on)
        snap = table.current_snapshot()
        assert snap is not None and result.snapshot_id == snap.snapshot_id
        assert snap.operation == "overwrite"
        assert result.rows_written == 12 and result.keys_deleted == 12
        assert all(f.content == FileContent.EQUALITY_DELETES for f in result.delete_files)
        assert snap.summary["added-equality-deletes"] == str(sum(f.record_count for f in result.delete_files))
        assert snap.summary["added-records"] == "12"
        assert _rows_of(table.to_arrow()) == _model_rows(model), f"round {round_no}"
        if fv < 4:
            assert _rows_of(read_with_duckdb(table.metadata_location)) == _model_rows(model), (
                f"round {round_no}"
            )
        history.append((snap.snapshot_id, _model_rows(model)))
    for snapshot_id, expected in history:  # time travel: every round's state
        assert _rows_of(table.scan(snapshot_id=snapshot_id).to_arrow()) == expected
        if fv < 4:
            assert _rows_of(read_with_duckdb(table.metadata_location, snapshot_id=snapshot_id)) == expected
    if fv < 4:
        assert _rows_of(read_with_iceberg_rust(table.metadata_location)) == _model_rows(model)


@pytest.mark.parametrize(
    "reader",
    [
        "duckdb",
        "iceberg_rust",
        pytest.param(
            "pyiceberg",
            marks=pytest.mark.xfail(
                strict=True,
                raises=ValueError,
                reason="not implemented: PyIceberg 0.12 reads no equality deletes",
            ),
        ),
    ],
)
def test_independent_readers_apply_the_equality_deletes(catalog: Catalog, reader: str) -> None:
    table = _create(catalog, 2)
    table.append(_arrow([(1, "a", 1), (2, "b", 2)]))
    table.upsert_with_equality_deletes(_arrow([(2, "b", 20)]))
    got = READERS[reader](table.metadata_location)
    assert _rows_of(got) == [(1, "a", 1), (2, "b", 20)]


def test_v4_rounds_with_leaf_compaction_keep_delete_sequence_numbers(catalog: Catalog) -> None:
    props = {"write.v4.compaction.min-small-leaves": "2", "write.v4.root.max-inline-entries": "0"}
    table = _create(catalog, 4, properties=props)
    model: Model = {}
    rng = random.Random(7)
    for round_no in range(1, 9):
        rows = [(i, "x", 10 * round_no + i) for i in sorted(rng.sample(range(12), 5))]
        table.upsert_with_equality_deletes(_arrow(rows))
        model = _upsert_model(model, rows, None)
        assert _rows_of(table.to_arrow()) == _model_rows(model), f"round {round_no}"
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = raw_rows(snap.root_manifest)
    assert {r["content_type"] for r in root} <= {3, 4}  # only references: no inline equality deletes
    leaves = [raw_rows(_leaf_path(table, r["location"])) for r in root if r["content_type"] == 4]
    leaf_rows = [row for leaf in leaves for row in leaf]
    assert leaf_rows and {r["content_type"] for r in leaf_rows} == {2}
    carried = [r for r in leaf_rows if r["tracking"]["status"] == 0]
    assert carried, "compaction should have merged delete leaves (EXISTING rows)"
    # merged rows keep the sequence number of the snapshot that added them, not the merging one
    assert len({r["tracking"]["sequence_number"] for r in carried}) > 1


def _leaf_path(table: Table, location: str) -> str:
    if location.startswith(("/", "file:")):
        return _local(location)
    return str(Path(_local(table.location())) / location)


# ---------------------------------------------------------------------------------------------
# the sequence-number rule: new rows survive their own deletes


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_new_rows_are_not_deleted_by_the_deletes_of_their_own_snapshot(catalog: Catalog, fv: int) -> None:
    table = _create(catalog, fv)
    table.upsert_with_equality_deletes(_arrow([(1, "a", 1), (2, "a", 2)]))  # into an empty table
    assert _rows_of(table.to_arrow()) == [(1, "a", 1), (2, "a", 2)]
    table.upsert_with_equality_deletes(_arrow([(2, "b", 22), (3, "b", 3)]))
    assert _rows_of(table.to_arrow()) == [(1, "a", 1), (2, "b", 22), (3, "b", 3)]
    snap = table.current_snapshot()
    assert snap is not None
    tasks = table.scan().plan_files()
    newest = [t for t in tasks if t.data_sequence_number == snap.sequence_number]
    older = [t for t in tasks if t.data_sequence_number < snap.sequence_number]
    assert len(newest) == 1 and len(older) == 1
    own = [d for d in older[0].deletes if d.data_sequence_number == snap.sequence_number]
    assert len(own) == 1  # the older file sees this snapshot's delete file...
    assert newest[0].deletes == ()  # ...the new file, with the same sequence number, does not


# ---------------------------------------------------------------------------------------------
# nulls, duplicates, bad input


def test_null_keys_match_only_null_keys(catalog: Catalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType(), False),
        NestedField(2, "cat", StringType(), False),
        NestedField(3, "v", LongType(), False),
    )
    table = _create(catalog, 2, schema=schema)
    initial = [(None, None, 1), (None, "a", 2), (1, None, 3), (1, "a", 4), (2, "b", 5)]
    table.append(_arrow(initial))
    on = ["id", "cat"]
    model: Model = {_key(r, on): r for r in initial}
    rows = [(None, "a", 20), (1, None, 30)]
    table.upsert_with_equality_deletes(_arrow(rows), on=on)
    model = _upsert_model(model, rows, on)
    assert _rows_of(table.to_arrow()) == _model_rows(model)
    assert _rows_of(read_with_iceberg_rust(table.metadata_location)) == _model_rows(model)
    # No DuckDB cross-read here: DuckDB 1.5.5 also drops (None, None, 1). Its match of the delete
    # row (1, NULL) is `id = 1 AND cat IS NULL` in three-valued logic, NULL for a NULL id, and the
    # row is lost. The spec: a row is deleted only when every delete column is equal (null = null).
    result = table.delete_by_key(
        pa.table({"id": pa.array([None], pa.int64()), "cat": pa.array([None], pa.string())}), on=on
    )
    assert result.keys_deleted == 1
    del model[(None, None)]
    assert _rows_of(table.to_arrow()) == _model_rows(model)


def test_duplicate_keys_in_the_input_are_refused_and_change_nothing(catalog: Catalog) -> None:
    table = _create(catalog, 2)
    table.append(_arrow([(1, "a", 1)]))
    before_snapshot = table.current_snapshot()
    before_files = _data_dir(table)
    with pytest.raises(ValidationError, match=r"1 key\(s\) more than once, e.g. \(id=7\) in 2 rows"):
        table.upsert_with_equality_deletes(_arrow([(7, "a", 1), (8, "a", 2), (7, "b", 3)]))
    assert table.refresh().current_snapshot() == before_snapshot
    assert _data_dir(table) == before_files


@pytest.mark.parametrize(
    ("fv", "on", "message"),
    [
        (1, None, "format version 1 tables cannot hold equality delete files"),
        (2, ["nope"], "no column named 'nope'"),
        (2, ["score"], "'score' has type double: the spec forbids float and double"),
        (2, [], "at least one delete column"),
    ],
)
def test_bad_upserts_are_refused_and_change_nothing(
    catalog: Catalog, fv: int, on: list[str] | None, message: str
) -> None:
    table = _create(catalog, fv)
    table.append(_arrow([(1, "a", 1)]))
    before_files = _data_dir(table)
    with pytest.raises(ValidationError, match=message):
        table.upsert_with_equality_deletes(_arrow([(1, "b", 2)]), on=on)
    assert _data_dir(table) == before_files
    assert _rows_of(table.refresh().to_arrow()) == [(1, "a", 1)]


def test_without_identifier_fields_the_key_must_be_given(catalog: Catalog) -> None:
    schema = Schema(*SCHEMA.fields)  # no identifier fields
    table = _create(catalog, 2, schema=schema)
    with pytest.raises(ValidationError, match="no identifier fields: pass the key columns"):
        table.upsert_with_equality_deletes(_arrow([(1, "a", 1)]))
    table.upsert_with_equality_deletes(_arrow([(1, "a", 1)]), on="id")  # a single name works too
    table.upsert_with_equality_deletes(_arrow([(1, "b", 2)]), on="id")
    assert _rows_of(table.to_arrow()) == [(1, "b", 2)]


def test_partitioned_table_needs_the_partition_source_in_the_key(catalog: Catalog) -> None:
    table = _create(catalog, 2, PARTITIONINGS["identity"][0])
    table.append(_arrow([(1, "a", 1)]))
    before_files = _data_dir(table)
    with pytest.raises(ValidationError, match=r"source column\(s\) 'cat' are not delete columns.*add 'cat'"):
        table.upsert_with_equality_deletes(_arrow([(1, "b", 2)]))  # key: id only
    assert _data_dir(table) == before_files


def test_empty_input_commits_nothing(catalog: Catalog) -> None:
    table = _create(catalog, 2)
    table.append(_arrow([(1, "a", 1)]))
    snap = table.current_snapshot()
    assert table.upsert_with_equality_deletes(_arrow([])).snapshot_id is None
    assert table.delete_by_key(pa.table({"id": pa.array([], pa.int64())})).snapshot_id is None
    assert table.refresh().current_snapshot() == snap


# ---------------------------------------------------------------------------------------------
# delete by key, branches, lineage, concurrency


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_delete_by_key(catalog: Catalog, fv: int) -> None:
    table = _create(catalog, fv)
    table.append(_arrow([(i, "abc"[i % 3], i) for i in range(10)]))
    keys = pa.table({"id": pa.array([3, 3, 5, 42], pa.int64()), "v": pa.array([0, 0, 0, 0], pa.int64())})
    result = table.delete_by_key(keys)
    snap = table.current_snapshot()
    assert snap is not None and snap.operation == "delete" and result.snapshot_id == snap.snapshot_id
    assert result.keys_deleted == 3 and result.rows_written == 0 and result.data_files == ()
    assert [r[0] for r in _rows_of(table.to_arrow())] == [0, 1, 2, 4, 6, 7, 8, 9]
    if fv < 4:
        assert [r[0] for r in _rows_of(read_with_duckdb(table.metadata_location))] == [0, 1, 2, 4, 6, 7, 8, 9]


def test_upsert_to_a_branch_leaves_main_alone(catalog: Catalog) -> None:
    table = _create(catalog, 2)
    table.append(_arrow([(1, "a", 1), (2, "a", 2)]))
    main = table.current_snapshot()
    table.upsert_with_equality_deletes(_arrow([(2, "a", 20)]), branch="dev")
    assert table.current_snapshot() == main
    assert _rows_of(table.scan(ref="dev").to_arrow()) == [(1, "a", 1), (2, "a", 20)]
    assert _rows_of(table.to_arrow()) == [(1, "a", 1), (2, "a", 2)]


@pytest.mark.parametrize("fv", [3, 4])
def test_upserted_rows_get_new_row_ids(catalog: Catalog, fv: int) -> None:
    table = _create(catalog, fv)
    table.append(_arrow([(i, "a", i) for i in range(5)]))
    before = {
        r["id"]: r
        for r in table.scan(columns=("id", "_row_id", "_last_updated_sequence_number")).to_arrow().to_pylist()
    }
    next_row_id = table.metadata.next_row_id
    assert next_row_id == 5
    table.upsert_with_equality_deletes(_arrow([(1, "a", 10), (3, "a", 30), (7, "a", 70)]))
    snap = table.current_snapshot()
    assert snap is not None
    after = {
        r["id"]: r
        for r in table.scan(columns=("id", "_row_id", "_last_updated_sequence_number")).to_arrow().to_pylist()
    }
    for i in (0, 2, 4):  # untouched rows keep their lineage
        assert after[i] == before[i]
    new_ids = sorted(after[i]["_row_id"] for i in (1, 3, 7))
    assert new_ids == [5, 6, 7]  # fresh ids from the table's next-row-id, not the old ones
    assert all(after[i]["_last_updated_sequence_number"] == snap.sequence_number for i in (1, 3, 7))


def test_concurrent_upserts_of_the_same_key_last_commit_wins(catalog: Catalog) -> None:
    table = _create(catalog, 2)
    table.append(_arrow([(1, "a", 1)]))
    first = catalog.load_table("db.t")
    second = catalog.load_table("db.t")  # stale once `first` commits: its commit retries
    first.upsert_with_equality_deletes(_arrow([(1, "a", 100)]))
    second.upsert_with_equality_deletes(_arrow([(1, "a", 200)]))
    assert _rows_of(table.refresh().to_arrow()) == [(1, "a", 200)]
    assert _rows_of(read_with_duckdb(table.metadata_location)) == [(1, "a", 200)]
