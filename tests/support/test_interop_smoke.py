"""Smoke tests of the interop readers on small tables written by PyIceberg (v1, v2, v3).

Every table: a long/string/timestamptz/date/decimal/double/uuid schema partitioned by one transform
(or none), two appends, a copy-on-write delete, a schema change (add column) and a third append,
a tag on snapshot 2 and a branch on snapshot 3. Each reader must return exactly the rows written,
at every snapshot, through refs, with a projection and with a row filter.

PyIceberg 0.12 cannot write format v3 ("Writing V3 is not yet supported"), so the v3 table is the
v2 table upgraded the way the spec allows: the same metadata with ``format-version: 3`` and
``next-row-id`` (snapshots written before an upgrade carry no ``first-row-id``). Deletion vectors
and row lineage are covered by the acceptance corpus (``test_fixture_harness.py``,
``python -m tests.support.reader_matrix``).

``interop.SUPPORT`` must tell the truth: a feature it marks False must fail here, one it marks
supported must pass.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.support.filter_expr import filter_table
from tests.support.interop import (
    READERS,
    SUPPORT,
    as_local_path,
    assert_same_rows,
    load_metadata_json,
)

TRANSFORMS = ("unpartitioned", "identity", "bucket", "day", "truncate")
FORMAT_VERSIONS = (1, 2, 3)
BASE_COLUMNS = ["id", "name", "cat", "ts", "d", "amount", "score", "u"]
ALL_COLUMNS = [*BASE_COLUMNS, "extra"]
UTC = dt.UTC


def _arrow_schema(with_extra: bool) -> pa.Schema:
    fields = [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("cat", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("d", pa.date32()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("score", pa.float64()),
        pa.field("u", pa.uuid()),
    ]
    if with_extra:
        fields.append(pa.field("extra", pa.string()))
    return pa.schema(fields)


def _rows(ids: range, with_extra: bool) -> list[dict[str, Any]]:
    out = []
    for i in ids:
        row: dict[str, Any] = {
            "id": i,
            "name": None if i % 7 == 5 else f"name-{i:03d}",
            "cat": ["alpha", "beta", "gamma"][i % 3] if i % 11 != 4 else None,
            "ts": dt.datetime(2024, 3, 1 + i % 5, i % 24, 30, tzinfo=UTC),
            "d": dt.date(2023, 1 + i % 12, 1 + i % 28),
            "amount": decimal.Decimal(i * 125) / 100 - 5,
            "score": float("nan") if i == 14 else i / 4,
            "u": uuid.UUID(int=i * 7919 + 1).bytes,
        }
        if with_extra:
            row["extra"] = None if i % 2 else f"x{i}"
        out.append(row)
    return out


def _table(rows: list[dict[str, Any]], with_extra: bool) -> pa.Table:
    schema = _arrow_schema(with_extra)
    return pa.Table.from_pylist(
        [{**r, "u": r["u"]} for r in rows],
        schema=pa.schema([f if f.name != "u" else pa.field("u", pa.binary(16)) for f in schema]),
    ).cast(schema)


def _iceberg_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DateType,
        DecimalType,
        DoubleType,
        LongType,
        NestedField,
        StringType,
        TimestamptzType,
        UUIDType,
    )

    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "cat", StringType(), required=False),
        NestedField(4, "ts", TimestamptzType(), required=False),
        NestedField(5, "d", DateType(), required=False),
        NestedField(6, "amount", DecimalType(10, 2), required=False),
        NestedField(7, "score", DoubleType(), required=False),
        NestedField(8, "u", UUIDType(), required=False),
    )


def _spec(transform: str) -> Any:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, TruncateTransform

    fields = {
        "unpartitioned": [],
        "identity": [PartitionField(3, 1000, IdentityTransform(), "cat")],
        "bucket": [PartitionField(1, 1000, BucketTransform(4), "id_bucket")],
        "day": [PartitionField(4, 1000, DayTransform(), "ts_day")],
        "truncate": [PartitionField(2, 1000, TruncateTransform(6), "name_trunc")],
    }[transform]
    return PartitionSpec(*fields)


class SmokeTable:
    """A written table and what each of its snapshots holds."""

    def __init__(self, metadata_location: str, snapshots: list[int], states: list[pa.Table]) -> None:
        self.metadata_location = metadata_location
        self.snapshots = snapshots
        self.states = states  # expected rows per snapshot (snapshot schema)


def _upgrade_to_v3(metadata_location: str, directory: Path) -> str:
    """A v3 copy of a v2 table's metadata (spec upgrade: format-version 3 plus next-row-id)."""
    metadata = load_metadata_json(metadata_location)
    assert metadata["format-version"] == 2
    metadata["format-version"] = 3
    metadata["next-row-id"] = 0
    path = directory / "99999-upgraded-v3.metadata.json"
    path.write_text(json.dumps(metadata), encoding="utf-8")
    return path.as_uri()


