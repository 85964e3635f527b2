"""Spark routes of icefloe against plain Spark Parquet on the same data, in the same run.

    .venv/bin/python -m bench.bench_spark [--rows 20000000] [--files 16] [--runs 3]

Writes: ``icefloe.spark.write_table`` (append, one snapshot) vs ``df.write.parquet``; also a
day-partitioned table vs ``partitionBy``. Reads of the *same* data files: ``read_table`` (plan in
icefloe, native Parquet reader) and the ``icefloe`` Python data source vs ``spark.read.parquet`` of
the table's files, for a full scan, a one-column aggregate and a selective filter (one file of N).
Prints medians and icefloe/native ratios (machines drift ±40% between runs: compare inside a run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any


def _median(fn: Callable[[], Any], runs: int, setup: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(runs):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _pair(
    route: Callable[[], Any],
    base: Callable[[], Any],
    runs: int,
    route_setup: Callable[[], Any] | None = None,
    base_setup: Callable[[], Any] | None = None,
) -> tuple[float, float]:
    """Medians of two routes, run interleaved after one warm-up each (so drift hits both alike)."""
    for fn, setup in ((base, base_setup), (route, route_setup)):
        if setup is not None:
            setup()
        fn()
    route_times, base_times = [], []
    for _ in range(runs):
        base_times.append(_median(base, 1, base_setup))
        route_times.append(_median(route, 1, route_setup))
    return statistics.median(route_times), statistics.median(base_times)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table of medians and ratios."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed after)")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from icefloe.spark import create_table, read_table, session, write_table
    from icefloe.spark.read import plan_read
    from icefloe.spark.runtime import resolve_catalog

    work = args.dir or tempfile.mkdtemp(prefix="icefloe-bench-spark-")
    os.makedirs(work, exist_ok=True)
    spark = session(
        app_name="icefloe-bench",
        master=args.master,
        catalog_uri=f"sqlite:///{work}/catalog.db",
        warehouse=f"{work}/warehouse",
        **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": str(args.files)},
    )
    spark.sparkContext.setLogLevel("ERROR")
    catalog = resolve_catalog(spark, None)
    if not catalog.namespace_exists(("bench",)):
        catalog.create_namespace(("bench",))
    for name in ("bench.events", "bench.daily"):
        if catalog.table_exists(name):
            catalog.drop_table(name, purge=True)

    n, files = args.rows, args.files
    source = spark.range(0, n, 1, files).select(
        F.col("id"),
        F.timestamp_micros(F.lit(1_704_067_200_000_000) + F.col("id") * 7_919 % 2_592_000_000_000).alias(
            "ts"
        ),
        F.concat(F.lit("key-"), (F.col("id") % 1000).cast("string")).alias("k"),
        (F.col("id") % 9973 * 0.25).alias("x"),
        ((F.col("id") % 100_000) / 100).cast("decimal(10,2)").alias("amount"),
    )
    cached = source.cache()
    cached.count()
    ddl = "id BIGINT, ts TIMESTAMP, k STRING, x DOUBLE, amount DECIMAL(10,2)"
    results: list[tuple[str, float, float]] = []

    # ---- writes -----------------------------------------------------------------------------
    plain_dir = f"{work}/plain"

    def plain_setup() -> None:
        shutil.rmtree(plain_dir, ignore_errors=True)

    def plain_write() -> None:
        cached.write.option("compression", "zstd").parquet(plain_dir)

    def recreate(name: str, partitioned_by: list[str]) -> Callable[[], None]:
        def setup() -> None:
            if catalog.table_exists(name):
                catalog.drop_table(name, purge=True)
            create_table(spark, name, ddl, partitioned_by=partitioned_by)

        return setup

    ice, nat = _pair(
        lambda: write_table(cached, "bench.events"),
        plain_write,
        args.runs,
        recreate("bench.events", []),
        plain_setup,
    )
    results.append(("append, unpartitioned", ice, nat))

    daily_dir = f"{work}/plain-daily"

    def plain_daily() -> None:
        (
            cached.withColumn("day", F.to_date("ts"))
            .repartition("day")
            .write.partitionBy("day")
            .option("compression", "zstd")
            .parquet(daily_dir)
        )

    ice, nat = _pair(
        lambda: write_table(cached, "bench.daily"),
        plain_daily,
        1,
        recreate("bench.daily", ["days(ts)"]),
        lambda: shutil.rmtree(daily_dir, ignore_errors=True),
    )
    results.append(("append, partitioned by day", ice, nat))
    cached.unpersist()

    # ---- reads of the same files ----------------------------------------------------------------
    table = catalog.load_table("bench.events")
    paths = plan_read(table).files
    lo, hi = n // 2, n // 2 + n // (files * 4)
    flt = f"id >= {lo} and id < {hi}"

    def native() -> Any:
        return spark.read.parquet(*paths)

    def ice() -> Any:
        return read_table(spark, "bench.events")

    def ds() -> Any:
        return spark.read.format("icefloe").load("bench.events")

    def full(make: Callable[[], Any]) -> Callable[[], None]:
        return lambda: make().write.format("noop").mode("overwrite").save()

    def one_col(make: Callable[[], Any]) -> Callable[[], None]:
        return lambda: make().agg(F.sum("x")).collect()

    def selective(make: Callable[[], Any], pushed: bool = False) -> Callable[[], None]:
        if pushed:
            return lambda: read_table(spark, "bench.events", filter=flt).count()
        return lambda: make().where(f"id >= {lo} AND id < {hi}").count()

    for label, route, base in [
        ("read_table full scan", full(ice), full(native)),
        ("read_table sum(x)", one_col(ice), one_col(native)),
        ("read_table id range (1 of N files)", selective(ice, pushed=True), selective(native)),
        ("data source full scan", full(ds), full(native)),
        ("data source sum(x)", one_col(ds), one_col(native)),
        ("data source id range", selective(ds), selective(native)),
    ]:
        ice, nat = _pair(route, base, args.runs)
        results.append((label, ice, nat))

    print(f"\nicefloe Spark benchmark: {n:,} rows, {files} files, {args.master}, median of {args.runs}")
    print(f"{'operation':38s} {'icefloe s':>10s} {'native s':>10s} {'ratio':>7s}")
    for label, ice_s, nat_s in results:
        print(f"{label:38s} {ice_s:10.2f} {nat_s:10.2f} {ice_s / nat_s:6.2f}x")
    spark.stop()
    if args.dir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
