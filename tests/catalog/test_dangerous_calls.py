"""Dangerous calls are refused and change nothing (issue 13, item 5).

Empty filters, reserved snapshot summary keys, bad branch and tag names, identifiers with invisible
or confusable characters, and redundant partition specs at table creation.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import ValidationError
from icefloe.io.fileio import local_path
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from icefloe.spec.types import LongType, NestedField, StringType, StructType, TimestampType
from icefloe.table.table import Table
from icefloe.tree.summary import RESERVED_SUMMARY_KEYS

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "name", StringType(), False),
    NestedField(3, "ts", TimestampType(), False),
)


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "ts": pa.array([1_700_000_000_000_000 + i for i in ids], pa.timestamp("us")),
        }
    )


@pytest.fixture
def table(catalog: SqlCatalog) -> Table:
    catalog.create_namespace("ns")
    created = catalog.create_table("ns.t", SCHEMA, properties={"format-version": "3"})
    created.append(_rows([1, 2, 3]))
    return created


def _files(table: Table) -> set[Path]:
    return {p for p in Path(local_path(table.location()) or "").rglob("*") if p.is_file()}


def _ids(table: Table) -> list[int]:
    fresh = table.commit_target.catalog.load_table(table.identifier)  # type: ignore[attr-defined]
    return sorted(fresh.to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", None])
def test_blank_filters_are_refused_and_change_nothing(table: Table, blank: str | None) -> None:
    files, location = _files(table), table.metadata_location
    with pytest.raises(ValidationError, match="pass True or 'true' to delete every row"):
        table.delete(blank)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="pass True or 'true' to update every row"):
        table.update({"name": "x"}, blank)
    if blank is not None:  # overwrite without a filter replaces the table, on purpose
        with pytest.raises(ValidationError, match="the filter is empty"):
            table.overwrite(_rows([9]), blank)
    assert _files(table) == files
    assert table.commit_target.catalog.load_table(table.identifier).metadata_location == location
    assert _ids(table) == [1, 2, 3]


def test_everything_must_be_explicit(table: Table) -> None:
    assert table.update({"name": "x"}, "true").updated_rows == 3
    assert table.delete(True).deleted_rows == 3
    assert _ids(table) == []
    table.append(_rows([4, 5]))
    table.overwrite(_rows([6]))  # no filter: the whole table
    assert _ids(table) == [6]


@pytest.mark.parametrize(
    "key",
    [
        "operation",
        "added-records",
        "total-records",
        "added-data-files",
        "changed-partition-count",
        "total-delete-files",
        "partitions.ts_day=1",
    ],
)
def test_reserved_summary_keys_cannot_be_overridden(table: Table, key: str) -> None:
    files, location = _files(table), table.metadata_location
    with pytest.raises(ValidationError, match=f"snapshot property {key!r} is reserved"):
        table.append(_rows([7]), snapshot_properties={key: "1"})
    with pytest.raises(ValidationError, match="is reserved"):
        table.delete("id = 1", snapshot_properties={key: "1"})
    assert _files(table) == files  # the data file written for the append was removed again
    assert table.commit_target.catalog.load_table(table.identifier).metadata_location == location
    assert _ids(table) == [1, 2, 3]


def test_summary_writer_keys_are_all_reserved(table: Table) -> None:
    table.delete("id = 1", mode="merge-on-read")
    table.append(_rows([8]), snapshot_properties={"app.job": "nightly"})
    for snapshot in table.snapshots():
        written = set(snapshot.summary) - {"app.job"}
        assert written <= RESERVED_SUMMARY_KEYS
    assert table.current_snapshot().summary["app.job"] == "nightly"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "name", ["", "  ", " audit", "a b", "zero\u200bwidth", "bidi\u202e", "/", "a//b", "x.lock"]
)
def test_bad_branch_and_tag_names_are_refused(table: Table, name: str) -> None:
    snapshot_id = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    refs = table.refs()
    with pytest.raises(ValidationError, match="invalid branch or tag name"):
        table.manage_snapshots().create_branch(name)
    with pytest.raises(ValidationError, match="invalid branch or tag name"):
        table.manage_snapshots().create_tag(name, snapshot_id)
    table.manage_snapshots().create_branch("audit").commit()
    with pytest.raises(ValidationError, match="invalid branch or tag name"):
        table.manage_snapshots().rename_branch("audit", name)
    with pytest.raises(ValidationError, match=r"invalid branch name|non-empty branch name"):
        table.append(_rows([9]), branch=name)  # a commit that would create the branch
    assert set(table.commit_target.catalog.load_table(table.identifier).refs()) == set(refs) | {"audit"}


def test_good_branch_names_work(table: Table) -> None:
    table.manage_snapshots().create_branch("release/2024-06").commit()
    table.append(_rows([10]), branch="wap-1")
    assert set(table.refs()) == {"main", "release/2024-06", "wap-1"}


@pytest.mark.parametrize(
    "identifier",
    [
        ("ns", "t\u200b"),  # zero-width space
        ("ns", "\u200dt"),  # zero-width joiner
        ("ns", "admin\u202etxt"),  # right-to-left override
        ("ns", "a\u2066b"),  # bidi isolate
        ("ns", "\ufefft"),  # byte order mark
        ("ns", " t"),
        ("ns", "t "),
        ("ns ", "t"),
        ("ns", "a\u00a0b"),  # no-break space looks like a space
        ("ns", "e\u0301"),  # decomposed é (not NFC)
        ("ns", "a\ue000"),  # private use
    ],
)
def test_invisible_or_confusable_identifiers_are_refused(
    catalog: SqlCatalog, identifier: tuple[str, str]
) -> None:
    catalog.create_namespace("ns")
    with pytest.raises(ValidationError, match="invalid table identifier"):
        catalog.create_table(identifier, SCHEMA)
    assert catalog.list_tables("ns") == []
    bad_part = identifier[1] if identifier[0] == "ns" else identifier[0]
    with pytest.raises(ValidationError, match="invalid namespace"):
        catalog.create_namespace((bad_part,))


def test_plain_unicode_identifiers_still_work(catalog: SqlCatalog) -> None:
    catalog.create_namespace("ns")
    catalog.create_table(("ns", "caf\u00e9 orders"), SCHEMA)
    assert catalog.list_tables("ns") == [("ns", "caf\u00e9 orders")]


CONFUSABLE_COLUMN_NAMES = ["id ", " id", "i\u200bd", "name\u202e", "\ufeffts", "a\tb", "e\u0301"]


@pytest.mark.parametrize("bad", CONFUSABLE_COLUMN_NAMES)
def test_invisible_or_confusable_column_names_are_refused(catalog: SqlCatalog, bad: str) -> None:
    catalog.create_namespace("ns")
    top = Schema(NestedField(1, "id", LongType(), True), NestedField(2, bad, StringType(), False))
    with pytest.raises(ValidationError, match=r"invalid column name .*(whitespace|invisible|control|NFC)"):
        catalog.create_table("ns.t", top)
    nested = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "s", StructType(NestedField(3, bad, StringType(), False)), False),
    )
    with pytest.raises(ValidationError, match=r"invalid column name 's\.") as err:
        catalog.create_table("ns.t", nested)
    assert repr(bad)[1:-1] in str(err.value)
    assert not catalog.table_exists("ns.t")
    table = catalog.create_table("ns.t", SCHEMA)
    with pytest.raises(ValidationError, match="invalid column name"):
        table.update_schema().add_column(bad, StringType()).commit()
    with pytest.raises(ValidationError, match="cannot rename column 'name'"):
        table.update_schema().rename_column("name", bad).commit()
    with pytest.raises(ValidationError, match="invalid column name"):
        table.update_schema().union_by_name(Schema(NestedField(9, bad, StringType(), False))).commit()
    assert catalog.load_table("ns.t").schema() == SCHEMA


def test_plain_unicode_column_names_still_work(catalog: SqlCatalog) -> None:
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", SCHEMA)
    table.update_schema().add_column("caf\u00e9 total", StringType()).rename_column("name", "na me").commit()
    table.append(pa.table({"id": pa.array([1], pa.int64()), "na me": ["x"], "caf\u00e9 total": ["y"]}))
    assert catalog.load_table("ns.t").to_arrow().select(["na me", "caf\u00e9 total"]).to_pylist() == [
        {"na me": "x", "caf\u00e9 total": "y"}
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (MonthTransform(), HourTransform()),
        (YearTransform(), DayTransform()),
        (DayTransform(), DayTransform()),
        (HourTransform(), YearTransform()),
    ],
)
@pytest.mark.sql_catalog_only  # lists the SQL catalog's warehouse directory
def test_create_table_refuses_redundant_time_partitions(
    catalog: SqlCatalog, first: object, second: object
) -> None:
    catalog.create_namespace("ns")
    spec = PartitionSpec(
        PartitionField(3, 1000, first, "a"),  # type: ignore[arg-type]
        PartitionField(3, 1001, second, "b"),  # type: ignore[arg-type]
    )
    with pytest.raises(ValidationError, match=r"redundant partition fields 'a' .*and 'b'"):
        catalog.create_table("ns.t", SCHEMA, partition_spec=spec)
    assert not catalog.table_exists("ns.t")
    assert not list(Path(local_path(catalog.warehouse or "") or "").rglob("*.json"))


def test_create_table_refuses_a_field_twice_and_keeps_useful_pairs(catalog: SqlCatalog) -> None:
    catalog.create_namespace("ns")
    twice = PartitionSpec(
        PartitionField(1, 1000, TruncateTransform(10), "a"),
        PartitionField(1, 1001, TruncateTransform(10), "b"),
    )
    with pytest.raises(ValidationError, match="both are truncate\\[10\\] of column 'id'"):
        catalog.create_table("ns.t", SCHEMA, partition_spec=twice)
    useful = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "id"),
        PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
        PartitionField(3, 1002, DayTransform(), "ts_day"),
    )
    assert len(catalog.create_table("ns.t", SCHEMA, partition_spec=useful).spec().fields) == 3


def test_update_spec_applies_the_same_rule(catalog: SqlCatalog) -> None:
    catalog.create_namespace("ns")
    spec = PartitionSpec(PartitionField(3, 1000, MonthTransform(), "ts_month"))
    table = catalog.create_table("ns.t", SCHEMA, partition_spec=spec)
    with pytest.raises(ValidationError, match="redundant partition fields"):
        table.update_spec().add_field("ts", "hour")