def _write_table(root: Path, format_version: int, transform: str) -> SmokeTable:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import StringType

    catalog = SqlCatalog("smoke", uri=f"sqlite:///{root}/catalog.db", warehouse=(root / "warehouse").as_uri())
    catalog.create_namespace("ns")
    write_version = min(format_version, 2)
    table = catalog.create_table(
        f"ns.t_{transform}",
        _iceberg_schema(),
        partition_spec=_spec(transform),
        properties={"format-version": str(write_version)},
    )
    rows: list[dict[str, Any]] = []
    states: list[pa.Table] = []
    snapshots: list[int] = []
    for batch in (range(0, 12), range(12, 24)):
        new = _rows(batch, with_extra=False)
        table.append(_table(new, with_extra=False))
        rows += new
        states.append(_table(rows, with_extra=False))
        snapshots.append(table.current_snapshot().snapshot_id)
    table.delete("id in (1, 4, 13, 22)")  # copy-on-write: may take two snapshots (delete + overwrite)
    rows = [r for r in rows if r["id"] not in (1, 4, 13, 22)]
    states.append(_table(rows, with_extra=False))
    snapshots.append(table.current_snapshot().snapshot_id)
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    table = catalog.load_table(f"ns.t_{transform}")
    rows = [{**r, "extra": None} for r in rows]
    new = _rows(range(24, 30), with_extra=True)
    table.append(_table(new, with_extra=True))
    rows += new
    states.append(_table(rows, with_extra=True))
    snapshots.append(table.current_snapshot().snapshot_id)
    table.manage_snapshots().create_tag(snapshots[1], "t_two").create_branch(snapshots[2], "b_three").commit()
    table = catalog.load_table(f"ns.t_{transform}")
    location = table.metadata_location
    if format_version == 3:
        location = _upgrade_to_v3(location, Path(as_local_path(location)).parent)
    assert load_metadata_json(location)["format-version"] == format_version
    return SmokeTable(location, snapshots, states)


@pytest.fixture(scope="module")
def smoke_tables(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, str], SmokeTable]:
    """Lazily written tables keyed by (format version, transform)."""
    cache: dict[tuple[int, str], SmokeTable] = {}

    def get(format_version: int, transform: str) -> SmokeTable:
        key = (format_version, transform)
        if key not in cache:
            cache[key] = _write_table(tmp_path_factory.mktemp(f"v{format_version}_{transform}"), *key)
        return cache[key]

    return get


def _read(reader: str, location: str, **kwargs: Any) -> pa.Table:
    return READERS[reader](location, **kwargs)


def _check_support(
    request: pytest.FixtureRequest, reader: str, features: list[str], body: Callable[[], None]
) -> None:
    """Run ``body``: it must pass where SUPPORT marks every feature supported and fail elsewhere
    (a strict xfail, so a reader that gains the feature fails the test until SUPPORT is updated)."""
    unsupported = [f for f in features if SUPPORT[reader].get(f) is False]
    if unsupported:
        reason = f"not implemented: SUPPORT[{reader!r}] marks {unsupported} unsupported"
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    body()


