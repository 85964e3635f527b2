"""Stream offsets and admission control, planned without Spark (the driver half of the stream source).

Cross-check with Iceberg-on-Spark (SparkMicroBatchStream) for the options both have:
- start: Java starts from the oldest ancestor by default (reading its whole state) and
  ``stream-from-timestamp`` starts at the first snapshot committed at or after it: same here.
- ``streaming-skip-delete-snapshots`` / ``streaming-skip-overwrite-snapshots``: same names accepted,
  same default (fail with a message naming the option).
- ``streaming-max-files-per-micro-batch`` / ``streaming-max-rows-per-micro-batch``: same (a batch
  always takes at least one file). Deliberate differences: icefloe reads appended files with the
  deletes of their own snapshot applied (Java ignores deletes), accepts ``start-snapshot-id``
  (exclusive, like batch incremental reads) and can stream the changelog instead of failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import ValidationError
from icefloe.maintenance.rewrite_data_files import rewrite_data_files
from icefloe.scan.reader import ReadRequest, read_task
from icefloe.spark.stream_planner import (
    DEFAULT_OPEN_FILE_COST,
    DEFAULT_SPLIT_SIZE,
    END,
    StreamOptions,
    StreamPlanner,
    Unit,
    group_units,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField
from icefloe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "part", LongType(), True))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))


@pytest.fixture
def table(tmp_path: Path) -> Table:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat.create_table("db.t", SCHEMA, SPEC, properties={"format-version": "3"})


def _append(t: Table, start: int, n: int = 4, files: int = 1) -> None:
    """One snapshot of ``files`` files (one per partition) of ``n`` rows each."""
    ids = list(range(start, start + n * files))
    parts = [(i - start) // n for i in ids]
    t.append(pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array(parts, pa.int64())}))


def _planner(t: Table, **opts: str) -> StreamPlanner:
    def load() -> tuple[Any, Any]:
        t.refresh()
        return t.io, t.metadata

    return StreamPlanner(load, StreamOptions.parse(opts), SCHEMA)


def _ids(t: Table, planner: StreamPlanner, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    request = ReadRequest(SCHEMA, SCHEMA)
    out: list[int] = []
    for unit in planner.units_between(start, end):
        assert unit.task is not None
        out += read_task(t.io, unit.task, request).column("id").to_pylist()
    return sorted(out)


def _flat(batches: list[list[int]]) -> list[int]:
    return sorted(i for batch in batches for i in batch)


def _drain(t: Table, planner: StreamPlanner, start: dict[str, Any], limited: bool = True) -> list[list[int]]:
    batches: list[list[int]] = []
    while True:
        end = planner.latest_offset(start, limited)
        if end == start:
            return batches
        batches.append(_ids(t, planner, start, end))
        start = end


def test_earliest_reads_every_append_once_in_bounded_batches(table: Table) -> None:
    for i in range(3):
        _append(table, i * 100, files=2)
    planner = _planner(table, **{"max-files-per-trigger": "3"})
    start = planner.initial_offset()
    batches = _drain(table, planner, start)
    assert [len(b) for b in batches] == [12, 12]  # 6 files of 4 rows, at most 3 files a batch
    assert _flat(batches) == sorted(i * 100 + k for i in range(3) for k in range(8))
    # a restart from any recorded offset reads exactly the rest
    middle = planner.latest_offset(start, True)
    assert middle["position"] not in (0, END)
    assert _ids(table, planner, middle, planner.latest_offset(middle, False)) == _flat(batches)[12:]


def test_max_records_admits_whole_files(table: Table) -> None:
    for i in range(4):
        _append(table, i * 100, n=5)
    planner = _planner(table, **{"max-records-per-trigger": "7"})
    assert [len(b) for b in _drain(table, planner, planner.initial_offset())] == [5, 5, 5, 5]
    assert [len(b) for b in _drain(table, planner, planner.initial_offset(), limited=False)] == [20]


def test_starting_points(table: Table) -> None:
    _append(table, 0)
    _append(table, 100)
    first, second = (s.snapshot_id for s in table.snapshots())
    latest = _planner(table, **{"starting-offsets": "latest"})
    assert _drain(table, latest, latest.initial_offset()) == []
    by_id = _planner(table, **{"start-snapshot-id": str(first)})
    assert _drain(table, by_id, by_id.initial_offset()) == [[100, 101, 102, 103]]
    ts = table.snapshot_by_id(second).timestamp_ms
    by_time = _planner(table, **{"stream-from-timestamp": str(ts)})
    same_ms = table.snapshot_by_id(first).timestamp_ms == ts  # then both are "at or after" it
    expected = [0, 1, 2, 3, 100, 101, 102, 103] if same_ms else [100, 101, 102, 103]
    assert _flat(_drain(table, by_time, by_time.initial_offset())) == expected
    with pytest.raises(ValidationError, match="not an ancestor"):
        _planner(table, **{"start-snapshot-id": "42"}).initial_offset()


def test_deletes_and_overwrites_fail_clearly_unless_skipped(table: Table) -> None:
    _append(table, 0)
    table.delete("id = 1", mode="merge-on-read")
    _append(table, 100)
    rewrite_data_files(table, rewrite_all=True)  # a compaction is never an error: no new rows
    planner = _planner(table)
    with pytest.raises(ValidationError, match="skip-delete-snapshots"):
        planner.latest_offset(planner.initial_offset(), True)
    skipping = _planner(table, **{"streaming-skip-delete-snapshots": "true"})
    assert _drain(table, skipping, skipping.initial_offset()) == [[0, 1, 2, 3, 100, 101, 102, 103]]
    table.overwrite(pa.table({"id": pa.array([7], pa.int64()), "part": pa.array([0], pa.int64())}), "id = 0")
    with pytest.raises(ValidationError, match="skip-overwrite-snapshots"):
        skipping.latest_offset(skipping.initial_offset(), True)
    both = _planner(table, **{"skip-delete-snapshots": "true", "skip-overwrite-snapshots": "true"})
    assert _flat(_drain(table, both, both.initial_offset())) == [0, 1, 2, 3, 100, 101, 102, 103]


def test_available_now_stops_at_the_target(table: Table) -> None:
    _append(table, 0)
    planner = _planner(table)
    head = table.current_snapshot()
    assert head is not None
    planner.target_snapshot_id = head.snapshot_id
    start = planner.initial_offset()
    _append(table, 100)
    assert _flat(_drain(table, planner, start)) == [0, 1, 2, 3]


MB = 1024 * 1024


def _sized(*sizes_mb: float) -> list[Unit]:
    return [Unit(1, 10, None, int(size * MB)) for size in sizes_mb]


def _packed(groups: list[list[Unit]]) -> list[list[int]]:
    return [[int(u.size_bytes / MB * 10) for u in g] for g in groups]


def test_small_files_are_packed_into_as_many_partitions_as_slots() -> None:
    units = _sized(*[2.5] * 16)  # each weighs the 4 MB open-file cost: 64 MB, 32 MB a partition
    groups = group_units(units, 2, 128 * MB, 4 * MB)
    assert [len(g) for g in groups] == [8, 8]
    assert sorted(id(u) for g in groups for u in g) == sorted(id(u) for u in units)
    assert group_units(units[:1], 2, 128 * MB, 4 * MB) == [units[:1]]  # one commit: one partition
    assert group_units([], 2, 128 * MB, 4 * MB) == []


def test_partitions_stay_under_the_split_size_heaviest_first() -> None:
    groups = group_units(_sized(10, 300, 60, 50, 1, 70), 1, 128 * MB, 4 * MB)
    # a file over the split size is a partition of its own; the rest close when the next overflows
    assert _packed(groups) == [[3000], [700], [600, 500, 100, 10]]  # the 1 MB file weighs 4 MB
    assert group_units(_sized(10, 300, 60), 1, 128 * MB, 4 * MB) == group_units(
        _sized(10, 300, 60), 1, 128 * MB, 4 * MB
    )


def test_packing_options_override_table_properties() -> None:
    props = {"read.split.target-size": str(64 * MB), "read.split.open-file-cost": str(MB)}
    assert StreamOptions.parse({"min-partitions": "3"}).packing(props) == (3, 64 * MB, MB)
    opts = StreamOptions.parse({"minpartitions": "5", "split-size": "1000", "file-open-cost": "10"})
    assert opts.packing(props) == (5, 1000, 10)
    slots, split, cost = StreamOptions.parse({}).packing({})
    assert slots >= 1 and (split, cost) == (DEFAULT_SPLIT_SIZE, DEFAULT_OPEN_FILE_COST)
