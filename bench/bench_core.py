"""Core tables: append-commit latency and scan planning, icefloe against PyIceberg in one run.

    python -m bench.bench_core            # full (~8 min): 10 and 2,000 snapshots; 1,000,000 files
    python -m bench.bench_core --quick    # under a minute: 10 and 100 snapshots; 20,000 files

(a) Commit latency. A format-v2 table gets its history from icefloe appends of 10 rows (all
    in one transaction, so building 2,000 snapshots takes seconds per hundred, not a commit each);
    two such tables are built in one SQLite catalog (one name per table's files), and icefloe and
    PyIceberg each time ``--appends`` more 10-row appends (``table.append(arrow_table)``: Parquet file,
    manifest, manifest list, metadata file, catalog swap) on their own copy. Median and p90.

(b) Planning. A format-v2 table partitioned by ``identity(day)`` and ``bucket(16, id)`` with
    ``--files`` synthetic data files, ``--files-per-manifest`` per Avro manifest (one day per
    manifest, so ``day`` has files/per distinct values), each entry with full column metrics for
    its 4 columns; written with icefloe's ``write_manifest``, committed as one snapshot, loaded
    by both libraries from the same catalog (icefloe plans v1–v3 manifests columnarly, decoding
    them to Arrow with DataFusion; the log says how many manifests took that path). Times
    ``table.scan(filter=...).plan_files()`` with one partition selected, no filter, and
    (``--cases metrics``; on by default with ``--quick``) a filter on the bucketed ``id``
    column: every manifest read, column metrics evaluated per entry. One warm-up plan per
    library, then the libraries in turns; medians.

``--dir`` keeps the work directory and reuses the planning table on the next run.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from bench._common import (
    NAMESPACE,
    Timing,
    command_line,
    commit_manifests,
    default_workers,
    fmt_ms,
    fmt_s,
    icefloe_catalog,
    load_average,
    log,
    pack_double,
    pack_int,
    pack_long,
    parallel_map,
    print_environment,
    print_table,
    pyiceberg_catalog,
    ratio,
    time_interleaved,
    workspace,
)
from icefloe.scan.planner import PlanStats
from icefloe.spec.content import DataFile, EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "day", IntegerType(), True),
    NestedField(3, "value", DoubleType(), False),
    NestedField(4, "name", StringType(), False),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "day"),
    PartitionField(1, 1001, BucketTransform(16), "id_bucket"),
)
BUCKETS = 16
ROWS_PER_FILE = 1000


def small_batch(rows: int = 10, start: int = 0) -> pa.Table:
    """The rows one latency append adds (same Arrow schema for both libraries)."""
    ids = list(range(start, start + rows))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([i % 7 for i in ids], pa.int32()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
            "name": pa.array([f"n{i}" for i in ids], pa.string()),
        },
        schema=pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                pa.field("day", pa.int32(), nullable=False),
                pa.field("value", pa.float64()),
                pa.field("name", pa.string()),
            ]
        ),
    )


# ---------------------------------------------------------------- (a) commit latency


@dataclass(frozen=True)
class CommitResult:
    """Append latencies of both libraries on a table with ``history`` snapshots."""

    history: int
    icefloe: Timing
    pyiceberg: Timing
    build_seconds: float


def build_history(catalog: Any, name: str, snapshots: int) -> tuple[str, float]:
    """A v2 table with ``snapshots`` icefloe appends; returns its metadata location and build time."""
    t0 = time.perf_counter()
    table = catalog.create_table(f"{NAMESPACE}.{name}", SCHEMA, properties={"format-version": "2"})
    batch = small_batch()
    with table.transaction() as tx:
        for _ in range(snapshots):
            tx.append(batch)
    table.refresh()
    assert len(table.snapshots()) == snapshots, (len(table.snapshots()), snapshots)
    return table.metadata_location, time.perf_counter() - t0


def bench_commits(work: str, histories: Sequence[int], appends: int) -> list[CommitResult]:
    """Append latency at each history size, both libraries on copies of one table."""
    cat = icefloe_catalog(work)
    pcat = pyiceberg_catalog(work)
    results = []
    for history in histories:
        ice_name, py_name = f"{NAMESPACE}.commit_{history}_icefloe", f"{NAMESPACE}.commit_{history}_pyiceberg"
        for stale in (f"{NAMESPACE}.history_{history}", ice_name, py_name):  # from an earlier --dir run
            if cat.table_exists(stale):
                cat.drop_table(stale)
        # Two equal tables (the catalog refuses two names for one table's files).
        log(f"commit latency: building two tables with {history} snapshots ...")
        _, build_s = build_history(cat, ice_name.split(".", 1)[1], history)
        build_history(cat, py_name.split(".", 1)[1], history)
        log(f"commit latency: built in {build_s:.1f} s each")

        ice_table = cat.load_table(ice_name)
        py_table = pcat.load_table(py_name)
        batch = small_batch()
        log(f"commit latency: {appends} appends per library at {history} snapshots ...")
        ice, py = time_interleaved(
            [lambda t=ice_table, b=batch: t.append(b), lambda t=py_table, b=batch: t.append(b)], appends
        )

        expected = history + 1 + appends
        got_ice = len(cat.load_table(ice_name).snapshots())
        got_py = len(cat.load_table(py_name).snapshots())
        if got_ice != expected or got_py != expected:
            raise RuntimeError(
                f"snapshot counts after appends: icefloe {got_ice}, PyIceberg {got_py}, expected {expected}"
            )
        results.append(CommitResult(history, ice, py, build_s))
    return results


# ---------------------------------------------------------------- (b) planning


@dataclass(frozen=True)
class ManifestJob:
    """One synthetic manifest to write: all files of one day."""

    table_location: str
    day: int
    files: int
    snapshot_id: int


def file_ids(day: int, index: int, files_per_manifest: int) -> tuple[int, int]:
    """The (inclusive) ``id`` range of one synthetic data file."""
    n = day * files_per_manifest + index
    return n * ROWS_PER_FILE, n * ROWS_PER_FILE + ROWS_PER_FILE - 1


def synthetic_data_files(table_location: str, day: int, files: int) -> list[DataFile]:
    """The ``files`` synthetic data files of one day (``SPEC`` partition values, full metrics)."""
    sizes = {1: 8_000, 2: 400, 3: 8_000, 4: 6_000}
    counts = {1: ROWS_PER_FILE, 2: ROWS_PER_FILE, 3: ROWS_PER_FILE, 4: ROWS_PER_FILE}
    nulls = {1: 0, 2: 0, 3: 0, 4: 0}
    nans = {3: 0}
    out = []
    for j in range(files):
        lo, hi = file_ids(day, j, files)
        bucket = j % BUCKETS
        out.append(
            DataFile(
                file_path=f"{table_location}/data/day={day}/id_bucket={bucket}/{day:05d}-{j:05d}.parquet",
                file_format="parquet",
                record_count=ROWS_PER_FILE,
                file_size_in_bytes=22_400 + j % 97,
                spec_id=0,
                partition=(day, bucket),
                column_sizes=sizes,
                value_counts=counts,
                null_value_counts=nulls,
                nan_value_counts=nans,
                lower_bounds={1: pack_long(lo), 2: pack_int(day), 3: pack_double(0.0), 4: b"aaa"},
                upper_bounds={1: pack_long(hi), 2: pack_int(day), 3: pack_double(1000.0), 4: b"zzz"},
                split_offsets=(4,),
                sort_order_id=0,
            )
        )
    return out


def write_day_manifest(job: ManifestJob) -> ManifestFile:
    """Write the manifest of one day's ``files`` data files (runs in a worker process)."""
    from icefloe.formats.avro.manifest import write_manifest
    from icefloe.io.fileio import load_file_io

    io = load_file_io({}, job.table_location)
    d = job.day
    entries = [
        ManifestEntry(EntryStatus.ADDED, None, None, None, df)
        for df in synthetic_data_files(job.table_location, d, job.files)
    ]
    path = f"{job.table_location}/metadata/bench-{d:05d}-m0.avro"
    return write_manifest(
        io.new_output(path), entries, SPEC, SCHEMA, 2, ManifestContent.DATA, job.snapshot_id, path=path
    )


