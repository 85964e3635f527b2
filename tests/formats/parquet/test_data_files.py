"""Parquet data files: round trips by field id, metrics, projection rules and name mapping."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.errors import AlreadyExists, CorruptMetadata, NotFound
from icefloe.formats.arrow_schema import FIELD_ID_KEY, schema_to_arrow
from icefloe.formats.parquet.data_files import read_parquet_data_file, write_parquet_data_file
from icefloe.formats.parquet.metrics import (
    parse_metrics_mode,
    truncate_binary_lower,
    truncate_binary_upper,
    truncate_string_lower,
    truncate_string_upper,
)
from icefloe.io.fileio import FileIO
from icefloe.spec.content import FileContent
from icefloe.spec.conversions import from_bytes
from icefloe.spec.schema import Schema
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
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
    UnknownType,
    UUIDType,
)

IO = FileIO()


def _write(
    tmp_path: Path, schema: Schema, rows: list[dict], props: dict[str, str] | None = None, name: str = "f"
):
    table = pa.Table.from_pylist(rows, schema=schema_to_arrow(schema))
    path = f"file://{tmp_path}/{name}.parquet"
    return path, table, write_parquet_data_file(IO, path, table, schema, 3, ("p",), props or {})


ALL_TYPES = Schema(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType(), required=True),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec", DecimalType(9, 2)),
    NestedField(7, "dec_wide", DecimalType(38, 10)),
    NestedField(8, "dt", DateType()),
    NestedField(9, "tm", TimeType()),
    NestedField(10, "ts", TimestampType()),
    NestedField(11, "tstz", TimestamptzType()),
    NestedField(12, "tsn", TimestampNanoType()),
    NestedField(13, "tsnz", TimestamptzNanoType()),
    NestedField(14, "s", StringType()),
    NestedField(15, "u", UUIDType()),
    NestedField(16, "fx", FixedType(3)),
    NestedField(17, "bin", BinaryType()),
    NestedField(18, "unk", UnknownType()),
    NestedField(
        19, "st", StructType(NestedField(20, "x", IntegerType(), True), NestedField(21, "y", StringType()))
    ),
    NestedField(22, "ls", ListType(23, LongType(), element_required=False)),
    NestedField(24, "mp", MapType(25, StringType(), 26, DoubleType())),
    NestedField(27, "lst", ListType(28, StructType(NestedField(29, "q", StringType())))),
)
U1 = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
ALL_ROWS = [
    {
        "b": True,
        "i": 1,
        "l": 10,
        "f": 1.5,
        "d": float("nan"),
        "dec": Decimal("1.25"),
        "dec_wide": Decimal("123.0000000001"),
        "dt": dt.date(2020, 1, 1),
        "tm": dt.time(1, 2, 3),
        "ts": dt.datetime(2020, 1, 1, 1),
        "tstz": dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
        "tsn": 1_500,
        "tsnz": 2_500,
        "s": "héllo",
        "u": U1.bytes,
        "fx": b"abc",
        "bin": b"\x00\xff",
        "st": {"x": 1, "y": "a"},
        "ls": [1, None, 2],
        "mp": [("k", 1.0)],
        "lst": [{"q": "z"}, None],
    },
    {k: None for k in ("b", "i", "f", "d", "dec", "dec_wide", "dt", "tm", "ts", "tstz", "tsn", "tsnz", "s")}
    | {"l": -5, "u": None, "fx": None, "bin": None, "st": None, "ls": None, "mp": None, "lst": None},
]


def test_round_trip_every_type(tmp_path: Path) -> None:
    path, table, data_file = _write(tmp_path, ALL_TYPES, ALL_ROWS)
    back = read_parquet_data_file(IO, path, ALL_TYPES)
    assert back.schema.equals(schema_to_arrow(ALL_TYPES), check_metadata=True)
    assert back.drop_columns(["d"]).equals(table.drop_columns(["d"]))  # NaN != NaN
    assert pc.is_nan(back.column("d")).to_pylist() == [True, None]
    assert data_file.record_count == 2
    assert data_file.file_format == "parquet"
    assert data_file.spec_id == 3 and data_file.partition == ("p",)
    assert data_file.content == FileContent.DATA
    assert data_file.file_size_in_bytes == Path(path[len("file://") :]).stat().st_size
    assert data_file.split_offsets == (4,)


def test_file_carries_field_ids_and_spec_physical_types(tmp_path: Path) -> None:
    path, _, _ = _write(tmp_path, ALL_TYPES, ALL_ROWS)
    local = path[len("file://") :]
    file_schema = pq.read_schema(local)
    assert "unk" not in file_schema.names  # unknown columns are omitted from data files
    ids = {f.name: int(f.metadata[FIELD_ID_KEY]) for f in file_schema}
    assert ids["st"] == 19 and ids["mp"] == 24 and ids["u"] == 15
    parquet_schema = pq.ParquetFile(local).schema
    columns = {parquet_schema.column(i).path: parquet_schema.column(i) for i in range(len(parquet_schema))}
    assert str(columns["u"].logical_type) == "UUID"
    assert columns["dec"].physical_type == "INT32"
    assert columns["dec_wide"].physical_type == "FIXED_LEN_BYTE_ARRAY"
    assert columns["ls.list.element"].max_repetition_level == 1
    assert pq.ParquetFile(local).metadata.row_group(0).column(0).compression == "ZSTD"


def test_unknown_column_reads_as_nulls(tmp_path: Path) -> None:
    path, _, _ = _write(tmp_path, ALL_TYPES, ALL_ROWS)
    back = read_parquet_data_file(IO, path, Schema(NestedField(18, "unk", UnknownType())))
    assert back.column("unk").to_pylist() == [None, None]


METRICS_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "score", DoubleType()),
    NestedField(4, "f", FloatType()),
    NestedField(5, "tags", ListType(6, StringType())),
    NestedField(7, "st", StructType(NestedField(8, "a", IntegerType()))),
    NestedField(9, "b", BinaryType()),
    NestedField(10, "m", MapType(11, StringType(), 12, IntegerType())),
)
METRICS_ROWS = [
    {
        "id": 1,
        "name": "abcdefghijklmnopqrstuvwxyz",
        "score": 1.0,
        "f": float("nan"),
        "tags": ["x", "y"],
        "st": {"a": 5},
        "b": b"\x01" * 20,
        "m": [("k", 1)],
    },
    {"id": 2, "name": "abc", "score": float("nan"), "f": 2.0, "tags": None, "st": None, "b": None, "m": None},
    {"id": 3, "name": None, "score": -3.5, "f": None, "tags": [], "st": {"a": None}, "b": b"\x02", "m": []},
]


def _bounds(data_file, which: str) -> dict[int, object]:
    raw = getattr(data_file, which)
    return {fid: from_bytes(METRICS_SCHEMA.find_type(fid), v) for fid, v in raw.items()}


def test_metrics_exact_values(tmp_path: Path) -> None:
    _, _, df = _write(tmp_path, METRICS_SCHEMA, METRICS_ROWS)
    leaves = [1, 2, 3, 4, 6, 8, 9, 11, 12]
    assert sorted(df.column_sizes) == leaves and all(v > 0 for v in df.column_sizes.values())
    # value counts include nulls; repeated leaves count one entry per element, null or empty list
    assert df.value_counts == {1: 3, 2: 3, 3: 3, 4: 3, 6: 4, 8: 3, 9: 3, 11: 3, 12: 3}
    assert df.null_value_counts == {1: 0, 2: 1, 3: 0, 4: 1, 6: 2, 8: 2, 9: 1, 11: 2, 12: 2}
    assert df.nan_value_counts == {3: 1, 4: 1}
    assert _bounds(df, "lower_bounds") == {
        1: 1,
        2: "abc",
        3: -3.5,
        4: 2.0,
        8: 5,
        9: b"\x01" * 16,  # truncated to 16 bytes
    }
    assert _bounds(df, "upper_bounds") == {
        1: 3,
        2: "abcdefghijklmnoq",  # truncated to 16 code points, last one incremented
        3: 1.0,  # NaN is never a bound
        4: 2.0,
        8: 5,
        9: b"\x02",
    }


def test_metrics_modes(tmp_path: Path) -> None:
    props = {
        "write.metadata.metrics.default": "none",
        "write.metadata.metrics.column.name": "full",
        "write.metadata.metrics.column.score": "counts",
        "write.metadata.metrics.column.st": "truncate(4)",
    }
    _, _, df = _write(tmp_path, METRICS_SCHEMA, METRICS_ROWS, props)
    assert sorted(df.value_counts) == [2, 3, 8]
    assert sorted(df.column_sizes) == [2, 3, 8]
    assert df.nan_value_counts == {3: 1}
    assert _bounds(df, "lower_bounds") == {2: "abc", 8: 5}
    assert _bounds(df, "upper_bounds") == {2: "abcdefghijklmnopqrstuvwxyz", 8: 5}


def test_upper_bound_dropped_when_it_cannot_be_incremented(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "s", StringType()), NestedField(2, "b", BinaryType()))
    rows = [{"s": "\U0010ffff" * 20, "b": b"\xff" * 20}]
    _, _, df = _write(tmp_path, schema, rows, {"write.metadata.metrics.default": "truncate(2)"})
    assert df.lower_bounds == {1: ("\U0010ffff" * 2).encode(), 2: b"\xff\xff"}
    assert df.upper_bounds == {}


def test_truncation_helpers() -> None:
    assert truncate_string_lower("iceberg", 3) == "ice"
    assert truncate_string_upper("iceberg", 3) == "icf"
    assert truncate_string_upper("ice", 3) == "ice"
    assert truncate_string_upper("ab\U0010ffffz", 3) == "ac"
    assert truncate_string_upper("a\ud7ffz", 2) == "a\ue000"
    assert truncate_string_upper("\U0010ffff" * 3, 2) is None
    assert truncate_binary_lower(b"\x01\x02\x03", 2) == b"\x01\x02"
    assert truncate_binary_upper(b"\x01\xff\xff\x05", 3) == b"\x02"
    assert truncate_binary_upper(b"\x01\x02", 3) == b"\x01\x02"
    assert truncate_binary_upper(b"\xff" * 4, 2) is None
    assert str(parse_metrics_mode("Truncate( 8 )")) == "truncate(8)"


def test_row_groups_split_offsets_and_codec(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    rows = [{"id": i, "s": f"value-{i}"} for i in range(5000)]
    props = {"write.parquet.row-group-size-bytes": "20000", "write.parquet.compression-codec": "snappy"}
    path, _, df = _write(tmp_path, schema, rows, props)
    meta = pq.read_metadata(path[len("file://") :])
    assert meta.num_row_groups > 1
    assert df.split_offsets is not None and len(df.split_offsets) == meta.num_row_groups
    assert df.split_offsets[0] == 4 and list(df.split_offsets) == sorted(df.split_offsets)
    assert meta.row_group(0).column(0).compression == "SNAPPY"
    assert df.value_counts == {1: 5000, 2: 5000}
    assert from_bytes(LongType(), df.upper_bounds[1]) == 4999


def test_write_never_overwrites(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()))
    _write(tmp_path, schema, [{"id": 1}])
    with pytest.raises(AlreadyExists):
        _write(tmp_path, schema, [{"id": 2}])


# ---------------------------------------------------------------------------------------------
# reading: column projection


def test_read_by_field_id_after_rename_and_reorder(tmp_path: Path) -> None:
    # the spec's example: written as 1: a int, 2: b string, 3: c double
    written = Schema(
        NestedField(1, "a", IntegerType()),
        NestedField(2, "b", StringType()),
        NestedField(3, "c", DoubleType()),
    )
    path, _, _ = _write(tmp_path, written, [{"a": 1, "b": "x", "c": 0.5}, {"a": 2, "b": "y", "c": 1.5}])
    projected = Schema(
        NestedField(3, "measurement", DoubleType()),
        NestedField(2, "name", StringType()),
        NestedField(4, "a", IntegerType()),
    )
    back = read_parquet_data_file(IO, path, projected)
    assert back.column_names == ["measurement", "name", "a"]
    assert back.to_pylist() == [
        {"measurement": 0.5, "name": "x", "a": None},
        {"measurement": 1.5, "name": "y", "a": None},
    ]


def test_missing_columns_use_initial_default(tmp_path: Path) -> None:
    written = Schema(NestedField(1, "id", LongType(), True))
    path, _, _ = _write(tmp_path, written, [{"id": 1}, {"id": 2}])
    projected = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "level", IntegerType(), True, initial_default=42, write_default=7),
        NestedField(3, "day", DateType(), initial_default=19000),
        NestedField(
            4,
            "point",
            StructType(
                NestedField(5, "x", IntegerType(), initial_default=0), NestedField(6, "y", IntegerType())
            ),
            initial_default={},
        ),
        NestedField(7, "maybe", StructType(NestedField(8, "x", IntegerType(), initial_default=0))),
    )
    back = read_parquet_data_file(IO, path, projected)
    assert back.schema.equals(schema_to_arrow(projected), check_metadata=True)
    row = {"level": 42, "day": dt.date(2022, 1, 8), "point": {"x": 0, "y": None}, "maybe": None}
    assert back.to_pylist() == [{"id": 1} | row, {"id": 2} | row]


def test_missing_required_column_without_default_is_an_error(tmp_path: Path) -> None:
    path, _, _ = _write(tmp_path, Schema(NestedField(1, "id", LongType())), [{"id": 1}])
    with pytest.raises(CorruptMetadata, match="'must'"):
        read_parquet_data_file(IO, path, Schema(NestedField(2, "must", LongType(), True)))


def test_constants_fill_columns_absent_from_the_file(tmp_path: Path) -> None:
    path, _, _ = _write(tmp_path, Schema(NestedField(1, "id", LongType())), [{"id": 1}, {"id": 2}])
    projected = Schema(NestedField(1, "id", LongType()), NestedField(2, "region", StringType()))
    back = read_parquet_data_file(IO, path, projected, constants={2: "eu"})
    assert back.column("region").to_pylist() == ["eu", "eu"]


def test_type_promotions(tmp_path: Path) -> None:
    written = Schema(
        NestedField(1, "i", IntegerType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "d", DecimalType(5, 2)),
        NestedField(4, "day", DateType()),
        NestedField(5, "l", ListType(6, IntegerType())),
    )
    rows = [{"i": 7, "f": 0.25, "d": Decimal("1.25"), "day": dt.date(2020, 1, 2), "l": [1, 2]}]
    path, _, _ = _write(tmp_path, written, rows)
    promoted = Schema(
        NestedField(1, "i", LongType()),
        NestedField(2, "f", DoubleType()),
        NestedField(3, "d", DecimalType(12, 2)),
        NestedField(4, "day", TimestampType()),
        NestedField(5, "l", ListType(6, LongType())),
    )
    back = read_parquet_data_file(IO, path, promoted)
    assert back.schema.equals(schema_to_arrow(promoted), check_metadata=True)
    assert back.to_pylist() == [
        {"i": 7, "f": 0.25, "d": Decimal("1.25"), "day": dt.datetime(2020, 1, 2), "l": [1, 2]}
    ]


def test_nested_fields_resolve_by_id(tmp_path: Path) -> None:
    written = Schema(
        NestedField(
            1, "st", StructType(NestedField(2, "a", IntegerType()), NestedField(3, "b", StringType()))
        ),
        NestedField(4, "m", MapType(5, StringType(), 6, StructType(NestedField(7, "v", IntegerType())))),
        NestedField(
            8,
            "l",
            ListType(
                9, StructType(NestedField(10, "w", IntegerType()), NestedField(11, "gone", IntegerType()))
            ),
        ),
    )
    rows = [
        {"st": {"a": 1, "b": "x"}, "m": [("k", {"v": 5})], "l": [{"w": 1, "gone": 9}, None]},
        {"st": None, "m": None, "l": []},
    ]
    path, _, _ = _write(tmp_path, written, rows)
    projected = Schema(
        NestedField(8, "items", ListType(9, StructType(NestedField(10, "weight", LongType())))),
        NestedField(
            1,
            "rec",
            StructType(
                NestedField(3, "bee", StringType()),
                NestedField(12, "new", IntegerType(), initial_default=7),
                NestedField(2, "ay", LongType()),
            ),
        ),
        NestedField(
            4, "m", MapType(5, StringType(), 6, StructType(NestedField(7, "value_v", IntegerType())))
        ),
    )
    back = read_parquet_data_file(IO, path, projected)
    assert back.schema.equals(schema_to_arrow(projected), check_metadata=True)
    assert back.to_pylist() == [
        {
            "items": [{"weight": 1}, None],
            "rec": {"bee": "x", "new": 7, "ay": 1},
            "m": [("k", {"value_v": 5})],
        },
        {"items": [], "rec": None, "m": None},
    ]


def test_files_without_field_ids_use_name_mapping(tmp_path: Path) -> None:
    local = tmp_path / "imported.parquet"
    pq.write_table(
        pa.table({"old_id": pa.array([1, 2], pa.int32()), "info": pa.array([{"n": "a"}, {"n": "b"}])}), local
    )
    projected = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "info", StructType(NestedField(3, "name", StringType()))),
    )
    mapping = json.dumps(
        [
            {"field-id": 1, "names": ["id", "old_id"]},
            {"field-id": 2, "names": ["info"], "fields": [{"field-id": 3, "names": ["name", "n"]}]},
        ]
    )
    back = read_parquet_data_file(IO, str(local), projected, name_mapping=mapping)
    assert back.to_pylist() == [{"id": 1, "info": {"name": "a"}}, {"id": 2, "info": {"name": "b"}}]
    # without a mapping, names are matched against the projected schema
    by_name = read_parquet_data_file(
        IO, str(local), Schema(NestedField(1, "old_id", LongType()), NestedField(2, "absent", StringType()))
    )
    assert by_name.to_pylist() == [{"old_id": 1, "absent": None}, {"old_id": 2, "absent": None}]


def test_row_filter_and_empty_projection(tmp_path: Path) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    path, _, _ = _write(tmp_path, schema, [{"id": i, "s": str(i)} for i in range(10)])
    back = read_parquet_data_file(IO, path, schema, row_filter_arrow=pc.field("id") >= 7)
    assert back.column("s").to_pylist() == ["7", "8", "9"]
    assert read_parquet_data_file(IO, path, Schema()).num_rows == 10


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"nope\.parquet"):
        read_parquet_data_file(IO, f"file:{tmp_path}/nope.parquet", Schema(NestedField(1, "id", LongType())))


@pytest.mark.parametrize(
    "props",
    [{}, {"write.metadata.metrics.default": "truncate(2)"}, {"write.metadata.metrics.default": "full"}],
)
def test_a_one_row_file_has_the_bounds_of_its_value_twice(tmp_path: Path, props: dict[str, str]) -> None:
    """A one-row file takes its value as both bounds without a min/max pass: the bounds are those of
    a file holding the same row twice (which takes the min/max pass), byte for byte."""
    row = dict(ALL_ROWS[0], f=-0.0, d=0.0)  # signed zeros: bounds are normalised the same way
    _, _, one = _write(tmp_path, ALL_TYPES, [row], props, name="one")
    _, _, two = _write(tmp_path, ALL_TYPES, [row, row], props, name="two")
    assert one.lower_bounds == two.lower_bounds
    assert one.upper_bounds == two.upper_bounds
    assert len(one.lower_bounds or {}) >= 12  # every primitive top-level column has bounds
    nan_row = dict(ALL_ROWS[0], f=float("nan"))
    _, _, nan_one = _write(tmp_path, ALL_TYPES, [nan_row], props, name="nan")
    assert 4 not in (nan_one.lower_bounds or {}) and 4 not in (nan_one.upper_bounds or {})
