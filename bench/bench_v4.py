"""Format v4 (root manifest + Parquet leaves) against v3 (manifest list + Avro manifests), one run.

    python -m bench.bench_v4            # full: 100,000 / 1,000,000 files; 10 and 2,000 snapshots
    python -m bench.bench_v4 --quick    # a few minutes: 20,000 / 100,000 files; 10 and 200 snapshots

The same workload runs on a format-version 3 and a format-version 4 table (SQLite catalog, local
files, default table properties; v3 appends use merge-append, as ``Table.append`` does):

(a) Metadata written per small append. A table of ``--files-a`` synthetic data files (committed
    in chunks of ``--chunk-a`` files, so it also has a history of snapshots) gets ``--appends``
    more one-file appends; the new files under ``metadata/`` are counted and sized per append
    (tree files, then metadata.json). The mean runs over enough appends to include the periodic
    work of each format: v3 merge-append's manifest merges (every ``commit.manifest.min-count-
    to-merge`` appends) and v4's flushes of inline root entries into a leaf (every
    ``write.v4.root.max-inline-entries``) and leaf compactions; the largest single append is
    reported too. Variants with ``write.metadata.compression-codec=gzip`` show the metadata.json
    part compressed; "expiry" variants are kept to their last 100 snapshots by
    ``expire_snapshots`` (run every 100 appends, its metadata file counted), as a streaming table
    in production would be, so metadata.json stops growing with the history.
(b) Commit latency. Tables with 10 and ``--history`` snapshots (built in one transaction of
    one-file appends) get ``--runs`` ``Table.append`` calls of 10 rows each (data file, tree,
    metadata file, catalog swap), alternating between the two tables so that load on a shared
    machine hits both alike; median and p90, the growth from the small to the large history, and
    the tree-writing part alone. The default 101 runs span a whole cycle of v4 inline root
    entries (filled up to ``write.v4.root.max-inline-entries`` = 100, then flushed into a leaf),
    so neither history size is measured at a lucky or unlucky point of that cycle.
(c) Deleting one data file from a ``--files-cd`` file table: bytes and time of the tree files
    written by the write seam for v4 (manifest DV on the leaf's reference), v4 forced to
    rewrite the leaf (``write.v4.leaf.min-live-ratio=1``) and v3 (manifest rewrite).
(d) Planning the ``--files-cd`` file table: ``plan_files()`` with no filter, an ``id`` filter that
    matches one file (v4 skips leaves on aggregated stats; v3 has only partition summaries) and a
    ``day`` filter (partition column). Warm-up once, median of ``--runs``.

Synthetic data files need not exist: only metadata is read. ``--dir`` keeps the work directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe.catalog import load_catalog
from icefloe.expressions.parser import parse
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.spec.content import DataFile
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DateType, LongType, NestedField, StringType
from icefloe.tree.changes import TreeChange, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import manifest_refs, read_entries
from icefloe.tree.write_seam import write_snapshot_tree
from icefloe.txn.producers import AppendFiles

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "day", DateType(), False),
    NestedField(3, "payload", StringType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
ROWS_PER_FILE = 1000
FILES_PER_DAY = 1000
VERSIONS = (3, 4)

NAMESPACE = "bench"


# ---------------------------------------------------------------- reporting and timing helpers


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the report."""
    print(message, file=sys.stderr, flush=True)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain-text table, columns padded to their widest cell."""
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    print(f"## {title}")
    for n, r in enumerate(cells):
        print(
            "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))
    print(flush=True)


def print_environment(settings: dict[str, Any], argv: Sequence[str]) -> None:
    """Title, command, machine, versions and settings."""
    import pyarrow

    import icefloe

    print("# icefloe format v4 vs v3")
    print("command:  python -m bench.bench_v4 " + " ".join(shlex.quote(a) for a in argv))
    print(f"machine:  {platform.machine()} {platform.system()} {platform.release()}, {os.cpu_count()} CPUs")
    versions = (
        f"python {platform.python_version()}, icefloe {icefloe.__version__}, pyarrow {pyarrow.__version__}"
    )
    print(f"versions: {versions}")
    print("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    print(f"load avg: {load_average()} at start")
    print(flush=True)


def load_average() -> str:
    """The 1/5/15-minute load averages (the machine is shared: ratios within a run are what count)."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f} (1/5/15 min)"


