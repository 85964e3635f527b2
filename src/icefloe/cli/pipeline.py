"""The main job: an end-to-end pipeline on the embedded defaults (SQLite catalog, local warehouse).

It generates a few million taxi-trip-like rows, ingests them into a partitioned table, runs
incremental appends, an overwrite and a delete, queries the result, time-travels, and prints a
short report of what it did. Run it with ``bash scripts/main-job.sh`` (``--rows N`` to resize).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.catalog import load_catalog
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, DayTransform
from icefloe.spec.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)
from icefloe.table.table import Table

TRIPS_SCHEMA = Schema(
    NestedField(1, "trip_id", LongType(), True),
    NestedField(2, "pickup_at", TimestamptzType(), True),
    NestedField(3, "vendor", StringType(), True),
    NestedField(4, "passengers", IntegerType(), False),
    NestedField(5, "distance_km", DoubleType(), False),
    NestedField(6, "fare", DecimalType(10, 2), False),
    NestedField(7, "payment", StringType(), False),
)
TRIPS_SPEC = PartitionSpec(
    PartitionField(2, 1000, DayTransform(), "pickup_day"),
    PartitionField(3, 1001, BucketTransform(4), "vendor_bucket"),
)
VENDORS = np.array(["acme", "blue", "cab co", "dash", "east", "fleet"])
PAYMENTS = np.array(["card", "cash", "app", None], dtype=object)
START = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 14


@dataclass
class Report:
    """What the job did, printed at the end."""

    lines: list[tuple[str, str]] = field(default_factory=list)

    def add(self, what: str, value: object) -> None:
        """Record one line of the report."""
        self.lines.append((what, str(value)))

    def render(self) -> str:
        """The report as aligned text."""
        width = max(len(w) for w, _ in self.lines)
        return "\n".join(f"  {w.ljust(width)}  {v}" for w, v in self.lines)


@contextmanager
def stage(name: str, report: Report) -> Iterator[None]:
    """Show a stage as running, then record its duration."""
    print(f"[ .. ] {name}", end="", flush=True, file=sys.stderr)
    t0 = time.perf_counter()
    yield
    dt = time.perf_counter() - t0
    print(f"\r[done] {name} ({dt:.2f} s)", file=sys.stderr)
    report.add(f"time: {name}", f"{dt:.2f} s")


def progress(done: int, total: int, label: str) -> None:
    """A one-line progress bar on stderr."""
    width = 30
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "-" * (width - filled)
    print(f"\r[{bar}] {label} {done:,}/{total:,}", end="", flush=True, file=sys.stderr)
    if done >= total:
        print(file=sys.stderr)


def generate_trips(first_id: int, rows: int, seed: int, day_range: tuple[int, int] = (0, DAYS)) -> pa.Table:
    """Synthetic trips with ids ``first_id ..``, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    ids = np.arange(first_id, first_id + rows, dtype=np.int64)
    start_us = int(START.timestamp() * 1_000_000)
    span_us = (day_range[1] - day_range[0]) * 86_400_000_000
    pickup = start_us + day_range[0] * 86_400_000_000 + rng.integers(0, span_us, rows)
    distance = np.round(rng.gamma(2.0, 2.5, rows), 3)
    cents = (250 + distance * 180 + rng.integers(0, 500, rows)).astype(np.int64)
    fares = _cents_to_decimal(cents)
    return pa.table(
        {
            "trip_id": ids,
            "pickup_at": pa.array(pickup, pa.timestamp("us", tz="UTC")),
            "vendor": VENDORS[rng.integers(0, len(VENDORS), rows)],
            "passengers": pa.array(rng.integers(1, 7, rows), pa.int32()),
            "distance_km": distance,
            "fare": fares,
            "payment": pa.array(PAYMENTS[rng.integers(0, len(PAYMENTS), rows)], pa.string()),
        }
    )


