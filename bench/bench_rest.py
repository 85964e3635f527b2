"""REST catalog: icefloe's server and client against the SQL catalog and PyIceberg, side by side.

(a) small-append latency (10 rows, v2 table): icefloe on the SQL catalog directly vs icefloe's
    REST client through ``icefloe serve`` (a separate process over the same kind of SQLite
    catalog); target REST / direct <= 1.5x.
(b) the same appends through the same server: icefloe's REST client vs PyIceberg's RestCatalog
    (anchor: a PyIceberg REST append took 2.95 s against Lakekeeper, iceberg-python#1806);
    target >= 5x.
    (a) and (b) are measured at each table history of ``--history`` (default 0,100,500): three
    fresh tables (direct, icefloe REST, PyIceberg REST) first get that many 10-row appends, made
    by icefloe in turns (every writer writes the same v2 layout; PyIceberg then appends to a table
    icefloe built), then the timed appends. A fresh table is the least realistic case: tables keep
    snapshots for days (``history.expire.max-snapshot-age-ms`` is 5 days by default), so a table
    appended to every minute holds thousands, and per-commit work that grows with the snapshot
    count shows only on a table with a history.
(c) ``--writers`` concurrent icefloe clients appending to one v4 table through the server (the
    server coalesces queued commits and rebases stale appends): commits/s and lost commits
    (snapshots and rows counted afterwards); target >= 100 commits/s, zero lost. ``--appenders``:
    ``threads`` of this process (sharing its GIL), separate ``processes`` (as real appenders
    are), ``prepared`` (the server alone: every append is made by icefloe's client up front
    against the same head, then the requests are sent by threads doing nothing else, so the rate
    is the server's commit path, rebases included), ``both`` (threads, processes) or ``all``
    three, one after the other. CPU seconds per commit are reported for the clients and for the
    server process, to show what bounds the rate on this machine.
(d) files and bytes the client writes for one small v4 append (besides the data file; the server
    writes the metadata file); target 1 file.

Appends are timed in turns (direct, REST / icefloe, PyIceberg) so machine drift hits all alike.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

import pyarrow as pa

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

STARTUP_TIMEOUT_S = 60.0
DEFAULT_HISTORY = "0,100,500"


def _histories(text: str) -> list[int]:
    """``--history``: comma-separated prior snapshot counts, each at least 0."""
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected counts >= 0, e.g. {DEFAULT_HISTORY}, got {text!r}")
    return values


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    """A running ``icefloe serve``: its URI and process id."""

    uri: str
    pid: int


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def serve(
    work: str,
    launcher: Sequence[str] = ("-m", "icefloe.cli"),
    warehouse: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> Iterator[Served]:
    """``icefloe serve`` in a child process over ``<work>/served.db``; ``launcher`` is how Python
    starts the command line (``bench_rest_server`` starts it with the commit path timed);
    ``warehouse`` (default ``<work>/served``) and catalog ``properties`` (e.g. ``s3.*``) as given."""
    import requests

    port = _free_port()
    uri = f"http://127.0.0.1:{port}"
    catalog_properties = [a for k, v in (properties or {}).items() for a in ("--property", f"{k}={v}")]
    process = subprocess.Popen(
        [
            sys.executable, *launcher,
            "--uri", f"sqlite:///{work}/served.db", "--warehouse", warehouse or f"{work}/served",
            *catalog_properties, "serve", "--port", str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                requests.get(uri + "/v1/config", timeout=5)
                break
            except requests.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("icefloe serve did not start") from None
                time.sleep(0.1)
        yield Served(uri, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _schema() -> Any:
    from icefloe.spec.schema import Schema
    from icefloe.spec.types import LongType, NestedField, StringType

    return Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "s": [f"row {i}" for i in range(start, start + n)],
        }
    )


@dataclass(frozen=True)
class Latency:
    """(a)/(b) at one table history: median append latency of each path, in seconds."""

    history: int
    direct: float
    rest: float
    pyiceberg: float

    def row(self) -> list[str]:
        """The history's row of the (a)/(b) table."""
        return [
            str(self.history), fmt_ms(self.direct), fmt_ms(self.rest), fmt_ms(self.pyiceberg),
            ratio(self.rest, self.direct), ratio(self.pyiceberg, self.rest),
        ]  # fmt: skip

    def targets(self) -> list[str]:
        """The (a) and (b) target lines; a fresh table's keep the wording BENCHMARKS.md cites."""
        at = "" if self.history == 0 else f" at {self.history} prior snapshots"
        return [
            f"(a) REST / direct{at}: {ratio(self.rest, self.direct)} (target <= 1.5x)",
            f"(b) PyIceberg / icefloe on the same server{at}: "
            f"{ratio(self.pyiceberg, self.rest)} (target >= 5x)",
        ]


