"""Avro and ORC data / position-delete files written as Iceberg Java writes them, by independent
writers (fastavro, pyarrow.orc), registered in a table through icefloe's transaction API.

Conventions (Iceberg spec, Appendix A; Iceberg Java ``AvroSchemaUtil`` / ``ORCSchemaUtil``):

- Avro: ``field-id`` on every record field, optional fields as ``["null", T]`` with default null,
  structs as records named ``r<id>``, lists as arrays with ``element-id``, string-keyed maps as Avro
  maps with ``key-id`` / ``value-id``, ``decimal`` on a fixed of the minimal size named
  ``decimal_P_S``, ``timestamp-micros`` with ``adjust-to-utc`` (true for ``timestamptz``), ``date``.
- ORC: the type attribute ``iceberg.id`` on every type (``iceberg.required`` on required fields),
  timestamptz as ORC ``timestamp with local time zone``.
- Position delete files: ``file_path`` (id 2147483546, string) and ``pos`` (id 2147483545, long).
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as orc

from icefloe.io.fileio import FileIO, local_path
from icefloe.spec.content import DataFile, FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

FILE_PATH_ID, POS_ID = 2147483546, 2147483545

# ids as ``create_table`` assigns them (top-level fields first, then nested ones, in order)
SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType(), False),
    NestedField(3, "price", DecimalType(9, 2), False),
    NestedField(4, "ts", TimestamptzType(), False),
    NestedField(5, "day", DateType(), False),
    NestedField(6, "tags", ListType(10, StringType(), element_required=False), False),
    NestedField(7, "attrs", MapType(11, StringType(), 12, IntegerType(), value_required=False), False),
    NestedField(
        8,
        "point",
        StructType(NestedField(13, "x", DoubleType(), False), NestedField(14, "y", DoubleType(), False)),
        False,
    ),
    NestedField(9, "qty", IntegerType(), False),
)

AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "table",
    "fields": [
        {"name": "id", "type": "long", "field-id": 1},
        {"name": "name", "type": ["null", "string"], "default": None, "field-id": 2},
        {
            "name": "price",
            "type": [
                "null",
                {
                    "type": "fixed",
                    "name": "decimal_9_2",
                    "size": 4,
                    "logicalType": "decimal",
                    "precision": 9,
                    "scale": 2,
                },
            ],
            "default": None,
            "field-id": 3,
        },
        {
            "name": "ts",
            "type": ["null", {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}],
            "default": None,
            "field-id": 4,
        },
        {
            "name": "day",
            "type": ["null", {"type": "int", "logicalType": "date"}],
            "default": None,
            "field-id": 5,
        },
        {
            "name": "tags",
            "type": ["null", {"type": "array", "items": ["null", "string"], "element-id": 10}],
            "default": None,
            "field-id": 6,
        },
        {
            "name": "attrs",
            "type": ["null", {"type": "map", "values": ["null", "int"], "key-id": 11, "value-id": 12}],
            "default": None,
            "field-id": 7,
        },
        {
            "name": "point",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "r8",
                    "fields": [
                        {"name": "x", "type": ["null", "double"], "default": None, "field-id": 13},
                        {"name": "y", "type": ["null", "double"], "default": None, "field-id": 14},
                    ],
                },
            ],
            "default": None,
            "field-id": 8,
        },
        {"name": "qty", "type": ["null", "int"], "default": None, "field-id": 9},
    ],
}

POSITION_DELETE_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "delete",
    "fields": [
        {"name": "file_path", "type": "string", "field-id": FILE_PATH_ID},
        {"name": "pos", "type": "long", "field-id": POS_ID},
    ],
}


def rows(start: int, n: int) -> list[dict[str, Any]]:
    """Python rows of ``SCHEMA`` (nulls sprinkled in), ids ``start .. start+n-1``."""
    out = []
    for i in range(start, start + n):
        out.append(
            {
                "id": i,
                "name": None if i % 5 == 0 else f"n{i}",
                "price": Decimal(i * 101) / 100,
                "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
                "day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 40),
                "tags": None if i % 7 == 0 else [f"t{i}", None] if i % 3 == 0 else [f"t{i}"],
                "attrs": None if i % 4 == 0 else {"a": i, "b": None},
                "point": None if i % 6 == 0 else {"x": i / 2, "y": -i / 4},
                "qty": i % 13,
            }
        )
    return out


def _orc_field(f: NestedField) -> pa.Field:
    meta = {"iceberg.id": str(f.field_id), "iceberg.required": str(f.required).lower()}
    t = f.field_type
    dtype: pa.DataType
    if isinstance(t, StructType):
        dtype = pa.struct([_orc_field(c) for c in t.fields])
    elif isinstance(t, ListType):
        dtype = pa.list_(_orc_field(NestedField(t.element_id, "element", t.element_type, t.element_required)))
    elif isinstance(t, MapType):
        dtype = pa.map_(
            _orc_field(NestedField(t.key_id, "key", t.key_type, True)),
            _orc_field(NestedField(t.value_id, "value", t.value_type, t.value_required)),
        )
    else:
        dtype = {
            LongType: pa.int64(),
            IntegerType: pa.int32(),
            StringType: pa.string(),
            DoubleType: pa.float64(),
            DateType: pa.date32(),
            TimestamptzType: pa.timestamp("us", "UTC"),
        }.get(type(t)) or pa.decimal128(t.precision, t.scale)  # type: ignore[attr-defined]
    return pa.field(f.name, dtype, not f.required, meta)


def _orc_schema(schema: Schema) -> pa.Schema:
    return pa.schema([_orc_field(f) for f in schema.fields])


def _local(path: str) -> str:
    """The local file path of a location, its directory created."""
    local = local_path(path)
    assert local is not None, path
    os.makedirs(os.path.dirname(local), exist_ok=True)
    return local


def write_avro_data(io: FileIO, path: str, data: list[dict[str, Any]]) -> DataFile:
    """An Avro data file of ``data`` and its DataFile entry (no column metrics, as allowed)."""
    with open(_local(path), "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(AVRO_SCHEMA), data, codec="deflate")
    return _entry(path, "avro", len(data))


def write_orc_data(io: FileIO, path: str, data: list[dict[str, Any]]) -> DataFile:
    """An ORC data file of ``data`` and its DataFile entry."""
    plain = [{**r, "attrs": None if r["attrs"] is None else list(r["attrs"].items())} for r in data]
    orc.write_table(pa.Table.from_pylist(plain, schema=_orc_schema(SCHEMA)), _local(path))
    return _entry(path, "orc", len(data))


def write_avro_position_deletes(path: str, deletes: list[tuple[str, int]]) -> DataFile:
    """An Avro position delete file (rows sorted by file and position, as the spec requires)."""
    records = [{"file_path": f, "pos": p} for f, p in sorted(deletes)]
    with open(_local(path), "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(POSITION_DELETE_AVRO_SCHEMA), records)
    return _entry(path, "avro", len(records), FileContent.POSITION_DELETES)


def write_orc_position_deletes(path: str, deletes: list[tuple[str, int]]) -> DataFile:
    """An ORC position delete file."""
    ordered = sorted(deletes)
    schema = pa.schema(
        [
            pa.field(
                "file_path", pa.string(), False, {"iceberg.id": str(FILE_PATH_ID), "iceberg.required": "true"}
            ),
            pa.field("pos", pa.int64(), False, {"iceberg.id": str(POS_ID), "iceberg.required": "true"}),
        ]
    )
    table = pa.table(
        [pa.array([f for f, _ in ordered]), pa.array([p for _, p in ordered], pa.int64())], schema=schema
    )
    orc.write_table(table, _local(path))
    return _entry(path, "orc", len(ordered), FileContent.POSITION_DELETES)


def _entry(path: str, fmt: str, count: int, content: FileContent = FileContent.DATA) -> DataFile:
    return DataFile(
        file_path=path,
        file_format=fmt,
        record_count=count,
        file_size_in_bytes=os.path.getsize(_local(path)),
        content=content,
    )


def write_avro_equality_deletes(path: str, ids: list[int]) -> DataFile:
    """An Avro equality delete file on ``id`` (field id 1)."""
    schema = {"type": "record", "name": "delete", "fields": [{"name": "id", "type": "long", "field-id": 1}]}
    with open(_local(path), "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), [{"id": i} for i in ids])
    return _entry(path, "avro", len(ids), FileContent.EQUALITY_DELETES).with_changes(equality_ids=(1,))
