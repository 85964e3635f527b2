"""An insert-only copy-on-write MERGE (``WHEN NOT MATCHED THEN INSERT`` alone), code against code.

    python -m bench.bench_merge_insert_only                                  # this checkout's src
    python -m bench.bench_merge_insert_only --src /tmp/old/src,src --rounds 2

The deduplicating load users write most (``MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED
THEN INSERT *``) changes no target file: it needs the target rows only to find which source rows
are new. Copy-on-write used to join the target whole (a full outer join keeping every scanned
target row, as a MERGE that rewrites files must); now it joins only the target rows a source row
meets.

The table (format v2, ``write.merge.mode=copy-on-write``) has ``--rows`` rows in 8 files, ids
interleaved; the source ``--source-rows`` ids every 100th from 0, so about half are already in the
table. Each arm runs in its own process (``--child``) with one local Spark session: one warm-up
MERGE and ``--runs`` timed ones, the table set back to its base snapshot after each, and every
run's row count checked. With several ``--src`` directories (each an icefloe ``src`` put first on
``PYTHONPATH``) the arms take turns, ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench._common import command_line, load_average, log, print_environment, print_table, spark_bench_session

ROOT = Path(__file__).resolve().parent.parent


def child(rows: int, source_rows: int, runs: int, master: str) -> dict[str, float]:
    """Build the table in a fresh warehouse and time the MERGEs; seconds per run."""
    import pyarrow as pa

    from icefloe.spark import merge_into
    from icefloe.spark.runtime import resolve_catalog

    work = tempfile.mkdtemp(prefix="icefloe-bench-merge-insert-only-")
    spark = spark_bench_session("bench-merge-insert-only", master, work)
    catalog = resolve_catalog(spark, None)
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    table = catalog.create_table(
        "bench.t", arrow, properties={"format-version": "2", "write.merge.mode": "copy-on-write"}
    )
    for f in range(8):
        ids = list(range(f, rows, 8))
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{x}" for x in ids]}))
    base = catalog.load_table("bench.t").metadata.current_snapshot_id
    assert base is not None
    source = spark.createDataFrame([(i * 100, f"s{i}") for i in range(source_rows)], "id long, v string")
    source = source.cache()
    source.count()
    new_rows = sum(1 for i in range(source_rows) if i * 100 >= rows)
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        merge_into(source, "bench.t", on="id", when_matched_update=False)
        times.append(time.perf_counter() - start)
        merged = catalog.load_table("bench.t")
        count = merged.scan().to_arrow().num_rows
        if count != rows + new_rows:
            raise SystemExit(f"the MERGE left {count} rows, expected {rows + new_rows}")
        merged.manage_snapshots().set_current_snapshot(base).commit()
    spark.stop()
    timed = times[1:]
    return {"median": statistics.median(timed), "min": min(timed), "max": max(timed)}


def run_arm(src: str, args: argparse.Namespace) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(src).resolve()), str(ROOT)]))
    argv = [sys.executable, "-m", "bench.bench_merge_insert_only", "--child", *_sizes(args)]
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"arm {src} failed:\n{out.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _sizes(args: argparse.Namespace) -> list[str]:
    return [
        f"--rows={args.rows}",
        f"--source-rows={args.source_rows}",
        f"--runs={args.runs}",
        f"--master={args.master}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--source-rows", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--src", default="src", help="comma-separated icefloe src directories, in turns")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.rows, args.source_rows, args.runs, args.master)))
        return 0
    command = command_line("bench.bench_merge_insert_only", argv)
    settings = {"rows": args.rows, "source rows": args.source_rows, "runs": args.runs, "master": args.master}
    print_environment("Insert-only copy-on-write MERGE", command, settings)
    rows = []
    for round_no in range(1, args.rounds + 1):
        for src in args.src.split(","):
            load = load_average()
            log(f"round {round_no}: {src} (load {load})")
            result = run_arm(src, args)
            seconds = [f"{result[k]:.2f}" for k in ("median", "min", "max")]
            rows.append([round_no, src, load, *seconds])
    title = (
        f"insert-only copy-on-write MERGE of {args.source_rows:,} source rows into {args.rows:,} rows "
        f"in 8 files, {args.runs} timed runs per arm"
    )
    print_table(title, ["round", "src", "load", "median s", "min s", "max s"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
