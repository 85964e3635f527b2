"""The corpus fingerprint: canonical cell texts, order independence, and the corpus' own rows."""

from __future__ import annotations

import json
from decimal import Decimal

import pyarrow as pa
import pytest

from tests.support.fingerprint import NULL_TEXT, canonical_rows, fingerprint, fingerprint_of_rows
from tests.support.fixtures import case_by_name, corpus_dir


def test_scalar_texts() -> None:
    table = pa.table(
        {
            "b": pa.array([True, None]),
            "f32": pa.array([1.1, float("-inf")], pa.float32()),
            "f64": pa.array([float("nan"), -0.0]),
            "dec": pa.array([Decimal("-0.00"), Decimal("7.5")], pa.decimal128(9, 2)),
            "date": pa.array([-800_000, 0], pa.date32()),
            "time": pa.array([1, 3_600_000_000_000], pa.time64("ns")),
            "ts": pa.array([-1, 1_000], pa.timestamp("us")),
            "tstz": pa.array([1, None], pa.timestamp("ns", tz="Europe/Paris")),
            "bin": pa.array([b"\x00\xab", b""]),
        }
    )
    assert canonical_rows(table) == [
        [
            "true",
            "1.100000023841858",
            "NaN",
            "0.00",
            "-0221-09-04",  # 400-year Gregorian cycles: day -800000 + 146097 is 0179-09-04
            "00:00:00.000000001",
            "1969-12-31T23:59:59.999999",
            "1970-01-01T00:00:00.000000001+00:00",
            "00ab",
        ],
        [
            NULL_TEXT,
            "-Infinity",
            "-0.0",
            "7.50",
            "1970-01-01",
            "01:00:00.000000",
            "1970-01-01T00:00:00.001000",
            NULL_TEXT,
            "",
        ],
    ]


def test_nested_values_are_json_with_text_leaves() -> None:
    table = pa.table(
        {
            "s": pa.array([{"z": 1, "a": None}, None], pa.struct([("z", pa.int32()), ("a", pa.string())])),
            "l": pa.array([[1, None], []], pa.list_(pa.int64())),
            "m": pa.array([[("k", 2), ("a", 1)], None], pa.map_(pa.string(), pa.int8())),
        }
    )
    assert canonical_rows(table) == [
        ['{"a":null,"z":"1"}', '["1",null]', '[["a","1"],["k","2"]]'],
        [NULL_TEXT, "[]", NULL_TEXT],
    ]


def test_uuid_columns_and_extension() -> None:
    raw = bytes(range(16))
    table = pa.table({"u": pa.array([raw], pa.binary(16))})
    assert canonical_rows(table, uuid_columns=["u"]) == [["00010203-0405-0607-0809-0a0b0c0d0e0f"]]
    assert canonical_rows(table) == [[raw.hex()]]


def test_order_free_multiset_hash() -> None:
    table = pa.table({"a": [1, 2, 2], "b": ["x", "y", "y"]})
    shuffled = table.take([2, 0, 1])
    assert fingerprint(table) == fingerprint(shuffled)
    assert fingerprint(table)["row_count"] == 3
    assert fingerprint(table) != fingerprint(table.slice(0, 2))
    assert fingerprint(table.slice(0, 0)) == {"row_count": 0, "fingerprint": "0" * 32}
    assert fingerprint_of_rows([["1", "x"]]) == fingerprint(table.slice(0, 1))["fingerprint"]


@pytest.mark.parametrize("case_name", ["p07_primitive_types", "p08_nested_types", "p10a_pyiceberg_v2"])
def test_canonical_rows_match_the_corpus_jsonl(case_name: str) -> None:
    """The rendering reproduces the corpus' canonical rows for every type it holds, cell by cell."""
    import pyarrow.parquet as pq

    case = case_by_name(case_name)
    for check in case["checks"]:
        folder = corpus_dir() / case_name
        lines = (folder / check["expected_rows"]).read_text(encoding="utf-8").splitlines()
        assert json.loads(lines[0]) == check["columns"]
        expected = sorted(json.loads(line) for line in lines[1:])
        got = canonical_rows(pq.read_table(folder / check["expected_parquet"]), check["columns"])
        assert sorted(got) == expected