def _uri_or_path(location: str, use_path: bool) -> str:
    return as_local_path(location) if use_path else location


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_current_snapshot_and_time_travel(
    smoke_tables: Callable[[int, str], SmokeTable],
    reader: str,
    format_version: int,
    transform: str,
    request: pytest.FixtureRequest,
) -> None:
    """Every snapshot reads back exactly the rows written, with that snapshot's schema."""
    features = [f"v{format_version}", "snapshot_id"] + ([transform] if transform != "unpartitioned" else [])

    def body() -> None:
        smoke = smoke_tables(format_version, transform)
        # the current state, by plain path for every other format version to cover both spellings
        current = _read(reader, _uri_or_path(smoke.metadata_location, format_version == 2))
        assert current.column_names == ALL_COLUMNS
        assert_same_rows(current, smoke.states[-1], ALL_COLUMNS, labels=(reader, "written"))
        for snapshot_id, expected in zip(smoke.snapshots, smoke.states, strict=True):
            got = _read(reader, smoke.metadata_location, snapshot_id=snapshot_id)
            assert got.column_names == expected.column_names, f"snapshot {snapshot_id}"
            assert_same_rows(got, expected, expected.column_names, labels=(reader, f"snapshot {snapshot_id}"))

    _check_support(request, reader, features, body)


@pytest.mark.parametrize("format_version", FORMAT_VERSIONS)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_refs(
    smoke_tables: Callable[[int, str], SmokeTable],
    reader: str,
    format_version: int,
    request: pytest.FixtureRequest,
) -> None:
    """A tag and a branch read their snapshot; ``main`` is the current state."""

    def body() -> None:
        smoke = smoke_tables(format_version, "identity")
        tag = _read(reader, smoke.metadata_location, ref="t_two")
        assert_same_rows(tag, smoke.states[1], BASE_COLUMNS, labels=(reader, "tag t_two"))
        branch = _read(reader, smoke.metadata_location, ref="b_three", columns=BASE_COLUMNS)
        assert_same_rows(branch, smoke.states[2], BASE_COLUMNS, labels=(reader, "branch b_three"))
        main = _read(reader, smoke.metadata_location, ref="main")
        assert_same_rows(main, smoke.states[3], ALL_COLUMNS, labels=(reader, "main"))

    _check_support(request, reader, [f"v{format_version}", "ref"], body)


FILTERS: list[dict[str, Any]] = [
    {"op": "=", "col": "cat", "value": "beta"},
    {"and": [{"op": ">=", "col": "id", "value": 5}, {"op": "<", "col": "id", "value": 20}]},
    {"or": [{"op": "is_null", "col": "name"}, {"op": ">", "col": "amount", "value": 20}]},
    {"op": "in", "col": "id", "values": [0, 3, 5, 13, 27, 99]},
    {"op": "not_in", "col": "cat", "values": ["alpha"]},
    {"not": {"op": "=", "col": "cat", "value": "gamma"}},
    {"op": ">=", "col": "ts", "value": "2024-03-03T00:00:00+00:00"},
    {"op": "<", "col": "d", "value": "2023-06-15"},
    {"op": "not_null", "col": "extra"},
    {"op": "!=", "col": "name", "value": "name-010"},
]


@pytest.mark.parametrize("row_filter", FILTERS, ids=[json.dumps(f) for f in FILTERS])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_filter_and_projection(
    smoke_tables: Callable[[int, str], SmokeTable],
    reader: str,
    row_filter: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    """A filter_expr gives the rows the Arrow evaluation of it gives; columns come in the asked order."""
    columns = ["u", "id", "score", "cat"]

    def body() -> None:
        smoke = smoke_tables(2, "day")
        got = _read(reader, smoke.metadata_location, columns=columns, row_filter=row_filter)
        assert got.column_names == columns
        expected = filter_table(smoke.states[-1], row_filter)
        assert expected.num_rows > 0
        assert_same_rows(got, expected, columns, labels=(reader, "Arrow-filtered"))

    _check_support(request, reader, ["v2", "day", "row_filter"], body)


def test_support_matrix_shape() -> None:
    """SUPPORT names every reader and says something about each feature the smoke tests use."""
    keys = {"v1", "v2", "v3", "identity", "bucket", "day", "truncate", "snapshot_id", "ref", "row_filter"}
    assert set(SUPPORT) == set(READERS)
    for reader, entry in SUPPORT.items():
        assert keys <= set(entry), f"{reader} lacks {keys - set(entry)}"
