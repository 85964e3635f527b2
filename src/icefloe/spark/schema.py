"""Iceberg <-> Spark schemas: types, field-id metadata, and checking what a DataFrame may write.

Spark's Parquet reader and writer carry Parquet field ids in ``StructField.metadata['parquet.field.id']``
(with ``spark.sql.parquet.fieldId.read.enabled`` / ``...write.enabled``), so a Spark schema built
here reads renamed columns by id and writes files whose columns carry the table's ids.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from icefloe.errors import Unsupported, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

FIELD_ID_KEY = "parquet.field.id"

_PRIMITIVES: dict[type, T.DataType] = {
    BooleanType: T.BooleanType(),
    IntegerType: T.IntegerType(),
    LongType: T.LongType(),
    FloatType: T.FloatType(),
    DoubleType: T.DoubleType(),
    DateType: T.DateType(),
    TimestampType: T.TimestampNTZType(),
    TimestamptzType: T.TimestampType(),
    StringType: T.StringType(),
    UUIDType: T.StringType(),
    BinaryType: T.BinaryType(),
}


def to_spark_type(t: IcebergType, field_ids: bool = True) -> T.DataType:
    """The Spark type of an Iceberg type (uuid reads as string, fixed as binary, time as TIME(6))."""
    if isinstance(t, StructType):
        return T.StructType([to_spark_field(f, field_ids) for f in t.fields])
    if isinstance(t, ListType):
        return T.ArrayType(to_spark_type(t.element_type, field_ids), not t.element_required)
    if isinstance(t, MapType):
        return T.MapType(
            to_spark_type(t.key_type, field_ids), to_spark_type(t.value_type, field_ids), not t.value_required
        )
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return T.BinaryType()
    if isinstance(t, TimeType):
        return _spark_time_type()
    spark_type = _PRIMITIVES.get(type(t))
    if spark_type is None:
        raise Unsupported(f"Iceberg type {t} has no Spark equivalent")
    return spark_type


def _spark_time_type() -> T.DataType:
    """Spark's TIME(6) where it exists (Spark 4.1+), else microseconds as a long."""
    time_type = getattr(T, "TimeType", None)
    return time_type(6) if time_type is not None else T.LongType()


def to_spark_field(f: NestedField, field_ids: bool = True) -> T.StructField:
    """A Spark field with the Iceberg field id in its metadata."""
    metadata = {FIELD_ID_KEY: f.field_id} if field_ids else {}
    return T.StructField(f.name, to_spark_type(f.field_type, field_ids), not f.required, metadata)


def to_spark_schema(schema: Schema | StructType, field_ids: bool = True) -> T.StructType:
    """The Spark schema of an Iceberg schema, each field carrying ``parquet.field.id``."""
    return T.StructType([to_spark_field(f, field_ids) for f in schema.fields])


# ---------------------------------------------------------------------------------------------
# Spark -> Iceberg (table creation)


def to_iceberg_schema(struct: T.StructType) -> Schema:
    """An Iceberg schema for a Spark schema (ids assigned in order; the catalog reassigns them)."""
    counter = [0]

    def next_id() -> int:
        counter[0] += 1
        return counter[0]

    def convert(t: T.DataType) -> IcebergType:
        if isinstance(t, T.StructType):
            ids = [next_id() for _ in t.fields]
            return StructType(
                *(
                    NestedField(i, f.name, convert(f.dataType), not f.nullable)
                    for i, f in zip(ids, t.fields, strict=True)
                )
            )
        if isinstance(t, T.ArrayType):
            element_id = next_id()
            return ListType(element_id, convert(t.elementType), not t.containsNull)
        if isinstance(t, T.MapType):
            key_id, value_id = next_id(), next_id()
            return MapType(
                key_id, convert(t.keyType), value_id, convert(t.valueType), not t.valueContainsNull
            )
        return _primitive_from_spark(t)

    top = convert(struct)
    assert isinstance(top, StructType)
    return Schema(*top.fields)


def _primitive_from_spark(t: T.DataType) -> IcebergType:
    if isinstance(t, T.BooleanType):
        return BooleanType()
    if isinstance(t, T.ByteType | T.ShortType | T.IntegerType):
        return IntegerType()
    if isinstance(t, T.LongType):
        return LongType()
    if isinstance(t, T.FloatType):
        return FloatType()
    if isinstance(t, T.DoubleType):
        return DoubleType()
    if isinstance(t, T.DecimalType):
        return DecimalType(t.precision, t.scale)
    if isinstance(t, T.DateType):
        return DateType()
    if isinstance(t, T.TimestampNTZType):
        return TimestampType()
    if isinstance(t, T.TimestampType):
        return TimestamptzType()
    if isinstance(t, T.StringType | T.VarcharType | T.CharType):
        return StringType()
    if isinstance(t, T.BinaryType):
        return BinaryType()
    raise Unsupported(f"Spark type {t.simpleString()} has no Iceberg equivalent")


