"""Arrow data between Spark's Arrow form and icefloe's Arrow form of the same table columns.

Spark has no uuid, fixed or time type: icefloe reads them as string (canonical text), binary and
long (microseconds). Spark also checks that Arrow batches handed back from Python match its
schema exactly (``string`` not ``large_string``, ``timestamp[us, tz=UTC]``, same nullability), so
every batch going to Spark is rebuilt on the exact Arrow schema Spark derives.
"""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.spec.schema import Schema
from icefloe.spec.types import FixedType, IcebergType, NestedField, StructType, TimeType, UUIDType


def spark_arrow_schema(spark_schema: Any) -> pa.Schema:
    """The Arrow schema Spark expects for batches of ``spark_schema`` (UTC timestamps)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")


def to_spark_arrow(table: pa.Table, fields: list[NestedField], target: pa.Schema) -> pa.Table:
    """icefloe Arrow data (columns in ``fields`` order) rebuilt exactly on Spark's ``target``."""
    columns = []
    for i, (f, tf) in enumerate(zip(fields, target, strict=True)):
        col = table.column(i)
        columns.append(_to_spark(col, f.field_type, tf.type))
    return pa.Table.from_arrays(columns, schema=target)


def _to_spark(col: pa.ChunkedArray, t: IcebergType, target: pa.DataType) -> pa.ChunkedArray:
    if isinstance(col.type, pa.BaseExtensionType):
        col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
    if isinstance(t, UUIDType):
        values = [None if v is None else str(uuid.UUID(bytes=v)) for v in col.to_pylist()]
        return pa.chunked_array([pa.array(values, pa.string())], type=target)
    if isinstance(t, TimeType) and pa.types.is_integer(target):
        return pa.chunked_array([c.cast(pa.int64()) for c in col.chunks], type=target)
    if isinstance(t, StructType) and pa.types.is_struct(target):
        chunks = []
        for chunk in col.chunks:
            children = [
                _to_spark(pa.chunked_array([chunk.field(j)]), child.field_type, target.field(j).type)
                for j, child in enumerate(t.fields)
            ]
            mask = chunk.is_null() if chunk.null_count else None
            arrays = [c.combine_chunks() if c.num_chunks else pa.array([], c.type) for c in children]
            chunks.append(pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask))
        return pa.chunked_array(chunks, type=target)
    if col.type.equals(target):
        return col
    return col.cast(target)


def from_spark_arrow(table: pa.Table, schema: Schema) -> pa.Table:
    """Spark-typed Arrow columns (uuid as text, fixed as binary, time as long) in icefloe's types."""
    out = table
    for f in schema.fields:
        if f.name not in table.column_names:
            continue
        idx = out.column_names.index(f.name)
        col = out.column(idx)
        t = f.field_type
        if isinstance(t, UUIDType) and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            values = [None if v is None else uuid.UUID(v).bytes for v in col.to_pylist()]
            out = out.set_column(idx, f.name, pa.array(values, pa.binary(16)))
        elif isinstance(t, FixedType) and (
            pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)
        ):
            values = col.to_pylist()
            bad = next((v for v in values if v is not None and len(v) != t.length), None)
            if bad is not None:
                from icefloe.errors import ValidationError

                raise ValidationError(
                    f"column {f.name!r} is fixed[{t.length}] but got a value of {len(bad)} bytes"
                )
            out = out.set_column(idx, f.name, pa.array(values, pa.binary(t.length)))
        elif isinstance(t, TimeType) and pa.types.is_integer(col.type):
            out = out.set_column(idx, f.name, pc.cast(col, pa.int64()).cast(pa.time64("us")))
        elif isinstance(t, TimeType) and pa.types.is_time(col.type):
            out = out.set_column(idx, f.name, col.cast(pa.time64("us")))
    return out
