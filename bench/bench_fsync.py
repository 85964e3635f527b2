"""Making one commit's files durable: one fsync after another vs one barrier (io/durability.py).

A small v2 commit writes four files (data file, manifest, manifest list, metadata file) into two
directories. Three ways to make them durable, timed in turns on the same directories:

- ``per file``: each file fsynced before it is published, then its directory (FileIO outside a
  barrier: what every commit did before the barrier);
- ``barrier, in turn``: published at once, then every file and directory fsynced one by one;
- ``barrier, concurrent``: published at once, then ``DurabilityBarrier.sync`` fsyncs them all
  on its thread pool (what a commit does now), so the file system can share journal commits.
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Callable, Sequence

from bench._common import (
    command_line,
    fmt_ms,
    print_environment,
    print_table,
    ratio,
    time_interleaved,
    workspace,
)
from icefloe.io.durability import DurabilityBarrier, durability_barrier
from icefloe.io.fileio import FileIO

COMMIT_FILES = ("data", "metadata", "metadata", "metadata")
"""The directory of each file a small v2 commit writes."""


def _write_commit_files(io: FileIO, root: str, size: int) -> None:
    payload = os.urandom(size)
    for directory in COMMIT_FILES:
        io.new_output(f"{root}/{directory}/{uuid.uuid4().hex}", fresh_name=True).write_bytes(payload)


def _per_file(io: FileIO, root: str, size: int) -> Callable[[], None]:
    return lambda: _write_commit_files(io, root, size)


class _InTurnBarrier(DurabilityBarrier):
    """The barrier, but its files and directories fsynced one after another."""

    def sync(self) -> None:
        for path in self.take_pending():
            self.fsync_path(path)


def _barrier_in_turn(io: FileIO, root: str, size: int) -> Callable[[], None]:
    def run() -> None:
        with durability_barrier(_InTurnBarrier()):
            _write_commit_files(io, root, size)

    return run


def _barrier_concurrent(io: FileIO, root: str, size: int) -> Callable[[], None]:
    def run() -> None:
        with durability_barrier():  # synced on exit, concurrently
            _write_commit_files(io, root, size)

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Time the three ways in turns and print their medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="commits timed per way")
    parser.add_argument("--size", type=int, default=3000, help="bytes per file")
    parser.add_argument("--dir", default=None, help="work directory (default: a temporary one under .)")
    args = parser.parse_args(argv)
    settings = {"runs": args.runs, "size": args.size}
    print_environment("durability of one commit's files", command_line("bench.bench_fsync", argv), settings)
    io = FileIO()
    with workspace(args.dir, "icefloe-bench-fsync-") as work:
        ways = {
            "per file (before)": _per_file(io, work, args.size),
            "barrier, in turn": _barrier_in_turn(io, work, args.size),
            "barrier, concurrent (now)": _barrier_concurrent(io, work, args.size),
        }
        timings = time_interleaved(list(ways.values()), args.runs)
    base = timings[0].median
    rows = [
        [name, fmt_ms(t.median), fmt_ms(t.p90), ratio(base, t.median)]
        for name, t in zip(ways, timings, strict=True)
    ]
    print_table(
        f"making 4 files in 2 directories durable, median / p90 of {args.runs}",
        ["way", "median", "p90", "faster than per file"],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
