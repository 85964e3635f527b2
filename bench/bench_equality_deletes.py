"""Time, memory and delete-file reads of a scan whose one equality delete file covers every data file.

    python -m bench.bench_equality_deletes                      # this checkout's src
    python -m bench.bench_equality_deletes --src /tmp/old/src,src --runs 3

The table (format v2, unpartitioned, local files) has ``--files`` data files of ``--rows`` rows
each, ids interleaved across the files, and one ``delete_by_key`` commit of ``--keys`` keys on
``id`` (every second id from 0): one global equality delete file, which applies to every data
file, as a streaming writer's (Flink's) does. Read task by task, each task reads and decodes the
whole file and keeps its own copy of the keys; read once per scan (``scan.shared_deletes``), the
keys are kept once until the last task has used them.

Each scan (``to_arrow`` and ``to_arrow_batch_reader``) runs in a fresh Python process
(``--child``), so its peaks are its own: pyarrow's memory pool peak and the process's peak RSS;
reads of the delete file are counted with a FileIO that counts the locations it opens. With
several ``--src`` directories (each an icefloe ``src`` put first on ``PYTHONPATH``), the scans
of each take turns on the same table.
"""

from __future__ import annotations

import argparse
import dataclasses
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
ROUTES = ("to_arrow", "stream")


def build(work: str, files: int, rows: int, keys: int) -> tuple[str, int]:
    """Create the table; its catalog's URI and the number of rows a scan returns."""
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    uri = f"sqlite:///{work}/catalog.db"
    catalog = SqlCatalog("bench", uri=uri, warehouse=f"{work}/warehouse")
    catalog.create_namespace("bench")
    schema = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "v", LongType()))
    table = catalog.create_table("bench.t", schema, properties={"format-version": "2"})
    total = files * rows
    for f in range(files):
        ids = pa.array(range(f, total, files), pa.int64())  # files interleave ids
        table.append(pa.table({"id": ids, "v": ids}))
    deleted = pa.array(range(0, 2 * keys, 2), pa.int64())
    table.delete_by_key(pa.table({"id": deleted}), on="id")
    catalog.close()
    return uri, total - min(keys, (total + 1) // 2)


def child(uri: str, route: str, expected: int) -> None:
    """One scan in this process; prints its figures as JSON."""
    from collections import Counter

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.io.fileio import FileIO

    class CountingIO(FileIO):
        """Counts the locations opened for pyarrow readers."""

        def __init__(self, properties: dict[str, str]) -> None:
            super().__init__(properties)
            self.opened: Counter[str] = Counter()

        def filesystem_and_path(self, location: str):  # type: ignore[no-untyped-def]
            self.opened[location] += 1
            return super().filesystem_and_path(location)

    catalog = SqlCatalog("bench", uri=uri)
    table = catalog.load_table("bench.t")
    io = CountingIO(dict(table.io.properties))
    scan = dataclasses.replace(table.scan(), io=io)
    tasks = scan.plan_files()
    delete_paths = {d.delete_file.file_path for t in tasks for d in t.deletes}
    pool = pa.default_memory_pool()
    base_pool = pool.max_memory()
    start = time.perf_counter()
    if route == "to_arrow":
        rows = scan.read_planned(tasks).num_rows
    else:
        rows = sum(b.num_rows for b in scan.to_arrow_batch_reader())
    seconds = time.perf_counter() - start
    assert rows == expected, (rows, expected)
    figures = {
        "s": seconds,
        "pool": (pool.max_memory() or 0) - (base_pool or 0),
        "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "reads": sum(io.opened[p] for p in delete_paths),
    }
    print(json.dumps(figures))


def run_child(src: str, uri: str, route: str, expected: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "bench.bench_equality_deletes", "--child", uri, "--route", route]
    cmd += ["--expected", str(expected)]
    out = subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="data files")
    parser.add_argument("--rows", type=int, default=5_000, help="rows per data file")
    parser.add_argument("--keys", type=int, default=200_000, help="keys in the equality delete file")
    parser.add_argument("--runs", type=int, default=3, help="scans per src and route, in turns")
    parser.add_argument("--src", default=str(ROOT / "src"), help="icefloe src directories, comma-separated")
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--route", choices=ROUTES, help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.route, args.expected)
        return 0
    sources = [s.strip() for s in args.src.split(",") if s.strip()]
    print_environment(
        "Scan with one equality delete file covering every data file",
        command_line("bench.bench_equality_deletes", argv),
        {
            "files": args.files,
            "rows": args.rows,
            "keys": args.keys,
            "runs": args.runs,
            "src": ", ".join(sources),
        },
    )
    results: dict[tuple[str, str], list[dict[str, float]]] = {(r, s): [] for r in ROUTES for s in sources}
    with workspace(args.dir, "bench-equality-deletes-") as work:
        log("building the table ...")
        uri, expected = build(work, args.files, args.rows, args.keys)
        for run in range(args.runs):
            for route in ROUTES:
                for src in sources:  # in turns
                    log(f"run {run + 1}: {route} {src}")
                    results[route, src].append(run_child(src, uri, route, expected))
    rows = [
        (
            route,
            src,
            f"{statistics.median(f['s'] for f in figures) * 1000:.0f}",
            f"{max(f['pool'] for f in figures) / 2**20:.1f}",
            f"{max(f['rss'] for f in figures) / 1024:.0f}",
            f"{max(f['reads'] for f in figures):.0f}",
        )
        for (route, src), figures in results.items()
    ]
    print_table(
        f"one scan of {args.files} files x {args.rows} rows under one equality delete file of "
        f"{args.keys} keys (median ms, max peaks of {args.runs} runs)",
        ["route", "src", "median ms", "arrow pool peak MiB", "peak RSS MiB", "delete file reads"],
        rows,
    )
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
