"""Avro schemas of v1–v3 manifests and manifest lists, with every Iceberg field id.

Schemas follow the spec's ``manifest_entry`` / ``manifest_file`` structs and Appendix A:
``field-id`` on record fields, ``element-id`` on arrays, int-keyed maps as arrays of
``k<key-id>_v<value-id>`` records with ``"logicalType": "map"``. Partition tuples are records whose
field ids are the partition field ids. Values are written and read in Iceberg's internal
representation (ints for dates and timestamps, bytes for fixed-size decimals and uuids): logical
types are declared for other readers, and :func:`without_logical_types` gives the schema icefloe
reads with so fastavro does not convert to ``datetime``/``Decimal``.

The object-container plumbing shared by manifests and manifest lists lives here too: sources
(bytes, streams, ``InputFile``), sinks (streams, ``OutputFile``), and :func:`open_avro`, which swaps
the header schema for its logical-type-free copy so fastavro decodes raw values at full speed.
"""

from __future__ import annotations

import decimal
import io
import json
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import fastavro

from icefloe.errors import CorruptMetadata, Unsupported, ValidationError, reading
from icefloe.spec.conversions import unscaled_to_decimal
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
    LongType,
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

AvroSchema = Any  # a JSON-like Avro schema (dict, list or type name)

# Java writes this constant into the deprecated v1 field 105 (block_size_in_bytes).
V1_BLOCK_SIZE = 64 * 1024 * 1024

DEFAULT_CODEC = "deflate"


def decimal_required_bytes(precision: int) -> int:
    """Smallest number of bytes whose two's complement range holds every ``precision``-digit value."""
    n = 1
    while 2 ** (8 * n - 1) - 1 < 10**precision - 1:
        n += 1
    return n


def _optional(avro_type: AvroSchema) -> AvroSchema:
    return ["null", avro_type]


def _field(name: str, field_id: int, avro_type: AvroSchema, required: bool, doc: str | None = None) -> dict:
    out: dict[str, Any] = {"name": name, "type": avro_type if required else _optional(avro_type)}
    if doc:
        out["doc"] = doc
    if not required:
        out["default"] = None
    out["field-id"] = field_id
    return out


def _int_map(key_id: int, value_id: int, value_type: str) -> dict:
    return {
        "type": "array",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [
                {"name": "key", "type": "int", "field-id": key_id},
                {"name": "value", "type": value_type, "field-id": value_id},
            ],
        },
        "logicalType": "map",
    }


def _array(element_id: int, item: str) -> dict:
    return {"type": "array", "items": item, "element-id": element_id}