@dataclass(frozen=True)
class Timing:
    """Timed calls, in seconds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        """Median of the samples."""
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        """90th percentile (nearest rank)."""
        ordered = sorted(self.samples)
        return ordered[max(1, -(-9 * len(ordered) // 10)) - 1]


def time_calls(fn: Callable[[], Any], runs: int) -> Timing:
    """One untimed warm-up call, then ``runs`` timed calls."""
    fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return Timing(tuple(samples))


def fmt_ms(seconds: float) -> str:
    """Milliseconds."""
    ms = seconds * 1000
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.1f} ms"


def fmt_s(seconds: float) -> str:
    """Seconds, or milliseconds below one second."""
    return f"{seconds:.2f} s" if seconds >= 1 else fmt_ms(seconds)


def ratio(slow: float, fast: float) -> str:
    """``slow / fast`` as ``12.3x``."""
    return "n/a" if fast <= 0 else f"{slow / fast:.1f}x"


def local_path(location: str) -> str:
    """A local filesystem path from a ``file:`` location."""
    return location.removeprefix("file://").removeprefix("file:")


@contextmanager
def workspace(path: str | None) -> Iterator[str]:
    """``path`` (created, kept) or a temporary directory (removed afterwards)."""
    if path:
        os.makedirs(path, exist_ok=True)
        yield os.path.abspath(path)
        return
    tmp = tempfile.mkdtemp(prefix="icefloe-bench-v4-")
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def icefloe_catalog(work: str) -> Any:
    """A SQLite catalog in the work directory, with the ``bench`` namespace."""
    catalog = load_catalog("bench", uri=f"sqlite:///{work}/catalog.db", warehouse=f"{work}/warehouse")
    if not catalog.namespace_exists((NAMESPACE,)):
        catalog.create_namespace((NAMESPACE,))
    return catalog


def synthetic_files(location: str, start: int, count: int) -> list[DataFile]:
    """Files ``start .. start+count-1``: file k holds ids [1000k, 1000k+999] of day k // 1000."""
    out = []
    for k in range(start, start + count):
        day = 19_000 + k // FILES_PER_DAY
        lo, hi = k * ROWS_PER_FILE, k * ROWS_PER_FILE + ROWS_PER_FILE - 1
        out.append(
            DataFile(
                file_path=f"{location}/data/day={day}/f{k:08d}.parquet",
                file_format="parquet",
                record_count=ROWS_PER_FILE,
                file_size_in_bytes=40_000 + k % 1000,
                spec_id=0,
                partition=(day,),
                column_sizes={1: 8000, 2: 100, 3: 20_000},
                value_counts={1: ROWS_PER_FILE, 2: ROWS_PER_FILE, 3: ROWS_PER_FILE},
                null_value_counts={1: 0, 2: 0, 3: 0},
                lower_bounds={1: lo.to_bytes(8, "little"), 2: day.to_bytes(4, "little"), 3: b"aaa"},
                upper_bounds={1: hi.to_bytes(8, "little"), 2: day.to_bytes(4, "little"), 3: b"zzz"},
            )
        )
    return out


def commit_files(table: Any, files: list[DataFile]) -> None:
    """One append snapshot of synthetic files (merge-append, like ``Table.append``)."""
    with table.transaction() as tx:
        tx.add_action(AppendFiles(files=files, merge_manifests=True))