def _build_history(tables: Sequence[Any], history: int) -> None:
    """``history`` prior 10-row appends to each table, made by icefloe in turns (so every table,
    PyIceberg's too, starts the timed appends from the same v2 layout, written by icefloe)."""
    for i in range(history):
        batch = _rows(10, i * 10)
        for table in tables:
            table.append(batch)


def _check_history(name: str, snapshots: int, summary: dict[str, str], commits: int) -> None:
    """Every append landed: ``commits`` snapshots, and the head's totals count all their rows."""
    assert snapshots == commits, f"{name}: {snapshots} snapshots, expected {commits}"
    assert summary.get("total-records") == str(10 * commits), f"{name}: {summary.get('total-records')} rows"
    assert summary.get("total-data-files") == str(commits), f"{name}: {summary.get('total-data-files')} files"


def bench_latency(work: str, uri: str, appends: int, history: int = 0) -> Latency:
    """(a) and (b) on tables with ``history`` prior snapshots: median append latency, direct /
    icefloe REST / PyIceberg REST, timed in turns."""
    from pyiceberg.catalog.rest import RestCatalog as PyIcebergRest

    from icefloe.catalog import load_catalog

    direct_catalog = load_catalog("direct", uri=f"sqlite:///{work}/direct.db", warehouse=f"{work}/direct")
    rest_catalog = load_catalog("rest", type="rest", uri=uri)
    for catalog in (direct_catalog, rest_catalog):
        if not catalog.namespace_exists("bench"):
            catalog.create_namespace("bench")
    name, py_name = f"bench.small_{history}", f"bench.small_{history}_py"
    direct = direct_catalog.create_table(name, _schema())
    ours = rest_catalog.create_table(name, _schema())
    built_for_pyiceberg = rest_catalog.create_table(py_name, _schema())
    if history:
        log(f"  {history} prior appends to each table ...")
        _build_history([direct, ours, built_for_pyiceberg], history)
    theirs = PyIcebergRest("py", uri=uri).load_table(py_name)
    batch = _rows(10)
    py_batch = pa.table(batch.columns, schema=theirs.schema().as_arrow())
    timings = time_interleaved(
        [lambda: direct.append(batch), lambda: ours.append(batch), lambda: theirs.append(py_batch)], appends
    )
    commits = history + appends + 1  # warm-up included
    for label, table in (("direct", direct), ("icefloe REST", ours)):
        table = table.refresh()
        head = table.current_snapshot()
        _check_history(label, len(table.snapshots()), dict(head.summary) if head else {}, commits)
    theirs = theirs.refresh()
    py_head = theirs.current_snapshot()
    py_summary = (
        {} if py_head is None or py_head.summary is None else dict(py_head.summary.additional_properties)
    )
    _check_history("PyIceberg REST", len(theirs.snapshots()), py_summary, commits)
    direct_catalog.close()
    rest_catalog.close()
    d, r, p = (t.median for t in timings)
    return Latency(history, d, r, p)


@dataclass(frozen=True)
class WriterReport:
    """What one appender (thread or process) did: appends that raised, CPU seconds it used."""

    errors: int
    cpu_s: float


