"""What keeping the catalog login on the driver's host costs a planning worker, per plan; and what
planning a snapshot-id read in the planning worker costs and saves.

    .venv/bin/python -m bench.bench_worker_catalog [--runs 200]
    .venv/bin/python -m bench.bench_worker_catalog --read-files 1000 --old-src OLD/src [--rounds 5]

The registered data source class reaches the planning worker pickled on every plan. Before, it
held the catalog properties inline; now a catalog with a login holds a ``CatalogRef`` naming a
0600 file, which the worker reads (once per process: Spark reuses its Python workers). Timed in
turns, for REST catalog properties with a client credential: unpickling the class and resolving
its catalog properties with the inline dict (as before), with the kept file read cold (a fresh
worker) and warm (a reused worker). Also the pickled class's size. No Spark: the worker's own
steps, in this process.

``--read-files N`` builds a table of N data files (one append, SQLite catalog) and, for the code
under ``--old-src`` and this checkout's in turns (one child process each, ``--rounds`` times),
runs a batch read of the data source the way Spark does it, without Spark: the planning worker's
``reader()`` and ``partitions()``, the read function and partitions pickled as PySpark ships them,
and every partition read by ``--workers`` Python workers in turn (a task plan shared by the tasks
of one worker and query, as in Spark). Once with ``snapshot-id`` (the route this change plans in
the planning worker) and once reading the current state (unchanged: the control). Times are this
process's CPU time (wall time, shown too, swings with whatever else the machine runs); the read
function's and the partitions' pickled sizes do not swing at all. With ``--through-spark`` each
child instead starts a ``local[2]`` Spark session (one at a time) and times ``count()`` of a freshly
loaded DataFrame, wall time: Spark's scheduling of 256 tasks against 32 included.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench._common import (
    command_line,
    fmt_ms,
    load_average,
    log,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from icefloe.spark import worker_catalog
from icefloe.spark.datasource import IcefloeDataSource, datasource_class

PROPERTIES = {
    "type": "rest",
    "uri": "https://catalog.example:8181",
    "credential": "spark-client:client-secret-for-the-benchmark",
    "header.X-Tenant": "analytics",
    "warehouse": "analytics",
}


def _plan(shipped: bytes, cold: bool) -> Callable[[], None]:
    """What a planning worker does with the class before it opens the catalog."""

    def run() -> None:
        if cold:
            worker_catalog._KEPT.clear()
        cls: type[IcefloeDataSource] = pickle.loads(shipped)
        assert cls.catalog.properties() == PROPERTIES

    return run


READ_ROUTES = ("snapshot-id", "current")
"""The reads timed: one snapshot id (planned in the planning worker now) and the current state."""


def build_read_table(work: str, files: int, rows_per_file: int) -> dict[str, str]:
    """Catalog properties of a SQLite catalog holding ``bench.reads``: ``files`` data files of
    ``rows_per_file`` rows in one append (built once per workspace)."""
    import pyarrow as pa

    from icefloe.spark.runtime import catalog_from_properties
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField, StringType
    from icefloe.txn.data_writer import prepare_arrow_table, write_data_files
    from icefloe.txn.producers import AppendFiles

    props = {"name": "bench_reads", "uri": f"sqlite:///{work}/reads.db", "warehouse": f"{work}/warehouse"}
    built = os.path.join(work, f"reads-{files}x{rows_per_file}.built")
    if os.path.exists(built):
        return props
    catalog = catalog_from_properties(props)
    catalog.create_namespace("bench")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    table = catalog.create_table("bench.reads", schema)
    written = []
    for i in range(files):
        ids = list(range(i * rows_per_file, (i + 1) * rows_per_file))
        rows = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"v{n}" for n in ids]})
        written += write_data_files(table.io, table.metadata, prepare_arrow_table(table.metadata, rows))
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=written, owned_files=[f.file_path for f in written]))
    open(built, "w").close()
    return props


def _read_like_spark(
    props: dict[str, str], options: dict[str, str], workers: int, query: int
) -> dict[str, Any]:
    """One batch read as Spark runs it: plan in the planning worker, ship, read every partition in
    ``workers`` Python workers one after the other. Returns times, sizes and the row count."""
    from pyspark.serializers import CloudPickleSerializer

    from icefloe.spark import datasource

    if hasattr(datasource, "_execution_id"):  # tasks of one query in one worker share a plan
        datasource._execution_id = lambda: f"bench-{query}"
    t0, c0 = time.perf_counter(), time.process_time()
    source = datasource.datasource_class(props, pushdown=True)(options=options)
    reader = source.reader(source.schema())
    partitions = list(reader.partitions())
    function = CloudPickleSerializer().dumps((source, reader))
    shipped = [pickle.dumps(p) for p in partitions]
    planned, planned_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = 0
    t1, c1 = time.perf_counter(), time.process_time()
    for worker in range(workers):
        datasource._PLANS.clear()  # a worker process of its own
        for blob in shipped[worker::workers]:
            _, task_reader = CloudPickleSerializer().loads(function)
            for batch in task_reader.read(pickle.loads(blob)):
                rows += batch.num_rows
    read, read_cpu = time.perf_counter() - t1, time.process_time() - c1
    return {
        "plan_s": planned,
        "read_s": read,
        "plan_cpu_s": planned_cpu,
        "read_cpu_s": read_cpu,
        "function_bytes": len(function),
        "partitions": len(shipped),
        "partition_bytes_max": max(map(len, shipped)),
        "partition_bytes_total": sum(map(len, shipped)),
        "rows": rows,
    }


def read_child(work: str, files: int, rows_per_file: int, workers: int, runs: int) -> None:
    """Time both read routes ``runs`` times (after one warm-up) in this process; print JSON."""
    props = build_read_table(work, files, rows_per_file)
    from icefloe.spark.runtime import catalog_from_properties

    snapshot = catalog_from_properties(props).load_table("bench.reads").metadata.current_snapshot_id
    routes = {
        "snapshot-id": {"table": "bench.reads", "snapshot-id": str(snapshot)},
        "current": {"table": "bench.reads"},
    }
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in READ_ROUTES}
    for query in range(runs + 1):
        for name in READ_ROUTES:
            sample = _read_like_spark(props, routes[name], workers, query)
            assert sample["rows"] == files * rows_per_file, sample
            if query:
                results[name].append(sample)
    print(json.dumps(results))


def spark_child(work: str, files: int, rows_per_file: int, runs: int) -> None:
    """Time both read routes through a local Spark session (``count()`` of a freshly loaded
    DataFrame, so every run plans), ``runs`` times after one warm-up; print JSON."""
    from icefloe.spark.runtime import catalog_from_properties
    from icefloe.spark.session_setup import session

    props = build_read_table(work, files, rows_per_file)
    snapshot = catalog_from_properties(props).load_table("bench.reads").metadata.current_snapshot_id
    conf = {"spark.icefloe.catalog.name": props["name"], "spark.ui.enabled": "false"}
    spark = session("bench-worker-catalog", "local[2]", props["uri"], props["warehouse"], **conf)
    spark.sparkContext.setLogLevel("ERROR")
    routes = {"snapshot-id": {"snapshot-id": str(snapshot)}, "current": {}}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in READ_ROUTES}
    for run in range(runs + 1):
        for name in READ_ROUTES:
            t0 = time.perf_counter()
            counted = spark.read.format("icefloe").options(**routes[name]).load("bench.reads").count()
            wall = time.perf_counter() - t0
            assert counted == files * rows_per_file, counted
            if run:
                results[name].append({"wall_s": wall})
    spark.stop()
    print(json.dumps(results))


def compare_through_spark(args: argparse.Namespace, argv: list[str] | None) -> None:
    """Old and new code in turns, one Spark session at a time; print the median wall times."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = {"old": args.old_src, "new": os.path.join(here, "src")}
    print_environment(
        "Data source batch read through local[2] Spark: count() of a freshly loaded DataFrame",
        command_line("bench.bench_worker_catalog", argv),
        {
            "files": args.read_files,
            "rows per file": args.rows_per_file,
            "rounds": args.rounds,
            "runs per round": args.runs_per_round,
            "load before": load_average(),
        },
    )
    samples: dict[str, dict[str, list[float]]] = {code: {r: [] for r in READ_ROUTES} for code in sources}
    with workspace(args.dir, "bench-reads-") as work:
        build_read_table(work, args.read_files, args.rows_per_file)
        for round_no in range(args.rounds):
            turn = list(sources.items())
            for code, src in turn if round_no % 2 == 0 else turn[::-1]:
                log(f"round {round_no + 1}/{args.rounds}: {code}")
                env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{here}"}
                cmd = [sys.executable, "-m", "bench.bench_worker_catalog", "--spark-child", "--dir", work]
                cmd += ["--read-files", str(args.read_files), "--rows-per-file", str(args.rows_per_file)]
                cmd += ["--runs-per-round", str(args.runs_per_round)]
                out = subprocess.run(cmd, env=env, cwd=here, check=True, capture_output=True, text=True)
                for route, got in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    samples[code][route].extend(s["wall_s"] for s in got)
    rows = []
    for route in READ_ROUTES:
        old = statistics.median(samples["old"][route])
        for code in sources:
            this = statistics.median(samples[code][route])
            rows.append([route, code, fmt_ms(this), ratio(old, this)])
    print_table(
        f"per count() (median of {args.rounds * args.runs_per_round}); load after {load_average()}",
        ["read", "code", "wall", "old / this"],
        rows,
    )


