"""Memory and time of a scan whose one large position delete file covers every data file.

    python -m bench.bench_delete_memory                      # this checkout's src
    python -m bench.bench_delete_memory --src /tmp/old/src,src --runs 5

The table (format v2, ``write.delete.granularity=partition``, local files) has ``--files`` data
files of ``--rows`` rows each, and one delete commit removing half of every file's rows: one
position delete file of ``files * rows / 2`` rows, every one a path and a position. A scan reads
it once per task (each task keeping its own file's positions) or once per scan
(``scan.shared_deletes``: the positions of every data file kept until their task takes them).

Each scan runs in a fresh Python process (``--child``), so its peaks are its own: pyarrow's memory
pool peak (``max_memory``, where decoded delete files live) and the process's peak RSS. With
several ``--src`` directories (each an icefloe ``src`` put first on ``PYTHONPATH``), the scans of
each take turns on the same table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from bench._common import command_line, load_average, log, print_environment, print_table, workspace

ROOT = Path(__file__).resolve().parent.parent


def build(work: str, files: int, rows: int) -> str:
    """Create the table; its catalog's URI."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    uri = f"sqlite:///{work}/catalog.db"
    catalog = SqlCatalog("bench", uri=uri, warehouse=f"{work}/warehouse")
    catalog.create_namespace("bench")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "v", LongType()))
    properties = {"format-version": "2", "write.delete.granularity": "partition"}
    table = catalog.create_table("bench.t", schema, properties=properties)
    for f in range(files):
        ids = pa.array(range(f, files * rows, files), pa.int64())  # files interleave ids
        table.append(pa.table({"id": ids, "v": ids}))
    table.delete(f"id < {files * rows // 2}", mode="merge-on-read")  # the first half of every file
    catalog.close()
    return uri


def child(uri: str, expected: int) -> None:
    """One scan in this process; prints its figures as JSON."""
    from icefloe.catalog.sql import SqlCatalog

    catalog = SqlCatalog("bench", uri=uri)
    table = catalog.load_table("bench.t")
    pool = pa.default_memory_pool()
    base_pool = pool.max_memory()
    start = time.perf_counter()
    rows = table.scan().to_arrow().num_rows
    seconds = time.perf_counter() - start
    assert rows == expected, (rows, expected)
    peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps({"s": seconds, "pool": (pool.max_memory() or 0) - (base_pool or 0), "rss": peak_rss_kib})
    )


def run_child(src: str, uri: str, expected: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "bench.bench_delete_memory", "--child", uri, "--expected", str(expected)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8, help="data files")
    parser.add_argument("--rows", type=int, default=250_000, help="rows per data file")
    parser.add_argument("--runs", type=int, default=3, help="scans per src, in turns")
    parser.add_argument("--src", default=str(ROOT / "src"), help="icefloe src directories, comma-separated")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.expected)
        return 0
    sources = [s.strip() for s in args.src.split(",") if s.strip()]
    print_environment(
        "Scan memory with a large shared position delete file",
        command_line("bench.bench_delete_memory", argv),
        {"files": args.files, "rows": args.rows, "runs": args.runs, "src": ", ".join(sources)},
    )
    expected = args.files * args.rows - args.files * args.rows // 2
    results: dict[str, list[dict[str, float]]] = {s: [] for s in sources}
    with workspace(args.dir, "bench-delete-memory-") as work:
        log("building the table ...")
        uri = build(work, args.files, args.rows)
        for run in range(args.runs):
            for src in sources:  # in turns
                log(f"run {run + 1}: {src}")
                results[src].append(run_child(src, uri, expected))
    rows = []
    for src, figures in results.items():
        rows.append(
            (
                src,
                f"{statistics.median(f['s'] for f in figures) * 1000:.0f}",
                f"{max(f['pool'] for f in figures) / 2**20:.1f}",
                f"{max(f['rss'] for f in figures) / 1024:.0f}",
            )
        )
    print_table(
        f"one scan of {args.files} files x {args.rows} rows, one position delete file of "
        f"{args.files * args.rows // 2} rows (median ms, max peaks of {args.runs} runs)",
        ["src", "median ms", "arrow pool peak MiB", "peak RSS MiB"],
        rows,
    )
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