def build_planning_table(work: str, files: int, per_manifest: int, workers: int) -> str:
    """Create (or reuse) the synthetic planning table; returns its identifier."""
    from icefloe.txn.producers import new_snapshot_id

    cat = icefloe_catalog(work)
    name = f"{NAMESPACE}.plan_{files}_{per_manifest}"
    if cat.table_exists(name) and cat.load_table(name).current_snapshot() is not None:
        log(f"planning: reusing {name}")
        return name
    if cat.table_exists(name):
        cat.drop_table(name)
    table = cat.create_table(name, SCHEMA, partition_spec=SPEC, properties={"format-version": "2"})
    snapshot_id = new_snapshot_id()
    days = files // per_manifest
    log(f"planning: writing {days} manifests x {per_manifest} entries on {workers} processes ...")
    t0 = time.perf_counter()
    jobs = [ManifestJob(table.location(), d, per_manifest, snapshot_id) for d in range(days)]
    manifests = parallel_map(write_day_manifest, jobs, workers)
    commit_manifests(table, manifests, snapshot_id)
    log(f"planning: table written in {time.perf_counter() - t0:.1f} s")
    return name


@dataclass(frozen=True)
class PlanCase:
    """One planning measurement: a filter, what it should select, and whether it reads every manifest."""

    key: str
    label: str
    row_filter: str | None
    expected_files: int
    reads_all_manifests: bool


