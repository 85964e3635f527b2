"""The route ``write_table`` chooses for inputs Spark underestimates, and what choosing costs.

    .venv/bin/python -m bench.bench_spark_write_route [--rows 4000000] [--runs 3] [--master local[2]]

Spark estimates a file scan by the compressed size of its files and, without cost-based
optimization, an ``explode`` by its input, so both look tiny whatever they hold. Each case appends
``--rows`` rows through ``write_table`` into a fresh partitioned table (``bucket(8, id)``):

- ``explode``: ``explode(sequence(1, rows))`` over one row (Spark's estimate: a few bytes);
- ``parquet``: a scan of Parquet files holding the same rows of repetitive values (a few kB);
- ``range``: ``spark.range(20_000)``, which Spark does count: it should take the Arrow route on
  either tree, so its time shows the new route check costs the small append nothing measurable.

Printed per case: the route taken (``StagedFiles.route``), the median append time and the median
time of ``choose_route`` alone (the plan walk, on the driver). Old vs new: run this script with
``PYTHONPATH`` pointing at each tree, in turns; on a cluster the gap grows with the executors the
one Arrow task leaves idle.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from typing import TYPE_CHECKING

from bench._common import command_line, load_average, spark_bench_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CASES = ("explode", "parquet", "range")
SCHEMA = "id BIGINT NOT NULL, name STRING"
ROUTE_CHECKS = 20


def inputs(spark: SparkSession, rows: int, work: str) -> dict[str, DataFrame]:
    """Each case's DataFrame (the Parquet source is written once, one file)."""
    from pyspark.sql import functions as F

    source = os.path.join(work, "repetitive")
    spark.range(0, rows, 1, 1).select(
        (F.col("id") % 1000).alias("id"), F.lit("same").alias("name")
    ).write.parquet(source)
    return {
        "explode": spark.range(1).select(
            F.explode(F.sequence(F.lit(1).cast("bigint"), F.lit(rows).cast("bigint"))).alias("id"),
            F.lit("e").alias("name"),
        ),
        "parquet": spark.read.parquet(source),
        "range": spark.range(20_000).select("id", F.lit("r").alias("name")),
    }


def main(argv: list[str] | None = None) -> int:
    """Append every case ``runs`` times in turns (after a warm-up) and print medians and routes."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    import icefloe
    from icefloe.spark import create_table
    from icefloe.spark.runtime import resolve_catalog
    from icefloe.spark.write import commit_staged, stage_dataframe
    from icefloe.spark.write_route import choose_route, estimated_input_bytes

    print(f"command:  {command_line('bench.bench_spark_write_route', argv)}")
    print(f"icefloe:  {os.path.dirname(icefloe.__file__)}")
    work = tempfile.mkdtemp(prefix="icefloe-bench-write-route-")
    spark = spark_bench_session("bench-write-route", args.master, work)
    catalog = resolve_catalog(spark, None)
    frames = inputs(spark, args.rows, work)
    times: dict[str, list[float]] = {c: [] for c in CASES}
    checks: dict[str, list[float]] = {c: [] for c in CASES}
    routes: dict[str, set[str]] = {c: set() for c in CASES}
    failed = False
    print(f"load avg: {load_average()} at start")
    for run in range(args.runs + 1):  # run 0 is the warm-up
        for case in CASES:
            df = frames[case]
            ident = f"bench.{case}_{run}"
            create_table(spark, ident, SCHEMA, partitioned_by=["bucket(8, id)"])
            table = catalog.load_table(ident)
            t0 = time.perf_counter()
            for _ in range(ROUTE_CHECKS):
                choose_route(df, table.metadata.properties)
            check = (time.perf_counter() - t0) / ROUTE_CHECKS
            t0 = time.perf_counter()
            staged = stage_dataframe(df, table)
            commit_staged(table, staged, "append")
            elapsed = time.perf_counter() - t0
            snapshot = catalog.load_table(ident).current_snapshot()
            want = 20_000 if case == "range" else args.rows
            got = int(snapshot.summary["total-records"]) if snapshot is not None else 0
            failed |= got != want
            if run:
                times[case].append(elapsed)
                checks[case].append(check)
                routes[case].add(staged.route)
    print(f"load avg: {load_average()} at the end")
    print(f"\nappend through write_table, {args.rows:,} rows, medians of {args.runs} runs ({args.master})")
    print(f"{'case':8s} {'estimate':>10s} {'route':7s} {'append':>8s} {'route check':>12s}")
    for case in CASES:
        estimate = estimated_input_bytes(frames[case])
        print(
            f"{case:8s} {estimate!s:>10s} {','.join(sorted(routes[case])):7s} "
            f"{statistics.median(times[case]):7.2f}s {statistics.median(checks[case]) * 1000:10.2f}ms"
        )
    if failed:
        print("(!) a table's row count is wrong")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
