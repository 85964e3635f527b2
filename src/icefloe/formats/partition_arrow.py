"""Split an Arrow table by partition values, computing transforms column-at-a-time.

identity, void, truncate (int/long/string/binary), year/month/day/hour and bucket of
integer-like sources (int, long, date, time, timestamps) are vectorised with Arrow compute and
NumPy (bucket with a vectorised murmur3_x86_32 over the 8-byte little-endian long, as the spec
hashes them). Other cases (bucket of strings/decimals/uuids/binary, truncate of decimals) apply
the spec transform once per distinct value. Partition tuples hold internal values (date days
as int, timestamps as int micros, ``Decimal``, ``uuid.UUID``, ...).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import internal_to_arrow, to_internal_values, type_to_arrow
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.spec.types import (
    BinaryType,
    DateType,
    DecimalType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
)

PartitionTuple = tuple[Any, ...]
_INT_LIKE = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_NANO_TS = (TimestampNanoType, TimestamptzNanoType)
_MICROS_PER_HOUR = 3_600_000_000
_MICROS_PER_DAY = 86_400_000_000


def partition_table(
    table: pa.Table, schema: Schema, spec: PartitionSpec
) -> list[tuple[PartitionTuple, pa.Table]]:
    """Split ``table`` (columns named as in ``schema``) into one table per partition tuple.

    Groups come in order of first appearance; rows keep their relative order within a group.
    """
    if not spec.fields:
        return [((), table)] if table.num_rows else []
    if table.num_rows == 0:
        return []
    keys: list[pa.Array] = []
    result_types: list[IcebergType] = []
    for pf in spec.fields:
        source_type = schema.find_type(pf.source_id)
        source = source_column(table, schema, pf.source_id)
        keys.append(transform_array(pf.transform, source_type, source, pf))
        result_types.append(pf.transform.result_type(source_type))

    codes, dictionaries = _group_codes(keys)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.diff(sorted_codes)) + 1
    bounds = [0, *starts.tolist(), len(sorted_codes)]
    ordered = table.take(pa.array(order))
    out: list[tuple[PartitionTuple, pa.Table]] = []
    key_codes = [_dict_indices(d) for d in dictionaries]
    key_values = [
        to_internal_values(d.dictionary, t) for d, t in zip(dictionaries, result_types, strict=True)
    ]
    for lo, hi in itertools.pairwise(bounds):
        first_row = int(order[lo])
        values = tuple(
            None if (c := int(idx[first_row])) < 0 else vals[c]
            for idx, vals in zip(key_codes, key_values, strict=True)
        )
        out.append((values, ordered.slice(lo, hi - lo)))
    return out


def source_column(table: pa.Table, schema: Schema, source_id: int) -> pa.Array:
    """The values of a (possibly struct-nested) source column; a null parent makes the value null."""
    chain = _field_chain(schema.fields, source_id)
    if chain is None:
        raise ValidationError(f"partition source field {source_id} is not a struct-reachable column")
    col = table.column(chain[0].name)
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    for f in chain[1:]:
        arr = arr.flatten()[arr.type.get_field_index(f.name)]
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return arr


def _field_chain(fields: tuple[NestedField, ...], field_id: int) -> list[NestedField] | None:
    for f in fields:
        if f.field_id == field_id:
            return [f]
        if isinstance(f.field_type, StructType):
            sub = _field_chain(f.field_type.fields, field_id)
            if sub is not None:
                return [f, *sub]
    return None


def transform_array(
    transform: Transform, source_type: IcebergType, arr: pa.Array, pf: PartitionField | None = None
) -> pa.Array:
    """Apply a partition transform to a whole Arrow array (result in the Arrow form of its type)."""
    if isinstance(transform, UnknownTransform):
        name = pf.name if pf is not None else str(transform)
        raise ValidationError(f"cannot write to partition field {name!r} with unknown transform {transform}")
    result_type = transform.result_type(source_type)
    target = type_to_arrow(result_type)
    if isinstance(transform, VoidTransform):
        return pa.nulls(len(arr), target)
    if isinstance(transform, IdentityTransform):
        return arr
    if isinstance(transform, BucketTransform) and isinstance(source_type, (*_INT_LIKE, *_NANO_TS)):
        longs = _as_int64(arr)
        if isinstance(source_type, _NANO_TS):
            longs = np.floor_divide(longs, 1000)
        buckets = (murmur3_long(longs) & 0x7FFFFFFF) % transform.num_buckets
        return pa.array(buckets.astype(np.int32), pa.int32(), mask=_null_mask(arr))
    if isinstance(transform, TruncateTransform):
        w = transform.width
        if isinstance(source_type, LongType) or (isinstance(source_type, IntegerType) and w <= 2**30):
            # Java's v - (((v % W) + W) % W): equal to v - floorMod(v, W) in wrapping arithmetic
            # (numpy int64 wraps like Java's long; ints wrap to 32 bits like Java's int)
            v = _as_int64(arr)
            with np.errstate(over="ignore"):
                truncated = v - np.mod(v, w)
            if isinstance(source_type, IntegerType):
                truncated = _wrap32(truncated)
            return pa.array(truncated, pa.int64(), mask=_null_mask(arr)).cast(target)
        if isinstance(source_type, StringType):
            return pc.utf8_slice_codeunits(arr, 0, w)
        if isinstance(source_type, BinaryType):
            return pc.binary_slice(arr, 0, w)
    if isinstance(transform, YearTransform | MonthTransform | DayTransform | HourTransform):
        return _time_transform(transform, source_type, arr, target)
    return _per_distinct(transform, source_type, arr, target)


# Arrow's year()/month() are right within ~±29,000 years of 1970 only; beyond, compute in Python.
_ARROW_CALENDAR_DAYS = 10_000_000


def _wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values wrapped to int32 (two's complement), as Java's int arithmetic and casts do."""
    return ((values + 2**31) % 2**32) - 2**31


