"""Object storage: icefloe v3, icefloe v4 and PyIceberg against the same S3 server.

    python -m bench.bench_s3                                # 20 appends per engine, no planning
    python -m bench.bench_s3 --appends 3                    # smoke size
    python -m bench.bench_s3 --appends 0 --plan-files 100000
    python -m bench.bench_s3 --server-process               # the server in a child process
    python -m bench.bench_s3 --request-delay-ms 20          # each request held 20 ms, as a far store

Starts the tests' S3-compatible server (moto over HTTP on 127.0.0.1, ``tests/support/s3server.py``),
in this process by default (its Python work then competes with the client's for one GIL), or with
``--server-process`` in a child process. Loopback answers in well under a millisecond, where S3
takes tens: ``--request-delay-ms`` holds every request that long in the server before serving it.

(a) Small appends: for each engine, a table in an ``s3://`` warehouse of a fresh SQLite catalog;
    ``--appends`` appends of 10 rows per engine (after one warm-up append each; engines in turns)
    are timed, and the requests the server answers per append are counted. PyIceberg 0.12 writes
    format v2 at most, so it runs on a v2 table.

(b) Planning (``--plan-files N``): three tables (format v2, v3, v4) partitioned by ``day`` and
    ``bucket(16, id)``, each given the same N synthetic data files (``bench_core``'s, full column
    metrics) in ``--plan-commits`` icefloe appends of data-file entries (``AppendFiles``: no
    Parquet file is written, the metadata tree is the one a real append writes). PyIceberg plans
    the v2 table from the same catalog; icefloe plans all three. ``plan_files()`` with no filter
    and with one day selected, after one warm-up plan each, engines in turns; medians.

    Building the tables takes minutes at 100,000 files. ``--dir`` keeps them: the first run saves
    the catalog database and the warehouse's objects there, later runs with the same
    ``--plan-files`` and ``--plan-commits`` upload the objects to the fresh server instead of
    building (the server keeps objects in memory only).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from tests.support.s3server import S3Server, start_s3_server, start_s3_server_process

from bench._common import (
    Timing,
    command_line,
    fmt_s,
    load_average,
    log,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from bench.bench_core import SCHEMA as PLAN_SCHEMA
from bench.bench_core import SPEC as PLAN_SPEC
from bench.bench_core import synthetic_data_files
from icefloe.catalog.sql import SqlCatalog
from icefloe.txn.producers import AppendFiles

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def _rows(start: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + 10)), "name": ["x"] * 10}, schema=SCHEMA)


def _icefloe(server: S3Server, work: Path, version: int) -> Callable[[pa.Table], None]:
    cat = SqlCatalog(
        f"v{version}",
        uri=f"sqlite:///{work}/icefloe-v{version}.db",
        warehouse=f"s3://{server.bucket}/ice-v{version}",
        **server.properties,
    )
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, properties={"format-version": str(version)})
    return table.append


def _pyiceberg(server: S3Server, work: Path) -> Callable[[pa.Table], None]:
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    cat = PySqlCatalog(
        "py",
        uri=f"sqlite:///{work}/pyiceberg.db",
        warehouse=f"s3://{server.bucket}/pyiceberg",
        **server.properties,
    )
    cat.create_namespace("db")
    table = cat.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    return table.append


def _measure(
    server: S3Server, appends: dict[str, Callable[[pa.Table], None]], runs: int
) -> dict[str, tuple[float, float, dict[str, int]]]:
    """Median latency (ms), requests per append and requests by operation, per engine.

    After one warm-up append each (file systems, connections), the engines append in turns, so a
    change in the machine's load falls on all of them alike.
    """
    for append in appends.values():
        append(_rows(0))
    times: dict[str, list[float]] = {name: [] for name in appends}
    ops: dict[str, dict[str, int]] = {name: {} for name in appends}
    for i in range(runs):
        for name, append in appends.items():
            server.reset_counts()
            start = time.perf_counter()
            append(_rows((i + 1) * 10))
            times[name].append(time.perf_counter() - start)
            for op, n in server.counts().items():
                ops[name][op] = ops[name].get(op, 0) + n
    return {
        name: (
            statistics.median(times[name]) * 1000,
            sum(ops[name].values()) / runs,
            {op: round(n / runs) for op, n in sorted(ops[name].items())},
        )
        for name in appends
    }


# ---------------------------------------------------------------- (b) planning

PLAN_VERSIONS = (2, 3, 4)
PLAN_CATALOG = "plan"
PLAN_WAREHOUSE = "plan"
"""The planning tables' warehouse: a prefix of the server's bucket."""
SAVED_OBJECTS = "plan-objects"
SAVED_SIZE = "plan-tables.json"


@dataclass(frozen=True)
class PlanCase:
    """One planning measurement: a filter and the number of files it must plan."""

    label: str
    row_filter: str | None
    expected_files: int


@dataclass(frozen=True)
class PlanResult:
    """One case: a timing and a planned-file count per engine (``icefloe v2`` ... ``pyiceberg v2``)."""

    case: PlanCase
    timings: dict[str, Timing]
    files: dict[str, int]

    @property
    def agrees(self) -> bool:
        """Every engine planned the expected number of files."""
        return set(self.files.values()) == {self.case.expected_files}


def _plan_catalog_options(server: S3Server, work: Path) -> dict[str, str]:
    """One catalog (the Iceberg JDBC layout) for both libraries: PyIceberg loads icefloe's tables."""
    return {
        "uri": f"sqlite:///{work}/plan.db",
        "warehouse": f"s3://{server.bucket}/{PLAN_WAREHOUSE}",
        **server.properties,
    }


