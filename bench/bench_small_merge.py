"""A small Spark MERGE into a table of many files: tasks sized by what arrives vs fixed up front.

    .venv/bin/python -m bench.bench_small_merge [--partitions 56] [--rows 40000] [--runs 5]

The main job's MERGE (a few hundred rows updated and inserted, merge-on-read, into a table of a
few hundred files) took 26-32 s at 40,000 rows: its change stage ran one task per file to change
(up to ``spark.sql.shuffle.partitions``), each paying a Python worker's setup for a handful of rows
or none. With adaptive query execution on (Spark's default), icefloe's clustering repartition now
names no task count and Spark coalesces the shuffle by the bytes that arrive
(``icefloe.spark.clustering``); with it off, the count is fixed up front as before.

Workload: a table partitioned by ``p`` (``--partitions`` values), written by 4 Spark jobs so each
partition has 4 files; a source of 1% of the rows (every 100th id, value changed) plus as many new
ids; ``merge_into(..., mode="merge-on-read")``. Both arms run from the same base snapshot (main is
rolled back before each run) in turns, after one warm-up each, on one session with
``spark.sql.shuffle.partitions=200`` (Spark's default). Each run's updated/inserted counts are
checked. Both arms include the other change of the same commit (the duplicate-key check reads the
target only when the source repeats a key). Turning adaptive execution off also fixes the task
count of the MERGE's other shuffles (the duplicate-key check's aggregation, the join), as it was
for them before too: the "fixed" arm is how the whole MERGE ran before, but for that check.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from bench._common import command_line, load_average, spark_bench_session

ADAPTIVE = "spark.sql.adaptive.enabled"


def main(argv: list[str] | None = None) -> int:
    """Run both arms in turns and print their medians and ratio."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--partitions", type=int, default=56)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from icefloe.spark import create_table, merge_into, write_table
    from icefloe.spark.runtime import resolve_catalog

    print(f"command:  {command_line('bench.bench_small_merge', argv)}")
    work = tempfile.mkdtemp(prefix="icefloe-bench-small-merge-")
    spark = spark_bench_session(
        "bench-small-merge", args.master, work, **{"spark.sql.shuffle.partitions": "200"}
    )
    catalog = resolve_catalog(spark, None)
    name, n, parts = "bench.trips", args.rows, args.partitions
    create_table(spark, name, "id BIGINT NOT NULL, p INT NOT NULL, v DOUBLE", partitioned_by=["p"])
    for job in range(4):
        lo, hi = job * n // 4, (job + 1) * n // 4
        write_table(
            spark.range(lo, hi, 1, 2).select(
                "id", (F.col("id") % parts).cast("int").alias("p"), (F.col("id") * 0.5).alias("v")
            ),
            name,
        )
    table = catalog.load_table(name)
    base = table.current_snapshot().snapshot_id  # type: ignore[union-attr]
    files = len(list(table.scan().plan_files()))
    changed = max(1, n // 100)
    source = (
        spark.range(0, n, 100)
        .unionByName(spark.range(n, n + changed))
        .select("id", (F.col("id") % parts).cast("int").alias("p"), (F.col("id") * 0.5 + 1).alias("v"))
        .cache()
    )
    source.count()

    def run(adaptive: bool) -> float:
        catalog.load_table(name).manage_snapshots().set_current_snapshot(base).commit()
        spark.conf.set(ADAPTIVE, str(adaptive).lower())
        t0 = time.perf_counter()
        result = merge_into(source, name, "id", mode="merge-on-read")
        elapsed = time.perf_counter() - t0
        spark.conf.set(ADAPTIVE, "true")
        if (result.updated_rows, result.inserted_rows) != (changed, changed):
            raise SystemExit(
                f"merge: {result.updated_rows} / {result.inserted_rows}, expected {changed} / {changed}"
            )
        return elapsed

    print(f"load avg: {load_average()} at start")
    print(f"table:    {n:,} rows in {files} files ({parts} partitions)")
    print(f"source:   {changed:,} updates + {changed:,} inserts")
    for adaptive in (True, False):
        run(adaptive)  # warm-up
    timings: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.runs):
        for adaptive in (False, True):
            timings[adaptive].append(run(adaptive))
    fixed, sized = statistics.median(timings[False]), statistics.median(timings[True])
    print(f"\nmerge-on-read MERGE, medians of {args.runs} runs in turns")
    print(f"  tasks fixed up front (adaptive execution off): {fixed:.2f} s")
    print(f"  tasks sized by what arrives (adaptive, default): {sized:.2f} s")
    print(f"  ratio: {fixed / sized:.1f}x")
    print(f"load avg: {load_average()} at the end")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