def _time_transform(
    transform: Transform, source_type: IcebergType, arr: pa.Array, target: pa.DataType
) -> pa.Array:
    mask = _null_mask(arr)
    if isinstance(source_type, DateType):
        days = _as_int64(arr)
    elif isinstance(source_type, TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        scale = 1000 if isinstance(source_type, _NANO_TS) else 1
        values = _as_int64(arr)
        if isinstance(transform, HourTransform):
            hours = _wrap32(np.floor_divide(values, _MICROS_PER_HOUR * scale))  # Java's (int) cast
            return pa.array(hours, pa.int64(), mask=mask).cast(target)
        days = np.floor_divide(values, _MICROS_PER_DAY * scale)
    else:
        raise ValidationError(f"transform {transform} cannot be applied to type {source_type}")
    if isinstance(transform, DayTransform):
        return pa.array(days, pa.int64(), mask=mask).cast(pa.int32()).cast(target)
    if days.size and int(np.abs(days).max()) > _ARROW_CALENDAR_DAYS:
        return _per_distinct(transform, source_type, arr, target)  # Arrow's year() overflows there
    dates = pa.array(days, pa.int64(), mask=mask).cast(pa.int32()).cast(pa.date32())
    years = pc.subtract(pc.year(dates), 1970)
    if isinstance(transform, YearTransform):
        return years.cast(target)
    months = pc.add(pc.multiply(years, 12), pc.subtract(pc.month(dates), 1))
    return months.cast(target)


def _per_distinct(
    transform: Transform, source_type: IcebergType, arr: pa.Array, target: pa.DataType
) -> pa.Array:
    uniq = pc.unique(arr)
    values = to_internal_values(uniq, source_type)
    results = [transform.apply(source_type, v) for v in values]
    if isinstance(source_type, DecimalType) and isinstance(transform, TruncateTransform):
        # truncating the most negative value of decimal(P, S) needs P + 1 digits (as in Java, whose
        # BigDecimal result still fits the partition field's bytes): carry it at full width
        wide, scale = source_type.precision + 1, source_type.scale
        target = pa.decimal128(38, scale) if wide <= 38 else pa.decimal256(wide, scale)
    result_arr = internal_to_arrow(transform.result_type(source_type), results, target)
    return pc.take(result_arr, pc.index_in(arr, value_set=uniq))


def _as_int64(arr: pa.Array) -> np.ndarray:
    """Integer storage of an int/date/time/timestamp array as int64 NumPy values (nulls as 0)."""
    if pa.types.is_date32(arr.type):
        ints = arr.cast(pa.int32()).cast(pa.int64())
    elif pa.types.is_integer(arr.type):
        ints = arr.cast(pa.int64())
    else:
        ints = arr.cast(pa.int64())
    return np.asarray(pc.fill_null(ints, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _null_mask(arr: pa.Array) -> np.ndarray | None:
    if not arr.null_count:
        return None
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_long(values: np.ndarray) -> np.ndarray:
    """Signed murmur3_x86_32 (seed 0) of each int64 as 8 little-endian bytes (spec Appendix B)."""
    v = np.ascontiguousarray(values, dtype="<i8").view("<u4").reshape(-1, 2)
    c1, c2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
    h = np.zeros(len(v), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in (0, 1):
            k = v[:, i].astype(np.uint32) * c1
            k = _rotl32(k, 15) * c2
            h ^= k
            h = _rotl32(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def _group_codes(keys: list[pa.Array]) -> tuple[np.ndarray, list[pa.DictionaryArray]]:
    """One int64 group code per row (first-appearance order) and each key's dictionary encoding."""
    dictionaries = []
    combined: np.ndarray | None = None
    for key in keys:
        encoded = pc.dictionary_encode(key, null_encoding="encode")
        dictionaries.append(encoded)
        codes = _dict_indices(encoded)
        if combined is None:
            combined = codes
        else:
            combined = combined * np.int64(len(encoded.dictionary)) + codes
            combined = _dict_indices(pc.dictionary_encode(pa.array(combined)))
    assert combined is not None
    return combined, dictionaries


def _dict_indices(encoded: pa.DictionaryArray) -> np.ndarray:
    """Dictionary indices as int64 (-1 never occurs: nulls are encoded as a dictionary entry)."""
    indices = encoded.indices
    return np.asarray(pc.fill_null(indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
