"""Scanning a small table on object storage: milliseconds and requests per scan.

    python -m bench.bench_scan_s3                          # latencies 0 and 20 ms, 30 scans each
    python -m bench.bench_scan_s3 --latency-ms 0,20,50 --files 16 --scans 20

A scan reads each data file's footer, then its columns. pyarrow asks an object store for a file's
size before the footer unless it is handed the size (``formats/parquet/opening.py``): one round
trip per file, three instead of two. This times ``table.scan().to_arrow()`` of a format-v2 table
of ``--files`` data files (one append of 100 rows each) and of tables whose files carry deletes
(``TABLES``), against moto's S3 in its **own process** (``bench_rest_s3.s3_store``),
answering each request ``--latency-ms`` late (0 is loopback as is). The catalog (SQLite) and its
metadata are this process's, so the scan's metadata comes from the cache: the data files are the
storage work. Tables scanned in turns (``time_interleaved``) after a warm-up scan each.

The tables with deletes show what a scan pays for delete files its tasks share (one position
delete file, one Puffin file of deletion vectors): read once per scan, or once per task.

To compare two versions of icefloe, run this with each one's ``src`` first on ``PYTHONPATH``, in
turns.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Sequence

import pyarrow as pa
from tests.support.s3server import S3Server

from bench._common import (
    command_line,
    fmt_ms,
    load_average,
    log,
    print_environment,
    print_table,
    time_interleaved,
    workspace,
)
from bench.bench_rest_s3 import s3_store

ROWS_PER_FILE = 100
TABLES = {
    "": ("plain", {"format-version": "2"}),
    ", v2 position deletes (a file each)": ("deletes", {"format-version": "2"}),
    ", v2 position deletes (one file)": (
        "shared_deletes",
        {"format-version": "2", "write.delete.granularity": "partition"},
    ),
    ", v3 deletion vectors": ("dv3", {"format-version": "3"}),
    ", v4 deletion vectors": ("dv4", {"format-version": "4"}),
}
"""Table label -> (name, properties). Each table but the first has a row of every data file
deleted in one commit: v2 writes a position delete file per data file, or with partition
granularity one for them all; v3 and v4 write one Puffin file holding a vector per data file."""


def _requests_of(store: S3Server, fn: Callable[[], object]) -> str:
    store.reset_counts()
    fn()
    counts = store.counts()
    return ", ".join(f"{n} {op}" for op, n in sorted(counts.items())) or "none"


def measure(work: str, store: S3Server, files: int, scans: int) -> list[tuple[str, float, float, str]]:
    """(table, median s, p90 s, requests of one scan) for a plain table and ones with deletes."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "s", StringType()))
    warehouse = f"s3://{store.bucket}/scan-{uuid.uuid4().hex[:8]}"
    catalog = SqlCatalog("bench", uri=f"sqlite:///{work}/scan.db", warehouse=warehouse, **store.properties)
    catalog.create_namespace("bench")
    tables = []
    for name, properties in TABLES.values():
        table = catalog.create_table(f"bench.{name}", schema, properties=properties)
        for f in range(files):
            ids = range(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE)
            table.append(pa.table({"id": pa.array(ids, pa.int64()), "s": [f"row {i}" for i in ids]}))
        tables.append(table)
    firsts = ", ".join(str(f * ROWS_PER_FILE) for f in range(files))
    for table in tables[1:]:
        table.delete(f"id in ({firsts})", mode="merge-on-read")  # a row of every file, one commit
    expected = [files * ROWS_PER_FILE] + [files * (ROWS_PER_FILE - 1)] * (len(tables) - 1)

    fns: list[Callable[[], object]] = [lambda t=t: t.scan().to_arrow() for t in tables]
    for fn, rows in zip(fns, expected, strict=True):
        got = fn()
        assert isinstance(got, pa.Table) and got.num_rows == rows, (got, rows)
    timings = time_interleaved(fns, scans)
    requests = [_requests_of(store, fn) for fn in fns]
    catalog.close()
    names = [f"{files} data files{label}" for label in TABLES]
    return [(n, t.median, t.p90, r) for n, t, r in zip(names, timings, requests, strict=True)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", default="0,20", help="storage round trips to model, comma-separated")
    parser.add_argument("--files", type=int, default=8, help="data files per table")
    parser.add_argument("--scans", type=int, default=30, help="timed scans per table and latency")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    args = parser.parse_args(argv)
    import icefloe

    print_environment(
        "Scanning a small table on object storage",
        command_line("bench.bench_scan_s3", argv),
        {
            "latency-ms": args.latency_ms,
            "files": args.files,
            "scans": args.scans,
            "icefloe": icefloe.__file__,
        },
    )
    rows = []
    for latency_ms in (float(x) for x in args.latency_ms.split(",") if x.strip()):
        log(f"latency {latency_ms:g} ms ...")
        with workspace(args.dir, "bench-scan-s3-") as work, s3_store(latency_ms / 1000) as store:
            for name, median, p90, requests in measure(work, store, args.files, args.scans):
                rows.append((f"{latency_ms:g}", name, fmt_ms(median), fmt_ms(p90), requests))
    print_table(
        "ms per scan (median, p90), storage requests of one scan",
        ["latency ms", "table", "median ms", "p90 ms", "requests"],
        rows,
    )
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