def build_plan_tables(server: S3Server, work: Path, files: int, commits: int) -> None:
    """Tables ``db.plan_v2``, ``db.plan_v3``, ``db.plan_v4``, each with the same ``files`` data files."""
    cat = SqlCatalog(PLAN_CATALOG, **_plan_catalog_options(server, work))
    cat.create_namespace("db")
    days = files // commits
    for version in PLAN_VERSIONS:
        t0 = time.perf_counter()
        table = cat.create_table(
            f"db.plan_v{version}",
            PLAN_SCHEMA,
            partition_spec=PLAN_SPEC,
            properties={"format-version": str(version)},
        )
        for commit in range(commits):
            # one commit adds one "day" of files (``days`` files per commit, one partition value)
            with table.transaction() as tx:
                tx.add_action(AppendFiles(files=synthetic_data_files(table.location(), commit, days)))
        log(
            f"planning: v{version} table with {files:,} files in {commits} commits: "
            f"{time.perf_counter() - t0:.1f} s"
        )
    cat.close()


def prepare_plan_tables(server: S3Server, work: Path, files: int, commits: int, keep: bool) -> None:
    """Build the planning tables, or (``keep``: a ``--dir`` run) restore the ones saved in ``work``.

    A saved set is used only when it was built with the same ``files`` and ``commits``; otherwise
    it is replaced by a new build, saved for the next run.
    """
    size = {"files": files, "commits": commits}
    marker, objects = work / SAVED_SIZE, work / SAVED_OBJECTS
    local = pafs.LocalFileSystem()
    warehouse = f"{server.bucket}/{PLAN_WAREHOUSE}"
    if keep and marker.exists() and json.loads(marker.read_text()) == size and (work / "plan.db").exists():
        pafs.copy_files(str(objects), warehouse, local, server.filesystem())
        log(f"planning: tables restored from {work}")
        return
    marker.unlink(missing_ok=True)
    (work / "plan.db").unlink(missing_ok=True)
    shutil.rmtree(objects, ignore_errors=True)
    build_plan_tables(server, work, files, commits)
    if keep:
        pafs.copy_files(warehouse, str(objects), server.filesystem(), local)
        marker.write_text(json.dumps(size))
        log(f"planning: tables saved in {work}")


def bench_planning(server: S3Server, work: Path, files: int, commits: int, runs: int) -> list[PlanResult]:
    """Plan every case with every engine, in turns."""
    from pyiceberg.catalog.sql import SqlCatalog as PySqlCatalog

    cat = SqlCatalog(PLAN_CATALOG, **_plan_catalog_options(server, work))
    pycat = PySqlCatalog(PLAN_CATALOG, **_plan_catalog_options(server, work))
    ice = {f"icefloe v{v}": cat.load_table(f"db.plan_v{v}") for v in PLAN_VERSIONS}
    py_table = pycat.load_table("db.plan_v2")
    per_day = files // commits
    cases = [
        PlanCase("no filter", None, files),
        PlanCase(f"one partition (day = {commits // 2})", f"day = {commits // 2}", per_day),
    ]
    results = []
    for case in cases:
        counts: dict[str, int] = {}

        def ice_plan(name: str, c: PlanCase = case, counts: dict[str, int] = counts) -> None:
            scan = ice[name].scan(filter=c.row_filter) if c.row_filter else ice[name].scan()
            counts[name] = len(scan.plan_files())

        def py_plan(c: PlanCase = case, counts: dict[str, int] = counts) -> None:
            scan = py_table.scan(row_filter=c.row_filter) if c.row_filter else py_table.scan()
            counts["pyiceberg v2"] = len(list(scan.plan_files()))

        names = [*ice, "pyiceberg v2"]
        fns = [*(lambda n=n: ice_plan(n) for n in ice), py_plan]
        log(f"planning: {case.label}, {runs} run(s) per engine ...")
        timings = time_interleaved(fns, runs)
        results.append(PlanResult(case, dict(zip(names, timings, strict=True)), counts))
    cat.close()
    return results


