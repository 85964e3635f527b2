"""Incremental append scans: ranges by id, ref and timestamp; only appends; bounded batch streaming."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import NotFound, ValidationError
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _rows(start: int, stop: int, tag: str = "x") -> pa.Table:
    return pa.table({"id": pa.array(range(start, stop), pa.int64()), "tag": [tag] * (stop - start)})


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _table(catalog: Catalog, fv: int) -> Table:
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": str(fv)})
    for i in range(4):
        t.append(_rows(10 * i, 10 * i + 10))
    return t


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_range_by_id_is_exclusive_start_inclusive_end(catalog: Catalog, fv: int) -> None:
    t = _table(catalog, fv)
    s = [snap.snapshot_id for snap in t.snapshots()]
    assert _ids(t.scan(start_snapshot_id=s[0]).to_arrow()) == list(range(10, 40))
    assert _ids(t.scan(start_snapshot_id=s[0], snapshot_id=s[2]).to_arrow()) == list(range(10, 30))
    assert _ids(t.scan(start_snapshot_id=s[3]).to_arrow()) == []
    assert _ids(t.scan(start_timestamp=0).to_arrow()) == list(range(40))
    assert t.scan(start_snapshot_id=s[1], snapshot_id=s[2]).count() == 10


@pytest.mark.parametrize("fv", [2, 3, 4])
def test_only_appends_are_read_and_rows_as_appended(catalog: Catalog, fv: int) -> None:
    t = _table(catalog, fv)
    start = t.current_snapshot()
    assert start is not None
    t.delete("id < 5", mode="merge-on-read")  # a delete snapshot adds nothing
    t.append(_rows(100, 105))
    t.overwrite(_rows(200, 202), "id >= 100")  # an overwrite is not an append
    t.delete("id = 101", mode="copy-on-write")
    got = t.scan(start_snapshot_id=start.snapshot_id, columns=("id",)).to_arrow()
    # rows exactly as the append added them, even though later commits removed them
    assert got.column_names == ["id"]
    assert _ids(got) == [100, 101, 102, 103, 104]


def test_range_by_ref_and_timestamp(catalog: Catalog) -> None:
    t = _table(catalog, 3)
    s = t.snapshots()
    t.manage_snapshots().create_tag("v1", s[1].snapshot_id).commit()
    assert _ids(t.scan(start_ref="v1").to_arrow()) == list(range(20, 40))
    cut = s[1].timestamp_ms  # every ancestor committed strictly after it
    expected = [i for k, snap in enumerate(s) if snap.timestamp_ms > cut for i in range(10 * k, 10 * k + 10)]
    assert _ids(t.scan(start_timestamp=cut).to_arrow()) == expected
    assert _ids(t.scan(start_timestamp=s[3].timestamp_ms).to_arrow()) == []


def test_bad_ranges_are_clear_errors(catalog: Catalog) -> None:
    t = _table(catalog, 2)
    s = t.snapshots()
    with pytest.raises(ValidationError, match="not an ancestor"):
        t.scan(start_snapshot_id=s[3].snapshot_id, snapshot_id=s[1].snapshot_id).to_arrow()
    with pytest.raises(NotFound):
        t.scan(start_snapshot_id=12345).to_arrow()
    with pytest.raises(ValidationError, match="once"):
        t.scan(start_snapshot_id=s[0].snapshot_id, start_ref="main").to_arrow()


@pytest.mark.parametrize("fv", [2, 4])
def test_batch_reader_streams_every_scan(catalog: Catalog, fv: int) -> None:
    t = _table(catalog, fv)
    t.delete("id in (0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39)", mode="merge-on-read")
    reader = t.scan(filter="id < 35", columns=("tag", "id")).to_arrow_batch_reader(batch_size=4)
    assert reader.schema.names == ["tag", "id"]
    batches = list(reader)
    assert all(b.num_rows <= 4 for b in batches)
    expected = [i for i in range(35) if i % 3]
    assert sorted(pa.Table.from_batches(batches).column("id").to_pylist()) == expected
    first = t.snapshots()[0].snapshot_id
    incremental = t.scan(start_snapshot_id=first).to_arrow_batch_reader()
    assert _ids(incremental.read_all()) == list(range(10, 40))
    limited = t.scan(limit=7).to_arrow_batch_reader(batch_size=3).read_all()
    assert limited.num_rows == 7


def test_batch_reader_memory_is_bounded_by_files_not_table(catalog: Catalog) -> None:
    """Twenty files of ~0.8 MB each: streaming never holds more than a few of them."""
    t = catalog.create_table("db.big", SCHEMA, properties={"format-version": "3"})
    for i in range(20):
        t.append(
            pa.table({"id": pa.array(range(i * 50_000, (i + 1) * 50_000), pa.int64()), "tag": ["y"] * 50_000})
        )
    total = t.scan().to_arrow().nbytes
    start = pa.total_allocated_bytes()
    peak = 0
    rows = 0
    for batch in t.scan().to_arrow_batch_reader(prefetch=1):
        rows += batch.num_rows
        peak = max(peak, pa.total_allocated_bytes() - start)
    assert rows == 1_000_000
    assert peak < total / 4, (peak, total)
