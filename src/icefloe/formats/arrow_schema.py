"""Iceberg schemas <-> Arrow schemas, and conforming user Arrow data to a table schema.

Type mapping (Iceberg -> Arrow), chosen to match Iceberg's Parquet mapping (spec Appendix A):

=================  ==========================================================================
boolean            ``bool``
int / long         ``int32`` / ``int64``
float / double     ``float32`` / ``float64``
decimal(P, S)      ``decimal128(P, S)``
date               ``date32``
time               ``time64('us')``
timestamp(tz)      ``timestamp('us')`` / ``timestamp('us', tz='UTC')``
timestamp(tz)_ns   ``timestamp('ns')`` / ``timestamp('ns', tz='UTC')``
string             ``string`` (never ``large_string``)
uuid               ``fixed_size_binary(16)``: the 16 big-endian bytes of the UUID. Parquet
                   files get the ``UUID`` logical type at write time; in memory icefloe keeps
                   the plain storage type so every engine can consume it.
fixed(L)           ``fixed_size_binary(L)``
binary             ``binary`` (never ``large_binary``)
unknown            ``null`` (omitted from data files)
struct/list/map    ``struct`` / ``list<element>`` / ``map<key, value>``
=================  ==========================================================================

Every field carries its Iceberg field id as ``b"PARQUET:field_id"`` metadata (list elements
and map keys/values too) and is nullable exactly when the Iceberg field is optional.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from functools import lru_cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import ValidationError
from icefloe.expressions.arrow_types import primitive_to_arrow
from icefloe.spec.schema import Schema, assign_fresh_ids
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
    PrimitiveType,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    TimestamptzNanoType,
    TimestamptzType,
    TimeType,
    UnknownType,
    UUIDType,
)

FIELD_ID_KEY = b"PARQUET:field_id"
DOC_KEY = b"doc"

# ---------------------------------------------------------------------------------------------
# Iceberg -> Arrow


def type_to_arrow(t: IcebergType, include_field_ids: bool = True) -> pa.DataType:
    """The Arrow type of any Iceberg type (nested fields carry ids when asked)."""
    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f, include_field_ids) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(field_to_arrow(t.element_field, include_field_ids))
    if isinstance(t, MapType):
        key = field_to_arrow(t.key_field, include_field_ids)
        value = field_to_arrow(t.value_field, include_field_ids)
        return pa.map_(key, value)
    if isinstance(t, PrimitiveType):
        return primitive_to_arrow(t)
    raise ValidationError(f"no Arrow type for Iceberg type {t}")


def field_to_arrow(f: NestedField, include_field_ids: bool = True) -> pa.Field:
    """An Arrow field for an Iceberg field: name, type, nullability, field id (and doc)."""
    metadata: dict[bytes, bytes] = {}
    if include_field_ids:
        metadata[FIELD_ID_KEY] = str(f.field_id).encode()
    if f.doc:
        metadata[DOC_KEY] = f.doc.encode()
    nullable = not f.required or isinstance(f.field_type, UnknownType)
    return pa.field(f.name, type_to_arrow(f.field_type, include_field_ids), nullable, metadata or None)


def schema_to_arrow(schema: Schema | StructType, include_field_ids: bool = True) -> pa.Schema:
    """The Arrow schema of an Iceberg schema, with ``PARQUET:field_id`` metadata on every field.

    Made once per distinct schema (schemas are frozen and compared by value, so an evolved schema
    is another key); a schema that cannot be hashed (a default value such as a struct's dict) is
    converted each time.
    """
    try:
        return _cached_schema_to_arrow(schema, include_field_ids)
    except TypeError:
        return _schema_to_arrow(schema, include_field_ids)


@lru_cache(maxsize=256)
def _cached_schema_to_arrow(schema: Schema | StructType, include_field_ids: bool) -> pa.Schema:
    return _schema_to_arrow(schema, include_field_ids)


def _schema_to_arrow(schema: Schema | StructType, include_field_ids: bool) -> pa.Schema:
    return pa.schema([field_to_arrow(f, include_field_ids) for f in schema.fields])


# ---------------------------------------------------------------------------------------------
# Arrow -> Iceberg


def field_id_of(field: pa.Field) -> int | None:
    """The Iceberg field id in an Arrow field's metadata, or None."""
    meta = field.metadata or {}
    raw = meta.get(FIELD_ID_KEY)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValidationError(f"Arrow field {field.name!r} has a malformed field id {raw!r}") from None


def arrow_to_schema(arrow_schema: pa.Schema, schema_id: int = 0) -> Schema:
    """An Iceberg schema from an Arrow schema whose fields carry ``PARQUET:field_id`` metadata."""
    return Schema(*(_field_from_arrow(f, f.name) for f in arrow_schema), schema_id=schema_id)


def schema_from_arrow(arrow_schema: pa.Schema) -> Schema:
    """An Iceberg schema for a new table from any Arrow schema, with fresh field ids (1, 2, ...).

    Field ids already in the Arrow metadata are ignored, as a catalog ignores them on create.
    """
    counter = iter(range(1, 1 << 30))

    def numbered(field: pa.Field) -> pa.Field:
        t = field.type
        if pa.types.is_struct(t):
            t = pa.struct([numbered(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_map(t):
            t = pa.map_(numbered(t.key_field), numbered(t.item_field))
        elif _is_list_like(t):
            t = pa.list_(numbered(t.value_field))
        meta = dict(field.metadata or {})
        meta[FIELD_ID_KEY] = str(next(counter)).encode()
        return pa.field(field.name, t, field.nullable, meta)

    temporary = arrow_to_schema(pa.schema([numbered(f) for f in arrow_schema]))
    return assign_fresh_ids(temporary)[0]


def _field_from_arrow(field: pa.Field, path: str, required: bool | None = None) -> NestedField:
    fid = field_id_of(field)
    if fid is None:
        raise ValidationError(f"Arrow field {path!r} has no field id (PARQUET:field_id metadata)")
    doc = (field.metadata or {}).get(DOC_KEY)
    return NestedField(
        fid,
        field.name,
        arrow_type_to_iceberg(field.type, path),
        (not field.nullable) if required is None else required,
        doc.decode() if doc else None,
    )


def arrow_type_to_iceberg(t: pa.DataType, path: str = "") -> IcebergType:
    """The Iceberg type of an Arrow type; nested fields must carry field ids."""
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return UUIDType()
        return arrow_type_to_iceberg(t.storage_type, path)
    if pa.types.is_dictionary(t):
        return arrow_type_to_iceberg(t.value_type, path)
    if pa.types.is_struct(t):
        return StructType(
            *(_field_from_arrow(t.field(i), f"{path}.{t.field(i).name}") for i in range(t.num_fields))
        )
    if pa.types.is_map(t):
        key = _field_from_arrow(t.key_field, f"{path}.key", required=True)
        value = _field_from_arrow(t.item_field, f"{path}.value")
        return MapType(key.field_id, key.field_type, value.field_id, value.field_type, value.required)
    if _is_list_like(t):
        elem = _field_from_arrow(t.value_field, f"{path}.element")
        return ListType(elem.field_id, elem.field_type, elem.required)
    prim = _arrow_primitive_to_iceberg(t)
    if prim is None:
        raise ValidationError(f"column {path!r}: Arrow type {t} has no Iceberg equivalent")
    return prim


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _arrow_primitive_to_iceberg(t: pa.DataType) -> PrimitiveType | None:
    types = pa.types
    if types.is_boolean(t):
        return BooleanType()
    if types.is_int8(t) or types.is_int16(t) or types.is_int32(t) or types.is_uint8(t) or types.is_uint16(t):
        return IntegerType()
    if types.is_int64(t) or types.is_uint32(t):
        return LongType()
    if types.is_float16(t) or types.is_float32(t):
        return FloatType()
    if types.is_float64(t):
        return DoubleType()
    if types.is_decimal(t) and t.precision <= 38:
        return DecimalType(t.precision, t.scale)
    if types.is_date(t):
        return DateType()
    if types.is_time(t):
        return TimeType()
    if types.is_timestamp(t):
        if t.unit == "ns":
            return TimestamptzNanoType() if t.tz else TimestampNanoType()
        return TimestamptzType() if t.tz else TimestampType()
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return StringType()
    if types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
        return BinaryType()
    if types.is_null(t):
        return UnknownType()
    return None


# ---------------------------------------------------------------------------------------------
# compatibility of user data (matched by name)


def _storage(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_dictionary(t):
        return t.value_type
    return t


def accepts_arrow_type(target: PrimitiveType, src: pa.DataType) -> bool:
    """Whether Arrow values of type ``src`` convert losslessly to the Iceberg primitive ``target``."""
    ty = pa.types
    if isinstance(src, pa.BaseExtensionType) and src.extension_name == "arrow.uuid":
        return isinstance(target, UUIDType | FixedType) and (
            isinstance(target, UUIDType) or target.length == 16
        )
    src = _storage(src)
    if ty.is_null(src):
        return True
    checks: list[tuple[type[PrimitiveType], Any]] = [
        (BooleanType, ty.is_boolean),
        (
            IntegerType,
            lambda s: ty.is_int8(s) or ty.is_int16(s) or ty.is_int32(s) or ty.is_uint8(s) or ty.is_uint16(s),
        ),
        (LongType, lambda s: ty.is_signed_integer(s) or ty.is_uint8(s) or ty.is_uint16(s) or ty.is_uint32(s)),
        (FloatType, lambda s: ty.is_float16(s) or ty.is_float32(s)),
        (DoubleType, ty.is_floating),
        (DateType, ty.is_date),
        (TimeType, lambda s: ty.is_time32(s) or (ty.is_time64(s) and s.unit == "us")),
        (TimestampType, lambda s: ty.is_timestamp(s) and s.tz is None and s.unit != "ns"),
        (TimestamptzType, lambda s: ty.is_timestamp(s) and s.tz is not None and s.unit != "ns"),
        (TimestampNanoType, lambda s: ty.is_timestamp(s) and s.tz is None),
        (TimestamptzNanoType, lambda s: ty.is_timestamp(s) and s.tz is not None),
        (StringType, lambda s: ty.is_string(s) or ty.is_large_string(s) or ty.is_string_view(s)),
        (UUIDType, lambda s: ty.is_fixed_size_binary(s) and s.byte_width == 16),
        (
            BinaryType,
            lambda s: (
                ty.is_binary(s) or ty.is_large_binary(s) or ty.is_binary_view(s) or ty.is_fixed_size_binary(s)
            ),
        ),
        (UnknownType, ty.is_null),
    ]
    if isinstance(target, DecimalType):
        return bool(ty.is_decimal(src) and src.scale == target.scale and src.precision <= target.precision)
    if isinstance(target, FixedType):
        return bool(ty.is_fixed_size_binary(src) and src.byte_width == target.length)
    for kind, check in checks:
        if isinstance(target, kind):
            return bool(check(src))
    return False


def check_arrow_compatible(schema: Schema | StructType, arrow_schema: pa.Schema) -> None:
    """Raise ValidationError naming the column when Arrow data (matched by name) cannot be written.

    Checks: every required column without a write default is present, no extra columns, and
    every type converts losslessly (int32->int64, float32->float64, large_string->string,
    coarser timestamp units -> us, narrower decimal precision, ...). Nulls in required columns
    are data, not schema: see ``check_required_no_nulls``.
    """
    _check_struct(schema.fields, list(arrow_schema), "")


def _check_struct(fields: tuple[NestedField, ...], arrow_fields: list[pa.Field], prefix: str) -> None:
    by_name: dict[str, pa.Field] = {}
    for af in arrow_fields:
        if af.name in by_name:
            raise ValidationError(f"column {prefix + af.name!r} appears more than once in the input")
        by_name[af.name] = af
    known = {f.name for f in fields}
    for af in arrow_fields:
        if af.name not in known:
            raise ValidationError(
                f"column {prefix + af.name!r} is not in the table schema "
                f"(table columns: {', '.join(f.name for f in fields) or 'none'})"
            )
    for f in fields:
        path = prefix + f.name
        af = by_name.get(f.name)
        if af is None:
            if f.required and f.write_default is None:
                raise ValidationError(f"required column {path!r} is missing from the input")
            continue
        _check_type(f.field_type, af.type, path)


def _check_type(t: IcebergType, src: pa.DataType, path: str) -> None:
    base = _storage(src)
    if pa.types.is_null(base):
        return
    if isinstance(t, StructType):
        if not pa.types.is_struct(base):
            raise _mismatch(path, src, t)
        _check_struct(t.fields, [base.field(i) for i in range(base.num_fields)], path + ".")
    elif isinstance(t, ListType):
        if not _is_list_like(base):
            raise _mismatch(path, src, t)
        _check_type(t.element_type, base.value_field.type, path + ".element")
    elif isinstance(t, MapType):
        if not pa.types.is_map(base):
            raise _mismatch(path, src, t)
        _check_type(t.key_type, base.key_type, path + ".key")
        _check_type(t.value_type, base.item_type, path + ".value")
    elif isinstance(t, PrimitiveType) and not accepts_arrow_type(t, src):
        raise _mismatch(path, src, t)


def _mismatch(path: str, src: pa.DataType, t: IcebergType) -> ValidationError:
    hint = ""
    if pa.types.is_timestamp(_storage(src)):
        if isinstance(t, TimestamptzType | TimestamptzNanoType) and _storage(src).tz is None:
            hint = " (the column is timestamptz: give the Arrow timestamps a time zone, e.g. UTC)"
        elif isinstance(t, TimestampType | TimestampNanoType) and _storage(src).tz is not None:
            hint = " (the column is a timestamp without time zone: drop the Arrow time zone)"
        elif _storage(src).unit == "ns":
            hint = " (nanosecond values would lose precision)"
    return ValidationError(f"column {path!r}: cannot write Arrow type {src} to Iceberg type {t}{hint}")


def check_required_no_nulls(schema: Schema | StructType, table: pa.Table) -> None:
    """Raise ValidationError naming the column when a required field holds nulls (by column name)."""
    for f in schema.fields:
        if f.name not in table.column_names:
            continue
        col = table.column(f.name)
        for chunk in col.chunks:
            _check_nulls(f, chunk, f.name, None)


def _check_nulls(f: NestedField, arr: pa.Array, path: str, parent_valid: pa.Array | None) -> None:
    """``parent_valid``: where the enclosing struct is non-null (None = everywhere)."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if f.required and arr.null_count:
        nulls = arr.is_null()
        if parent_valid is not None:
            nulls = pc.and_(nulls, parent_valid)
        count = pc.sum(nulls).as_py() or 0
        if count:
            raise ValidationError(f"column {path!r} is required but has {count} null value(s)")
    t = f.field_type
    if isinstance(t, StructType) and pa.types.is_struct(arr.type):
        valid = arr.is_valid()
        if parent_valid is not None:
            valid = pc.and_(valid, parent_valid)
        for child in t.fields:
            idx = arr.type.get_field_index(child.name)
            if idx >= 0:
                _check_nulls(child, arr.field(idx), f"{path}.{child.name}", valid)
    elif isinstance(t, ListType) and _is_list_like(arr.type):
        _check_nulls(t.element_field, pc.list_flatten(arr), f"{path}.element", None)
    elif isinstance(t, MapType) and pa.types.is_map(arr.type):
        _check_nulls(t.value_field, map_items(arr), f"{path}.value", None)


def list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(int32 offsets starting at 0, child values) of a possibly sliced list or map array.

    For a map the child is the struct of entries. Rebuilding from these parts works with a null
    mask, which Arrow does not allow with the offsets of a sliced array.
    """
    offsets = arr.offsets
    child = (
        arr.values
        if not pa.types.is_map(arr.type)
        else pa.StructArray.from_arrays([arr.keys, arr.items], names=["key", "value"])
    )
    if len(offsets) == 0:
        return pa.array([0], pa.int32()), child.slice(0, 0)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start != 0:
        offsets = pc.subtract(offsets, start)
    if offsets.offset != 0:
        offsets = pa.concat_arrays([offsets])  # copy to an unsliced buffer
    return offsets.cast(pa.int32()), child.slice(start, end - start)


def map_items(arr: pa.MapArray) -> pa.Array:
    """The values of a (possibly sliced) map array's entries, in order."""
    return list_parts(arr)[1].field(1)


def map_keys(arr: pa.MapArray) -> pa.Array:
    """The keys of a (possibly sliced) map array's entries, in order."""
    return list_parts(arr)[1].field(0)


# ---------------------------------------------------------------------------------------------
# conforming data to the exact Arrow form of a schema


def to_table_schema(table: pa.Table, schema: Schema) -> pa.Table:
    """Cast and reorder user data (columns matched by name) into ``schema_to_arrow(schema)``.

    Missing optional columns (and missing struct fields) are filled with the field's
    write-default, else nulls; a missing required column without a write-default is an error.
    """
    target = schema_to_arrow(schema)
    known = {f.name for f in schema.fields}
    for name in table.column_names:
        if name not in known:
            raise ValidationError(f"column {name!r} is not in the table schema")
    columns = []
    for f, af in zip(schema.fields, target, strict=True):
        if f.name in table.column_names:
            col = table.column(f.name)
            chunks = [conform_array(c, f.field_type, af.type, f.name) for c in col.chunks]
            columns.append(pa.chunked_array(chunks, type=af.type))
        else:
            if f.required and f.write_default is None:
                raise ValidationError(f"required column {f.name!r} is missing from the input")
            columns.append(
                pa.chunked_array([default_array(f, af.type, table.num_rows, write=True)], type=af.type)
            )
    return pa.Table.from_arrays(columns, schema=target)


def conform_array(arr: pa.Array, t: IcebergType, target: pa.DataType, path: str) -> pa.Array:
    """One Arrow array converted to ``target`` (the Arrow form of Iceberg type ``t``), by name."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise _mismatch(path, arr.type, t)
        children = []
        for f, tf in zip(t.fields, target, strict=True):
            idx = arr.type.get_field_index(f.name)
            if idx >= 0:
                children.append(conform_array(arr.field(idx), f.field_type, tf.type, f"{path}.{f.name}"))
            else:
                if f.required and f.write_default is None:
                    raise ValidationError(f"required field {path}.{f.name!r} is missing from the input")
                children.append(default_array(f, tf.type, len(arr), write=True))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(t, ListType):
        if not _is_list_like(arr.type):
            raise _mismatch(path, arr.type, t)
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            arr = arr.cast(pa.list_(arr.type.value_field))
        offsets, child = list_parts(arr)
        values = conform_array(child, t.element_type, target.value_type, path + ".element")
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise _mismatch(path, arr.type, t)
        offsets, entries = list_parts(arr)
        keys = conform_array(entries.field(0), t.key_type, target.key_type, path + ".key")
        items = conform_array(entries.field(1), t.value_type, target.item_type, path + ".value")
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if arr.type.equals(target):
        return arr
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValidationError(f"column {path!r}: cannot convert {arr.type} to {target}: {exc}") from exc


def default_array(f: NestedField, target: pa.DataType, length: int, write: bool) -> pa.Array:
    """``length`` copies of a field's write-default (``write``) or initial-default, else nulls."""
    value = f.write_default if write else f.initial_default
    return constant_array(f.field_type, value, target, length, write)


def constant_array(t: IcebergType, value: Any, target: pa.DataType, length: int, write: bool) -> pa.Array:
    """``length`` copies of an internal value of Iceberg type ``t`` as an Arrow array of ``target``.

    A struct value is a dict by field id; fields it leaves out take their own default.
    """
    if value is None:
        return pa.nulls(length, target)
    if isinstance(t, StructType):
        children = []
        for f, tf in zip(t.fields, target, strict=True):
            if isinstance(value, dict) and f.field_id in value:
                children.append(constant_array(f.field_type, value[f.field_id], tf.type, length, write))
            else:
                children.append(default_array(f, tf.type, length, write))
        return pa.StructArray.from_arrays(children, fields=list(target))
    if isinstance(t, ListType | MapType):
        return internal_to_arrow(t, [value] * length, target)
    return pa.repeat(internal_to_arrow(t, [value], target)[0], length)


def internal_to_arrow(t: IcebergType, values: list[Any], target: pa.DataType) -> pa.Array:
    """An Arrow array of ``target`` from internal values (int days/micros, Decimal, UUID, dicts...)."""
    if isinstance(t, StructType | ListType | MapType) and all(v is None for v in values):
        return pa.nulls(len(values), target)  # e.g. a content entry's absent optional structs
    if isinstance(t, StructType):
        children = []
        for f, tf in zip(t.fields, target, strict=True):
            vals = [None if v is None else v.get(f.field_id) for v in values]
            children.append(internal_to_arrow(f.field_type, vals, tf.type))
        mask = pa.array([v is None for v in values], pa.bool_())
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(t, ListType | MapType):
        offsets = [0]
        flat: list[Any] = []
        for v in values:
            items = list(v.items()) if isinstance(v, dict) else list(v or [])
            flat.extend(items)
            offsets.append(len(flat))
        mask = pa.array([v is None for v in values], pa.bool_())
        offs = pa.array(offsets, pa.int32())
        if isinstance(t, ListType):
            elems = internal_to_arrow(t.element_type, flat, target.value_type)
            return pa.ListArray.from_arrays(offs, elems, type=target, mask=mask)
        keys = internal_to_arrow(t.key_type, [k for k, _ in flat], target.key_type)
        items_arr = internal_to_arrow(t.value_type, [v for _, v in flat], target.item_type)
        return pa.MapArray.from_arrays(offs, keys, items_arr, type=target, mask=mask)
    if isinstance(t, DateType):
        return pa.array(values, pa.int32()).cast(target)
    if isinstance(t, TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        return pa.array(values, pa.int64()).cast(target)
    if isinstance(t, UUIDType):
        return pa.array([None if v is None else _uuid_bytes(v) for v in values], target)
    if isinstance(t, DecimalType):
        return pa.array([None if v is None else Decimal(v) for v in values], target)
    return pa.array(values, target)


def _uuid_bytes(v: Any) -> bytes:
    return v.bytes if isinstance(v, uuid.UUID) else uuid.UUID(str(v)).bytes


def to_internal_values(arr: pa.Array | pa.ChunkedArray, t: IcebergType) -> list[Any]:
    """Python values in icefloe's internal representation for an Arrow array of primitive type ``t``."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if isinstance(t, DateType):
        return list(arr.cast(pa.int32()).to_pylist())
    if isinstance(t, TimeType | TimestampType | TimestamptzType | TimestampNanoType | TimestamptzNanoType):
        return list(arr.cast(pa.int64()).to_pylist())
    if isinstance(t, UUIDType):
        return [None if v is None else uuid.UUID(bytes=v) for v in arr.to_pylist()]
    return list(arr.to_pylist())
