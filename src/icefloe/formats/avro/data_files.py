"""Avro data files (and Avro position/equality delete files) as Arrow, columns tagged with field ids.

Iceberg writers store the field id of every column in the Avro schema (spec, Appendix A):
``field-id`` on record fields, ``element-id`` on arrays, ``key-id`` / ``value-id`` on maps;
maps whose keys are not strings are arrays of ``key``/``value`` records with ``logicalType: map``.
Logical types are ``date``, ``time-micros``, ``timestamp-micros`` / ``timestamp-nanos`` (with
``adjust-to-utc`` telling ``timestamptz`` from ``timestamp``), ``decimal`` on fixed or bytes and
``uuid`` on fixed(16). Optional columns are ``["null", T]`` unions.

``read_avro_file`` decodes the file with fastavro (values of logical types are accepted both raw
and as fastavro converts them) into an Arrow table whose
fields carry ``PARQUET:field_id`` metadata at every level, the form the Parquet reader's projection
by field id (``parquet_data.project_by_field_id``) takes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa

from icefloe.errors import CorruptMetadata, NotFound
from icefloe.formats.arrow_schema import FIELD_ID_KEY
from icefloe.io.fileio import FileIO
from icefloe.spec.conversions import unscaled_to_decimal

Normalizer = Callable[[Any], Any]
_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def read_avro_file(io: FileIO, path: str, wanted_ids: set[int] | None = None) -> tuple[pa.Table, int]:
    """The file's columns (only top-level fields in ``wanted_ids`` when given) and its row count."""
    try:
        stream = io.new_input(path).open()
    except (NotFound, FileNotFoundError):
        raise NotFound(f"data file does not exist: {path}") from None
    with stream:
        try:
            reader = fastavro.reader(stream)
            writer_schema = json.loads(reader.metadata["avro.schema"])
        except Exception as exc:  # fastavro raises ValueError, IndexError, its own parse errors
            raise CorruptMetadata(f"cannot read Avro file {path}: {exc}") from exc
        if not isinstance(writer_schema, dict) or writer_schema.get("type") != "record":
            raise CorruptMetadata(f"Avro file {path} does not hold records")
        fields = [f for f in writer_schema.get("fields", []) if isinstance(f, dict)]
        if wanted_ids is not None:
            fields = [f for f in fields if f.get("field-id") is None or int(f["field-id"]) in wanted_ids]
        read_schema = _without_logical_types({**writer_schema, "fields": fields})
        stream.seek(0)
        try:
            records: list[Any] = list(fastavro.reader(stream, reader_schema=read_schema))
        except Exception as exc:
            raise CorruptMetadata(f"cannot decode Avro file {path}: {exc}") from exc
    arrow_fields: list[pa.Field] = []
    columns: list[pa.Array] = []
    for f in fields:
        af, normalize = _arrow_field(f["name"], f["type"], f.get("field-id"), path)
        values = [r.get(f["name"]) for r in records]
        if normalize is not None:
            values = [normalize(v) for v in values]
        try:
            columns.append(pa.array(values, af.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise CorruptMetadata(f"Avro file {path}: column {f['name']!r}: {exc}") from exc
        arrow_fields.append(af)
    table = pa.Table.from_arrays(columns, schema=pa.schema(arrow_fields))
    return table, len(records)


def _without_logical_types(node: Any) -> Any:
    """The schema with ``logicalType`` removed everywhere (raw values are converted here)."""
    if isinstance(node, list):
        return [_without_logical_types(n) for n in node]
    if isinstance(node, dict):
        return {k: _without_logical_types(v) for k, v in node.items() if k != "logicalType"}
    return node


def _metadata(field_id: Any) -> dict[bytes, bytes] | None:
    return {FIELD_ID_KEY: str(int(field_id)).encode()} if field_id is not None else None


def _arrow_field(name: str, node: Any, field_id: Any, path: str) -> tuple[pa.Field, Normalizer | None]:
    nullable = False
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        if len(branches) != 1:
            raise CorruptMetadata(f"Avro file {path}: column {name!r} is a union Iceberg does not write")
        nullable = len(branches) != len(node)
        node = branches[0]
    dtype, normalize = _arrow_type(node, path)
    return pa.field(name, dtype, nullable, _metadata(field_id)), normalize


def _arrow_type(node: Any, path: str) -> tuple[pa.DataType, Normalizer | None]:
    """Arrow type of an Avro schema node and the conversion of raw fastavro values (None: as is)."""
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return _PRIMITIVES[node], None
        raise CorruptMetadata(f"Avro file {path}: named type reference {node!r} is not supported")
    if not isinstance(node, dict):
        raise CorruptMetadata(f"Avro file {path}: bad schema node {node!r}")
    kind, logical = node.get("type"), node.get("logicalType")
    if isinstance(kind, dict | list):
        return _arrow_type(kind, path)
    if logical == "date" and kind == "int":
        return pa.date32(), None
    if logical == "time-micros" and kind == "long":
        return pa.time64("us"), None
    if logical in ("timestamp-micros", "timestamp-nanos") and kind == "long":
        tz = "UTC" if _adjusted(node) else None
        return pa.timestamp("us" if logical == "timestamp-micros" else "ns", tz), None
    if logical == "decimal" and kind in ("fixed", "bytes"):
        scale = int(node.get("scale", 0))
        return pa.decimal128(int(node["precision"]), scale), lambda v: _decimal(v, scale)
    if kind == "fixed":
        return pa.binary(int(node["size"])), _fixed_bytes
    if kind == "enum":
        return pa.string(), None
    if kind == "record":
        return _struct(node, path)
    if kind == "array":
        return _array(node, path)
    if kind == "map":
        key = pa.field("key", pa.string(), False, _metadata(node.get("key-id")))
        value, normalize_value = _arrow_field("value", node["values"], node.get("value-id"), path)

        def to_pairs(v: Any) -> Any:
            if v is None:
                return None
            if normalize_value is None:
                return list(v.items())
            return [(k, normalize_value(x)) for k, x in v.items()]

        return pa.map_(key, value), to_pairs
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _PRIMITIVES[kind], None
    raise CorruptMetadata(f"Avro file {path}: unsupported Avro type {kind!r}")


def _adjusted(node: dict[str, Any]) -> bool:
    value = node.get("adjust-to-utc", False)
    return value is True or str(value).lower() == "true"


def _struct(node: dict[str, Any], path: str) -> tuple[pa.DataType, Normalizer | None]:
    fields: list[pa.Field] = []
    normalizers: dict[str, Normalizer] = {}
    for f in node.get("fields", []):
        af, normalize = _arrow_field(f["name"], f["type"], f.get("field-id"), path)
        fields.append(af)
        if normalize is not None:
            normalizers[f["name"]] = normalize
    if not normalizers:
        return pa.struct(fields), None

    def convert(v: Any) -> Any:
        if v is None:
            return None
        return {k: (normalizers[k](x) if k in normalizers else x) for k, x in v.items()}

    return pa.struct(fields), convert


def _array(node: dict[str, Any], path: str) -> tuple[pa.DataType, Normalizer | None]:
    items = node["items"]
    is_map_record = (
        node.get("logicalType") == "map"
        and isinstance(items, dict)
        and items.get("type") == "record"
        and [f.get("name") for f in items.get("fields", [])] == ["key", "value"]
    )
    if is_map_record:
        key_node, value_node = items["fields"]
        key, normalize_key = _arrow_field("key", key_node["type"], key_node.get("field-id"), path)
        value, normalize_value = _arrow_field("value", value_node["type"], value_node.get("field-id"), path)
        nk = normalize_key or (lambda x: x)
        nv = normalize_value or (lambda x: x)

        def to_pairs(v: Any) -> Any:
            return None if v is None else [(nk(e["key"]), nv(e["value"])) for e in v]

        return pa.map_(key.with_nullable(False), value), to_pairs
    element, normalize = _arrow_field("element", items, node.get("element-id"), path)
    if normalize is None:
        return pa.list_(element), None
    norm = normalize
    return pa.list_(element), lambda v: None if v is None else [norm(x) for x in v]


def _fixed_bytes(value: Any) -> Any:
    """Raw bytes of a fixed value (fastavro may hand a ``uuid`` fixed over as a ``UUID``)."""
    return value.bytes if isinstance(value, uuid.UUID) else value


def _decimal(value: Any, scale: int) -> Decimal | None:
    if value is None or isinstance(value, Decimal):
        return value
    return unscaled_to_decimal(int.from_bytes(bytes(value), "big", signed=True), scale)
