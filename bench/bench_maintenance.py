"""Snapshot expiry: icefloe against PyIceberg on the same tables, and what expiry buys the next commit.

    python -m bench.bench_maintenance            # 2,000-snapshot histories, 3 runs
    python -m bench.bench_maintenance --quick    # 300-snapshot histories, 1 run

(a) Expire all but the newest ``--keep`` snapshots of a table with ``--history`` one-file append
    snapshots (synthetic data files, built in one icefloe transaction), metadata only: icefloe's
    ``expire_snapshots(delete_files=False)`` against PyIceberg 0.12's
    ``maintenance.expire_snapshots().older_than(...)`` (which removes snapshots from the metadata
    and deletes no file; it cannot write v3 or v4 metadata, so it runs on the v2 table only). Both
    get the same cut-off, a fresh copy of the same table per timed run (libraries in turns), and
    must expire the same snapshots. icefloe's expiry with file deletion
    is timed too (it reads the trees of the expired and the retained snapshots and deletes the
    manifests, manifest lists / roots and data files only expired snapshots needed).
(b) What it buys: the metadata file size and ``Table.append`` latency (10 rows, median of
    ``--appends``) before and after expiring down to ``--keep`` snapshots, for v3 and v4.

``--dir`` keeps the work directory (tables are rebuilt every run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from bench._common import (
    NAMESPACE,
    command_line,
    fmt_ms,
    icefloe_catalog,
    load_average,
    local_path,
    log,
    print_environment,
    print_table,
    pyiceberg_catalog,
    ratio,
    workspace,
)
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.spec.content import DataFile
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.txn.producers import AppendFiles

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "payload", StringType(), False))


def synthetic_file(location: str, k: int) -> DataFile:
    """Data file ``k`` (metadata only: planning and expiry never open it)."""
    lo = k * 100
    return DataFile(
        file_path=f"{location}/data/f{k:08d}.parquet",
        file_format="parquet",
        record_count=100,
        file_size_in_bytes=4_000 + k % 100,
        value_counts={1: 100, 2: 100},
        null_value_counts={1: 0, 2: 0},
        lower_bounds={1: lo.to_bytes(8, "little"), 2: b"a"},
        upper_bounds={1: (lo + 99).to_bytes(8, "little"), 2: b"z"},
    )


def history_table(catalog: Any, name: str, version: int, history: int) -> Any:
    """A table with ``history`` one-file append snapshots (one transaction, merge-append)."""
    ident = f"{NAMESPACE}.{name}"
    if catalog.table_exists(ident):
        catalog.drop_table(ident, purge=True)
    table = catalog.create_table(ident, SCHEMA, properties={"format-version": str(version)})
    with table.transaction() as tx:
        for k in range(history):
            tx.add_action(AppendFiles(files=[synthetic_file(table.location(), k)], merge_manifests=True))
    table.refresh()
    return table


def cut_off(table: Any, keep: int) -> int:
    """The timestamp that leaves exactly the newest ``keep`` snapshots younger."""
    stamps = sorted(s.timestamp_ms for s in table.snapshots())
    return stamps[-keep]


def expire_with_pyiceberg(table: Any, older_than_ms: int) -> int:
    """PyIceberg 0.12: remove snapshots older than the cut-off from the metadata; returns how many."""
    before = len(table.metadata.snapshots)
    when = datetime.fromtimestamp(older_than_ms / 1000, tz=UTC)
    table.maintenance.expire_snapshots().older_than(when).commit()
    return before - len(table.metadata.snapshots)


def bench_expiry(work: str, versions: Sequence[int], history: int, keep: int, runs: int) -> list[list[str]]:
    """(a) median expiry time per library (fresh table per timed call, libraries in turns)."""
    catalog = icefloe_catalog(work)
    rows = []
    for version in versions:
        libs = ("icefloe", "pyiceberg", "icefloe + files") if version <= 2 else ("icefloe", "icefloe + files")
        times: dict[str, list[float]] = {lib: [] for lib in libs}
        deleted_files: list[int] = []
        for run in range(runs):
            for lib in times:
                name = f"x_v{version}_{lib.split()[0]}_{run}" + ("_files" if "files" in lib else "")
                table = history_table(catalog, name, version, history)
                cut = cut_off(table, keep)
                if lib == "pyiceberg":  # loaded before the clock starts, as icefloe's table is
                    table = pyiceberg_catalog(work).load_table(f"{NAMESPACE}.{name}")
                t0 = time.perf_counter()
                if lib == "pyiceberg":
                    expired = expire_with_pyiceberg(table, cut)
                else:
                    result = expire_snapshots(table, older_than=cut, delete_files=lib != "icefloe")
                    expired = len(result.expired_snapshot_ids)
                    gone = result.deleted_metadata_files + result.deleted_content_files
                    if lib != "icefloe":
                        deleted_files.append(len(gone))
                times[lib].append(time.perf_counter() - t0)
                if expired != history - keep:
                    wanted = history - keep
                    raise SystemExit(f"{lib} expired {expired} snapshots of v{version}, expected {wanted}")
                log(f"  v{version} {lib} run {run}: {times[lib][-1]:.2f} s")
        med = {lib: statistics.median(t) for lib, t in times.items()}
        pyiceberg = med.get("pyiceberg")
        rows.append(
            [
                f"v{version}",
                f"{history - keep:,} of {history:,}",
                fmt_ms(med["icefloe"]),
                "cannot write v3+" if pyiceberg is None else fmt_ms(pyiceberg),
                "" if pyiceberg is None else ratio(pyiceberg, med["icefloe"]),
                fmt_ms(med["icefloe + files"]),
                f"{statistics.median(deleted_files):,.0f}",
            ]
        )
    return rows


def small_batch(start: int) -> pa.Table:
    """10 rows."""
    ids = list(range(start, start + 10))
    return pa.table({"id": pa.array(ids, pa.int64()), "payload": pa.array([f"p{i}" for i in ids])})


def append_latency(table: Any, appends: int, start: int) -> float:
    """Median ``Table.append`` time of ``appends`` 10-row appends (after one warm-up)."""
    samples = []
    for k in range(appends + 1):
        t0 = time.perf_counter()
        table.append(small_batch(start + 10 * k))
        if k:
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_what_it_buys(
    work: str, versions: Sequence[int], history: int, keep: int, appends: int
) -> list[list[str]]:
    """(b) metadata file size and append latency before and after expiring to ``keep`` snapshots."""
    catalog = icefloe_catalog(work)
    rows = []
    for version in versions:
        table = history_table(catalog, f"b_v{version}", version, history)
        size_before = os.path.getsize(local_path(table.metadata_location))
        before = append_latency(table, appends, 0)
        expire_snapshots(table, older_than=int(time.time() * 1000) + 1, retain_last=keep)
        table.refresh()
        size_after = os.path.getsize(local_path(table.metadata_location))
        after = append_latency(table, appends, 10_000_000)
        rows.append(
            [
                f"v{version}",
                f"{size_before:,} -> {size_after:,}",
                f"{fmt_ms(before)} -> {fmt_ms(after)}",
                ratio(before, after),
            ]
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run (a) and (b) and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300-snapshot histories, one run")
    parser.add_argument("--history", type=int, default=None, help="snapshots in each table")
    parser.add_argument("--keep", type=int, default=10, help="snapshots left after expiry")
    parser.add_argument("--runs", type=int, default=None, help="timed expiries per library and format")
    parser.add_argument("--appends", type=int, default=21, help="timed appends before / after in (b)")
    parser.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one)")
    args = parser.parse_args(argv)
    history = args.history or (300 if args.quick else 2_000)
    runs = args.runs or (1 if args.quick else 3)
    settings = {"history": history, "keep": args.keep, "runs": runs, "appends": args.appends}
    print_environment("icefloe snapshot expiry", command_line("bench.bench_maintenance", argv), settings)
    with workspace(args.dir, "icefloe-bench-maintenance-") as work:
        log("(a) expiry ...")
        print_table(
            f"(a) expire {history - args.keep:,} of {history:,} snapshots, median of {runs} "
            "(fresh table per run)",
            [
                "format",
                "snapshots",
                "icefloe",
                "PyIceberg 0.12",
                "PyIceberg / icefloe",
                "icefloe + files",
                "files deleted",
            ],
            bench_expiry(work, (2, 3, 4), history, args.keep, runs),
        )
        log("(b) what it buys ...")
        print_table(
            f"(b) metadata file and Table.append latency (10 rows, median of {args.appends}), "
            f"{history:,} snapshots -> {args.keep} after expiry",
            ["format", "metadata.json bytes", "append latency", "faster"],
            bench_what_it_buys(work, (3, 4), history, args.keep, args.appends),
        )
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