# ---------------------------------------------------------------------------------------------
# what the native Parquet route can handle


def native_readable(t: IcebergType) -> bool:
    """True when Spark's own Parquet reader returns this type exactly as icefloe would."""
    if isinstance(t, StructType):
        return all(native_readable(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return native_readable(t.element_type)
    if isinstance(t, MapType):
        return native_readable(t.key_type) and native_readable(t.value_type)
    return not isinstance(t, UUIDType | TimeType | TimestampNanoType | TimestamptzNanoType)


def native_writable(t: IcebergType) -> bool:
    """True when Spark's Parquet writer produces the Iceberg physical layout for this type.

    Spark cannot attach field ids to list elements or map keys/values, and writes uuid, fixed
    and time columns with other physical types, so those go through the Arrow writer.
    """
    if isinstance(t, StructType):
        return all(native_writable(f.field_type) for f in t.fields)
    if isinstance(t, ListType | MapType):
        return False
    return not isinstance(t, UUIDType | FixedType | TimeType | TimestampNanoType | TimestamptzNanoType)


# ---------------------------------------------------------------------------------------------
# DataFrame -> table schema (writes)


@dataclass(frozen=True)
class WriteProjection:
    """Columns that turn a DataFrame into the table's exact Spark schema (with field ids)."""

    columns: list[Column]
    schema: T.StructType


def write_projection(
    table_schema: Schema, df_schema: T.StructType, field_ids: bool = True
) -> WriteProjection:
    """Check ``df_schema`` against the table and build the conforming projection.

    Columns match by name (case-insensitively when unambiguous). Raises ``ValidationError`` naming the
    column for: a column the table does not have, a missing required column (without write default),
    a type that cannot be written without loss. Nulls in a required column fail the job at run time
    (before anything is committed) with a message naming the column.
    """
    target = to_spark_schema(table_schema, field_ids)
    columns = []
    df_fields = _by_name(df_schema, "")
    known = {f.name.lower() for f in table_schema.fields}
    for extra in df_schema.fields:
        if extra.name.lower() not in known:
            raise ValidationError(
                f"column {extra.name!r} is not in the table schema {_names(table_schema.fields)}"
            )
    for f, sf in zip(table_schema.fields, target.fields, strict=True):
        src = df_fields.get(f.name.lower())
        if src is None:
            expr = _missing(f, f.name, sf.dataType)
        else:
            expr = _conform(F.col(_quote(src.name)), src.dataType, src.nullable, f, f.name)
        columns.append(expr.alias(f.name, metadata=dict(sf.metadata)))
    return WriteProjection(columns, target)


def _names(fields: tuple[NestedField, ...]) -> str:
    return "(" + ", ".join(f.name for f in fields) + ")"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _by_name(struct: T.StructType, path: str) -> dict[str, T.StructField]:
    out: dict[str, T.StructField] = {}
    for f in struct.fields:
        key = f.name.lower()
        if key in out:
            raise ValidationError(
                f"input has two columns named {path}{f.name!r} (names are case-insensitive)"
            )
        out[key] = f
    return out


def _missing(f: NestedField, path: str, spark_type: T.DataType) -> Column:
    if f.write_default is not None:
        return F.lit(spark_literal(f.field_type, f.write_default)).cast(spark_type)
    if f.required:
        raise ValidationError(f"required column {path!r} is missing from the input")
    return F.lit(None).cast(spark_type)


def _conform(src: Column, src_type: T.DataType, nullable: bool, f: NestedField, path: str) -> Column:
    t = f.field_type
    target = to_spark_type(t, field_ids=False)
    if isinstance(t, StructType):
        if not isinstance(src_type, T.StructType):
            raise _mismatch(path, src_type, t)
        src_fields = _by_name(src_type, path + ".")
        names = {c.name.lower() for c in t.fields}
        for extra in src_type.fields:
            if extra.name.lower() not in names:
                raise ValidationError(f"field {path}.{extra.name!r} is not in the table schema")
        children = []
        for child in t.fields:
            child_path = f"{path}.{child.name}"
            match = src_fields.get(child.name.lower())
            if match is None:
                expr = _missing(child, child_path, to_spark_type(child.field_type, False))
            else:
                expr = _conform(src.getField(match.name), match.dataType, match.nullable, child, child_path)
            children.append(expr.alias(child.name))
        # the cast only attaches the nested fields' ids (struct field metadata) to the result type
        out = F.when(src.isNull(), F.lit(None)).otherwise(F.struct(*children)).cast(to_spark_type(t))
        return _require(out, f, nullable, path)
    if isinstance(t, ListType):
        if not isinstance(src_type, T.ArrayType):
            raise _mismatch(path, src_type, t)
        _check_leaf_types(src_type.elementType, t.element_type, path + ".element")
    elif isinstance(t, MapType):
        if not isinstance(src_type, T.MapType):
            raise _mismatch(path, src_type, t)
        _check_leaf_types(src_type.keyType, t.key_type, path + ".key")
        _check_leaf_types(src_type.valueType, t.value_type, path + ".value")
    else:
        _check_leaf_types(src_type, t, path)
    out = src if src_type == target else src.cast(target)
    return _require(out, f, nullable, path)


def _require(expr: Column, f: NestedField, nullable: bool, path: str) -> Column:
    if not f.required or not nullable:
        return expr
    message = f"column {path!r} is required but the input has a null value"
    return F.when(expr.isNull(), F.raise_error(F.lit(message))).otherwise(expr)


def _check_leaf_types(src: T.DataType, t: IcebergType, path: str) -> None:
    """Types inside lists and maps are converted by a positional cast, so structs must line up."""
    if isinstance(t, StructType):
        if not isinstance(src, T.StructType):
            raise _mismatch(path, src, t)
        src_names = [sf.name.lower() for sf in src.fields]
        if src_names != [c.name.lower() for c in t.fields]:
            raise ValidationError(
                f"field {path!r} has fields {src_names}, but the table expects "
                f"{[c.name for c in t.fields]} (in that order)"
            )
        for sf, child in zip(src.fields, t.fields, strict=True):
            _check_leaf_types(sf.dataType, child.field_type, f"{path}.{child.name}")
        return
    if isinstance(t, ListType):
        if not isinstance(src, T.ArrayType):
            raise _mismatch(path, src, t)
        _check_leaf_types(src.elementType, t.element_type, path + ".element")
        return
    if isinstance(t, MapType):
        if not isinstance(src, T.MapType):
            raise _mismatch(path, src, t)
        _check_leaf_types(src.keyType, t.key_type, path + ".key")
        _check_leaf_types(src.valueType, t.value_type, path + ".value")
        return
    if not _accepts(t, src):
        raise _mismatch(path, src, t)


def _accepts(t: IcebergType, src: T.DataType) -> bool:
    """Whether values of Spark type ``src`` can be written to Iceberg type ``t`` without loss."""
    if isinstance(src, T.NullType):
        return True
    if isinstance(t, LongType):
        return isinstance(src, T.ByteType | T.ShortType | T.IntegerType | T.LongType)
    if isinstance(t, IntegerType):
        return isinstance(src, T.ByteType | T.ShortType | T.IntegerType)
    if isinstance(t, DoubleType):
        return isinstance(src, T.FloatType | T.DoubleType)
    if isinstance(t, DecimalType):
        if isinstance(src, T.DecimalType):
            return src.scale == t.scale and src.precision <= t.precision
        return False
    if isinstance(t, StringType | UUIDType):
        return isinstance(src, T.StringType | T.VarcharType | T.CharType)
    if isinstance(t, FixedType | BinaryType):
        return isinstance(src, T.BinaryType)
    if isinstance(t, TimeType):
        return isinstance(src, T.LongType) or type(src) is type(_spark_time_type())
    expected = _PRIMITIVES.get(type(t))
    return expected is not None and type(src) is type(expected)


def _mismatch(path: str, src: T.DataType, t: IcebergType) -> ValidationError:
    return ValidationError(f"column {path!r} has type {src.simpleString()}, but the table column is {t}")


# ---------------------------------------------------------------------------------------------
# literals


def spark_literal(t: IcebergType, value: Any) -> Any:
    """An internal icefloe value as the Python value PySpark expects for the Spark type of ``t``."""
    if value is None:
        return None
    if isinstance(t, DateType):
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(value))
    if isinstance(t, TimestamptzType):
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(value))
    if isinstance(t, TimestampType):
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
    if isinstance(t, UUIDType):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    if isinstance(t, FixedType | BinaryType):
        return bytearray(value)
    if isinstance(t, DecimalType):
        return Decimal(value)
    return value