def compare_reads(args: argparse.Namespace, argv: list[str] | None) -> None:
    """Old and new code in turns, one child process each per round; print the medians."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = {"old": args.old_src, "new": os.path.join(here, "src")}
    print_environment(
        "Data source batch read: snapshot-id reads planned in the planning worker (old vs new code)",
        command_line("bench.bench_worker_catalog", argv),
        {
            "files": args.read_files,
            "rows per file": args.rows_per_file,
            "workers": args.workers,
            "rounds": args.rounds,
            "runs per round": args.runs_per_round,
            "load before": load_average(),
        },
    )
    with workspace(args.dir, "bench-reads-") as work:
        build_read_table(work, args.read_files, args.rows_per_file)
        samples: dict[str, dict[str, list[dict[str, Any]]]] = {
            code: {r: [] for r in READ_ROUTES} for code in sources
        }
        for round_no in range(args.rounds):
            turn = list(sources.items())  # old first in even rounds, new first in odd ones
            for code, src in turn if round_no % 2 == 0 else turn[::-1]:
                log(f"round {round_no + 1}/{args.rounds}: {code}")
                env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{here}"}
                cmd = [
                    sys.executable,
                    "-m",
                    "bench.bench_worker_catalog",
                    "--read-child",
                    "--dir",
                    work,
                    "--read-files",
                    str(args.read_files),
                    "--rows-per-file",
                    str(args.rows_per_file),
                    "--workers",
                    str(args.workers),
                    "--runs-per-round",
                    str(args.runs_per_round),
                ]
                out = subprocess.run(cmd, env=env, cwd=here, check=True, capture_output=True, text=True)
                for route, got in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    samples[code][route].extend(got)
    rows = []
    for route in READ_ROUTES:
        for code in sources:
            got = samples[code][route]

            def median(key: str, of: list[dict[str, Any]] = got) -> float:
                return statistics.median(s[key] for s in of)

            def cpu(of: list[dict[str, Any]]) -> float:
                return statistics.median(s["plan_cpu_s"] + s["read_cpu_s"] for s in of)

            wall = statistics.median(s["plan_s"] + s["read_s"] for s in got)
            first = got[0]
            rows.append(
                [
                    route,
                    code,
                    fmt_ms(median("plan_cpu_s")),
                    fmt_ms(median("read_cpu_s")),
                    fmt_ms(cpu(got)),
                    ratio(cpu(samples["old"][route]), cpu(got)),
                    fmt_ms(wall),
                    first["partitions"],
                    first["function_bytes"],
                    first["partition_bytes_max"],
                    first["partition_bytes_total"],
                ]
            )
    print_table(
        f"per read, CPU time (median of {args.rounds * args.runs_per_round}); load after {load_average()}",
        [
            "read",
            "code",
            "plan CPU",
            "tasks CPU",
            "plan + tasks CPU",
            "old / this",
            "wall",
            "partitions",
            "reader bytes",
            "largest partition bytes",
            "all partitions bytes",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    """Time the three ways side by side and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--read-files", type=int, default=0, help="time batch reads of a table this wide")
    parser.add_argument("--old-src", help="the old code's src directory (with --read-files)")
    parser.add_argument("--rows-per-file", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="Python workers reading the partitions")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs-per-round", type=int, default=3)
    parser.add_argument("--dir", help="workspace (kept); default: a temporary directory")
    parser.add_argument("--through-spark", action="store_true", help="with --read-files: through Spark")
    parser.add_argument("--read-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spark-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.spark_child:
        spark_child(args.dir, args.read_files, args.rows_per_file, args.runs_per_round)
        return
    if args.read_child:
        read_child(args.dir, args.read_files, args.rows_per_file, args.workers, args.runs_per_round)
        return
    if args.read_files:
        if not args.old_src:
            parser.error("--read-files needs --old-src (the code to compare with)")
        (compare_through_spark if args.through_spark else compare_reads)(args, argv)
        return
    from pyspark.serializers import CloudPickleSerializer

    dumps = CloudPickleSerializer().dumps
    inline = datasource_class({}, pushdown=True)
    inline.catalog = worker_catalog.CatalogRef(inline=dict(PROPERTIES))  # the old shape
    kept = datasource_class(PROPERTIES, pushdown=True)
    shipped_inline, shipped_kept = dumps(inline), dumps(kept)
    print_environment(
        "Planning worker: catalog inline vs kept on the driver's host",
        command_line("bench.bench_worker_catalog", argv),
        {"runs": args.runs},
    )
    runs = [_plan(shipped_inline, False), _plan(shipped_kept, True), _plan(shipped_kept, False)]
    t_inline, t_cold, t_warm = time_interleaved(runs, args.runs, warmup=20)
    print_table(
        "per plan (median; p90)",
        ["class carries", "pickled bytes", "time", "vs inline"],
        [
            [
                "properties inline (before)",
                len(shipped_inline),
                f"{fmt_ms(t_inline.median)}; {fmt_ms(t_inline.p90)}",
                "1.0x",
            ],
            [
                "CatalogRef, file read (fresh worker)",
                len(shipped_kept),
                f"{fmt_ms(t_cold.median)}; {fmt_ms(t_cold.p90)}",
                ratio(t_cold.median, t_inline.median),
            ],
            [
                "CatalogRef, file cached (reused worker)",
                len(shipped_kept),
                f"{fmt_ms(t_warm.median)}; {fmt_ms(t_warm.p90)}",
                ratio(t_warm.median, t_inline.median),
            ],
        ],
    )


if __name__ == "__main__":
    main()
