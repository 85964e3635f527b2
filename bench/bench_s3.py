"""Small appends on object storage: icefloe v3, icefloe v4 and PyIceberg against the same S3 server.

    python -m bench.bench_s3                  # 20 appends per engine
    python -m bench.bench_s3 --appends 3      # smoke size

Starts the tests' S3-compatible server (moto over HTTP on 127.0.0.1, ``tests/support/s3server.py``),
then for each engine creates a table in an ``s3://`` warehouse of a fresh SQLite catalog and times
``--appends`` appends of 10 rows (after one warm-up append), counting the requests the server
answers per append. PyIceberg 0.12 writes format v2 at most, so it runs on a v2 table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
from tests.support.s3server import S3Server, start_s3_server

from bench._common import command_line
from icefloe.catalog.sql import SqlCatalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def _rows(start: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + 10)), "name": ["x"] * 10}, schema=SCHEMA)


def _icefloe(server: S3Server, work: Path, version: int) -> Callable[[pa.Table], None]:
    cat = SqlCatalog(
        f"v{version}",
        uri=f"sqlite:///{work}/icefloe-v{version}.db",
        warehouse=f"s3://{server.bucket}/ice-v{version}",
        **server.properties,
    )
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, properties={"format-version": str(version)})
    return table.append


def _pyiceberg(server: S3Server, work: Path) -> Callable[[pa.Table], None]:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    cat = PySqlCatalog(
        "py",
        uri=f"sqlite:///{work}/pyiceberg.db",
        warehouse=f"s3://{server.bucket}/pyiceberg",
        **server.properties,
    )
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    return table.append


def _measure(
    server: S3Server, append: Callable[[pa.Table], None], appends: int
) -> tuple[float, float, dict[str, int]]:
    append(_rows(0))  # warm-up: file systems, connections
    times, total = [], 0
    ops: dict[str, int] = {}
    for i in range(appends):
        server.reset_counts()
        start = time.perf_counter()
        append(_rows((i + 1) * 10))
        times.append(time.perf_counter() - start)
        counts = server.counts()
        total += sum(counts.values())
        for op, n in counts.items():
            ops[op] = ops.get(op, 0) + n
    per_op = {op: round(n / appends) for op, n in sorted(ops.items())}
    return statistics.median(times) * 1000, total / appends, per_op


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=20)
    args = parser.parse_args(argv)
    print(f"command:  {command_line('bench.bench_s3', argv)}")
    server = start_s3_server()
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
            work = Path(tmp)
            results["icefloe v3"] = _measure(server, _icefloe(server, work, 3), args.appends)
            results["icefloe v4"] = _measure(server, _icefloe(server, work, 4), args.appends)
            results["pyiceberg v2"] = _measure(server, _pyiceberg(server, work), args.appends)
    finally:
        server.stop()
    print(f"small append (10 rows), median of {args.appends}, S3 server on loopback:")
    for name, (ms, requests, ops) in results.items():
        print(f"  {name:<13} {ms:8.1f} ms  {requests:5.1f} requests/append  {ops}")
    py_ms = results["pyiceberg v2"][0]
    for name in ("icefloe v3", "icefloe v4"):
        print(f"  {name} vs pyiceberg: {py_ms / results[name][0]:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
