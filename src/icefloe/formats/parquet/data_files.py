"""Parquet data files: write with field ids and manifest metrics; read projected by field id.

Writing expects the table in ``schema_to_arrow(schema)`` form (``to_table_schema`` makes it so).
Reading resolves columns by the file's Parquet field ids, never by name, following the spec's
column projection rules: renamed columns are found by id, columns the file lacks are filled from
the caller's constants (identity partition values), else the field's ``initial-default``, else
nulls; ``int``->``long``, ``float``->``double``, ``decimal`` widening and ``date``->``timestamp``
promotions are applied. Files without field ids (imported files) are resolved through the
table's name mapping (``schema.name-mapping.default``) when given, else by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.arrow_schema import (
    FIELD_ID_KEY,
    constant_array,
    default_array,
    field_id_of,
    list_parts,
    schema_to_arrow,
    to_table_schema,
)
from icefloe.formats.parquet.metrics import MetricsConfig, collect_metrics, split_offsets
from icefloe.formats.parquet.opening import ParquetInput, open_parquet
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.properties import checked_int_property
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    StructType,
    UnknownType,
    UUIDType,
)

COMPRESSION_PROPERTY = "write.parquet.compression-codec"
COMPRESSION_LEVEL_PROPERTY = "write.parquet.compression-level"
ROW_GROUP_SIZE_PROPERTY = "write.parquet.row-group-size-bytes"
PAGE_SIZE_PROPERTY = "write.parquet.page-size-bytes"
PAGE_ROW_LIMIT_PROPERTY = "write.parquet.page-row-limit"
DICT_SIZE_PROPERTY = "write.parquet.dict-size-bytes"
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"
DEFAULT_ROW_GROUP_BYTES = 128 * 1024 * 1024
_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "brotli": "brotli",
    "uncompressed": "none",
    "none": "none",
}


# ---------------------------------------------------------------------------------------------
# writing


def write_parquet_data_file(
    io: FileIO,
    path: str,
    table: pa.Table,
    schema: Schema,
    spec_id: int,
    partition: Sequence[Any],
    properties: Mapping[str, str],
    *,
    content: FileContent = FileContent.DATA,
    equality_ids: Sequence[int] | None = None,
    sort_order_id: int | None = None,
) -> DataFile:
    """Write ``table`` as a new Parquet file at ``path`` and describe it (metrics included).

    ``path`` must be a fresh name (a new UUID in it, as ``LocationProvider`` makes): locally the file
    is created exclusively (an existing file raises AlreadyExists); an object store is not asked
    whether it exists (``OutputFile.fresh_name``).
    """
    target = schema_to_arrow(schema)
    if not table.schema.equals(target, check_metadata=False) or not _same_ids(table.schema, target):
        table = to_table_schema(table, schema)
    write_schema = _without_unknown(schema)
    if write_schema is not schema:
        table = to_table_schema(table.select([f.name for f in write_schema.fields]), write_schema)
    file_table = _with_uuid_annotation(table, write_schema)
    options = _writer_options(properties)
    row_group_rows = _row_group_rows(table, properties)

    out = io.new_output(path, fresh_name=True)
    with out.create(overwrite=False) as stream:
        writer = pq.ParquetWriter(stream, file_table.schema, **options)
        try:
            writer.write_table(file_table, row_group_size=row_group_rows)
        finally:
            writer.close()
        file_size = stream.tell()
    footer = _written_footer(writer, io, path)

    config = MetricsConfig(properties, write_schema)
    metrics = collect_metrics(table, write_schema, footer, config)
    return DataFile(
        file_path=path,
        file_format="parquet",
        record_count=table.num_rows,
        file_size_in_bytes=file_size,
        content=content,
        spec_id=spec_id,
        partition=tuple(partition),
        column_sizes=metrics.column_sizes,
        value_counts=metrics.value_counts,
        null_value_counts=metrics.null_value_counts,
        nan_value_counts=metrics.nan_value_counts,
        lower_bounds=metrics.lower_bounds,
        upper_bounds=metrics.upper_bounds,
        split_offsets=split_offsets(footer),
        equality_ids=tuple(equality_ids) if equality_ids is not None else None,
        sort_order_id=sort_order_id,
    )


def _same_ids(a: pa.Schema, b: pa.Schema) -> bool:
    return all(
        (fa.metadata or {}).get(FIELD_ID_KEY) == (fb.metadata or {}).get(FIELD_ID_KEY)
        for fa, fb in zip(a, b, strict=True)
    )


def _without_unknown(schema: Schema) -> Schema:
    """The schema minus ``unknown``-typed fields (they are never stored in data files)."""

    def prune(fields: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
        out = []
        for f in fields:
            t = f.field_type
            if isinstance(t, UnknownType):
                continue
            if isinstance(t, StructType):
                f = NestedField(
                    f.field_id,
                    f.name,
                    StructType(*prune(t.fields)),
                    f.required,
                    f.doc,
                    f.initial_default,
                    f.write_default,
                )
            out.append(f)
        return tuple(out)

    kept = prune(schema.fields)
    if kept == schema.fields:
        return schema
    return Schema(*kept, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids)


def _has_uuid(t: IcebergType) -> bool:
    if isinstance(t, UUIDType):
        return True
    if isinstance(t, StructType | ListType | MapType):
        return any(_has_uuid(f.field_type) for f in t.fields)
    return False


def _uuid_ext_type(t: IcebergType, arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with ``fixed_size_binary(16)`` uuid leaves replaced by the Arrow UUID type."""
    if isinstance(t, UUIDType):
        return pa.uuid()
    if isinstance(t, StructType):
        return pa.struct([_uuid_ext_field(f, arrow_type.field(i)) for i, f in enumerate(t.fields)])
    if isinstance(t, ListType):
        return pa.list_(_uuid_ext_field(t.element_field, arrow_type.value_field))
    if isinstance(t, MapType):
        return pa.map_(
            _uuid_ext_field(t.key_field, arrow_type.key_field),
            _uuid_ext_field(t.value_field, arrow_type.item_field),
        )
    return arrow_type


