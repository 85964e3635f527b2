"""``icefloe.spark.sql`` against plain Spark on the same data files, in the same run.

    .venv/bin/python -m bench.bench_sql [--rows 20000000] [--files 16] [--runs 5]

(a) SELECT through ``icefloe.spark.sql`` on an icefloe table vs ``spark.read.parquet`` of the
    table's own data files: a full scan (every column, into Spark's ``noop`` sink), a one-column
    aggregate and a selective filter (one file of N; icefloe prunes files, Spark reads footers).
(b) ``MERGE INTO`` through SQL vs the same merge through the Python ``merge_into`` (1% of the rows
    updated, as many inserted); the table is reset to the same snapshot before every run.
(c) Front-end cost of one statement: sqlglot parse, and ``icefloe.spark.sql(...)`` up to the
    analysed DataFrame (parse + icefloe planning + view + Spark analysis) vs ``spark.sql`` of the
    same query on a temporary view of the Parquet files, interleaved. A repeated statement on an
    unchanged table reuses its planned read (``statements/read_cache``).
Medians of interleaved runs after one warm-up each; ratios are icefloe / baseline. A line marked
(!) misses its target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench._common import command_line

TARGET_SELECT, TARGET_MERGE, TARGET_OVERHEAD_MS = 1.10, 1.05, 20.0


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _pair(
    route: Callable[[], Any], base: Callable[[], Any], runs: int, setup: Callable[[], Any] | None = None
) -> tuple[float, float]:
    """Medians of two routes, interleaved after one warm-up each (drift hits both alike)."""
    for fn in (base, route):
        if setup is not None:
            setup()
        fn()
    route_times, base_times = [], []
    for _ in range(runs):
        if setup is not None:
            setup()
        base_times.append(_timed(base))
        if setup is not None:
            setup()
        route_times.append(_timed(route))
    return statistics.median(route_times), statistics.median(base_times)


def main(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark (on ``spark`` when given, else a fresh local session); print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--overhead-runs", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir)")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from icefloe.spark import merge_into, sql, write_table
    from icefloe.spark.read import plan_read
    from icefloe.spark.runtime import resolve_catalog, session_conf, spark_location
    from icefloe.spark.statements.parse import parse_statement
    from icefloe.spark.views import create_table
    from icefloe.spark.write_route import SMALL_INPUT_BYTES_CONF

    print(f"command:  {command_line('bench.bench_sql', argv)}")
    if spark is None:
        from icefloe.spark import session

        work = args.dir or tempfile.mkdtemp(prefix="icefloe-bench-sql-")
        os.makedirs(work, exist_ok=True)
        spark = session(
            app_name="icefloe-bench-sql",
            master=args.master,
            catalog_uri=f"sqlite:///{work}/catalog.db",
            warehouse=f"{work}/warehouse",
            **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": str(args.files)},
        )
        spark.sparkContext.setLogLevel("ERROR")
    catalog = resolve_catalog(spark, None)
    if not catalog.namespace_exists(("bench_sql",)):
        catalog.create_namespace(("bench_sql",))
    for name in ("bench_sql.events", "bench_sql.merged"):
        if catalog.table_exists(name):
            catalog.drop_table(name, purge=True)

    n, files = args.rows, args.files
    source = spark.range(0, n, 1, files).select(
        F.col("id"),
        F.concat(F.lit("key-"), (F.col("id") % 1000).cast("string")).alias("k"),
        (F.col("id") % 9973 * 0.25).alias("x"),
        F.timestamp_micros(F.lit(1_704_067_200_000_000) + F.col("id") * 7_919).alias("ts"),
    )
    ddl = "id BIGINT, k STRING, x DOUBLE, ts TIMESTAMP"
    create_table(spark, "bench_sql.events", ddl)
    # Spark's own writer, one file per input partition: (a) reads one file of ``files`` (a small
    # input would otherwise take the one-task Arrow route and land in one file)
    with session_conf(spark, {SMALL_INPUT_BYTES_CONF: "0"}):
        write_table(source, "bench_sql.events")
    table = catalog.load_table("bench_sql.events")
    paths = [spark_location(p) for p in plan_read(table).files]
    native = spark.read.parquet(*paths)
    native.createOrReplaceTempView("bench_sql_native")
    lo, hi = n // files // 4, n // files // 4 + max(1, n // files // 100)
    failures = 0

    print(f"\n## (a) SELECT: {n:,} rows in {len(paths)} files, medians of {args.runs} runs")
    print(f"{'query':<34}{'icefloe.sql':>12}{'parquet':>10}{'ratio':>8}   files read")
    queries = [
        ("full scan (noop sink)", "SELECT * FROM {t}", "noop"),
        ("projection: sum(x)", "SELECT sum(x) FROM {t}", "collect"),
        (
            f"selective: id in [{lo}, {hi}]",
            f"SELECT count(*), sum(x) FROM {{t}} WHERE id BETWEEN {lo} AND {hi}",
            "collect",
        ),
    ]
    from icefloe.spark.statements.names import SqlContext
    from icefloe.spark.statements.query import rewrite_reads

    for label, text, how in queries:
        ice_text, nat_text = text.format(t="icefloe.bench_sql.events"), text.format(t="bench_sql_native")

        def run(df: Any, how: str = how) -> None:
            if how == "noop":
                df.write.format("noop").mode("overwrite").save()
            else:
                df.collect()

        def ice_route(q: str = ice_text) -> None:
            run(sql(spark, q))

        def native_route(q: str = nat_text) -> None:
            run(spark.sql(q))

        ice, nat = _pair(ice_route, native_route, args.runs)
        stmt = parse_statement(ice_text)
        assert stmt.tree is not None
        rewritten = rewrite_reads(SqlContext.for_session(spark), stmt.tree)
        read = sum(len(p.files) for p in rewritten.plans)
        rewritten.drop(SqlContext.for_session(spark))
        ratio = ice / nat
        mark = "" if ratio <= TARGET_SELECT else " (!)"
        failures += bool(mark)
        print(f"{label:<34}{ice:>11.3f}s{nat:>9.3f}s{ratio:>7.2f}x   {read}/{len(paths)}{mark}")
        if (
            sorted(map(tuple, sql(spark, ice_text).collect()))
            != sorted(map(tuple, spark.sql(nat_text).collect()))
        ) and how != "noop":
            print(f"   (!) results differ for {label}")
            failures += 1

    # ---- (b) MERGE --------------------------------------------------------------------------
    create_table(spark, "bench_sql.merged", ddl)
    with session_conf(spark, {SMALL_INPUT_BYTES_CONF: "0"}):
        write_table(source, "bench_sql.merged")
    merged = catalog.load_table("bench_sql.merged")
    base_snapshot = merged.current_snapshot()
    assert base_snapshot is not None
    step = 100
    changes = source.where(F.col("id") % step == 0).select(
        F.col("id"), F.lit("changed").alias("k"), (F.col("x") + 1).alias("x"), F.col("ts")
    )
    inserts = source.where(F.col("id") % step == 0).select((F.col("id") + n).alias("id"), "k", "x", "ts")
    changes.unionByName(inserts).cache().createOrReplaceTempView("bench_sql_changes")
    change_df = spark.table("bench_sql_changes")
    change_df.count()

    def reset() -> None:
        t = catalog.load_table("bench_sql.merged")
        if t.metadata.current_snapshot_id != base_snapshot.snapshot_id:
            t.manage_snapshots().set_current_snapshot(base_snapshot.snapshot_id).commit()

    merge_sql = (
        "MERGE INTO icefloe.bench_sql.merged t USING bench_sql_changes s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    ice, py = _pair(
        lambda: sql(spark, merge_sql).collect(),
        lambda: merge_into(change_df, "bench_sql.merged", on="id"),
        args.runs,
        reset,
    )
    changed = change_df.count()
    print(
        f"\n## (b) MERGE of {changed:,} source rows ({changed // 2:,} updates, "
        f"{changed // 2:,} inserts) into {n:,} rows"
    )
    print(f"{'route':<34}{'SQL':>12}{'merge_into':>11}{'ratio':>8}")
    ratio = ice / py
    mark = "" if ratio <= TARGET_MERGE else " (!)"
    print(f"{'MERGE INTO ... UPDATE SET * / INSERT *':<34}{ice:>11.3f}s{py:>10.3f}s{ratio:>7.2f}x{mark}")
    reset()
    got = sql(spark, merge_sql).collect()[0]
    if (got["num_updated_rows"], got["num_inserted_rows"]) != (changed // 2, changed // 2):
        print(f"   (!) merge counted {got}")
        failures += 1

    # ---- (c) front-end overhead ------------------------------------------------------------------
    text = f"SELECT k, sum(x) FROM icefloe.bench_sql.events WHERE id BETWEEN {lo} AND {hi} GROUP BY k"
    plain = text.replace("icefloe.bench_sql.events", "bench_sql_native")
    parse_ms = (
        statistics.median(_timed(lambda: parse_statement(text)) for _ in range(args.overhead_runs)) * 1000
    )
    ice_s, nat_s = _pair(lambda: sql(spark, text), lambda: spark.sql(plain), args.overhead_runs)
    ice_ms, nat_ms = ice_s * 1000, nat_s * 1000
    print(f"\n## (c) front-end cost of one SELECT (no execution), medians of {args.overhead_runs}")
    print(f"sqlglot parse:                              {parse_ms:7.2f} ms")
    print(
        f"icefloe.spark.sql -> analysed DataFrame:    {ice_ms:7.2f} ms "
        f"(parse, plan {len(paths)} files, view, analysis)"
    )
    print(f"spark.sql on a Parquet view (analysis):     {nat_ms:7.2f} ms")
    overhead = ice_ms - nat_ms
    mark = "" if overhead <= TARGET_OVERHEAD_MS else " (!)"
    failures += bool(mark)
    print(
        f"overhead per statement:                     {overhead:7.2f} ms "
        f"(target <= {TARGET_OVERHEAD_MS:.0f} ms){mark}"
    )
    spark.catalog.dropTempView("bench_sql_native")
    spark.catalog.dropTempView("bench_sql_changes")
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