def _append_rows(uri: str, worker: int, per_writer: int, ready: Any) -> WriterReport:
    """One appender: ``per_writer`` one-row appends to ``bench.busy`` once everybody is ready."""
    from icefloe.catalog.rest import RestCatalog

    catalog = RestCatalog(f"w{worker}", uri=uri)
    table = catalog.load_table("bench.busy")
    errors = 0
    ready.wait()
    cpu0 = time.process_time()
    try:
        for i in range(per_writer):
            try:
                table.append(_rows(1, worker * per_writer + i))
            except Exception as exc:  # reported as an error (and counted as lost below)
                errors += 1
                log(f"writer {worker}: {exc}")
    finally:
        catalog.close()
    return WriterReport(errors, time.process_time() - cpu0)


def _append_process(uri: str, worker: int, per_writer: int, ready: Any, reports: Any) -> None:
    reports.put(_append_rows(uri, worker, per_writer, ready))


def _run_threads(uri: str, writers: int, per_writer: int) -> tuple[float, list[WriterReport], float]:
    """Appenders as threads of this process; (wall s, reports, client CPU s of this process)."""
    ready = threading.Barrier(writers + 1)
    reports: list[WriterReport] = []

    def work(worker: int) -> None:
        reports.append(_append_rows(uri, worker, per_writer, ready))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    ready.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()  # process_time: every thread of this process
    for t in threads:
        t.join()
    return time.perf_counter() - t0, reports, time.process_time() - cpu0


def _run_processes(uri: str, writers: int, per_writer: int) -> tuple[float, list[WriterReport], float]:
    """Appenders as separate (spawned) processes; (wall s, reports, their summed CPU s)."""
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(writers + 1)
    queue = context.Queue()
    processes = [
        context.Process(target=_append_process, args=(uri, worker, per_writer, ready, queue))
        for worker in range(writers)
    ]
    for p in processes:
        p.start()
    while ready.n_waiting < writers:  # each imports icefloe and loads the table first
        _fail_if_an_appender_died(processes)
        time.sleep(0.1)
    ready.wait()  # then all start together
    t0 = time.perf_counter()
    reports = [_next_report(queue, processes) for _ in processes]
    elapsed = time.perf_counter() - t0
    for p in processes:
        p.join()
    return elapsed, reports, sum(r.cpu_s for r in reports)


_POLL_S = 5.0
"""How often the benchmark looks for an appender process that died instead of waiting forever."""


def _fail_if_an_appender_died(processes: list[Any]) -> None:
    dead = [p for p in processes if p.exitcode not in (None, 0)]
    if dead:
        for p in processes:
            p.kill()
        codes = ", ".join(f"{p.name}: exit code {p.exitcode}" for p in dead)
        raise RuntimeError(f"an appender process died before reporting ({codes})")


def _next_report(queue: Any, processes: list[Any]) -> WriterReport:
    """The next appender's report; an appender that died is an error, not an endless wait."""
    while True:
        try:
            report: WriterReport = queue.get(timeout=_POLL_S)
            return report
        except Empty:
            _fail_if_an_appender_died(processes)


def _prepare_commits(uri: str, writers: int, per_writer: int) -> list[list[bytes]]:
    """``per_writer`` one-row v4 appends per writer, made by icefloe's client but not sent: each
    writer's commit requests (JSON bodies), every one written against the table's current head."""
    prepared: list[list[bytes]] = []
    for worker in range(writers):
        catalog = _preparing_catalog(f"p{worker}", uri)
        table = catalog.load_table("bench.busy")
        for i in range(per_writer):
            table.append(_rows(1, worker * per_writer + i))
        catalog.close()
        prepared.append(catalog.bodies)
    return prepared


