"""The fixed cost of a small Spark append: icefloe's routes vs plain Spark Parquet, per partitioning.

    .venv/bin/python -m bench.bench_spark_small_append [--rows 10000] [--runs 5] [--master local[2]]
        [--routes write_table,native,arrow,sql,datasource,parquet] [--cases unpartitioned,identity(p)]

Data engineers run many small jobs (hourly loads, micro-batches), so what one append of 10,000 rows
costs matters as much as throughput. Each case appends a freshly generated DataFrame (computed from
``spark.range`` like the main job's, never cached) of ``--rows`` rows through:

- ``write_table``: ``icefloe.spark.write_table(df, ident)``, the route it chooses by itself;
- ``native`` / ``arrow``: the same call with its route forced through the Spark conf
  ``spark.icefloe.write.small-input-bytes`` (``0``: Spark's Parquet writer; a huge value: icefloe's
  writer in one ``mapInArrow`` task), to find where one route overtakes the other;
- ``sql``: ``icefloe.spark.sql(spark, "INSERT INTO icefloe.<ident> SELECT * FROM src")``;
- ``datasource``: ``df.write.format("icefloe").option("table", ident).mode("append").save()``;
- ``parquet``: plain ``df.write.partitionBy(...).parquet(...)`` of the same rows (the floor), with
  Spark expressions standing in for the Iceberg transforms (``to_date``, ``pmod(hash(...))``),

into a table that is unpartitioned, ``identity(p)`` (56 values), ``days(pickup_at), bucket(4,
vendor)`` (14 x 4 = 56) or ``bucket(50, trip_id)``. All routes and cases run in turns, after one
warm-up each, on one session; medians are printed with the Spark jobs and tasks one append ran
(counted by the status tracker through a job group per append). The icefloe tables' row counts are
checked at the end (exit status 1 when one is wrong). Plain Parquet writes one file per partition
per input task (2 here); icefloe clusters a partition's rows into one task (one file).

Old vs new: run this script with ``PYTHONPATH`` pointing at each tree, in turns.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from bench._common import command_line, load_average, spark_bench_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SCHEMA = "trip_id BIGINT, pickup_at TIMESTAMP, vendor STRING, passengers INT, distance_km DOUBLE, p INT"
CASES: dict[str, tuple[list[str], list[str]]] = {
    # case: (icefloe partitioning, plain Parquet partition columns as Spark expressions)
    "unpartitioned": ([], []),
    "identity(p)": (["p"], ["p AS __p"]),
    "day+bucket(4)": (
        ["days(pickup_at)", "bucket(4, vendor)"],
        ["to_date(pickup_at) AS __d", "pmod(hash(vendor), 4) AS __b"],
    ),
    "bucket(50)": (["bucket(50, trip_id)"], ["pmod(hash(trip_id), 50) AS __b"]),
}
ROUTES = ("write_table", "sql", "datasource", "parquet")
FORCED_ROUTES = {"native": "0", "arrow": str(2**62)}
"""Routes of ``write_table`` forced through ``spark.icefloe.write.small-input-bytes``."""
START_SECONDS = 1_767_225_600  # 2026-01-01T00:00:00Z
DAY_SECONDS = 86_400


def generate(spark: SparkSession, first_id: int, rows: int) -> DataFrame:
    """Deterministic trips over 14 days, 6 vendors and 56 values of ``p`` (computed by executors)."""
    uniform = "(pmod(hash(id, {0}), 1000003) / 1000003.0)"
    return spark.range(first_id, first_id + rows).selectExpr(
        "id AS trip_id",
        f"timestamp_seconds({START_SECONDS} + CAST({uniform.format(1)} * {DAY_SECONDS * 14} AS BIGINT))"
        " AS pickup_at",
        "element_at(array('acme','blue','cab co','dash','east','fleet'), CAST(id % 6 AS INT) + 1) AS vendor",
        "CAST(1 + id % 6 AS INT) AS passengers",
        f"CAST(round({uniform.format(7)} * 20, 3) AS DOUBLE) AS distance_km",
        "CAST(id % 56 AS INT) AS p",
    )


def table_name(case: str, route: str) -> str:
    """The icefloe table a case and route append to."""
    slug = "".join(c if c.isalnum() else "_" for c in case).strip("_")
    return f"bench.{slug}_{route}"


def main(argv: list[str] | None = None) -> int:
    """Run every case and route in turns and print medians, ratios to plain Parquet, jobs and tasks."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--routes", default=",".join(ROUTES), help=f"comma-separated, of {(*ROUTES, *FORCED_ROUTES)}"
    )
    parser.add_argument("--cases", default=",".join(CASES), help="a comma-separated subset of them")
    args = parser.parse_args(argv)
    routes = [r for r in args.routes.split(",") if r]
    cases = [c for c in args.cases.split(",") if c]

    import icefloe
    from icefloe.spark import create_table, sql, write_table
    from icefloe.spark.runtime import resolve_catalog, session_conf

    print(f"command:  {command_line('bench.bench_spark_small_append', argv)}")
    print(f"icefloe:  {os.path.dirname(icefloe.__file__)}")
    work = tempfile.mkdtemp(prefix="icefloe-bench-small-append-")
    spark = spark_bench_session("bench-small-append", args.master, work)
    tracker = spark.sparkContext.statusTracker()
    for case in cases:
        partitioned_by = CASES[case][0]
        for route in routes:
            if route != "parquet":
                create_table(spark, table_name(case, route), SCHEMA, partitioned_by=partitioned_by)

    def append(case: str, route: str, first_id: int) -> Callable[[], None]:
        df = generate(spark, first_id, args.rows)
        ident = table_name(case, route)
        if route == "write_table":
            return lambda: (write_table(df, ident), None)[1]
        if route in FORCED_ROUTES:
            forced = {"spark.icefloe.write.small-input-bytes": FORCED_ROUTES[route]}

            def forced_append() -> None:
                with session_conf(spark, forced):
                    write_table(df, ident)

            return forced_append
        if route == "sql":
            df.createOrReplaceTempView("src")
            return lambda: (sql(spark, f"INSERT INTO icefloe.{ident} SELECT * FROM src"), None)[1]
        if route == "datasource":
            return lambda: df.write.format("icefloe").option("table", ident).mode("append").save()
        extra = CASES[case][1]
        out = df.selectExpr("*", *extra) if extra else df
        writer = out.write.mode("overwrite")
        if extra:
            writer = writer.partitionBy(*[e.rsplit(" AS ", 1)[1] for e in extra])
        target = os.path.join(work, "parquet", case.replace("(", "_").replace(")", "_"))
        return lambda: writer.parquet(target)

    timings: dict[tuple[str, str], list[float]] = {}
    work_done: dict[tuple[str, str], tuple[int, int]] = {}
    appended: dict[tuple[str, str], int] = {}
    print(f"load avg: {load_average()} at start")
    for run in range(args.runs + 1):  # run 0 is the warm-up
        for case in cases:
            for route in routes:
                key = (case, route)
                job = append(case, route, first_id=run * args.rows)
                group = f"{case}|{route}|{run}"
                spark.sparkContext.setJobGroup(group, group)
                t0 = time.perf_counter()
                job()
                elapsed = time.perf_counter() - t0
                appended[key] = appended.get(key, 0) + args.rows
                if run:
                    timings.setdefault(key, []).append(elapsed)
                    work_done[key] = _jobs_and_tasks(tracker, group)
    spark.sparkContext.setJobGroup("", "")
    print(f"load avg: {load_average()} at the end")

    print(f"\nappend of {args.rows:,} rows, medians of {args.runs} runs in turns ({args.master})")
    print(f"{'case':15s} {'route':12s} {'median':>8s} {'vs parquet':>10s} {'jobs':>5s} {'tasks':>6s}")
    failed = False
    catalog = resolve_catalog(spark, None)
    for case in cases:
        floor = statistics.median(timings[(case, "parquet")]) if "parquet" in routes else None
        for route in routes:
            key = (case, route)
            median = statistics.median(timings[key])
            ratio = f"{median / floor:.2f}x" if floor else "-"
            jobs, tasks = work_done[key]
            mark = ""
            if route != "parquet":
                snapshot = catalog.load_table(table_name(case, route)).current_snapshot()
                total = int(snapshot.summary.get("total-records", "-1")) if snapshot is not None else 0
                if total != appended[key]:
                    mark, failed = f"  (!) {total} rows, expected {appended[key]}", True
            print(f"{case:15s} {route:12s} {median:7.2f}s {ratio:>10s} {jobs:5d} {tasks:6d}{mark}")
    if all(r in routes for r in FORCED_ROUTES):
        print("\nforced routes side by side (native / arrow: above 1 means arrow is faster)")
        for case in cases:
            native = statistics.median(timings[(case, "native")])
            arrow = statistics.median(timings[(case, "arrow")])
            ratio = native / arrow
            print(f"{case:15s} native {native:6.2f}s  arrow {arrow:6.2f}s  native / arrow {ratio:5.2f}x")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


def _jobs_and_tasks(tracker: object, group: str) -> tuple[int, int]:
    """Spark jobs of a job group and the tasks of their stages (skipped stages count none)."""
    jobs = tracker.getJobIdsForGroup(group)  # type: ignore[attr-defined]
    tasks = 0
    for job in jobs:
        info = tracker.getJobInfo(job)  # type: ignore[attr-defined]
        for stage in info.stageIds if info is not None else ():
            stage_info = tracker.getStageInfo(stage)  # type: ignore[attr-defined]
            if stage_info is not None:
                tasks += stage_info.numCompletedTasks
    return len(jobs), tasks


if __name__ == "__main__":
    raise SystemExit(main())
