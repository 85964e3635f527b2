"""v4 column updates against copy-on-write and merge-on-read: bytes written, update time, scan cost.

    .venv/bin/python -m bench.bench_column_updates [--rows 20000000] [--columns 20] [--files 20]

Three v4 tables hold the same rows (``id``, ``bucket`` = id % 10 and ``columns - 2`` double
columns, ``--files`` files): one updates copy-on-write, one merge-on-read (a DV plus the changed
rows written whole), one merge-on-read with ``write.v4.column-updates.enabled`` (a column file of
the changed column). Each runs ``UPDATE SET c0 = c0 * 1.1 WHERE bucket = 0`` (10% of the rows,
in every file), timed once; the bytes are the sizes of the files the update wrote. Then full
scans of the column-update table before and after the update are timed in turns.

Prints the tables and ratios; exits 1 (and marks ``(!)``) when the three tables disagree.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench._common import (
    command_line,
    fmt_s,
    icefloe_catalog,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)

VARIANTS = {
    "copy-on-write": {"write.update.mode": "copy-on-write"},
    "merge-on-read": {"write.update.mode": "merge-on-read"},
    "column file": {"write.update.mode": "merge-on-read", "write.v4.column-updates.enabled": "true"},
}


def _rows(start: int, n: int, columns: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    bucket = pc.subtract(ids, pc.multiply(pc.divide(ids, 10), 10))  # id % 10 (integer division)
    data: dict[str, Any] = {"id": ids, "bucket": pc.cast(bucket, pa.int32())}
    base = pc.cast(ids, pa.float64())
    for c in range(columns - 2):
        data[f"c{c}"] = pc.add(base, float(c))
    return pa.table(data)


def _table(catalog: Any, name: str, props: dict[str, str], rows: int, columns: int, files: int) -> Any:
    from icefloe.formats.arrow_schema import schema_from_arrow

    schema = schema_from_arrow(_rows(0, 1, columns).schema)
    table = catalog.create_table(("bench", name), schema, properties={"format-version": "4", **props})
    per_file = -(-rows // files)
    for start in range(0, rows, per_file):
        table.append(_rows(start, min(per_file, rows - start), columns))
    return table


def _sum_c0(table: Any) -> float:
    return float(pc.sum(table.scan(columns=("c0",)).to_arrow().column("c0")).as_py())


def _written_bytes(table: Any, paths: Sequence[str]) -> int:
    return sum(table.io.new_input(p).length for p in paths)


def main(argv: Sequence[str] | None = None) -> None:
    """Build the tables, run the updates and scans, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--columns", type=int, default=20)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--scan-runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one)")
    args = parser.parse_args(argv)
    settings = {"rows": args.rows, "columns": args.columns, "files": args.files, "scan_runs": args.scan_runs}
    print_environment(
        "v4 column updates: bytes and time of one update, scan after it",
        command_line("bench.bench_column_updates", argv),
        settings,
    )
    wrong = False
    with workspace(args.dir, "icefloe-bench-columns-") as work:
        catalog = icefloe_catalog(work)
        results: dict[str, tuple[int, float, int]] = {}
        tables: dict[str, Any] = {}
        for label, props in VARIANTS.items():
            log(f"building the {label} table")
            name = "t_" + label.replace(" ", "_").replace("-", "_")
            tables[label] = _table(catalog, name, props, args.rows, args.columns, args.files)
        before = tables["column file"].current_snapshot().snapshot_id
        for label, table in tables.items():
            log(f"updating the {label} table")
            t0 = time.perf_counter()
            result = table.update({"c0": pc.multiply(pc.field("c0"), 1.1)}, "bucket = 0")
            elapsed = time.perf_counter() - t0
            results[label] = (_written_bytes(table, result.files_written), elapsed, result.updated_rows)
        expected = -(-args.rows // 10)
        sums = {label: _sum_c0(t) for label, t in tables.items()}
        agree = len({round(s, 3) for s in sums.values()}) == 1
        rows_out = []
        cow_bytes, mor_bytes = results["copy-on-write"][0], results["merge-on-read"][0]
        for label, (written, elapsed, updated) in results.items():
            ok = updated == expected and agree
            wrong |= not ok
            rows_out.append(
                (
                    label + ("" if ok else " (!)"),
                    f"{written / 2**20:,.2f} MiB",
                    fmt_s(elapsed),
                    ratio(cow_bytes, written),
                    ratio(mor_bytes, written),
                )
            )
        print_table(
            f"(a) UPDATE c0 of {expected:,} rows (10%) of {args.rows:,} x {args.columns} columns",
            ("write", "bytes written", "time", "CoW bytes / this", "MoR bytes / this"),
            rows_out,
        )
        table = tables["column file"]
        log("timing full scans before and after the column update")
        scan_before, scan_after = time_interleaved(
            [
                lambda: table.scan(snapshot_id=before).to_arrow(),
                lambda: table.scan().to_arrow(),
            ],
            args.scan_runs,
        )
        print_table(
            "(b) full scan of the column-update table (median)",
            ("scan", "time", "after / before"),
            [
                ("before the update", fmt_s(scan_before.median), ""),
                ("after the update", fmt_s(scan_after.median), ratio(scan_after.median, scan_before.median)),
            ],
        )
    if wrong:
        sys.exit(1)


if __name__ == "__main__":
    main()
