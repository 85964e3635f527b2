"""Hostile or careless input raises an IcefloeError (never a raw Python or Arrow error), changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import ValidationError
from icefloe.expressions.parser import MAX_NESTING, parse
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))
BY_NAME = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "name"))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, partition_spec=BY_NAME)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    return t


def _rows(table: Table) -> list[tuple[int, str]]:
    got = table.refresh().scan().to_arrow()
    return sorted(zip(got["id"].to_pylist(), got["name"].to_pylist(), strict=True))


@pytest.mark.parametrize(
    "text",
    [
        "(" * 5000 + "id = 1" + ")" * 5000,
        "not " * 5000 + "id = 1",
        "(" * (MAX_NESTING + 1) + "id = 1" + ")" * (MAX_NESTING + 1),
    ],
)
def test_deeply_nested_filters_are_refused_clearly(table: Table, text: str) -> None:
    with pytest.raises(ValidationError, match=f"nested more than {MAX_NESTING} levels"):
        table.scan(filter=text).to_arrow()


def test_nesting_up_to_the_limit_and_long_chains_still_work(table: Table) -> None:
    nested = "(" * MAX_NESTING + "id = 1" + ")" * MAX_NESTING
    assert table.scan(filter=nested).to_arrow()["id"].to_pylist() == [1]
    chain = " or ".join(f"id = {i}" for i in range(2, 5000))  # balanced, not 5000 levels deep
    assert table.scan(filter=chain).to_arrow()["id"].to_pylist() == [2]
    both = " and ".join(["id >= 1"] * 3000)
    assert sorted(table.scan(filter=both).to_arrow()["id"].to_pylist()) == [1, 2]
    assert repr(parse("a = 1 or b = 2 or c = 3")) == repr(parse("(a = 1 or b = 2) or c = 3"))


def test_an_update_to_a_value_beyond_the_type_names_the_column(table: Table) -> None:
    with pytest.raises(ValidationError, match="'id'"):
        table.update({"id": 2**70}, "id = 1")
    assert _rows(table) == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("rows", [None, {"id": [3]}, [1, 2]])
def test_appending_something_that_is_not_arrow_is_refused(table: Table, rows: Any) -> None:
    with pytest.raises(ValidationError, match=r"pyarrow\.Table"):
        table.append(rows)
    assert _rows(table) == [(1, "a"), (2, "b")]


def test_a_record_batch_is_appended_like_a_table(table: Table) -> None:
    table.append(pa.RecordBatch.from_pydict({"id": pa.array([3], pa.int64()), "name": ["c"]}))
    assert _rows(table) == [(1, "a"), (2, "b"), (3, "c")]


def test_partition_values_longer_than_a_file_name_are_written_and_read(table: Table) -> None:
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"  # same 200-character prefix, different values
    table.append(pa.table({"id": pa.array([3, 4], pa.int64()), "name": [long_a, long_b]}))
    assert _rows(table) == [(1, "a"), (2, "b"), (3, long_a), (4, long_b)]
    got = table.scan(filter=f"name = '{long_b}'").to_arrow()
    assert got["id"].to_pylist() == [4]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.target-file-size-bytes", "0"),
        ("write.target-file-size-bytes", "abc"),
        ("commit.retry.num-retries", "x"),
        ("write.parquet.row-group-size-bytes", "-1"),
        ("write.metadata.previous-versions-max", "0"),
        ("commit.manifest.target-size-bytes", "0"),
        ("write.parquet.compression-level", "high"),
    ],
)
def test_bad_numeric_properties_are_refused_when_set(
    catalog: Catalog, table: Table, key: str, value: str
) -> None:
    with pytest.raises(ValidationError, match=key):
        table.set_properties(**{key: value})
    assert key not in table.refresh().properties
    with pytest.raises(ValidationError, match=key):
        catalog.create_table("db.other", SCHEMA, properties={key: value})
    table.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))
    assert len(_rows(table)) == 3


def test_a_bad_numeric_property_stored_by_another_writer_is_a_validation_error(table: Table) -> None:
    bad = table.metadata.with_changes(properties={"write.target-file-size-bytes": "0"})
    with pytest.raises(ValidationError, match=r"write\.target-file-size-bytes"):
        bad.int_property("write.target-file-size-bytes", 1)
