"""Where the REST server's CPU per commit goes: inside the rebase of stale appends, and outside it.

The workload is ``bench_rest``'s (c) ``prepared`` mode: ``--writers`` x ``--per-writer`` one-row
appends to one v4 table, made by icefloe's client up front against the same head, then POSTed by
one thread per writer, so every commit but the first is rebased by the server. The server is an
``icefloe serve`` child whose commit path is timed with ``time.thread_time`` (CPU of the calling
thread): the rebase of stale appends, each coalesced batch, and inside a batch the pointer read,
applying the updates, writing the metadata file and swapping the pointer. The CPU of the server's
event-loop thread and of its other threads comes from ``/proc``. Issue 16's target for the server
outside the rebase: <= 5 ms of CPU per commit.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._common import command_line, load_average, log, print_environment, print_table, workspace
from bench.bench_rest import _prepare_commits, _schema, _send_prepared, process_cpu_s, serve

# (label, module, owner attribute or "", function name): the steps timed in the server
TIMED = (
    ("rebase of a stale append", "icefloe.server.coalescer", "", "rebase_append"),
    ("pointer and metadata read", "icefloe.server.coalescer", "", "current_state"),
    ("apply updates", "icefloe.server.coalescer", "", "apply_updates"),
    ("write metadata file", "icefloe.catalog.base", "", "write_table_metadata"),
    ("pointer swap", "icefloe.catalog.sql", "SqlCatalog", "_swap_metadata_location"),
)
BATCH = "batch (all of the above and the rest of the batch)"


def _timed(fn: Callable[..., Any], label: str, totals: dict[str, list[float]]) -> Callable[..., Any]:
    inside = threading.local()

    def timed(*args: Any, **kwargs: Any) -> Any:
        if getattr(inside, "active", False):  # a nested call is part of the outer one
            return fn(*args, **kwargs)
        inside.active = True
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            inside.active = False
            entry = totals.setdefault(label, [0.0, 0])
            entry[0] += time.thread_time() - start
            entry[1] += 1

    return timed


def run_timed_server(stats_file: str, cli_args: list[str]) -> int:
    """``icefloe serve`` with the steps of ``TIMED`` timed; totals written after every batch."""
    import importlib

    from icefloe.cli.main import main as cli_main
    from icefloe.server.coalescer import CommitCoalescer

    totals: dict[str, list[float]] = {}
    sizes: dict[int, int] = {}
    for label, module_name, owner_name, name in TIMED:
        module = importlib.import_module(module_name)
        owner = getattr(module, owner_name) if owner_name else module
        setattr(owner, name, _timed(getattr(owner, name), label, totals))
    run_batch = _timed(CommitCoalescer._run_batch, BATCH, totals)

    def batch_and_report(self: CommitCoalescer, key: Any, batch: list[Any]) -> None:
        sizes[len(batch)] = sizes.get(len(batch), 0) + 1
        try:
            run_batch(self, key, batch)
        finally:
            Path(stats_file + ".tmp").write_text(json.dumps({"totals": totals, "sizes": sizes}))
            os.replace(stats_file + ".tmp", stats_file)

    CommitCoalescer._run_batch = batch_and_report  # type: ignore[method-assign]
    return cli_main(cli_args)


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds of a process's main (event-loop) thread and of all its other threads."""
    found = {"event loop": 0.0, "other threads": 0.0}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        found["event loop" if task.name == str(pid) else "other threads"] += seconds
    return found


def _stats(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {"totals": {}, "sizes": {}}


def measure(work: str, writers: int, per_writer: int) -> tuple[list[list[str]], dict[str, float]]:
    """Run the workload once; the table rows and the per-commit CPU figures (ms) by name."""
    from icefloe.catalog.rest import RestCatalog

    stats_file = Path(work) / "server-stats.json"
    with serve(work, ("-m", "bench.bench_rest_server", "--timed-server", str(stats_file), "--")) as served:
        uri, pid = served.uri, served.pid
        setup = RestCatalog("setup", uri=uri)
        setup.create_namespace("bench")
        setup.create_table("bench.busy", _schema(), properties={"format-version": "4"})
        prepared = _prepare_commits(uri, writers, per_writer)
        before, threads_before, cpu_before = _stats(stats_file), thread_cpu_s(pid), process_cpu_s(pid)
        elapsed, reports, _ = _send_prepared(uri, prepared)
        cpu = process_cpu_s(pid) - cpu_before
        threads_after, after = thread_cpu_s(pid), _stats(stats_file)
        snapshots = len(setup.load_table("bench.busy").snapshots())
        setup.close()
    commits = writers * per_writer
    errors = sum(r.errors for r in reports)
    if errors or snapshots != commits:
        raise RuntimeError(f"{errors} commits failed; {snapshots} snapshots for {commits} commits")

    def per_commit_ms(label: str) -> float:
        total = after["totals"].get(label, [0.0, 0])[0] - before["totals"].get(label, [0.0, 0])[0]
        return total / commits * 1000

    figures = {"server": cpu / commits * 1000, **{label: per_commit_ms(label) for label, *_ in TIMED}}
    figures["batch"] = per_commit_ms(BATCH)
    figures["outside the rebase"] = figures["server"] - figures["rebase of a stale append"]
    for name in threads_after:
        figures[name] = (threads_after[name] - threads_before.get(name, 0.0)) / commits * 1000
    sizes = {int(k): v - before["sizes"].get(k, 0) for k, v in after["sizes"].items()}
    batches = sum(sizes.values())
    rows = [[name, f"{value:.2f} ms"] for name, value in figures.items()]
    rows.append(["commits/s", f"{commits / elapsed:.1f}"])
    rows.append(["batches (mean size)", f"{batches} ({commits / max(batches, 1):.1f})"])
    return rows, figures


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table and whether the target is met."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--timed-server"]:  # the child: serve, timed
        return run_timed_server(args_list[1], args_list[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16, help="concurrent appenders")
    parser.add_argument("--per-writer", type=int, default=30, help="appends per writer")
    parser.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one)")
    args = parser.parse_args(args_list)
    settings = {"writers": args.writers, "per-writer": args.per_writer}
    print_environment(
        "icefloe REST server: CPU per commit", command_line("bench.bench_rest_server", argv), settings
    )
    with workspace(args.dir, "icefloe-bench-rest-server-") as work:
        log("prepared commits against a timed server ...")
        rows, figures = measure(work, args.writers, args.per_writer)
    print_table(
        "server CPU per commit (thread CPU of each step; /proc for threads)", ["what", "per commit"], rows
    )
    outside = figures["outside the rebase"]
    print(f"server CPU per commit outside the rebase: {outside:.2f} ms (target <= 5 ms)")
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
