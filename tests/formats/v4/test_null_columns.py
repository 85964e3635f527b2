"""Pruning all-null optional columns: the members left out, and the same result (and file bytes)
whether an input schema and outcome are met for the first time or found again."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.formats.v4.content_entry import encode_entries_table
from icefloe.formats.v4.null_columns import prune_null_columns
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField

INNER = pa.struct([pa.field("lo", pa.int64()), pa.field("hi", pa.int64())])
STATS = pa.struct([pa.field("a", INNER), pa.field("b", INNER)])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int32(), nullable=False, metadata={"PARQUET:field_id": "1"}),
        pa.field("note", pa.string(), metadata={"PARQUET:field_id": "2"}),
        pa.field("stats", STATS, metadata={"PARQUET:field_id": "3"}),
        pa.field("info", pa.struct([pa.field("k", pa.int64(), nullable=False)]), nullable=False),
    ]
)


def _table(
    ids: list[int], notes: list[str | None], stats: list[dict | None], schema: pa.Schema = SCHEMA
) -> pa.Table:
    info = [{"k": i} for i in ids]  # a required struct: never left out
    return pa.table([ids, notes, stats, info], schema=schema)


def _stats(a_lo: int | None, b_hi: int | None) -> dict:
    return {"a": {"lo": a_lo, "hi": None}, "b": None if b_hi is None else {"lo": None, "hi": b_hi}}


def test_all_null_optional_columns_and_members_are_left_out() -> None:
    pruned = prune_null_columns(_table([1, 2], [None, None], [_stats(5, None), _stats(6, None)]))
    assert pruned.schema.names == ["id", "stats", "info"]
    stats = pruned.schema.field("stats")
    assert stats.metadata == {b"PARQUET:field_id": b"3"}  # field ids kept
    assert stats.type == pa.struct([pa.field("a", pa.struct([pa.field("lo", pa.int64())]))])
    assert pruned.column("stats").to_pylist() == [{"a": {"lo": 5}}, {"a": {"lo": 6}}]
    assert pruned.schema.field("info").type == SCHEMA.field("info").type


def test_a_table_that_keeps_everything_is_returned_as_it_is() -> None:
    table = _table([1], ["x"], [{"a": {"lo": 1, "hi": 2}, "b": {"lo": 3, "hi": 4}}])
    pruned = prune_null_columns(table)
    assert pruned.schema.equals(SCHEMA, check_metadata=True)
    assert pruned.equals(table, check_metadata=True)


def test_an_empty_table_leaves_nothing_out() -> None:
    assert prune_null_columns(_table([], [], [])).schema.equals(SCHEMA, check_metadata=True)


def test_an_outcome_met_again_gives_the_same_result() -> None:
    first = prune_null_columns(_table([1], [None], [_stats(1, None)]))
    other = prune_null_columns(_table([1], ["n"], [_stats(None, 7)]))  # another outcome between
    again = prune_null_columns(_table([2, 3], [None, None], [_stats(2, None), _stats(3, None)]))
    assert again.schema.equals(first.schema, check_metadata=True)
    assert again.column("stats").to_pylist() == [{"a": {"lo": 2}}, {"a": {"lo": 3}}]
    assert other.schema.names == ["id", "note", "stats", "info"]
    assert other.column("stats").to_pylist() == [{"b": {"hi": 7}}]


def test_an_evolved_or_widened_schema_is_pruned_by_its_own_members() -> None:
    prune_null_columns(_table([1], [None], [_stats(1, None)]))  # SCHEMA's members known
    added = pa.struct([*STATS, pa.field("c", INNER)])
    evolved = SCHEMA.set(2, SCHEMA.field("stats").with_type(added))
    stats = [{"a": {"lo": 1, "hi": None}, "b": None, "c": {"lo": None, "hi": 9}}]
    pruned = prune_null_columns(_table([1], [None], stats, evolved))
    assert pruned.column("stats").to_pylist() == [{"a": {"lo": 1}, "c": {"hi": 9}}]
    widened = SCHEMA.set(0, SCHEMA.field("id").with_type(pa.int64()))
    assert prune_null_columns(_table([1], [None], [None], widened)).schema.field("id").type == pa.int64()


def test_the_file_bytes_are_the_same_when_the_outcome_is_found_again() -> None:
    options = {
        "table_schema": Schema(NestedField(1, "id", LongType(), True)),
        "kind": "root",
        "snapshot_id": 1,
        "sequence_number": 1,
        "compact": True,
    }
    schema = SCHEMA.with_metadata({"met": "first here"})  # a schema no other test pruned
    table = _table([1, 2], [None, "x"], [_stats(1, None), _stats(None, None)], schema)
    first = encode_entries_table(table, **options)  # type: ignore[arg-type]
    encode_entries_table(_table([3], [None], [None], schema), **options)  # type: ignore[arg-type]
    assert encode_entries_table(table, **options) == first  # type: ignore[arg-type]
    stored = pq.read_table(pa.BufferReader(first))
    assert stored.schema.names == ["id", "note", "stats", "info"]
    assert stored.column("stats").to_pylist() == [{"a": {"lo": 1}}, {"a": {"lo": None}}]
