"""Z-order keys: order-preserving words per type, bit interleaving, and rows along the Z curve."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from icefloe.errors import Unsupported, ValidationError
from icefloe.maintenance.sorting import sort_rows
from icefloe.maintenance.zorder import ZOrder, check_zorderable, interleave, ordered_word
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IntegerType, ListType, NestedField, StringType


def _order_of(values: pa.Array) -> list[int]:
    return [int(i) for i in np.argsort(ordered_word(values), kind="stable")]


@pytest.mark.parametrize(
    "values",
    [
        pa.array([5, -3, 0, 2**40, -(2**50), 7], pa.int64()),
        pa.array([3, -1, 0, -7], pa.int32()),
        pa.array([1.5, -0.5, math.inf, -math.inf, 0.25, -1e300], pa.float64()),
        pa.array(["pear", "apple", "", "apricot", "b"]),
        pa.array([True, False, True]),
    ],
)
def test_words_order_as_the_values(values: pa.Array) -> None:
    expected = sorted(range(len(values)), key=lambda i: values[i].as_py())
    assert _order_of(values) == expected


def test_null_is_the_smallest_word_and_strings_compare_by_eight_bytes() -> None:
    words = ordered_word(pa.array([None, -(2**62), 1], pa.int64()))
    assert int(words[0]) == 0 and 0 < int(words[1]) < int(words[2])
    same = ordered_word(pa.array(["abcdefgh-one", "abcdefgh-two"]))
    assert int(same[0]) == int(same[1]) == int.from_bytes(b"abcdefgh", "big")


def test_interleave_takes_bits_column_after_column() -> None:
    a = np.array([0b11 << 62], dtype=np.uint64)
    b = np.array([0b01 << 62], dtype=np.uint64)
    hi, lo = interleave([a, b])
    assert int(hi[0]) == 0b1011 << 60 and int(lo[0]) == 0


def test_rows_follow_the_z_curve() -> None:
    schema = Schema(NestedField(1, "x", IntegerType(), True), NestedField(2, "y", IntegerType(), True))
    cells = [(x, y) for x in range(4) for y in range(4)]
    rows = pa.table({"x": [c[0] for c in reversed(cells)], "y": [c[1] for c in reversed(cells)]})
    out = sort_rows(rows, schema, ZOrder((1, 2)))
    got = list(zip(out.column("x").to_pylist(), out.column("y").to_pylist(), strict=True))
    assert got[:8] == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
    assert got[8:12] == [(2, 0), (2, 1), (3, 0), (3, 1)]
    assert sorted(got) == cells


def test_columns_z_order_cannot_use_are_refused() -> None:
    schema = Schema(
        NestedField(1, "d", DoubleType(), True),
        NestedField(2, "s", StringType(), True),
        NestedField(3, "l", ListType(4, StringType(), True), True),
    )
    check_zorderable(schema, ZOrder((1, 2)))
    with pytest.raises(Unsupported, match="l of type"):
        check_zorderable(schema, ZOrder((1, 3)))
    with pytest.raises(Unsupported, match="top-level"):
        check_zorderable(schema, ZOrder((4,)))
    with pytest.raises(ValidationError, match="identity partition"):
        check_zorderable(schema, ZOrder((2,)), {2})
    with pytest.raises(ValidationError, match="at least one"):
        check_zorderable(schema, ZOrder(()))