def build_table(
    catalog: Any, name: str, version: int, files: int, chunk: int, properties: dict[str, str] | None = None
) -> Any:
    """A table of ``files`` synthetic data files, appended ``chunk`` at a time in one transaction."""
    identifier = f"{NAMESPACE}.{name}"
    if catalog.table_exists(identifier):  # a kept ``--dir``: reuse the table built by an earlier run
        table = catalog.load_table(identifier)
        snapshot = table.current_snapshot()
        planned = int(snapshot.summary.get("total-data-files", -1)) if snapshot is not None else 0
        if planned == files:
            log(f"  reusing {name}: {files:,} files")
            return table
        catalog.drop_table(identifier)
    props = {"format-version": str(version), **(properties or {})}
    table = catalog.create_table(f"{NAMESPACE}.{name}", SCHEMA, partition_spec=SPEC, properties=props)
    t0 = time.perf_counter()
    with table.transaction() as tx:
        for start in range(0, files, chunk):
            batch = synthetic_files(table.location(), start, min(chunk, files - start))
            tx.add_action(AppendFiles(files=batch, merge_manifests=True))
    table.refresh()
    log(
        f"  built {name}: {files:,} files in {-(-files // chunk):,} appends, {time.perf_counter() - t0:.1f} s"
    )
    return table


def metadata_listing(table: Any) -> dict[str, int]:
    """Files under the table's metadata directory with their sizes."""
    meta = local_path(table.location()) + "/metadata"
    return {e.name: e.stat().st_size for e in os.scandir(meta)} if os.path.isdir(meta) else {}


# ---------------------------------------------------------------- (a) bytes per small append


GZIP = {"write.metadata.compression-codec": "gzip"}
EXPIRED_KEEP = 100
"""Snapshots the maintained variants keep: ``expire_snapshots(retain_last=100)`` every 100 appends."""


@dataclass(frozen=True)
class VariantA:
    """One table setup of (a); rows are compared with the v4 variant of the same ``group``."""

    label: str
    version: int
    properties: dict[str, str] | None = None
    group: str = "plain"
    expire: bool = False


VARIANTS_A = (
    VariantA("v3 merge-append", 3),
    VariantA("v3 fast-append", 3, {"commit.manifest-merge.enabled": "false"}),
    VariantA("v4", 4),
    VariantA("v3 merge-append, gzip", 3, GZIP, group="gzip"),
    VariantA("v4, gzip", 4, GZIP, group="gzip"),
    VariantA(f"v3 merge-append, expiry (last {EXPIRED_KEEP})", 3, group="expiry", expire=True),
    VariantA(f"v4, expiry (last {EXPIRED_KEEP})", 4, group="expiry", expire=True),
)


@dataclass(frozen=True)
class AppendBytes:
    """Mean files and bytes of metadata per append, and the largest single append."""

    variant: VariantA
    files: float
    tree: float
    metadata_json: float
    largest: int

    @property
    def total(self) -> float:
        """Tree plus metadata.json bytes."""
        return self.tree + self.metadata_json


def expire_to_last(table: Any) -> None:
    """Expire every snapshot but the newest ``EXPIRED_KEEP`` (and delete their files)."""
    expire_snapshots(table, older_than=int(time.time() * 1000) + 1, retain_last=EXPIRED_KEEP)
    table.refresh()


def bench_small_appends(work: str, files: int, chunk: int, appends: int) -> list[AppendBytes]:
    """Files and bytes of metadata written per one-file append, for each variant.

    Maintained variants expire down to the last ``EXPIRED_KEEP`` snapshots once before measuring
    and then after every ``EXPIRED_KEEP`` appends; the metadata file those expiries write is
    counted with the append it follows (expiry writes no tree file).
    """
    catalog = icefloe_catalog(work)
    stats = []
    for i, variant in enumerate(VARIANTS_A):
        name = f"a{i}_v{variant.version}"
        table = build_table(catalog, name, variant.version, files, chunk, variant.properties)
        if variant.expire:
            expire_to_last(table)
        n_files = tree = meta_json = largest = 0
        t0 = time.perf_counter()
        for k in range(appends):
            before = metadata_listing(table)
            commit_files(table, synthetic_files(table.location(), files + k, 1))
            if variant.expire and (k + 1) % EXPIRED_KEEP == 0:
                expire_to_last(table)
            new = {name: size for name, size in metadata_listing(table).items() if name not in before}
            n_files += len(new)
            meta_json += sum(size for name, size in new.items() if name.endswith(".metadata.json"))
            tree += sum(size for name, size in new.items() if not name.endswith(".metadata.json"))
            largest = max(largest, sum(new.values()))
        log(f"  {variant.label}: {appends} appends in {time.perf_counter() - t0:.1f} s")
        stats.append(AppendBytes(variant, n_files / appends, tree / appends, meta_json / appends, largest))
    return stats