def _uuid_ext_field(f: NestedField, af: pa.Field) -> pa.Field:
    return pa.field(af.name, _uuid_ext_type(f.field_type, af.type), af.nullable, af.metadata)


def _with_uuid_annotation(table: pa.Table, schema: Schema) -> pa.Table:
    """Mark uuid columns so Parquet stores the ``UUID`` logical type (spec Appendix A)."""
    if not any(_has_uuid(f.field_type) for f in schema.fields):
        return table
    fields = [_uuid_ext_field(f, af) for f, af in zip(schema.fields, table.schema, strict=True)]
    try:
        return table.cast(pa.schema(fields))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return table  # older pyarrow: plain fixed_len_byte_array(16), still readable


def _writer_options(properties: Mapping[str, str]) -> dict[str, Any]:
    codec_name = properties.get(COMPRESSION_PROPERTY, "zstd").strip().lower()
    if codec_name not in _CODECS:
        raise ValidationError(f"unsupported {COMPRESSION_PROPERTY} {codec_name!r}")
    options: dict[str, Any] = {
        "compression": _CODECS[codec_name],
        "store_decimal_as_integer": True,
        "write_statistics": True,
        "write_page_checksum": True,  # page CRCs: readers detect flipped bits instead of returning them
    }
    for key, option in (
        (COMPRESSION_LEVEL_PROPERTY, "compression_level"),
        (PAGE_SIZE_PROPERTY, "data_page_size"),
        (PAGE_ROW_LIMIT_PROPERTY, "max_rows_per_page"),
        (DICT_SIZE_PROPERTY, "dictionary_pagesize_limit"),
    ):
        if properties.get(key):
            options[option] = checked_int_property(properties, key, 0)
    return options