def _preparing_catalog(name: str, uri: str) -> Any:
    """icefloe's REST client, except that a commit request is recorded instead of sent."""
    import json

    from icefloe.catalog.rest import RestCatalog
    from icefloe.io.durability import sync_pending

    class PreparingCatalog(RestCatalog):
        bodies: list[bytes]

        def _commit(self, identifier: Any, changes: Any, proposed: Any = None) -> str:
            sync_pending()  # as before a real send: the files it names are durable
            self.bodies.append(json.dumps(self.commit_request_body(identifier, changes)).encode())
            return f"prepared-{len(self.bodies)}"  # never loaded: the next append reloads the head

    catalog = PreparingCatalog(name, uri=uri)
    catalog.bodies = []
    return catalog


def _send_prepared(uri: str, prepared: list[list[bytes]]) -> tuple[float, list[WriterReport], float]:
    """Server-only: one thread per writer sends its prepared commits (one HTTP POST each, nothing
    else) and the server applies them; (wall s, reports, client CPU s)."""
    import requests

    writers = len(prepared)
    path = f"{uri}/v1/namespaces/bench/tables/busy"
    ready = threading.Barrier(writers + 1)
    reports: list[WriterReport] = []

    def send(bodies: list[bytes]) -> None:
        errors = 0
        with requests.Session() as session:
            session.trust_env = False
            ready.wait()
            for body in bodies:
                reply = session.post(
                    path, data=body, headers={"Content-Type": "application/json"}, timeout=60
                )
                if reply.status_code != 200:
                    errors += 1
                    log(f"prepared commit: {reply.status_code} {reply.text[:200]}")
        reports.append(WriterReport(errors, 0.0))

    threads = [threading.Thread(target=send, args=(bodies,)) for bodies in prepared]
    for t in threads:
        t.start()
    ready.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, reports, time.process_time() - cpu0


def bench_concurrent(
    served: Served, writers: int, per_writer: int, mode: str
) -> tuple[list[str], float, int]:
    """(c): concurrent appenders on a fresh v4 table; a table row, commits/s and lost commits."""
    from icefloe.catalog.rest import RestCatalog

    setup = RestCatalog("setup", uri=served.uri)
    if setup.table_exists("bench.busy"):
        setup.drop_table("bench.busy", purge=True)
    setup.create_table("bench.busy", _schema(), properties={"format-version": "4"})
    if mode == "prepared":  # made before the clock starts: only sending them is timed
        prepared = _prepare_commits(served.uri, writers, per_writer)
        server_cpu0 = process_cpu_s(served.pid)
        elapsed, reports, client_cpu = _send_prepared(served.uri, prepared)
    else:
        run = _run_processes if mode == "processes" else _run_threads
        server_cpu0 = process_cpu_s(served.pid)
        elapsed, reports, client_cpu = run(served.uri, writers, per_writer)
    server_cpu = process_cpu_s(served.pid) - server_cpu0
    table = setup.load_table("bench.busy")
    expected = writers * per_writer
    snapshots = len(table.snapshots())
    ids = table.scan().to_arrow().column("id").to_pylist()
    lost = expected - len(set(ids) & set(range(expected)))
    rate = expected / elapsed
    row = [
        mode,
        str(writers),
        str(expected),
        f"{elapsed:.1f} s",
        f"{rate:.1f}",
        str(snapshots),
        str(lost),
        str(sum(r.errors for r in reports)),
        f"{client_cpu / expected * 1000:.1f} ms",
        f"{server_cpu / expected * 1000:.1f} ms",
    ]
    setup.close()
    return row, rate, lost