def small_append_rows(stats: list[AppendBytes]) -> list[list[str]]:
    """Report rows: each variant against the v4 variant of its group."""
    v4_of = {s.variant.group: s for s in stats if s.variant.version == 4}
    rows = []
    for s in stats:
        ref = v4_of[s.variant.group]
        rows.append(
            [
                s.variant.label,
                f"{s.files:.2f}",
                f"{s.tree:,.0f}",
                ratio(s.tree, ref.tree),
                f"{s.metadata_json:,.0f}",
                f"{s.total:,.0f}",
                ratio(s.total, ref.total),
                f"{s.largest:,}",
            ]
        )
    return rows


# ---------------------------------------------------------------- (b) commit latency


def small_batch(start: int) -> pa.Table:
    """10 rows."""
    ids = list(range(start, start + 10))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([19_000] * 10, pa.date32()),
            "payload": pa.array([f"p{i}" for i in ids]),
        }
    )


@contextmanager
def timed_tree_writes() -> Iterator[list[float]]:
    """Record how long each ``write_snapshot_tree`` call of the snapshot producers takes."""
    from icefloe.txn import producers

    original = producers.write_snapshot_tree
    samples: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            samples.append(time.perf_counter() - t0)

    producers.write_snapshot_tree = timed
    try:
        yield samples
    finally:
        producers.write_snapshot_tree = original


VARIANTS_B = (("v3", 3, None), ("v4", 4, None), ("v4, gzip", 4, GZIP))


def history_table(catalog: Any, name: str, version: int, history: int, props: dict[str, str] | None) -> Any:
    """A table with ``history`` one-file append snapshots (one transaction)."""
    table = catalog.create_table(
        f"{NAMESPACE}.{name}",
        SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": str(version), **(props or {})},
    )
    t0 = time.perf_counter()
    with table.transaction() as tx:
        for k in range(history):
            tx.add_action(AppendFiles(files=synthetic_files(table.location(), k, 1), merge_manifests=True))
    table.refresh()
    log(f"  built {name} ({history} snapshots) in {time.perf_counter() - t0:.1f} s")
    return table


def bench_latency(work: str, histories: Sequence[int], runs: int) -> list[list[str]]:
    """Median / p90 append latency at each history size, and the tree-writing part of it."""
    catalog = icefloe_catalog(work)
    rows = []
    growth = []
    for label, v, props in VARIANTS_B:
        slug = label.replace(", ", "_").replace(" ", "_")
        tables = [history_table(catalog, f"b_{slug}_{h}", v, h, props) for h in histories]
        counters = [iter(range(10**9)) for _ in tables]
        samples: list[list[float]] = [[] for _ in tables]
        tree: list[list[float]] = [[] for _ in tables]
        with timed_tree_writes() as tree_samples:
            for run in range(runs + 1):  # the first round is a warm-up
                for i, table in enumerate(tables):
                    mark = len(tree_samples)
                    t0 = time.perf_counter()
                    table.append(small_batch(10 * next(counters[i])))
                    elapsed = time.perf_counter() - t0
                    if run:
                        samples[i].append(elapsed)
                        tree[i].extend(tree_samples[mark:])
        timings = [Timing(tuple(x)) for x in samples]
        tree_medians = [statistics.median(x) for x in tree]
        for h, timing, tree_median in zip(histories, timings, tree_medians, strict=True):
            rows.append([label, f"{h:,}", fmt_ms(timing.median), fmt_ms(timing.p90), fmt_ms(tree_median)])
        growth.append(
            [
                f"{label} growth",
                f"{histories[0]} -> {histories[-1]:,}",
                f"{timings[-1].median / timings[0].median:.2f}x",
                "",
                f"{tree_medians[-1] / tree_medians[0]:.2f}x",
            ]
        )
    return rows + growth


