"""How far icefloe's object-store read route is from Spark's native Parquet reader, same files.

    .venv/bin/python -m bench.bench_read_routes [--rows 4000000] [--files 8] [--runs 3]

Spark reads ``s3://`` tables through icefloe's reader inside ``mapInArrow`` tasks (Hadoop's S3A
connector cannot be installed here, see ``icefloe.spark.storage``), and local tables through
Spark's own Parquet reader. With no native S3 path to compare against, this measures the two
routes on one *local* table: the same read plan executed once as planned (native) and once with
every file moved to the Python route, in turns, after one warm-up each. Object-store latency comes
on top of both routes alike; what this isolates is the per-row cost of the Python route.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from bench.bench_spark import _pair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from icefloe.spark import create_table, session, write_table
    from icefloe.spark.read import dataframe_for_plan, plan_read
    from icefloe.spark.runtime import resolve_catalog

    work = tempfile.mkdtemp(prefix="icefloe-bench-routes-")
    try:
        spark = session(
            app_name="icefloe-bench-routes",
            master=args.master,
            catalog_uri=f"sqlite:///{work}/catalog.db",
            warehouse=f"{work}/warehouse",
            **{"spark.sql.shuffle.partitions": str(args.files)},
        )
        spark.sparkContext.setLogLevel("ERROR")
        catalog = resolve_catalog(spark, None)
        catalog.create_namespace(("bench",))
        create_table(spark, "bench.events", "id BIGINT, k STRING, x DOUBLE, amount DECIMAL(10,2)")
        source = spark.range(0, args.rows, 1, args.files).select(
            F.col("id"),
            F.concat(F.lit("key-"), (F.col("id") % 1000).cast("string")).alias("k"),
            (F.col("id") % 9973 * 0.25).alias("x"),
            ((F.col("id") % 100_000) / 100).cast("decimal(10,2)").alias("amount"),
        )
        write_table(source, "bench.events")
        table = catalog.load_table("bench.events")

        def plans(columns: list[str] | None) -> tuple[Any, Any]:
            native = plan_read(table, columns=columns)
            assert native.native and not native.python, "the local table should read natively"
            python = dataclasses.replace(native, native=[], python=list(native.native))
            return native, python

        full_native, full_python = plans(None)
        sum_native, sum_python = plans(["x"])

        def full(plan: Any) -> Callable[[], None]:
            return lambda: dataframe_for_plan(spark, plan).write.format("noop").mode("overwrite").save()

        def total(plan: Any) -> Callable[[], Any]:
            return lambda: dataframe_for_plan(spark, plan).agg(F.sum("x")).collect()[0][0]

        assert total(sum_native)() == total(sum_python)(), "the two routes read different rows"
        rows = [
            ("full scan (noop sink)", *_pair(full(full_python), full(full_native), args.runs)),
            ("projection sum(x)", *_pair(total(sum_python), total(sum_native), args.runs)),
        ]
        load = os.getloadavg()
        print(
            f"\nread routes on one local table: {args.rows:,} rows, {len(full_native.files)} files, "
            f"{args.master}, median of {args.runs} in turns; load {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}"
        )
        print(f"{'query':24s} {'python route':>13s} {'native':>9s} {'ratio':>7s}")
        for label, python_s, native_s in rows:
            print(f"{label:24s} {python_s:12.2f}s {native_s:8.2f}s {python_s / native_s:6.2f}x")
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
