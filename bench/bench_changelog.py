"""Change reading: the streaming source against Spark's own file stream, and changelog cost.

    .venv/bin/python -m bench.bench_changelog [--quick] [--rows 20000000] [--stream-rows 8000000]

(a) Streaming read throughput, ``local[2]``: ``readStream.format("icefloe")`` on the JVM route
    (icefloe's jar: Spark's Parquet reader) and on the Python route (``stream-reader=python``)
    against ``readStream.parquet`` over the *same* data files (the table's data directory), all
    draining the whole table with ``Trigger.AvailableNow`` into the ``noop`` sink; interleaved
    runs. ``--with-floor`` adds the floor of any Python source (``bench.stream_floor``: the same
    rows already in memory as Arrow batches).
(b) Latency from a commit to its rows in a memory sink: a query with a 1-second processing-time
    trigger streams the table; the driver appends a batch of rows and waits until the query
    reports the micro-batch that carried them (or, ``--latency-observer sql``, polls the memory
    table until the rows are there); median and p90 over ``--commits`` commits, and the median
    time of each phase of those micro-batches.
(c) Changelog of one merge-on-read update of 0.1% of ``--rows`` rows (a contiguous id range,
    deletion vectors) against a plain incremental scan of the same snapshot range (planning the
    snapshot and reading the data files it added), both in Python; per row-group size.

Prints medians and ratios; exits 1 (and marks ``(!)``) when a result is wrong (row counts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench._common import (
    command_line,
    fmt_ms,
    fmt_s,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)

NAMESPACE = "bench"


def _changelog_table(catalog: Any, name: str, rows: int, files: int, row_group_bytes: str | None) -> Any:
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import DoubleType, LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), True),
        NestedField(2, "tag", StringType(), False),
        NestedField(3, "x", DoubleType(), False),
    )
    props = {
        "format-version": "3",
        "write.delete.mode": "merge-on-read",
        "write.update.mode": "merge-on-read",
    }
    if row_group_bytes:
        props["write.parquet.row-group-size-bytes"] = row_group_bytes
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    table = catalog.create_table(name, schema, properties=props)
    per_file = rows // files
    for f in range(files):
        ids = pa.array(range(f * per_file, (f + 1) * per_file), pa.int64())
        tags = pa.array([f"t{f % 7}"] * per_file, pa.string())
        x = pc.multiply(ids.cast(pa.float64()), 0.5)
        table.append(pa.table({"id": ids, "tag": tags, "x": x}))
        log(f"  wrote file {f + 1}/{files}")
    return table


def changelog_vs_incremental(
    catalog: Any, rows: int, files: int, runs: int, row_group_bytes: str | None
) -> tuple[list[Any], bool]:
    """(c): one row of the report per row-group size; ok is False when a count is wrong."""
    from icefloe.scan.incremental import added_data_tasks
    from icefloe.scan.planner import plan_files
    from icefloe.scan.reader import ReadRequest, read_tasks

    name = f"{NAMESPACE}.changes_{row_group_bytes or 'default'}"
    table = _changelog_table(catalog, name, rows, files, row_group_bytes)
    before = table.current_snapshot().snapshot_id
    updated = max(rows // 1000, 1)
    result = table.update({"tag": "updated"}, f"id < {updated}")
    after = table.current_snapshot().snapshot_id
    end = table.snapshot_by_id(after)
    schema = table.schema()

    def changelog() -> pa.Table:
        return table.changelog(start_snapshot_id=before, end_snapshot_id=after).to_arrow()

    def incremental() -> pa.Table:
        tasks = added_data_tasks(plan_files(table.io, table.metadata, end), end)
        return read_tasks(table.io, tasks, ReadRequest(schema, schema))

    changes, added = changelog(), incremental()
    kinds = changes.column("_change_type").to_pylist()
    ok = (
        result.updated_rows == updated
        and kinds.count("UPDATE_BEFORE") == updated
        and kinds.count("UPDATE_AFTER") == updated
        and len(kinds) == 2 * updated
        and added.num_rows == updated
    )
    t_changes, t_incremental = time_interleaved([changelog, incremental], runs)
    groups = "default (128 MB)" if row_group_bytes is None else f"{int(row_group_bytes) // 1024} KiB"
    row = [
        groups + ("" if ok else " (!)"),
        f"{updated:,}",
        fmt_ms(t_changes.median),
        fmt_ms(t_incremental.median),
        ratio(t_changes.median, t_incremental.median),
    ]
    return row, ok


def _stream_table(spark: Any, catalog: Any, rows: int, files: int) -> tuple[Any, str]:
    from pyspark.sql import functions as F

    from icefloe.spark import create_table, write_table

    name = f"{NAMESPACE}.stream_source"
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    create_table(spark, name, "id BIGINT, k STRING, x DOUBLE, amount DECIMAL(10,2)")
    source = spark.range(0, rows, 1, files).select(
        F.col("id"),
        F.concat(F.lit("key-"), (F.col("id") % 1000).cast("string")).alias("k"),
        (F.col("id") % 9973 * 0.25).alias("x"),
        ((F.col("id") % 100_000) / 100).cast("decimal(10,2)").alias("amount"),
    )
    write_table(source, name)
    table = catalog.load_table(name)
    dirs = {os.path.dirname(t.file_path.removeprefix("file:")) for t in table.scan().plan_files()}
    if len(dirs) != 1:
        raise SystemExit(f"expected the table's data files in one directory, found {sorted(dirs)}")
    return table, dirs.pop()


def streaming_throughput(
    spark: Any, catalog: Any, rows: int, files: int, runs: int, work: str, with_floor: bool = False
) -> tuple[list[str], list[Any], bool]:
    """(a): drain the table with each source into the noop sink; returns (headers, row, ok).

    The icefloe source runs on the JVM route (checked: the query's progress names the JVM stream)
    and, with ``stream-reader=python``, on the Python route. ``with_floor`` adds
    ``bench.stream_floor``, the floor of any Python streaming source: the same rows and schema,
    already in memory as Arrow batches in as many partitions as the driver has cores.
    """
    from bench import stream_floor
    from icefloe.spark import jvm_stream

    table, data_dir = _stream_table(spark, catalog, rows, files)
    schema = spark.read.parquet(data_dir).schema
    ddl = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)
    counted: dict[str, int] = {}
    sources: dict[str, set[str]] = {}

    def drain(reader: Any, label: str) -> None:
        checkpoint = f"{work}/cp-{uuid.uuid4().hex}"
        query = (
            reader.writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
        )
        q = query.start()
        q.awaitTermination()
        counted[label] = sum(p["numInputRows"] for p in q.recentProgress)
        sources[label] = {s["description"] for p in q.recentProgress for s in p["sources"]}

    streams: dict[str, Callable[[], None]] = {
        "readStream icefloe (JVM)": lambda: drain(spark.readStream.format("icefloe").load(table.name), "jvm"),
        "readStream.parquet": lambda: drain(spark.readStream.schema(schema).parquet(data_dir), "parquet"),
        "readStream icefloe (Python)": lambda: drain(
            spark.readStream.format("icefloe").option("stream-reader", "python").load(table.name), "python"
        ),
    }
    if with_floor:
        stream_floor.register(spark)
        streams["floor: Python source of prebuilt batches"] = lambda: drain(
            spark.readStream.format("stream_floor").option("rows", rows).option("ddl", ddl).load(), "floor"
        )
    timings = time_interleaved(list(streams.values()), runs)
    ok = set(counted.values()) == {rows} and sources.get("jvm") == {jvm_stream.NATIVE_STREAM}
    parquet = timings[1].median
    headers = ["data", *streams, "JVM / parquet", "Python / parquet"]
    row = [
        f"{rows:,} rows, {files} files" + ("" if ok else f" (!) {counted} {sources.get('jvm')}"),
        *(fmt_s(t.median) for t in timings),
        ratio(timings[0].median, parquet),
        ratio(timings[2].median, parquet),
    ]
    if with_floor:
        headers.append("floor / parquet")
        row.append(ratio(timings[3].median, parquet))
    return headers, row, ok


def commit_latency(
    spark: Any, catalog: Any, commits: int, work: str, observer: str = "progress"
) -> tuple[Any, bool]:
    """(b): commit-to-memory-sink latency with a 1-second trigger; returns a report row.

    ``observer`` is how the driver notices that a commit's rows reached the sink: ``progress``
    (default) waits for the query's progress to report a finished micro-batch carrying them
    (``StreamingQuery.recentProgress``: a cheap driver-side call; a batch is reported after its
    rows are in the sink and its offsets committed, so this never reports early); ``sql`` polls
    ``select count(*)`` on the memory table, which at a load of 10+ on two cores costs 0.3-0.8 s
    per poll and competes with the stream for the cores. Either way every commit's rows are
    counted in the sink (untimed) before the next commit.
    """
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField

    name = f"{NAMESPACE}.latency"
    if catalog.table_exists(name):
        catalog.drop_table(name, purge=True)
    table = catalog.create_table(
        name, Schema(NestedField(1, "id", LongType(), True)), properties={"format-version": "3"}
    )
    table.append(pa.table({"id": pa.array([-1], pa.int64())}))
    sink = f"latency_{uuid.uuid4().hex[:8]}"
    query = (
        spark.readStream.format("icefloe")
        .load(name)
        .writeStream.format("memory")
        .queryName(sink)
        .option("checkpointLocation", f"{work}/cp-latency")
        .trigger(processingTime="1 second")
        .start()
    )
    latencies = []

    def check_alive() -> None:
        if not query.isActive:  # a dead query would leave the loops below waiting forever
            raise SystemExit(f"(b) the streaming query stopped: {query.exception()}")

    def rows_seen(where: str) -> int:
        check_alive()
        return int(spark.sql(f"select count(*) from {sink} where {where}").collect()[0][0])

    def rows_reported(after_batch: int) -> int:
        check_alive()
        return sum(p["numInputRows"] for p in query.recentProgress if p["batchId"] > after_batch)

    def last_batch() -> int:
        return max((p["batchId"] for p in query.recentProgress), default=-1)

    def sql_done(where: str, count: int = 100) -> bool:
        return rows_seen(where) >= count

    def progress_done(after_batch: int) -> bool:
        return rows_reported(after_batch) >= 100

    def wait_until(done: Callable[[], bool], limit_s: float = 120.0) -> bool:
        start = time.perf_counter()
        while not done():
            if time.perf_counter() - start > limit_s:
                return False
            time.sleep(0.02)
        return True

    try:
        ok = wait_until(partial(sql_done, "id = -1", 1))  # the query is up and read the first commit
        for c in range(commits if ok else 0):
            where = f"id >= {c * 100} and id < {c * 100 + 100}"
            before = last_batch()
            t0 = time.perf_counter()
            table.append(pa.table({"id": pa.array(range(c * 100, c * 100 + 100), pa.int64())}))
            arrived = partial(sql_done, where) if observer == "sql" else partial(progress_done, before)
            ok &= wait_until(arrived)
            latencies.append(time.perf_counter() - t0)
            ok &= rows_seen(where) == 100
        phases = _batch_phases(query.recentProgress)
    finally:
        query.stop()
    total = spark.sql(f"select count(*), count(distinct id) from {sink}").collect()[0]
    ok = ok and total[0] == total[1] == commits * 100 + 1
    ordered = sorted(latencies) or [float("nan")]
    p90 = ordered[max(0, -(-9 * len(ordered) // 10) - 1)]
    row = [
        f"{commits} commits of 100 rows" + ("" if ok else " (!)"),
        fmt_ms(statistics.median(ordered)),
        fmt_ms(p90),
        fmt_ms(min(ordered)),
        phases,
    ]
    return row, ok


def _batch_phases(progress: list[dict[str, Any]]) -> str:
    """Median milliseconds of each phase of the micro-batches that read rows (Spark's ``durationMs``)."""
    durations = [p["durationMs"] for p in progress if p.get("numInputRows")]
    if not durations:
        return "-"
    keys = ("latestOffset", "walCommit", "queryPlanning", "addBatch", "commitOffsets", "triggerExecution")
    return ", ".join(f"{k} {statistics.median(d.get(k, 0) for d in durations):.0f}" for k in keys)


def run(argv: list[str] | None = None, spark: Any = None) -> int:
    """Run the benchmark (a given Spark session is used as it is and left running)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20_000_000, help="(c) rows of the updated table")
    parser.add_argument("--files", type=int, default=20, help="(c) data files of the updated table")
    parser.add_argument("--row-group-bytes", default="default,8388608", help="(c) row-group sizes to compare")
    parser.add_argument("--stream-rows", type=int, default=8_000_000, help="(a) rows streamed")
    parser.add_argument("--stream-files", type=int, default=16, help="(a) data files streamed")
    parser.add_argument("--commits", type=int, default=10, help="(b) commits timed")
    parser.add_argument(
        "--latency-observer",
        choices=("progress", "sql"),
        default="progress",
        help="(b) how the driver notices a commit's rows in the sink (see commit_latency)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--with-floor", action="store_true", help="(a) also time bench.stream_floor")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-spark", action="store_true", help="only (c)")
    parser.add_argument("--parts", default="a,b,c", help="which measurements to run (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="small sizes (under a minute or two)")
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed after)")
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",")} - ({"a", "b"} if args.skip_spark else set())
    if args.quick:
        args.rows, args.files, args.stream_rows, args.commits = 2_000_000, 10, 1_000_000, 5
    print_environment(
        "Change reading: streaming source and changelog",
        command_line("bench.bench_changelog", argv),
        {k: v for k, v in vars(args).items() if k != "dir"},
    )
    ok = True
    with workspace(args.dir, "icefloe-bench-changelog-") as work:
        from icefloe.catalog import load_catalog

        if spark is None and parts & {"a", "b"}:
            from icefloe.spark import session

            spark = session(
                app_name="icefloe-bench-changelog",
                master=args.master,
                catalog_uri=f"sqlite:///{work}/catalog.db",
                warehouse=f"{work}/warehouse",
                **{"spark.driver.memory": "6g", "spark.python.authenticate.socketTimeout": "120s"},
            )
            spark.sparkContext.setLogLevel("ERROR")
            own = True
        else:
            own = False
        if spark is not None:
            from icefloe.spark.runtime import resolve_catalog

            catalog = resolve_catalog(spark, None)
        else:
            catalog = load_catalog(uri=f"sqlite:///{work}/catalog.db", warehouse=f"{work}/warehouse")
        if not catalog.namespace_exists((NAMESPACE,)):
            catalog.create_namespace((NAMESPACE,))
        try:
            if spark is not None and "a" in parts:
                log("(a) streaming throughput")
                headers_a, row_a, good = streaming_throughput(
                    spark, catalog, args.stream_rows, args.stream_files, args.runs, work, args.with_floor
                )
                ok &= good
                print_table(
                    "(a) streaming read, Trigger.AvailableNow into noop (target <= 1.5x)", headers_a, [row_a]
                )
            if spark is not None and "b" in parts:
                log("(b) commit-to-sink latency")
                row_b, good = commit_latency(spark, catalog, args.commits, work, args.latency_observer)
                ok &= good
                print_table(
                    "(b) commit to rows in a memory sink, 1-second trigger, observed by "
                    f"{args.latency_observer} (target <= 2 s median)",
                    ["commits", "median", "p90", "best", "median ms per phase of a batch with rows"],
                    [row_b],
                )
            rows_c = []
            for size in args.row_group_bytes.split(",") if "c" in parts else []:
                log(f"(c) changelog vs incremental scan, row groups {size}")
                row, good = changelog_vs_incremental(
                    catalog, args.rows, args.files, args.runs, None if size == "default" else size
                )
                rows_c.append(row)
                ok &= good
            if rows_c:
                print_table(
                    f"(c) changelog of one MoR update of 0.1% of {args.rows:,} rows in {args.files} "
                    "files vs incremental scan of the same range (target <= 3x)",
                    ["row groups", "rows updated", "changelog", "incremental scan", "changelog / scan"],
                    rows_c,
                )
        finally:
            if own and spark is not None:
                spark.stop()
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