def _row_group_rows(table: pa.Table, properties: Mapping[str, str]) -> int:
    """Rows per row group so a group holds about ``write.parquet.row-group-size-bytes`` of data."""
    target = checked_int_property(properties, ROW_GROUP_SIZE_PROPERTY, DEFAULT_ROW_GROUP_BYTES)
    if table.num_rows == 0:
        return 1
    per_row = max(1, table.nbytes // table.num_rows)
    return max(1, min(table.num_rows, target // per_row))


def _written_footer(writer: pq.ParquetWriter, io: FileIO, path: str) -> pq.FileMetaData:
    inner = getattr(writer, "writer", None)
    footer = getattr(inner, "metadata", None)
    if isinstance(footer, pq.FileMetaData):
        return footer
    with io.new_input(path).open() as stream:
        return pq.read_metadata(stream)


# ---------------------------------------------------------------------------------------------
# reading


def read_parquet_data_file(
    io: FileIO,
    path: str,
    projected_schema: Schema,
    file_schema_hint: Schema | None = None,
    row_filter_arrow: pc.Expression | None = None,
    *,
    name_mapping: str | list[dict[str, Any]] | None = None,
    constants: Mapping[int, Any] | None = None,
    row_groups: Sequence[int] | None = None,
    row_limits: Sequence[int] | None = None,
    file_size: int | None = None,
) -> pa.Table:
    """Read a Parquet data file as ``schema_to_arrow(projected_schema)``, resolving columns by field id.

    ``constants`` (field id -> internal value) supply columns the file does not hold, e.g. identity
    partition values of imported files. For files without field ids, ``name_mapping`` (the JSON
    text or parsed value of ``schema.name-mapping.default``) assigns ids by name; without it,
    names are matched against ``file_schema_hint`` (else the projected schema).
    ``row_filter_arrow`` is applied after projection, in terms of the projected column names.
    ``row_groups`` reads only those row groups (in the order given), e.g. for a few known positions;
    ``row_limits`` (one per row group) reads only the first rows of each (decoding stops there).
    ``file_size`` (the manifest's ``file_size_in_bytes``) spares an object store its size request
    (``opening``); a file that is not that size fails as corrupt.
    """
    with open_parquet(io, path, file_size) as pf:
        file_schema = resolve_field_ids(pf.schema_arrow, projected_schema, file_schema_hint, name_mapping)
        top = {fid: f for f in file_schema if (fid := field_id_of(f)) is not None}
        wanted = [top[f.field_id].name for f in projected_schema.fields if f.field_id in top]
        if row_groups is None:
            data = pf.read(columns=wanted) if wanted else None
            num_rows = pf.metadata.num_rows
        elif row_limits is None:
            data = pf.read_row_groups(list(row_groups), columns=wanted) if wanted else None
            num_rows = sum(pf.metadata.row_group(i).num_rows for i in row_groups)
        else:
            data = _leading_rows(pf, row_groups, row_limits, wanted) if wanted else None
            num_rows = sum(
                min(limit, pf.metadata.row_group(i).num_rows)
                for i, limit in zip(row_groups, row_limits, strict=True)
            )
    table = project_by_field_id(data, file_schema, num_rows, projected_schema, path, constants)
    if row_filter_arrow is not None:
        table = table.filter(row_filter_arrow)
    return table


def resolve_field_ids(
    file_schema: pa.Schema,
    projected_schema: Schema,
    file_schema_hint: Schema | None = None,
    name_mapping: str | list[dict[str, Any]] | None = None,
) -> pa.Schema:
    """``file_schema`` as is when it carries field ids, else with ids assigned by name (through the
    name mapping when given, else the hint's or the projected schema's names)."""
    if _has_field_ids(file_schema):
        return file_schema
    nodes = _parse_name_mapping(name_mapping) if name_mapping is not None else None
    if nodes is None:
        nodes = _mapping_from_schema(file_schema_hint or projected_schema)
    return pa.schema([_apply_mapping(f, nodes) for f in file_schema])


def project_by_field_id(
    data: pa.Table | None,
    file_schema: pa.Schema,
    num_rows: int,
    projected_schema: Schema,
    path: str,
    constants: Mapping[int, Any] | None = None,
) -> pa.Table:
    """``data`` (columns named as in ``file_schema``, whose fields carry field ids) re-shaped into
    ``schema_to_arrow(projected_schema)``: columns found by id at every level, promotions applied,
    missing columns filled from ``constants``, else ``initial-default``, else nulls. Used for
    Parquet, Avro and ORC files alike."""
    top = {fid: f for f in file_schema if (fid := field_id_of(f)) is not None}
    target = schema_to_arrow(projected_schema)
    columns = []
    for f, af in zip(projected_schema.fields, target, strict=True):
        file_field = top.get(f.field_id)
        if file_field is not None and data is not None and not isinstance(f.field_type, UnknownType):
            col = data.column(file_field.name)
            chunks = [_project(c, file_field.type, f.field_type, af.type, f.name, path) for c in col.chunks]
            columns.append(pa.chunked_array(chunks, type=af.type))
        else:
            columns.append(pa.chunked_array([_missing(f, af.type, num_rows, constants, path)], type=af.type))
    if columns:
        return pa.Table.from_arrays(columns, schema=target)
    return pa.Table.from_struct_array(pa.array([{}] * num_rows, pa.struct([])))


def _has_field_ids(schema: pa.Schema) -> bool:
    def walk(t: pa.DataType) -> bool:
        if pa.types.is_struct(t):
            return any(
                field_id_of(t.field(i)) is not None or walk(t.field(i).type) for i in range(t.num_fields)
            )
        return False

    return any(field_id_of(f) is not None or walk(f.type) for f in schema)


def _missing(
    f: NestedField, target: pa.DataType, n: int, constants: Mapping[int, Any] | None, path: str
) -> pa.Array:
    if constants is not None and f.field_id in constants:
        return constant_array(f.field_type, constants[f.field_id], target, n, write=False)
    if f.required and f.initial_default is None and not isinstance(f.field_type, UnknownType):
        raise CorruptMetadata(
            f"data file {path} has no column for required field {f.name!r} (id {f.field_id}) "
            "and the field has no initial-default"
        )
    return default_array(f, target, n, write=False)


def _unwrap(arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _project(
    arr: pa.Array, file_type: pa.DataType, t: IcebergType, target: pa.DataType, name: str, path: str
) -> pa.Array:
    """Re-shape one file array into ``target``, matching nested fields by id (``file_type`` has ids)."""
    arr = _unwrap(arr)
    if isinstance(file_type, pa.BaseExtensionType):
        file_type = file_type.storage_type
    if pa.types.is_dictionary(file_type):
        file_type = file_type.value_type
    if isinstance(t, UnknownType) or pa.types.is_null(arr.type):
        return pa.nulls(len(arr), target)
    if isinstance(t, StructType):
        if not pa.types.is_struct(arr.type):
            raise _bad_type(arr.type, t, name, path)
        by_id = {field_id_of(file_type.field(i)): i for i in range(file_type.num_fields)}
        children = []
        for f, tf in zip(t.fields, target, strict=True):
            idx = by_id.get(f.field_id)
            if idx is None or isinstance(f.field_type, UnknownType):
                children.append(_missing(f, tf.type, len(arr), None, path))
            else:
                child_name = f"{name}.{f.name}"
                children.append(
                    _project(
                        arr.field(idx), file_type.field(idx).type, f.field_type, tf.type, child_name, path
                    )
                )
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(t, ListType):
        if pa.types.is_map(arr.type) or not hasattr(arr.type, "value_field"):
            raise _bad_type(arr.type, t, name, path)
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            arr = arr.cast(pa.list_(arr.type.value_field))
        offsets, child = list_parts(arr)
        elem_type = file_type.value_field.type
        values = _project(child, elem_type, t.element_type, target.value_type, f"{name}.element", path)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(t, MapType):
        if not pa.types.is_map(arr.type):
            raise _bad_type(arr.type, t, name, path)
        offsets, entries = list_parts(arr)
        keys = _project(
            entries.field(0), file_type.key_type, t.key_type, target.key_type, f"{name}.key", path
        )
        items = _project(
            entries.field(1), file_type.item_type, t.value_type, target.item_type, f"{name}.value", path
        )
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    if arr.type.equals(target):
        return arr
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
        return arr.cast(target, safe=False)
    raise _bad_type(arr.type, t, name, path)


def _bad_type(src: pa.DataType, t: IcebergType, name: str, path: str) -> CorruptMetadata:
    return CorruptMetadata(f"data file {path}: column {name!r} has type {src}, which cannot be read as {t}")


# ---------------------------------------------------------------------------------------------
# name mapping (files without field ids)


def _parse_name_mapping(mapping: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(mapping, str):
        try:
            parsed = json.loads(mapping)
        except json.JSONDecodeError as exc:
            raise CorruptMetadata(f"{NAME_MAPPING_PROPERTY} is not valid JSON: {exc}") from exc
    else:
        parsed = mapping
    if not isinstance(parsed, list):
        raise CorruptMetadata(f"{NAME_MAPPING_PROPERTY} must be a JSON list of field mappings")
    return parsed


def _mapping_from_schema(schema: Schema) -> list[dict[str, Any]]:
    """A name mapping equivalent to matching a schema's fields by name."""

    def node(f: NestedField) -> dict[str, Any]:
        out: dict[str, Any] = {"names": [f.name], "field-id": f.field_id}
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            out["fields"] = [node(c) for c in t.fields]
        return out

    return [node(f) for f in schema.fields]


def _find_node(nodes: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for n in nodes:
        if name in (n.get("names") or []):
            return n
    return None


def _apply_mapping(field: pa.Field, nodes: list[dict[str, Any]], name: str | None = None) -> pa.Field:
    """``field`` with ``PARQUET:field_id`` metadata assigned from a name mapping (recursively)."""
    node = _find_node(nodes, name or field.name)
    metadata = dict(field.metadata or {})
    metadata.pop(FIELD_ID_KEY, None)
    if node is not None and node.get("field-id") is not None:
        metadata[FIELD_ID_KEY] = str(node["field-id"]).encode()
    children = list((node or {}).get("fields") or [])
    t = field.type
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_struct(t):
        t = pa.struct([_apply_mapping(t.field(i), children) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        t = pa.map_(
            _apply_mapping(t.key_field, children, "key"), _apply_mapping(t.item_field, children, "value")
        )
    elif hasattr(t, "value_field") and not pa.types.is_dictionary(t):
        t = pa.list_(_apply_mapping(t.value_field, children, "element"))
    return pa.field(field.name, t, field.nullable, metadata or None)


def row_group_starts(io: FileIO, path: str, file_size: int | None = None) -> np.ndarray:
    """The first row position of each row group of a Parquet file, plus the row count at the end
    (``file_size`` as for ``read_parquet_data_file``)."""
    with open_parquet(io, path, file_size) as pf:
        meta = pf.metadata
    counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)


LEADING_BATCH_ROWS = 16_384


def _leading_rows(
    pf: ParquetInput, groups: Sequence[int], limits: Sequence[int], columns: list[str]
) -> pa.Table:
    """The first ``limit`` rows of each row group, decoding batch by batch and stopping there."""
    tables = []
    for group, limit in zip(groups, limits, strict=True):
        batches = []
        got = 0
        for batch in pf.iter_batches(batch_size=LEADING_BATCH_ROWS, row_groups=[group], columns=columns):
            batches.append(batch)
            got += batch.num_rows
            if got >= limit:
                break
        tables.append(
            pa.Table.from_batches(
                batches, schema=pa.schema([pf.schema_arrow.field(c) for c in columns])
            ).slice(0, limit)
        )
    return pa.concat_tables(tables)
