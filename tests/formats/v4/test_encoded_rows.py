"""Encoding content entries again reuses the Arrow rows of objects met before, byte for byte; small
all-null structs are filled from a cache exactly as the general path fills them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from icefloe.formats.v4.content_entry import ContentRow
from icefloe.formats.v4.content_entry_schema import content_entry_schema, fill_required_members
from icefloe.formats.v4.encoded_rows import ENCODED_ROWS, EncodedRows
from tests.formats.v4.test_content_entry import SCHEMA, SPECS, data_file, entry, leaf, manifest_ref, root


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    ENCODED_ROWS.clear()
    yield
    ENCODED_ROWS.clear()


def _uncached(encode: Any, rows: list[ContentRow], **options: Any) -> bytes:
    ENCODED_ROWS.clear()
    return bytes(encode(rows, **options))


def _rows(n: int, prefix: str) -> list[ContentRow]:
    return [
        entry(data_file(f"{prefix}{i}", first_row_id=100 * i), sequence_number=3, file_sequence_number=3)
        for i in range(n)
    ]


def test_a_root_carrying_rows_encodes_as_without_the_cache() -> None:
    parent = [manifest_ref(), *_rows(4, "p")]
    root(parent)
    child = [parent[0], *parent[3:], *_rows(2, "c"), parent[1]]  # reordered, one dropped, two new
    assert root(child) == _uncached(root, child)


def test_rows_seen_under_another_encoding_are_not_reused() -> None:
    rows = _rows(3, "r")
    leaf(rows)
    assert root(rows) == _uncached(root, rows)  # kind differs
    leaf(rows)
    assert leaf(rows, table_location=None) == _uncached(leaf, rows, table_location=None)


def test_only_rows_not_seen_are_encoded() -> None:
    cache = EncodedRows()
    encoded: list[list[str]] = []

    def encode(batch: list[str]) -> pa.Array:
        encoded.append(list(batch))
        return pa.array([{"v": s} for s in batch], pa.struct([("v", pa.string())]))

    a, b, c, d = "a" * 10, "b" * 10, "c" * 10, "d" * 10  # distinct objects
    first = cache.encode(("k",), [a, b, c], encode)
    second = cache.encode(("k",), [c, d, a, b], encode)
    assert encoded == [[a, b, c], [d]]
    assert second.to_pylist() == [{"v": s} for s in (c, d, a, b)]
    assert first.to_pylist() == [{"v": s} for s in (a, b, c)]


def test_an_alias_encodes_as_its_row() -> None:
    cache = EncodedRows()
    calls: list[int] = []

    def encode(batch: list[object]) -> pa.Array:
        calls.append(len(batch))
        return pa.array([str(x) for x in batch])

    row, same = ["x"], ["x"]  # equal values, different objects
    cache.encode(("k",), [row], encode)
    cache.alias([(row, same)])
    assert cache.encode(("k",), [same], encode).to_pylist() == ["['x']"]
    assert calls == [1]


def test_small_all_null_structs_are_filled_as_the_general_path_fills_them() -> None:
    schema = content_entry_schema(SCHEMA, SPECS)
    target = pa.struct(list(schema.write_arrow))
    for f in target:
        if pa.types.is_struct(f.type):
            small = fill_required_members(pa.nulls(2, f.type), f.type, f.name)  # built once, cached
            general = fill_required_members(pa.nulls(40, f.type), f.type, f.name).slice(0, 2)
            assert small.equals(general), f.name
