"""Row-level deletes: copy-on-write against merge-on-read, on format v3 and v4, in one run.

    python -m bench.bench_row_changes            # full: 20M rows in 1,000 files
    python -m bench.bench_row_changes --quick    # 2M rows in 100 files

Workload (issue "Row-level changes"): delete 0.1% of the rows, spread over 1% of the files, from
a table of ``--rows`` rows in ``--files`` Parquet files (unpartitioned; columns ``id`` long,
``grp`` int = the file number, ``k`` int = ``id % 10``, ``value`` double, ``name`` string). The
filter ``grp in (<every 100th file>) and k = 0`` matches 10% of the rows of 1% of the files.

For each format version the table is built once; each mode then runs from the same base snapshot
(main is rolled back before every delete, so all delete the very same rows). Reported per mode:
the delete's wall time (median of ``--delete-runs``, modes in turns after one untimed warm-up),
the files and bytes it wrote (data, delete and metadata files, found by listing the table
directory before and after), and the full-scan time of the table after the delete against the
base snapshot's, timed in turns (``table.scan(...).to_arrow()``). The row count and the sum of ids
after the delete are checked against the values computed from the generator; a mismatch exits
with status 1.

``--dir`` keeps the work directory (tables are rebuilt each run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from bench._common import (
    NAMESPACE,
    command_line,
    fmt_s,
    icefloe_catalog,
    load_average,
    local_path,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType
from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
from icefloe.txn.producers import AppendFiles

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "grp", IntegerType(), True),
    NestedField(3, "k", IntegerType(), True),
    NestedField(4, "value", DoubleType(), False),
    NestedField(5, "name", StringType(), False),
)
MODES = ("copy-on-write", "merge-on-read")


@dataclass(frozen=True)
class Outcome:
    """One delete: how long it took, what it wrote, how scans compare afterwards."""

    version: int
    mode: str
    seconds: float
    files: int
    bytes: int
    deleted: int
    scan_before: float
    scan_after: float


def file_rows(index: int, rows: int) -> pa.Table:
    """The rows of data file ``index``: ids ``index * rows ...``, deterministic values."""
    ids = np.arange(index * rows, (index + 1) * rows, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "grp": np.full(rows, index, dtype=np.int32),
            "k": (ids % 10).astype(np.int32),
            "value": ids.astype(np.float64) * 0.5,
            "name": pa.array([f"row-{i % 1000}" for i in range(rows)], pa.string()),
        }
    )


def build_table(catalog: Any, version: int, files: int, rows_per_file: int) -> Any:
    """A table of ``files`` data files committed as one append snapshot."""
    name = (NAMESPACE, f"rows_v{version}")
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    table = catalog.create_table(name, SCHEMA, properties={"format-version": str(version)})
    written = []
    for i in range(files):
        if i % 100 == 0:
            log(f"  v{version}: writing data file {i + 1}/{files}")
        prepared = prepare_arrow_table(table.metadata, file_rows(i, rows_per_file))
        written += write_data_files(table.io, table.metadata, prepared)
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=written, owned_files=[f.file_path for f in written]))
    return table


def listing(table: Any) -> dict[str, int]:
    """Every file under the table location with its size."""
    out: dict[str, int] = {}
    for root, _, names in os.walk(local_path(table.location())):
        for n in names:
            path = os.path.join(root, n)
            out[path] = os.path.getsize(path)
    return out


def run(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=3, help="timed scans per snapshot")
    parser.add_argument("--delete-runs", type=int, default=3, help="timed deletes per mode (median)")
    parser.add_argument("--versions", default="3,4")
    parser.add_argument("--quick", action="store_true", help="2M rows in 100 files")
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.files, args.runs = 2_000_000, 100, 3
    rows_per_file = args.rows // args.files
    touched = list(range(0, args.files, 100)) or [0]
    row_filter = f"grp in ({', '.join(map(str, touched))}) and k = 0"
    expected_deleted = sum(
        int(np.count_nonzero(np.arange(g * rows_per_file, (g + 1) * rows_per_file) % 10 == 0))
        for g in touched
    )
    total_rows = rows_per_file * args.files
    total_id_sum = total_rows * (total_rows - 1) // 2
    deleted_id_sum = sum(
        int(np.arange(g * rows_per_file, (g + 1) * rows_per_file, dtype=np.int64)[::10].sum())
        for g in touched
    )
    versions = [int(v) for v in args.versions.split(",")]
    print_environment(
        "Row-level delete: copy-on-write vs merge-on-read",
        command_line("bench.bench_row_changes", argv),
        {
            "rows": f"{total_rows:,}",
            "files": args.files,
            "filter": row_filter,
            "rows deleted": f"{expected_deleted:,} ({expected_deleted / total_rows:.2%})",
            "files touched": f"{len(touched)} ({len(touched) / args.files:.1%})",
        },
    )
    outcomes: list[Outcome] = []
    failed = False
    with workspace(args.dir, "icefloe-bench-rows-") as work:
        catalog = icefloe_catalog(work)
        for version in versions:
            log(f"building the v{version} table ({total_rows:,} rows)")
            table = build_table(catalog, version, args.files, rows_per_file)
            base = table.current_snapshot()
            assert base is not None
            last: dict[str, tuple[Any, dict[str, int], int]] = {}

            def delete_from_base(
                mode: str, t: Any = table, b: int = base.snapshot_id
            ) -> tuple[Any, float, dict[str, int]]:
                """Roll main back to the base snapshot, delete, and return (result, seconds, new files)."""
                t.refresh()
                if t.current_snapshot().snapshot_id != b:
                    t.manage_snapshots().set_current_snapshot(b).commit()
                before = listing(t)
                t0 = time.perf_counter()
                result = t.delete(row_filter, mode=mode)
                seconds = time.perf_counter() - t0
                return result, seconds, {p: n for p, n in listing(t).items() if p not in before}

            delete_from_base(MODES[0])  # warm-up: imports and caches, not timed
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            for _ in range(args.delete_runs):  # modes in turns, so load drift hits both alike
                for mode in MODES:
                    result, seconds, new = delete_from_base(mode)
                    times[mode].append(seconds)
                    last[mode] = (result, new, table.current_snapshot().snapshot_id)
            for mode in MODES:
                result, new, after_id = last[mode]

                def scan_base(t: Any = table, s: int = base.snapshot_id) -> pa.Table:
                    return t.scan(snapshot_id=s).to_arrow()

                def scan_after(t: Any = table, s: int = after_id) -> pa.Table:
                    return t.scan(snapshot_id=s).to_arrow()

                check = scan_after()
                ok = (
                    result.deleted_rows == expected_deleted
                    and check.num_rows == total_rows - expected_deleted
                    and int(check.column("id").to_numpy().sum()) == total_id_sum - deleted_id_sum
                )
                if not ok:
                    failed = True
                    log(f"(!) v{version} {mode}: {check.num_rows} rows after the delete")
                del check
                t_before, t_after = time_interleaved([scan_base, scan_after], args.runs)
                outcomes.append(
                    Outcome(
                        version,
                        mode + ("" if ok else " (!)"),
                        float(np.median(times[mode])),
                        len(new),
                        sum(new.values()),
                        result.deleted_rows,
                        t_before.median,
                        t_after.median,
                    )
                )
    print(f"load average after the run: {load_average()}")
    print_table(
        "Delete 0.1% of rows in 1% of files",
        [
            "format",
            "mode",
            "delete time",
            "files written",
            "bytes written",
            "scan before",
            "scan after",
            "after / before",
        ],
        [
            [
                f"v{o.version}",
                o.mode,
                fmt_s(o.seconds),
                o.files,
                f"{o.bytes:,}",
                fmt_s(o.scan_before),
                fmt_s(o.scan_after),
                ratio(o.scan_after, o.scan_before),
            ]
            for o in outcomes
        ],
    )
    by_key = {(o.version, o.mode): o for o in outcomes}
    rows = []
    for version in versions:
        cow, mor = by_key.get((version, MODES[0])), by_key.get((version, MODES[1]))
        if cow and mor:
            rows.append([f"v{version}", ratio(cow.seconds, mor.seconds), ratio(cow.bytes, mor.bytes)])
    print_table("Merge-on-read against copy-on-write", ["format", "time CoW / MoR", "bytes CoW / MoR"], rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