def _cents_to_decimal(cents: np.ndarray) -> pa.Array:
    """Non-negative int64 cents as decimal(10, 2) without a Python object per value."""
    words = np.zeros((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    return pa.Array.from_buffers(pa.decimal128(10, 2), len(cents), [None, pa.py_buffer(words.tobytes())])


def run(rows: int, batches: int, namespace: str = "demo") -> Report:
    """Run the pipeline and return its report."""
    report = Report()
    catalog = load_catalog()
    if not catalog.namespace_exists((namespace,)):
        catalog.create_namespace((namespace,))
    ident = (namespace, "trips")
    if catalog.table_exists(ident):
        catalog.drop_table(ident, purge=True)
    table: Table = catalog.create_table(
        ident, TRIPS_SCHEMA, partition_spec=TRIPS_SPEC, properties={"format-version": "3"}
    )
    report.add("table", f"{table.name} (format v{table.format_version}) at {table.location()}")

    with stage(f"ingest {rows:,} rows in {batches} batches", report):
        per_batch = rows // batches
        for b in range(batches):
            n = per_batch if b < batches - 1 else rows - per_batch * (batches - 1)
            table.append(generate_trips(b * per_batch, n, seed=b))
            progress(b + 1, batches, "batches committed")
    first_snapshot = table.snapshots()[0].snapshot_id

    increments = max(rows // 20, 1)
    with stage(f"3 incremental appends of {increments:,} rows (late day {DAYS - 1})", report):
        for i in range(3):
            table.append(
                generate_trips(rows + i * increments, increments, seed=100 + i, day_range=(DAYS - 1, DAYS))
            )

    with stage("overwrite day 0 with corrected data", report):
        day0 = "pickup_at >= '2026-01-01T00:00:00+00:00' and pickup_at < '2026-01-02T00:00:00+00:00'"
        corrected = generate_trips(10 * rows, max(rows // 50, 1), seed=999, day_range=(0, 1))
        table.overwrite(corrected, filter=day0)

    with stage("delete trips with zero distance or fare above 100", report):
        table.delete("distance_km < 0.05 or fare > 100")

    with stage("query: rows and revenue per vendor (filter on 3 days)", report):
        recent = table.scan(
            filter="pickup_at >= '2026-01-11T00:00:00+00:00'", columns=("vendor", "fare")
        ).to_arrow()
        by_vendor = recent.group_by("vendor").aggregate([("fare", "sum"), ("vendor", "count")])
        tasks = table.scan(filter="pickup_at >= '2026-01-11T00:00:00+00:00'").plan_files()
    total_files = len(table.scan().plan_files())
    report.add("files read for the 3-day query", f"{len(tasks)} of {total_files}")
    for row in sorted(by_vendor.to_pylist(), key=lambda r: r["vendor"]):
        report.add(f"  vendor {row['vendor']}", f"{row['vendor_count']:,} trips, {row['fare_sum']} revenue")

    with stage("time travel to the first snapshot", report):
        first_rows = table.scan(snapshot_id=first_snapshot).count()
    current_rows = table.scan().count()
    report.add("rows now", f"{current_rows:,}")
    report.add("rows in first snapshot", f"{first_rows:,}")
    report.add("snapshots", len(table.snapshots()))
    ops = [s.operation for s in table.snapshots()]
    report.add("operations", ", ".join(f"{op}x{ops.count(op)}" for op in dict.fromkeys(ops)))
    check = table.scan(columns=("trip_id",)).to_arrow()
    assert pc.count_distinct(check.column("trip_id")).as_py() == check.num_rows, "duplicate trip ids"
    return report


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m icefloe.cli.pipeline``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=3_000_000, help="rows in the initial ingest")
    parser.add_argument("--batches", type=int, default=6, help="commits for the initial ingest")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    report = run(args.rows, args.batches)
    report.add("total time", f"{time.perf_counter() - t0:.2f} s")
    print("\nicefloe pipeline report\n" + report.render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
