"""Z-order for compaction (Iceberg's ``sort_order => 'zorder(c1, c2)'``).

As Iceberg's Spark z-ordering does, each column value becomes an order-preserving byte string
(here one 64-bit word: integers, dates and timestamps with the sign bit flipped; floats with the
IEEE trick that orders negatives below positives; strings and binaries by their first 8 bytes,
Iceberg's default ``var-length-contribution``; booleans in the top bit; null as all zeros) and the
bits of the columns are interleaved, most significant first, column after column. Rows sorted by
that key lie along a Z-shaped curve, so consecutive rows, and so the files cut from them, are close
in every column at once: each file's min/max range narrows on all the columns, not only the first.

The bytes are not Iceberg Java's byte for byte (Java gives strings a configurable length and its
floats and integers other widths in places); the clustering is the same idea, and the order is
what files' ranges depend on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

_INTEGRAL = (IntegerType, LongType, DateType, TimestampType, TimestamptzType)
_BYTES = (StringType, BinaryType)
_SIGN = np.uint64(1 << 63)
WORD_BITS = 64


@dataclass(frozen=True)
class ZOrder:
    """Order rows by the interleaved bits of these top-level columns (field ids), at least one."""

    source_ids: tuple[int, ...]

    @property
    def is_unsorted(self) -> bool:
        return not self.source_ids


def check_zorderable(schema: Schema, order: ZOrder, identity_partition_ids: set[int] | None = None) -> None:
    """Unsupported unless every column is a top-level column of a type z-ordering orders; as
    Iceberg, an identity partition column is refused (every row of a file has the same value)."""
    top_level = {f.field_id: f for f in schema.fields}
    if not order.source_ids:
        raise ValidationError("zorder needs at least one column")
    for fid in order.source_ids:
        f = top_level.get(fid)
        if f is None:
            name = schema.find_column_name(fid) or str(fid)
            raise Unsupported(f"z-ordering by {name}: only top-level columns")
        if not isinstance(f.field_type, _INTEGRAL + _BYTES + (FloatType, DoubleType, BooleanType)):
            raise Unsupported(f"z-ordering by {f.name} of type {f.field_type}")
        if identity_partition_ids and fid in identity_partition_ids:
            raise ValidationError(f"cannot z-order by {f.name}: it is an identity partition column")


def zorder_rows(rows: pa.Table, schema: Schema, order: ZOrder) -> pa.Table:
    """``rows`` (named by the table's columns) sorted by their z-value over ``order``'s columns."""
    check_zorderable(schema, order)
    if rows.num_rows < 2:
        return rows
    words = [ordered_word(rows.column(schema.find_field(fid).name)) for fid in order.source_ids]
    key = interleave(words)
    keyed = pa.table({f"w{i}": pa.array(w) for i, w in enumerate(key)})
    return rows.take(pc.sort_indices(keyed, sort_keys=[(f"w{i}", "ascending") for i in range(len(key))]))


def ordered_word(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """One unsigned 64-bit word per value whose unsigned order is the values' order (null: 0)."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = values.type
    nulls = values.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(t):
        out = values.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint64) << np.uint64(63)
    elif pa.types.is_floating(t):
        bits = values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False).view(np.uint64)
        out = np.where(bits & _SIGN, ~bits, bits | _SIGN)
    elif pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        ints = values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        out = ints.view(np.uint64) ^ _SIGN
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        out = _prefix_words(values)
    else:
        raise Unsupported(f"z-ordering a column of type {t}")
    return np.where(nulls, np.uint64(0), out).astype(np.uint64)


def _prefix_words(values: pa.Array) -> np.ndarray:
    """The first 8 bytes of each string or binary value, zero-padded, as a big-endian word."""
    raw = values.cast(pa.binary()).fill_null(b"").to_pylist()
    return np.array([int.from_bytes(v[:8].ljust(8, b"\0"), "big") for v in raw], dtype=np.uint64)


def interleave(words: list[np.ndarray]) -> list[np.ndarray]:
    """Interleave the bits of the columns' words, most significant first and column after column;
    the result as ``len(words)`` words per row, most significant word first."""
    k = len(words)
    out = [np.zeros_like(words[0]) for _ in range(k)]
    for j in range(WORD_BITS * k):  # output bit j, 0 the most significant
        column, bit = j % k, WORD_BITS - 1 - j // k
        value = (words[column] >> np.uint64(bit)) & np.uint64(1)
        out[j // WORD_BITS] |= value << np.uint64(WORD_BITS - 1 - j % WORD_BITS)
    return out