def bench_files(uri: str) -> tuple[list[list[str]], int]:
    """(d): what one small v4 append makes the client write."""
    from icefloe.catalog.rest import RestCatalog

    catalog = RestCatalog("files", uri=uri)
    table = catalog.create_table("bench.files", _schema(), properties={"format-version": "4"})
    table.append(_rows(10))
    table_dir = Path(table.location().removeprefix("file://"))
    before = {p for p in table_dir.rglob("*") if p.is_file()}
    table.append(_rows(10, 10))
    new = [p for p in table_dir.rglob("*") if p.is_file() and p not in before]
    data = [p for p in new if p.parent.name == "data" or "/data/" in p.as_posix()]
    server = [p for p in new if p.name.endswith(".metadata.json")]
    client = [p for p in new if p not in data and p not in server]
    rows = [
        ["client: metadata files", str(len(client)), f"{sum(p.stat().st_size for p in client):,} B",
         ", ".join(sorted(p.name.split("-")[0] for p in client))],
        ["client: data files", str(len(data)), f"{sum(p.stat().st_size for p in data):,} B", "parquet"],
        ["server: metadata.json", str(len(server)), f"{sum(p.stat().st_size for p in server):,} B", ""],
    ]  # fmt: skip
    catalog.close()
    return rows, len(client)


def main(argv: Sequence[str] | None = None) -> int:
    """Run (a)-(d) and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=20, help="timed appends per client in (a)/(b)")
    parser.add_argument(
        "--history",
        type=_histories,
        default=DEFAULT_HISTORY,
        help="(a)/(b): prior snapshots of the tables, comma-separated (default: %(default)s)",
    )
    parser.add_argument("--writers", type=int, default=16, help="concurrent appenders in (c)")
    parser.add_argument("--per-writer", type=int, default=10, help="appends per writer in (c)")
    parser.add_argument(
        "--appenders",
        choices=("threads", "processes", "prepared", "both", "all", "none"),
        default="all",
        help="(c) appenders as threads of this process, separate processes, 'prepared' (server only: "
        "commits made up front, then sent), 'both' (threads, processes), 'all' three in turn, or "
        "'none' (skip (c))",
    )
    parser.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one)")
    args = parser.parse_args(argv)
    settings = {
        "appends": args.appends,
        "history": ",".join(map(str, args.history)),
        "writers": args.writers,
        "per-writer": args.per_writer,
        "appenders": args.appenders,
    }
    print_environment("icefloe REST catalog", command_line("bench.bench_rest", argv), settings)
    with workspace(args.dir, "icefloe-bench-rest-") as work:
        for name in os.listdir(work):  # a kept --dir starts afresh
            import shutil

            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
        with serve(work) as served:
            uri = served.uri
            latencies = []
            for history in args.history:
                log(f"(a)/(b) append latency, {history} prior snapshots ...")
                latencies.append(bench_latency(work, uri, args.appends, history))
            print_table(
                f"(a)/(b) append latency, 10 rows, v2 table, median of {args.appends} per table history",
                ["prior snapshots", "SQL catalog, direct", "icefloe REST", "PyIceberg REST", "(a)", "(b)"],
                [latency.row() for latency in latencies],
            )
            for latency in latencies:
                print("\n".join(latency.targets()))
            print()
            modes = {
                "both": ("threads", "processes"),
                "all": ("threads", "processes", "prepared"),
                "none": (),
            }.get(args.appenders, (args.appenders,))
            log("(c) concurrent appenders ..." if modes else "(c) skipped (--appenders none)")
            results = [bench_concurrent(served, args.writers, args.per_writer, mode) for mode in modes]
            if results:
                print_table(
                    "(c) concurrent appenders on one v4 table through the server",
                    ["appenders", "writers", "commits", "wall", "commits/s", "snapshots", "lost", "errors",
                     "client CPU/commit", "server CPU/commit"],
                    [row for row, _, _ in results],
                )  # fmt: skip
            for mode, (_, rate, lost) in zip(modes, results, strict=True):
                print(f"(c) {mode}: {rate:.1f} commits/s (target >= 100), {lost} lost (target 0)")
            lost = sum(lost for _, _, lost in results)
            print()
            log("(d) files per small v4 append ...")
            rows, client_files = bench_files(uri)
            print_table("(d) files written by one small v4 append", ["who", "files", "bytes", "kind"], rows)
            print(f"(d) client metadata files per append: {client_files} (target 1)\n")
            if lost:
                print("(!) commits were lost")
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