# ---------------------------------------------------------------- (c) delete one file, (d) planning


def delete_one(table: Any, properties: dict[str, str] | None) -> tuple[int, int, float]:
    """Write (not commit) the tree removing one file from the middle; (files, bytes, seconds)."""
    md, snap = table.metadata, table.current_snapshot()
    refs = manifest_refs(table.io, md, snap)
    victim = next(e for e in read_entries(table.io, md, refs[len(refs) // 2]) if e.is_live)
    t0 = time.perf_counter()
    result = write_snapshot_tree(
        TreeWriteRequest(
            table.io,
            md,
            snap,
            TreeChange(removed_entries=[victim]),
            snapshot_id=1,
            sequence_number=md.last_sequence_number + 1,
            location_provider=LocationProvider(md),
            properties=properties,
        )
    )
    seconds = time.perf_counter() - t0
    sizes = [os.path.getsize(local_path(p)) for p in result.written_files]
    for p in result.written_files:
        table.io.delete(p)
    return len(sizes), sum(sizes), seconds


def bench_big_table(
    work: str, files: int, chunk: int, runs: int, parts: set[str] | None = None
) -> tuple[list[list[str]], list[list[str]]]:
    """(c) bytes to delete one file and (d) planning times on ``files``-file tables (those in ``parts``)."""
    parts = parts if parts is not None else {"c", "d"}
    catalog = icefloe_catalog(work)
    tables = {v: build_table(catalog, f"cd_v{v}", v, files, chunk) for v in VERSIONS}
    deletes: list[list[str]] = []
    plans: list[list[str]] = []
    if "c" in parts:
        deletes = bench_delete_one(tables)
    if "d" in parts:
        plans = bench_plans(tables, files, runs)
    return deletes, plans


def bench_delete_one(tables: dict[int, Any]) -> list[list[str]]:
    """(c) tree files and bytes written to delete one data file, per strategy."""
    deletes = []
    for label, v, props in (
        ("v4 manifest DV", 4, None),
        ("v4 leaf rewrite", 4, {"write.v4.leaf.min-live-ratio": "1"}),
        ("v3 manifest rewrite", 3, None),
    ):
        n, size, seconds = delete_one(tables[v], props)
        deletes.append([label, str(n), f"{size:,}", fmt_ms(seconds)])
    mdv = int(deletes[0][2].replace(",", ""))
    for row in deletes[1:]:
        row.append(ratio(int(row[2].replace(",", "")), mdv))
    deletes[0].append("1.0x")
    return deletes


def bench_plans(tables: dict[int, Any], files: int, runs: int) -> list[list[str]]:
    """(d) median ``plan_files()`` time per filter on the v3 and v4 tables (same files planned)."""
    target = files // 2
    filters = {
        "none": None,
        f"id = {target * ROWS_PER_FILE + 7}": parse(f"id = {target * ROWS_PER_FILE + 7}"),
        "one day": parse(f"day = '{_date(19_000 + target // FILES_PER_DAY)}'"),
    }
    plans = []
    for label, expr in filters.items():
        times = {}
        counts = {}
        for v in VERSIONS:
            table = tables[v]

            def plan(t: Any = table, e: Any = expr) -> None:
                t.scan(filter=e).plan_files()

            timing = time_calls(plan, runs)
            times[v] = timing.median
            counts[v] = len(table.scan(filter=expr).plan_files())
        if counts[3] != counts[4]:
            raise RuntimeError(f"plans differ for {label}: v3 {counts[3]} files, v4 {counts[4]}")
        plans.append([label, f"{counts[4]:,}", fmt_s(times[3]), fmt_s(times[4]), ratio(times[3], times[4])])
    return plans


def _date(days: int) -> str:
    import datetime as dt

    return (dt.date(1970, 1, 1) + dt.timedelta(days=days)).isoformat()


def main(argv: Sequence[str] | None = None) -> None:
    """Run the four measurements and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes (a few minutes)")
    parser.add_argument("--files-a", type=int, default=None)
    parser.add_argument("--files-cd", type=int, default=None)
    parser.add_argument("--history", type=int, default=None)
    parser.add_argument("--chunk", type=int, default=100_000, help="files per append building (c, d)")
    parser.add_argument("--chunk-a", type=int, default=100, help="files per append building (a)")
    parser.add_argument("--appends", type=int, default=None, help="one-file appends measured in (a)")
    parser.add_argument(
        "--runs",
        type=int,
        default=101,
        help="timed appends per table in (b); 101 spans a whole cycle of v4 inline root entries",
    )
    parser.add_argument("--plan-runs", type=int, default=3, help="timed plans in (d)")
    parser.add_argument("--dir", default=None, help="work directory to keep (default: a temporary one)")
    parser.add_argument(
        "--only",
        default="abcd",
        help="parts to run, e.g. 'd' (planning only; with --dir the large tables are built once)",
    )
    args = parser.parse_args(argv)
    parts = set(args.only)
    files_a = args.files_a or (20_000 if args.quick else 100_000)
    files_cd = args.files_cd or (100_000 if args.quick else 1_000_000)
    history = args.history or (200 if args.quick else 2_000)
    appends = args.appends or (200 if args.quick else 400)
    chunk = min(args.chunk, files_cd)
    settings = {
        "files_a": files_a,
        "files_cd": files_cd,
        "histories": f"10,{history}",
        "chunk_a": args.chunk_a,
        "chunk": chunk,
        "appends": appends,
        "runs": args.runs,
        "plan_runs": args.plan_runs,
    }
    print_environment(settings, sys.argv[1:] if argv is None else argv)
    with workspace(args.dir) as work:
        run_parts(work, parts, args, files_a, files_cd, history, appends, chunk)
    print(f"load avg: {load_average()} at the end")


def run_parts(
    work: str,
    parts: set[str],
    args: argparse.Namespace,
    files_a: int,
    files_cd: int,
    history: int,
    appends: int,
    chunk: int,
) -> None:
    """Run and print the chosen parts ((c) and (d) share their tables)."""
    if "a" in parts:
        log("(a) metadata per small append ...")
        a = small_append_rows(bench_small_appends(work, files_a, args.chunk_a, appends))
        print_table(
            f"(a) metadata written per one-file append to a {files_a:,}-file table built by appends of "
            f"{args.chunk_a} files (mean of {appends} appends; each row against the v4 row of its kind)",
            [
                "table",
                "files",
                "tree bytes",
                "vs v4",
                "metadata.json bytes",
                "total bytes",
                "vs v4",
                "largest append",
            ],
            a,
        )
    if "b" in parts:
        log("(b) commit latency ...")
        b = bench_latency(work, (10, history), args.runs)
        print_table(
            f"(b) Table.append latency (10 rows), median of {args.runs} per table, tables alternated",
            ["format", "snapshots", "median", "p90", "tree write (median)"],
            b,
        )
    if "c" in parts or "d" in parts:
        log("(c, d) a large table ...")
        c, d = bench_big_table(work, files_cd, chunk, args.plan_runs, parts)
        if c:
            print_table(
                f"(c) tree files written to delete one data file from a {files_cd:,}-file table",
                ["strategy", "files", "bytes", "time", "bytes vs MDV"],
                c,
            )
        if d:
            print_table(
                f"(d) plan_files() on a {files_cd:,}-file table, median of {args.plan_runs}",
                ["filter", "files planned", "v3 (Avro)", "v4 (Parquet)", "v3 / v4"],
                d,
            )


if __name__ == "__main__":
    main()
