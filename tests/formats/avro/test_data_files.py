"""Avro data files in every Iceberg type mapping (spec Appendix A), read by field id."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from icefloe.errors import CorruptMetadata
from icefloe.formats.data_files import read_data_file
from icefloe.io.fileio import load_file_io
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    FixedType,
    FloatType,
    IntegerType,
    MapType,
    NestedField,
    StringType,
    TimestampType,
    TimeType,
    UUIDType,
)

SCHEMA = Schema(
    NestedField(1, "flag", BooleanType(), False),
    NestedField(2, "f", FloatType(), False),
    NestedField(3, "blob", BinaryType(), False),
    NestedField(4, "fx", FixedType(3), False),
    NestedField(5, "u", UUIDType(), False),
    NestedField(6, "t", TimeType(), False),
    NestedField(7, "local_ts", TimestampType(), False),
    NestedField(8, "by_int", MapType(9, IntegerType(), 10, StringType(), value_required=False), False),
)
AVRO = {
    "type": "record",
    "name": "table",
    "fields": [
        {"name": "flag", "type": ["null", "boolean"], "default": None, "field-id": 1},
        {"name": "f", "type": ["null", "float"], "default": None, "field-id": 2},
        {"name": "blob", "type": ["null", "bytes"], "default": None, "field-id": 3},
        {
            "name": "fx",
            "type": ["null", {"type": "fixed", "name": "fixed_3", "size": 3}],
            "default": None,
            "field-id": 4,
        },
        {
            "name": "u",
            "type": ["null", {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}],
            "default": None,
            "field-id": 5,
        },
        {
            "name": "t",
            "type": ["null", {"type": "long", "logicalType": "time-micros"}],
            "default": None,
            "field-id": 6,
        },
        {
            "name": "local_ts",
            "type": ["null", {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": False}],
            "default": None,
            "field-id": 7,
        },
        {
            "name": "by_int",
            "type": [
                "null",
                {
                    "type": "array",
                    "logicalType": "map",
                    "items": {
                        "type": "record",
                        "name": "k9_v10",
                        "fields": [
                            {"name": "key", "type": "int", "field-id": 9},
                            {"name": "value", "type": ["null", "string"], "default": None, "field-id": 10},
                        ],
                    },
                },
            ],
            "default": None,
            "field-id": 8,
        },
    ],
}
U = uuid.UUID("12345678-1234-5678-1234-567812345678")
RECORDS: list[dict[str, Any]] = [
    {
        "flag": True,
        "f": 1.5,
        "blob": b"\x00\x01",
        "fx": b"abc",
        "u": U.bytes,
        "t": 3_600_000_001,
        "local_ts": 1_700_000_000_123_456,
        "by_int": [{"key": 1, "value": "one"}, {"key": 2, "value": None}],
    },
    dict.fromkeys(("flag", "f", "blob", "fx", "u", "t", "local_ts", "by_int")),
]


def _write(tmp_path: Path, schema: dict[str, Any], records: list[dict[str, Any]]) -> str:
    path = tmp_path / "data.avro"
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), records)
    return str(path)


def test_every_type_mapping(tmp_path: Path) -> None:
    path = _write(tmp_path, AVRO, RECORDS)
    got = read_data_file(load_file_io({}, str(tmp_path)), path, SCHEMA, "avro")
    first, second = got.to_pylist()
    assert first["flag"] is True and first["f"] == 1.5
    assert (first["blob"], first["fx"]) == (b"\x00\x01", b"abc")
    assert bytes(first["u"]) == U.bytes
    assert first["t"] == dt.time(1, 0, 0, 1)
    assert first["local_ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)  # no time zone
    assert got.schema.field("local_ts").type == pa.timestamp("us")
    assert sorted(first["by_int"]) == [(1, "one"), (2, None)]
    assert set(second.values()) == {None}


def test_decimals_of_38_digits_read_exactly(tmp_path: Path) -> None:
    """Unscaled values beyond 28 digits (Decimal's default context) keep every digit."""
    fixed = {"type": "fixed", "name": "decimal_38_2", "size": 16, "logicalType": "decimal"}
    avro = {
        "type": "record",
        "name": "table",
        "fields": [{"name": "d", "type": ["null", {**fixed, "precision": 38, "scale": 2}], "field-id": 1}],
    }
    values = [Decimal("9" * 36 + ".99"), Decimal("-" + "9" * 36 + ".98"), Decimal("0.01"), None]
    path = _write(tmp_path, avro, [{"d": v} for v in values])
    schema = Schema(NestedField(1, "d", DecimalType(38, 2), False))
    got = read_data_file(load_file_io({}, str(tmp_path)), path, schema, "avro").column("d").to_pylist()
    assert got == values


def test_projection_reads_only_wanted_columns_by_id(tmp_path: Path) -> None:
    path = _write(tmp_path, AVRO, RECORDS)
    renamed = Schema(
        NestedField(7, "when", TimestampType(), False), NestedField(99, "new", StringType(), False)
    )
    got = read_data_file(load_file_io({}, str(tmp_path)), path, renamed, "avro")
    assert got.column_names == ["when", "new"]
    assert got.column("new").to_pylist() == [None, None]
    assert got.column("when").to_pylist()[0] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456)


def test_files_without_field_ids_use_the_name_mapping(tmp_path: Path) -> None:
    plain = {"type": "record", "name": "x", "fields": [{"name": "old_name", "type": "long"}]}
    path = _write(tmp_path, plain, [{"old_name": 7}])
    schema = Schema(NestedField(1, "id", IntegerType(), False))
    mapping = '[{"field-id": 1, "names": ["id", "old_name"]}]'
    got = read_data_file(load_file_io({}, str(tmp_path)), path, schema, "avro", name_mapping=mapping)
    assert got.column("id").to_pylist() == [7]


def test_garbage_is_corrupt_metadata(tmp_path: Path) -> None:
    path = tmp_path / "bad.avro"
    path.write_bytes(b"PAR1 not avro at all")
    with pytest.raises(CorruptMetadata, match=r"bad\.avro"):
        read_data_file(load_file_io({}, str(tmp_path)), str(path), SCHEMA, "avro")