def _print_planning(results: list[PlanResult], files: int, commits: int) -> bool:
    engines = list(results[0].timings)
    print_table(
        f"(b) plan_files() of a {files:,}-file table on S3 ({commits} commits; median; engines in turns)",
        ["filter", "files", *engines, *(f"PyIceberg / {e}" for e in engines[:-1])],
        [
            [
                r.case.label,
                f"{r.case.expected_files:,}" + ("" if r.agrees else " (!)"),
                *(fmt_s(r.timings[e].median) for e in engines),
                *(ratio(r.timings["pyiceberg v2"].median, r.timings[e].median) for e in engines[:-1]),
            ]
            for r in results
        ],
    )
    ok = True
    for r in results:
        if not r.agrees:
            ok = False
            print(f"(!) {r.case.label}: planned {r.files}, expected {r.case.expected_files:,}")
    return ok


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=20, help="timed appends per engine (0: skip)")
    parser.add_argument(
        "--plan-files", type=int, default=0, help="data files of the planning tables (0: skip)"
    )
    parser.add_argument("--plan-commits", type=int, default=10, help="commits that add them")
    parser.add_argument("--plan-runs", type=int, default=3, help="timed plans per engine and filter")
    parser.add_argument(
        "--dir", help="keep the planning tables here and reuse them (default: a temporary directory)"
    )
    parser.add_argument(
        "--server-process", action="store_true", help="run the S3 server in a child process (its own GIL)"
    )
    parser.add_argument(
        "--request-delay-ms", type=float, default=0.0, help="hold every request this long in the server"
    )
    args = parser.parse_args(argv)
    if args.plan_files and (args.plan_commits < 2 or args.plan_files % args.plan_commits):
        parser.error("--plan-files must be a multiple of --plan-commits (at least 2)")
    print(f"command:  {command_line('bench.bench_s3', argv)}")
    print(f"load avg: {load_average()} (1/5/15 min) at start", flush=True)
    server = start_s3_server_process() if args.server_process else start_s3_server()
    print(f"server:   {'a child process' if args.server_process else 'this process'}", flush=True)
    if args.request_delay_ms:
        server.slow_next(2**62, args.request_delay_ms / 1000)
    results: dict[str, tuple[float, float, dict[str, int]]] = {}
    plans: list[PlanResult] = []
    try:
        if args.appends:
            with tempfile.TemporaryDirectory(prefix="bench-s3-") as tmp:
                engines = {
                    "icefloe v3": _icefloe(server, Path(tmp), 3),
                    "icefloe v4": _icefloe(server, Path(tmp), 4),
                    "pyiceberg v2": _pyiceberg(server, Path(tmp)),
                }
                results = _measure(server, engines, args.appends)
        if args.plan_files:
            with workspace(args.dir, "bench-s3-") as tmp:
                work = Path(tmp)
                prepare_plan_tables(server, work, args.plan_files, args.plan_commits, bool(args.dir))
                plans = bench_planning(server, work, args.plan_files, args.plan_commits, args.plan_runs)
    finally:
        server.stop()
    if results:
        print(f"(a) small append (10 rows), median of {args.appends}, engines in turns, S3 on loopback:")
        for name, (ms, requests, ops) in results.items():
            print(f"  {name:<13} {ms:8.1f} ms  {requests:5.1f} requests/append  {ops}")
        py_ms = results["pyiceberg v2"][0]
        for name in ("icefloe v3", "icefloe v4"):
            print(f"  {name} vs pyiceberg: {py_ms / results[name][0]:.2f}x faster")
        print()
    ok = _print_planning(plans, args.plan_files, args.plan_commits) if plans else True
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