def primitive_avro_type(t: IcebergType, defined: set[str]) -> AvroSchema:
    """The Avro type of an Iceberg primitive (Appendix A); ``defined`` tracks named fixed types."""

    def named_fixed(name: str, spec: dict) -> AvroSchema:
        if name in defined:
            return name
        defined.add(name)
        return {"type": "fixed", "name": name, **spec}

    if isinstance(t, BooleanType):
        return "boolean"
    if isinstance(t, IntegerType):
        return "int"
    if isinstance(t, LongType):
        return "long"
    if isinstance(t, FloatType):
        return "float"
    if isinstance(t, DoubleType):
        return "double"
    if isinstance(t, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(t, TimeType):
        return {"type": "long", "logicalType": "time-micros"}
    if isinstance(t, TimestampType | TimestamptzType):
        utc = isinstance(t, TimestamptzType)
        return {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": utc}
    if isinstance(t, TimestampNanoType | TimestamptzNanoType):
        utc = isinstance(t, TimestamptzNanoType)
        return {"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": utc}
    if isinstance(t, StringType):
        return "string"
    if isinstance(t, UUIDType):
        return named_fixed("uuid_fixed", {"size": 16, "logicalType": "uuid"})
    if isinstance(t, FixedType):
        return named_fixed(f"fixed_{t.length}", {"size": t.length})
    if isinstance(t, BinaryType):
        return "bytes"
    if isinstance(t, DecimalType):
        return named_fixed(
            f"decimal_{t.precision}_{t.scale}",
            {
                "size": decimal_required_bytes(t.precision),
                "logicalType": "decimal",
                "precision": t.precision,
                "scale": t.scale,
            },
        )
    if isinstance(t, UnknownType):
        return "null"
    raise Unsupported(f"type {t} cannot be stored in a manifest partition tuple")


def avro_name(name: str) -> str:
    """A valid Avro name for a field name: other characters become ``_x<HEX>`` (as Iceberg Java does)."""
    if not name:
        return "_"
    out = []
    for i, ch in enumerate(name):
        valid = ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or (i > 0 and "0" <= ch <= "9")
        if valid:
            out.append(ch)
        elif i == 0 and "0" <= ch <= "9":
            out.append("_" + ch)
        else:
            out.append(f"_x{ord(ch):X}")
    return "".join(out)


def partition_record(partition_type: StructType) -> dict:
    """The Avro record of a partition tuple; field ids are the partition field ids (all optional)."""
    defined: set[str] = set()
    fields = []
    for f in partition_type.fields:
        avro_type = primitive_avro_type(f.field_type, defined)
        name = avro_name(f.name)
        if avro_type == "null":
            fields.append({"name": name, "type": "null", "default": None, "field-id": f.field_id})
        else:
            fields.append(_field(name, f.field_id, avro_type, required=False))
    return {"type": "record", "name": "r102", "fields": fields}


def data_file_record(format_version: int, partition_type: StructType) -> dict:
    """The ``data_file`` struct (field 2) of a manifest entry for one format version."""
    v1, v3 = format_version == 1, format_version >= 3
    fields: list[dict] = []
    if not v1:
        fields.append(_field("content", 134, "int", True))
    fields += [
        _field("file_path", 100, "string", True),
        _field("file_format", 101, "string", True),
        _field("partition", 102, partition_record(partition_type), True),
        _field("record_count", 103, "long", True),
        _field("file_size_in_bytes", 104, "long", True),
    ]
    if v1:
        fields.append(_field("block_size_in_bytes", 105, "long", True))
    fields += [
        _field("column_sizes", 108, _int_map(117, 118, "long"), False),
        _field("value_counts", 109, _int_map(119, 120, "long"), False),
        _field("null_value_counts", 110, _int_map(121, 122, "long"), False),
        _field("nan_value_counts", 137, _int_map(138, 139, "long"), False),
        _field("lower_bounds", 125, _int_map(126, 127, "bytes"), False),
        _field("upper_bounds", 128, _int_map(129, 130, "bytes"), False),
        _field("key_metadata", 131, "bytes", False),
        _field("split_offsets", 132, _array(133, "long"), False),
    ]
    if not v1:
        fields.append(_field("equality_ids", 135, _array(136, "int"), False))
    fields.append(_field("sort_order_id", 140, "int", False))
    if v3:
        fields.append(_field("first_row_id", 142, "long", False))
    if not v1:
        fields.append(_field("referenced_data_file", 143, "string", False))
    if v3:
        fields.append(_field("content_offset", 144, "long", False))
        fields.append(_field("content_size_in_bytes", 145, "long", False))
    return {"type": "record", "name": "r2", "fields": fields}


def manifest_entry_schema(format_version: int, partition_type: StructType) -> dict:
    """The Avro schema of a v1, v2 or v3 manifest file (``manifest_entry``)."""
    if format_version not in (1, 2, 3):
        raise Unsupported(f"Avro manifests exist for format versions 1-3, not {format_version}")
    fields = [_field("status", 0, "int", True), _field("snapshot_id", 1, "long", False)]
    if format_version >= 2:
        fields += [
            _field("sequence_number", 3, "long", False),
            _field("file_sequence_number", 4, "long", False),
        ]
    fields.append(_field("data_file", 2, data_file_record(format_version, partition_type), True))
    return {"type": "record", "name": "manifest_entry", "fields": fields}


def _field_summary() -> dict:
    return {
        "type": "array",
        "items": {
            "type": "record",
            "name": "r508",
            "fields": [
                _field("contains_null", 509, "boolean", True),
                _field("contains_nan", 518, "boolean", False),
                _field("lower_bound", 510, "bytes", False),
                _field("upper_bound", 511, "bytes", False),
            ],
        },
        "element-id": 508,
    }


def manifest_list_schema(format_version: int) -> dict:
    """The Avro schema of a v1, v2 or v3 manifest list (``manifest_file``)."""
    if format_version not in (1, 2, 3):
        raise Unsupported(f"manifest lists exist for format versions 1-3, not {format_version}")
    v1 = format_version == 1
    fields = [
        _field("manifest_path", 500, "string", True),
        _field("manifest_length", 501, "long", True),
        _field("partition_spec_id", 502, "int", True),
    ]
    if not v1:
        fields += [
            _field("content", 517, "int", True),
            _field("sequence_number", 515, "long", True),
            _field("min_sequence_number", 516, "long", True),
        ]
    fields += [
        _field("added_snapshot_id", 503, "long", True),
        _field("added_files_count", 504, "int", not v1),
        _field("existing_files_count", 505, "int", not v1),
        _field("deleted_files_count", 506, "int", not v1),
        _field("added_rows_count", 512, "long", not v1),
        _field("existing_rows_count", 513, "long", not v1),
        _field("deleted_rows_count", 514, "long", not v1),
        _field("partitions", 507, _field_summary(), False),
        _field("key_metadata", 519, "bytes", False),
    ]
    if format_version >= 3:
        fields.append(_field("first_row_id", 520, "long", False))
    return {"type": "record", "name": "manifest_file", "fields": fields}


def without_logical_types(schema: AvroSchema) -> AvroSchema:
    """A copy of an Avro schema without logical types, so fastavro returns the raw stored values."""
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "logicalType"}
    kind = schema.get("type")
    if kind == "record":
        out["fields"] = [{**f, "type": without_logical_types(f["type"])} for f in schema.get("fields", [])]
    elif kind == "array":
        out["items"] = without_logical_types(schema["items"])
    elif kind == "map":
        out["values"] = without_logical_types(schema["values"])
    elif isinstance(kind, dict | list):
        out["type"] = without_logical_types(kind)
    return out


def non_null_branch(avro_type: AvroSchema) -> AvroSchema:
    """The non-null branch of an optional union (or the type itself)."""
    if isinstance(avro_type, list):
        rest = [t for t in avro_type if t != "null"]
        return rest[0] if len(rest) == 1 else (rest or ["null"])[0]
    return avro_type


def fields_by_id(record: dict) -> dict[int, dict]:
    """A record schema's fields keyed by their ``field-id`` (fields without one are left out)."""
    out = {}
    for f in record.get("fields", []):
        fid = f.get("field-id")
        if fid is not None:
            out[int(fid)] = f
    return out


def record_of(avro_type: AvroSchema) -> dict | None:
    """The record schema inside an optional union, or None."""
    t = non_null_branch(avro_type)
    return t if isinstance(t, dict) and t.get("type") == "record" else None


# -- partition values: internal representation <-> stored Avro value -------------------------------


def unscaled_of(value: Any, scale: int) -> int:
    """The exact unscaled integer of a decimal at ``scale`` (no context rounding, any precision)."""
    sign, digits, exp = decimal.Decimal(value).as_tuple()
    if not isinstance(exp, int):
        raise ValidationError(f"{value!r} is not a finite decimal")
    n = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    if shift >= 0:
        n *= 10**shift
    else:
        n, rest = divmod(n, 10**-shift)
        if rest:
            raise ValidationError(f"decimal {value} has more than {scale} fraction digits")
    return -n if sign else n


def _decimal_to_fixed(size: int, scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if v is None:
            return None
        try:
            return unscaled_of(v, scale).to_bytes(size, "big", signed=True)
        except OverflowError as exc:
            raise ValidationError(f"decimal {v} does not fit in {size} bytes") from exc

    return conv


def _uuid_to_bytes(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, str):
        return uuid.UUID(v).bytes
    return bytes(v)


def partition_writer(t: IcebergType) -> Callable[[Any], Any] | None:
    """Converter from an internal partition value to its Avro value (None when no change is needed)."""
    if isinstance(t, DecimalType):
        return _decimal_to_fixed(decimal_required_bytes(t.precision), t.scale)
    if isinstance(t, UUIDType):
        return _uuid_to_bytes
    if isinstance(t, FloatType | DoubleType):
        return lambda v: None if v is None else float(v)
    return None


def _decimal_from_avro(scale: int) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        if v is None or isinstance(v, decimal.Decimal):
            return v
        if isinstance(v, bytes | bytearray):
            return unscaled_to_decimal(int.from_bytes(v, "big", signed=True), scale)
        return decimal.Decimal(v)

    return conv


def _uuid_from_avro(v: Any) -> Any:
    if v is None or isinstance(v, uuid.UUID):
        return v
    if isinstance(v, str):
        return uuid.UUID(v)
    return uuid.UUID(bytes=bytes(v))


def named_types(schema: AvroSchema, out: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every named type (record, fixed, enum) defined in an Avro schema, by name."""
    out = {} if out is None else out
    if isinstance(schema, list):
        for s in schema:
            named_types(s, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "fixed", "enum") and "name" in schema:
            out.setdefault(schema["name"], schema)
        if kind == "record":
            for f in schema.get("fields", []):
                named_types(f["type"], out)
        elif kind == "array":
            named_types(schema["items"], out)
        elif kind == "map":
            named_types(schema["values"], out)
        elif isinstance(kind, dict | list):
            named_types(kind, out)
    return out


def partition_reader(
    avro_type: AvroSchema, named: dict[str, dict] | None = None
) -> Callable[[Any], Any] | None:
    """Converter from a raw (logical-type-free) Avro partition value to the internal value.

    Decided from the writer's Avro type, so manifests of other writers decode without the table
    schema: decimals (fixed or bytes) become ``Decimal``, uuids (fixed or string) ``uuid.UUID``;
    dates, times and timestamps stay ints.
    """
    t = non_null_branch(avro_type)
    if isinstance(t, str) and named and t in named:
        t = named[t]
    if not isinstance(t, dict):
        return None
    logical = t.get("logicalType")
    if logical == "decimal":
        return _decimal_from_avro(int(t.get("scale", 0)))
    if logical == "uuid":
        return _uuid_from_avro
    return None


# -- Avro object container files: sources, sinks, header -------------------------------------------


def source_bytes(source: Any) -> bytes:
    """The bytes of a manifest given as bytes, a binary stream or an ``InputFile``."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, bytes | bytearray):
            return bytes(data)
    raise TypeError(f"cannot read Avro bytes from {type(source).__name__}")


def source_location(source: Any) -> str:
    """A printable location of a source or sink, for error messages and manifest paths."""
    for attr in ("location", "path", "name"):
        value = getattr(source, attr, None)
        if isinstance(value, str):
            return value
    return "<in-memory>"


def write_to(sink: Any, data: bytes) -> None:
    """Write bytes to an ``OutputFile`` (``write_bytes``) or a binary stream (``write``)."""
    if hasattr(sink, "write_bytes"):
        sink.write_bytes(data)
    elif hasattr(sink, "write"):
        sink.write(data)
    else:
        raise TypeError(f"cannot write Avro bytes to {type(sink).__name__}")


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint long at ``pos``; returns (value, next position).

    Raises IndexError past the end of ``data`` and ValueError for a varint longer than a long's
    10 bytes (callers turn both into CorruptMetadata naming the file).
    """
    shift = 0
    acc = 0
    while True:
        b = data[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError(f"varint longer than 10 bytes at byte {pos}")
    return (acc >> 1) ^ -(acc & 1), pos


def encode_long(value: int) -> bytes:
    """The zig-zag varint encoding of an Avro long."""
    acc = (value << 1) ^ (value >> 63)
    out = bytearray()
    while acc > 0x7F:
        out.append((acc & 0x7F) | 0x80)
        acc >>= 7
    out.append(acc)
    return bytes(out)


def text_metadata(raw_meta: Mapping[str, bytes]) -> dict[str, str]:
    """The Avro header metadata that is UTF-8 text (binary values such as checksums left out)."""
    metadata = {}
    for k, v in raw_meta.items():
        try:
            metadata[k] = v.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return metadata


def _parse_header(data: bytes, location: str) -> tuple[dict[str, bytes], int]:
    """The metadata map of an Avro object container file and the offset of its sync marker.

    Every count and length is checked against the bytes that are there: a negative or oversized
    key/value length, a map block that runs past the end, or a missing sync marker raise
    CorruptMetadata naming ``location`` (never a loop or an IndexError).
    """
    if data[:4] != b"Obj\x01":
        raise CorruptMetadata(f"{location}: not an Avro object container file", location=location)
    meta: dict[str, bytes] = {}
    pos, end = 4, len(data)
    try:
        while True:
            count, pos = _read_long(data, pos)
            if count == 0:
                break
            if count < 0:
                count = -count
                _, pos = _read_long(data, pos)  # block size in bytes
            if count > end - pos:  # every entry needs at least two bytes
                raise CorruptMetadata(f"{location}: Avro header map claims {count} entries")
            for _ in range(count):
                klen, pos = _read_long(data, pos)
                if klen < 0 or pos + klen > end:
                    raise CorruptMetadata(f"{location}: Avro header key length {klen} at byte {pos}")
                key = data[pos : pos + klen].decode("utf-8")
                pos += klen
                vlen, pos = _read_long(data, pos)
                if vlen < 0 or pos + vlen > end:
                    raise CorruptMetadata(f"{location}: Avro header value length {vlen} at byte {pos}")
                meta[key] = data[pos : pos + vlen]
                pos += vlen
    except (IndexError, ValueError) as exc:  # ran off the end; bad varint or UTF-8 key
        raise CorruptMetadata(f"{location}: truncated or malformed Avro header ({exc})") from exc
    if pos + SYNC_SIZE > end:
        raise CorruptMetadata(f"{location}: Avro header without a sync marker")
    return meta, pos


def parse_header(data: bytes, location: str) -> tuple[dict[str, bytes], int]:
    """The raw metadata map of an Avro container file and the offset of its sync marker."""
    return _parse_header(data, location)


SYNC_SIZE = 16


BLOCK_CRC_KEY = "icefloe.block-crc32"
"""Avro header key: the CRC-32 of every data block as written (hex, comma-separated).

Avro's deflate codec has no checksum, and decoders handed corrupt block bytes can spin (DataFusion)
instead of failing. icefloe records each block's checksum in the header and verifies it before
any decoder sees a block; other readers ignore the key. Files without it are read unverified.
"""


def with_block_checksums(data: bytes) -> bytes:
    """An Avro container file with :data:`BLOCK_CRC_KEY` added to its header (blocks unchanged)."""
    meta, sync_at = _parse_header(data, "<written Avro file>")
    crcs = [f"{zlib.crc32(block):08x}" for block in _blocks(data, sync_at)]
    meta[BLOCK_CRC_KEY] = ",".join(crcs).encode("ascii")
    return encode_header(meta) + data[sync_at:]


def _blocks(data: bytes, sync_at: int) -> Iterator[bytes]:
    pos = sync_at + SYNC_SIZE
    while pos < len(data):
        _, pos = _read_long(data, pos)
        size, pos = _read_long(data, pos)
        yield data[pos : pos + size]
        pos += size + SYNC_SIZE


def block_record_count(
    data: bytes, sync_at: int, location: str, meta: Mapping[str, bytes] | None = None
) -> int:
    """The number of records an Avro object container file holds, from its block framing.

    Walks the blocks (count, byte size, data, sync marker) without decoding them. A block count
    of 0 or less (Avro writers never write one; fastavro then yields nothing and DataFusion's
    reader spins forever), a negative or oversized byte size, a wrong sync marker or trailing
    bytes raise CorruptMetadata naming ``location``: a file must be framed exactly before any
    decoder sees it.
    """
    sync = data[sync_at : sync_at + SYNC_SIZE]
    pos, total, end = sync_at + SYNC_SIZE, 0, len(data)
    crcs, index = _recorded_crcs(meta, location), 0
    try:
        while pos < end:
            start = pos
            count, pos = _read_long(data, pos)
            size, pos = _read_long(data, pos)
            if count <= 0:
                raise CorruptMetadata(f"{location}: Avro block at byte {start} has record count {count}")
            if size <= 0 or pos + size + SYNC_SIZE > end:
                raise CorruptMetadata(
                    f"{location}: Avro block at byte {start} has size {size}, beyond the file's {end} bytes"
                )
            if crcs is not None:
                if index >= len(crcs) or zlib.crc32(data[pos : pos + size]) != crcs[index]:
                    raise CorruptMetadata(
                        f"{location}: Avro block at byte {start} does not match its recorded checksum",
                        location=location,
                    )
                index += 1
            pos += size
            if data[pos : pos + SYNC_SIZE] != sync:
                raise CorruptMetadata(
                    f"{location}: Avro block at byte {start} is not followed by the sync marker"
                )
            total += count
            pos += SYNC_SIZE
    except (IndexError, ValueError) as exc:
        raise CorruptMetadata(f"{location}: truncated Avro block ({exc})") from exc
    if crcs is not None and index != len(crcs):
        raise CorruptMetadata(
            f"{location}: {index} Avro blocks, the header records {len(crcs)} checksums", location=location
        )
    return total


def _recorded_crcs(meta: Mapping[str, bytes] | None, location: str) -> list[int] | None:
    raw = None if meta is None else meta.get(BLOCK_CRC_KEY)
    if raw is None:
        return None
    try:
        return [int(x, 16) for x in raw.decode("ascii").split(",")] if raw else []
    except ValueError as exc:
        raise CorruptMetadata(f"{location}: unreadable {BLOCK_CRC_KEY} header", location=location) from exc


def encode_header(meta: dict[str, bytes]) -> bytes:
    """The magic and metadata map of an Avro object container file (the sync marker follows)."""
    out = bytearray(b"Obj\x01")
    out += encode_long(len(meta))
    for k, v in meta.items():
        kb = k.encode("utf-8")
        out += encode_long(len(kb)) + kb + encode_long(len(v)) + v
    out += encode_long(0)
    return bytes(out)


def check_bounded_schema(schema: AvroSchema, location: str) -> None:
    """Refuse a writer schema whose arrays or maps could hold items encoded in zero bytes.

    A decoder reads an array block's announced count of items whatever the bytes left: with
    items of zero bytes (a record without fields, ``null``) a corrupt count is an endless loop
    (fastavro) instead of an error. No Iceberg manifest or manifest list has such arrays.
    """
    named: dict[str, Any] = {}

    def min_size(t: AvroSchema, seen: frozenset[str]) -> int:
        if isinstance(t, str):
            if t in named and t not in seen:
                return min_size(named[t], seen | {t})
            return {"null": 0, "float": 4, "double": 8}.get(t, 1)
        if isinstance(t, list):
            for branch in t:
                min_size(branch, seen)
            return 1  # the branch index
        if not isinstance(t, dict):
            raise CorruptMetadata(f"{location}: Avro schema has a malformed type {t!r}", location=location)
        kind = t.get("type")
        if "name" in t and kind in ("record", "fixed", "enum"):
            named[str(t["name"])] = t
        if kind == "record":
            fields = t.get("fields")
            if not isinstance(fields, list) or not all(isinstance(f, dict) and "type" in f for f in fields):
                raise CorruptMetadata(
                    f"{location}: Avro record {t.get('name')!r} has no valid fields list", location=location
                )
            return sum(min_size(f["type"], seen) for f in fields)
        if kind in ("array", "map"):
            items = t.get("items") if kind == "array" else t.get("values")
            if items is None or (kind == "array" and min_size(items, seen) == 0):
                raise CorruptMetadata(
                    f"{location}: Avro {kind} of items that may take no bytes", location=location
                )
            if kind == "map":
                min_size(items, seen)
            return 1
        if kind == "fixed":
            return int(t.get("size", 0))
        if isinstance(kind, dict | list | str) and kind not in ("record", "enum", "fixed"):
            return min_size(kind, seen)
        return 1

    min_size(schema, frozenset())


def open_avro(data: bytes, location: str) -> tuple[dict, dict[str, str], Iterable[Any]]:
    """Writer schema, file metadata and a record iterator that yields raw (non-logical) values.

    The header's schema is swapped for one without logical types before fastavro sees it, so
    dates, timestamps, decimals and uuids come back as stored (ints and bytes) at full speed. The
    block framing is validated first (:func:`block_record_count`), and the iterator checks that
    it yields exactly the records the blocks announce; every decoding failure (zlib, fastavro,
    a short block) surfaces as CorruptMetadata naming ``location``.
    """
    with reading(location, "read the Avro file"):
        raw_meta, sync_at = _parse_header(data, location)
        expected = block_record_count(data, sync_at, location, raw_meta)
        try:
            schema_text = raw_meta["avro.schema"]
        except KeyError:
            raise CorruptMetadata(f"{location}: Avro header has no avro.schema", location=location) from None
        known = _CHECKED_SCHEMAS.get(schema_text)
        if known is None:
            writer_schema: Any = json.loads(schema_text)
            plain_text = json.dumps(without_logical_types(writer_schema)).encode("utf-8")
        else:
            writer_schema, plain_text = known
        metadata = text_metadata(raw_meta)
        raw_meta["avro.schema"] = plain_text
        patched = encode_header(raw_meta) + data[sync_at:]
        records = fastavro.reader(io.BytesIO(patched))
    if known is None:
        if not isinstance(writer_schema, dict) or writer_schema.get("type") != "record":
            raise CorruptMetadata(f"{location}: Avro schema is not a record", location=location)
        check_bounded_schema(writer_schema, location)
        if len(_CHECKED_SCHEMAS) >= _CHECKED_SCHEMAS_MAX:
            _CHECKED_SCHEMAS.clear()
        _CHECKED_SCHEMAS[schema_text] = (writer_schema, plain_text)
    return writer_schema, metadata, _checked_records(records, expected, location)


_CHECKED_SCHEMAS: dict[bytes, tuple[dict, bytes]] = {}
"""Header schema text -> (its parsed writer schema, the text without logical types), for schemas
that passed ``open_avro``'s checks: a table's manifests repeat a handful of schemas, and parsing,
rewriting and checking one costs more than decoding a small manifest. Callers read the parsed
schema, never change it (it is shared)."""
_CHECKED_SCHEMAS_MAX = 256


def _checked_records(records: Iterable[Any], expected: int, location: str) -> Iterator[Any]:
    """``records``, failing with CorruptMetadata on any decoding error or a count other than ``expected``."""
    n = 0
    with reading(location, "decode the Avro records"):
        for rec in records:
            n += 1
            yield rec
    if n != expected:
        raise CorruptMetadata(
            f"{location}: decoded {n} Avro records, the blocks announce {expected}", location=location
        )


def int_or_none(value: str | None) -> int | None:
    """A header value as an int; None when missing, \"null\" or not a number."""
    if value is None or value.strip() in ("", "null"):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def field_name(record: dict | None, field_id: int, default: str) -> str | None:
    """Name of the field with ``field_id`` in a record schema; the default name when ids are absent."""
    if record is None:
        return None
    by_id = fields_by_id(record)
    if field_id in by_id:
        return str(by_id[field_id]["name"])
    if any(f.get("name") == default for f in record.get("fields", [])):
        return default
    return None