@dataclass(frozen=True)
class PlanResult:
    """Planning times of both libraries for one case."""

    case: PlanCase
    icefloe: Timing
    pyiceberg: Timing
    icefloe_files: int
    pyiceberg_files: int

    @property
    def agrees(self) -> bool:
        """Both libraries planned the expected number of files."""
        return self.icefloe_files == self.pyiceberg_files == self.case.expected_files


CASE_KEYS = ("partition", "metrics", "all")


def plan_cases(files: int, per_manifest: int) -> list[PlanCase]:
    """One partition; one file found by a bucketed column's value and metrics; everything."""
    days = files // per_manifest
    day = days // 2
    index = per_manifest // 3
    lo, hi = file_ids(day, index, per_manifest)
    bucket = BucketTransform(BUCKETS)
    target = next(v for v in range(lo, hi + 1) if bucket.apply(LongType(), v) == index % BUCKETS)
    return [
        PlanCase("partition", f"one partition (day = {day})", f"day = {day}", per_manifest, False),
        PlanCase("metrics", f"id = {target} (metrics)", f"id = {target}", 1, True),
        PlanCase("all", "no filter", None, files, True),
    ]


def bench_planning(
    work: str, name: str, cases: Sequence[PlanCase], runs: int, scan_runs: int
) -> list[PlanResult]:
    """Plan each case with both libraries in turns.

    Each library first plans the one-partition filter once, untimed (imports, first calls, the
    manifest list); the manifests were just written, so the OS cache is warm for both. Cases that
    read every manifest are timed ``scan_runs`` times, the others ``runs`` times.
    """
    ice_table = icefloe_catalog(work).load_table(name)
    py_table = pyiceberg_catalog(work).load_table(name)
    counts: dict[str, int] = {}
    paths: dict[str, int] = {}

    def ice_plan(c: PlanCase) -> None:
        scan = ice_table.scan(filter=c.row_filter) if c.row_filter else ice_table.scan()
        stats = PlanStats()
        counts["icefloe"] = len(scan.plan_files(stats))
        paths["columnar"], paths["fallback"] = stats.manifests_columnar, stats.manifests_fallback

    def py_plan(c: PlanCase) -> None:
        scan = py_table.scan(row_filter=c.row_filter) if c.row_filter else py_table.scan()
        counts["pyiceberg"] = len(list(scan.plan_files()))

    first = min(cases, key=lambda c: c.reads_all_manifests)
    ice_plan(first)
    py_plan(first)
    out = []
    for case in cases:
        n = scan_runs if case.reads_all_manifests else runs
        log(f"planning: {case.label}, {n} run(s) per library ...")
        ice, py = time_interleaved([lambda c=case: ice_plan(c), lambda c=case: py_plan(c)], n, warmup=0)
        out.append(PlanResult(case, ice, py, counts["icefloe"], counts["pyiceberg"]))
        log(
            f"planning: icefloe read {paths['columnar']} manifest(s) through Arrow (DataFusion), "
            f"{paths['fallback']} through fastavro"
        )
        gc.collect()
    return out


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its tables; exit status 1 if the libraries disagree."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_core",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: the whole run in under a minute")
    parser.add_argument("--snapshots", help="history sizes, comma separated (default 10,2000; quick 10,100)")
    parser.add_argument(
        "--appends", type=int, help="timed appends per library and size (default 20; quick 10)"
    )
    parser.add_argument("--files", type=int, help="data files to plan (default 1,000,000; quick 20,000)")
    parser.add_argument("--files-per-manifest", type=int, default=1000)
    parser.add_argument(
        "--cases",
        help=f"planning cases, comma separated, from {','.join(CASE_KEYS)} "
        "(default partition,all; quick all three)",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed plans of a selective filter (default 3)")
    parser.add_argument(
        "--scan-runs", type=int, help="timed plans of cases that read every manifest (default 2; quick 3)"
    )
    parser.add_argument("--workers", type=int, default=default_workers(), help="processes writing manifests")
    parser.add_argument("--skip-commit", action="store_true", help="skip (a), append latency")
    parser.add_argument("--skip-plan", action="store_true", help="skip (b), planning")
    parser.add_argument("--dir", help="work directory, kept and reused (default: a temporary one, removed)")
    args = parser.parse_args(argv)

    histories = [int(x) for x in (args.snapshots or ("10,100" if args.quick else "10,2000")).split(",")]
    appends = args.appends or (10 if args.quick else 20)
    files = args.files or (20_000 if args.quick else 1_000_000)
    per = min(args.files_per_manifest, files)
    if files % per:
        parser.error("--files must be a multiple of --files-per-manifest")
    keys = (args.cases or (",".join(CASE_KEYS) if args.quick else "partition,all")).split(",")
    if unknown := set(keys) - set(CASE_KEYS):
        parser.error(f"unknown --cases {sorted(unknown)}")
    scan_runs = args.scan_runs or (3 if args.quick else 2)
    settings = {
        "snapshots": ",".join(map(str, histories)),
        "appends": appends,
        "files": f"{files:,}",
        "manifests": f"{files // per:,}",
        "runs": args.runs,
        "scan-runs": scan_runs,
    }
    print_environment(
        "bench_core: icefloe vs PyIceberg, append latency and scan planning",
        command_line("bench.bench_core", argv),
        settings,
    )

    ok = True
    with workspace(args.dir, "icefloe-bench-core-") as work:
        if not args.skip_commit:
            commits = bench_commits(work, histories, appends)
            print_table(
                f"(a) append-commit latency: {appends} appends of 10 rows per library, in turns, "
                "after 1 warm-up each",
                [
                    "snapshots",
                    "icefloe median",
                    "icefloe p90",
                    "PyIceberg median",
                    "PyIceberg p90",
                    "PyIceberg / icefloe",
                ],
                [
                    [
                        f"{r.history:,}",
                        fmt_ms(r.icefloe.median),
                        fmt_ms(r.icefloe.p90),
                        fmt_ms(r.pyiceberg.median),
                        fmt_ms(r.pyiceberg.p90),
                        ratio(r.pyiceberg.median, r.icefloe.median),
                    ]
                    for r in commits
                ],
            )
        if not args.skip_plan:
            name = build_planning_table(work, files, per, args.workers)
            cases = [c for c in plan_cases(files, per) if c.key in keys]
            results = bench_planning(work, name, cases, args.runs, scan_runs)
            print_table(
                f"(b) plan_files() over {files:,} data files in {files // per:,} manifests "
                "(median; libraries in turns)",
                ["filter", "files planned", "runs", "icefloe", "PyIceberg", "PyIceberg / icefloe"],
                [
                    [
                        p.case.label,
                        f"{p.icefloe_files:,}" + ("" if p.agrees else " (!)"),
                        len(p.icefloe.samples),
                        fmt_s(p.icefloe.median),
                        fmt_s(p.pyiceberg.median),
                        ratio(p.pyiceberg.median, p.icefloe.median),
                    ]
                    for p in results
                ],
            )
            for p in results:
                if not p.agrees:
                    ok = False
                    print(
                        f"(!) {p.case.label}: icefloe planned {p.icefloe_files:,} files, PyIceberg "
                        f"{p.pyiceberg_files:,}, expected {p.case.expected_files:,}"
                    )
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
