"""Read everything: deletion vectors in planning and in scans, icefloe against PyIceberg in one run.

    python -m bench.bench_deletes            # full: 100,000 files + 10,000 DVs; 10M-row scan
    python -m bench.bench_deletes --quick    # under a minute: 20,000 files + 2,000 DVs; 1M rows

(a) Planning with deletion vectors. A format-v3 table partitioned by ``identity(day)`` with
    ``--files`` synthetic data files (1,000 per manifest, one day each; full column metrics),
    committed as one snapshot, then ``--dvs`` deletion vectors (one per data file, every
    files/dvs-th file) in delete manifests of 1,000 entries, committed as a second snapshot. The
    DVs are real: one Puffin file per delete manifest, written with
    ``icefloe.formats.puffin.files.write_deletion_vectors``. Times ``table.scan(filter=...)
    .plan_files()`` for one partition and for everything, and checks that both libraries attach
    every DV to its data file.

(b) Scan with deletion vectors. A format-v3 table of ``--rows`` rows (id, value, category) in
    ``--data-files`` Parquet files appended with icefloe; then 1% of the rows of every file (random
    positions) are deleted by DVs in one Puffin file, committed through the tree write seam as a
    ``delete`` snapshot (``TreeChange(added_delete_files=...)``). Times ``table.scan().to_arrow()``
    of the snapshot before the DVs and of the current one, for icefloe and PyIceberg, and reports
    the cost of applying the deletes (with / without).

``--dir`` keeps the work directory and reuses both tables on the next run.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench._common import (
    NAMESPACE,
    Timing,
    command_line,
    commit_manifests,
    default_workers,
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
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Operation, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DoubleType, IntegerType, LongType, NestedField, StringType
from icefloe.tree.changes import TreeChange
from icefloe.txn.producers import SnapshotProducer
from icefloe.txn.transaction import AttemptContext

PLAN_SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "day", IntegerType(), True),
    NestedField(3, "value", DoubleType(), False),
    NestedField(4, "name", StringType(), False),
)
PLAN_SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
ROWS_PER_FILE = 1000
DELETED_PER_DV = 10

SCAN_SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "value", DoubleType(), False),
    NestedField(3, "category", StringType(), False),
)
DELETE_FRACTION = 0.01


# ---------------------------------------------------------------- (a) planning with DVs


def data_path(location: str, day: int, index: int) -> str:
    """Path of a synthetic data file (the files are never read: planning reads metadata only)."""
    return f"{location}/data/day={day}/{day:05d}-{index:05d}.parquet"


@dataclass(frozen=True)
class DataManifestJob:
    """One synthetic data manifest: all files of one day."""

    table_location: str
    day: int
    files: int
    snapshot_id: int


def write_data_manifest(job: DataManifestJob) -> ManifestFile:
    """Write one day's data manifest (runs in a worker process)."""
    from icefloe.formats.avro.manifest import write_manifest
    from icefloe.io.fileio import load_file_io

    io = load_file_io({}, job.table_location)
    d = job.day
    sizes = {1: 8_000, 2: 400, 3: 8_000, 4: 6_000}
    counts = dict.fromkeys(sizes, ROWS_PER_FILE)
    nulls = dict.fromkeys(sizes, 0)
    entries = []
    for j in range(job.files):
        lo = (d * job.files + j) * ROWS_PER_FILE
        df = DataFile(
            file_path=data_path(job.table_location, d, j),
            file_format="parquet",
            record_count=ROWS_PER_FILE,
            file_size_in_bytes=22_400 + j % 97,
            partition=(d,),
            column_sizes=sizes,
            value_counts=counts,
            null_value_counts=nulls,
            nan_value_counts={3: 0},
            lower_bounds={1: pack_long(lo), 2: pack_int(d), 3: pack_double(0.0), 4: b"aaa"},
            upper_bounds={
                1: pack_long(lo + ROWS_PER_FILE - 1),
                2: pack_int(d),
                3: pack_double(1e3),
                4: b"zzz",
            },
            split_offsets=(4,),
            sort_order_id=0,
        )
        entries.append(ManifestEntry(EntryStatus.ADDED, None, None, None, df))
    path = f"{job.table_location}/metadata/bench-data-{d:05d}-m0.avro"
    return write_manifest(
        io.new_output(path),
        entries,
        PLAN_SPEC,
        PLAN_SCHEMA,
        3,
        ManifestContent.DATA,
        job.snapshot_id,
        path=path,
    )


@dataclass(frozen=True)
class DeleteManifestJob:
    """One delete manifest and its Puffin file: DVs for ``targets`` (day, file index) pairs."""

    table_location: str
    number: int
    targets: tuple[tuple[int, int], ...]
    snapshot_id: int
    sequence_number: int


def write_delete_manifest(job: DeleteManifestJob) -> ManifestFile:
    """Write a Puffin file of real DVs and the delete manifest that points into it."""
    from icefloe.formats.avro.manifest import write_manifest
    from icefloe.formats.puffin.files import write_deletion_vectors
    from icefloe.formats.puffin.roaring64 import PositionBitmap
    from icefloe.io.fileio import load_file_io

    io = load_file_io({}, job.table_location)
    rng = np.random.default_rng(job.number)
    paths = [data_path(job.table_location, d, j) for d, j in job.targets]
    bitmaps = [
        PositionBitmap(rng.choice(ROWS_PER_FILE, DELETED_PER_DV, replace=False).astype(np.int64))
        for _ in paths
    ]
    puffin = f"{job.table_location}/data/bench-dvs-{job.number:05d}.puffin"
    with io.new_output(puffin).create() as stream:
        written = write_deletion_vectors(
            stream, zip(paths, bitmaps, strict=True), job.snapshot_id, job.sequence_number
        )
    entries = []
    for (day, _), ref in zip(job.targets, written.refs, strict=True):
        dv = DataFile(
            file_path=puffin,
            file_format="puffin",
            record_count=ref.cardinality,
            file_size_in_bytes=written.file_size,
            content=FileContent.POSITION_DELETES,
            partition=(day,),
            referenced_data_file=ref.referenced_data_file,
            content_offset=ref.offset,
            content_size_in_bytes=ref.length,
        )
        entries.append(ManifestEntry(EntryStatus.ADDED, None, None, None, dv))
    path = f"{job.table_location}/metadata/bench-deletes-{job.number:05d}-m0.avro"
    return write_manifest(
        io.new_output(path),
        entries,
        PLAN_SPEC,
        PLAN_SCHEMA,
        3,
        ManifestContent.DELETES,
        job.snapshot_id,
        path=path,
    )


def build_planning_table(work: str, files: int, dvs: int, per_manifest: int, workers: int) -> str:
    """Create (or reuse) the v3 planning table: data snapshot, then a DV snapshot."""
    from icefloe.txn.producers import new_snapshot_id

    cat = icefloe_catalog(work)
    name = f"{NAMESPACE}.dvplan_{files}_{dvs}"
    if cat.table_exists(name):
        table = cat.load_table(name)
        if len(table.snapshots()) == 2:
            log(f"planning: reusing {name}")
            return name
        cat.drop_table(name)
    table = cat.create_table(name, PLAN_SCHEMA, partition_spec=PLAN_SPEC, properties={"format-version": "3"})
    location = table.location()
    t0 = time.perf_counter()
    days = files // per_manifest
    log(f"planning: writing {days} data manifests x {per_manifest} entries ...")
    data_snapshot = new_snapshot_id()
    jobs = [DataManifestJob(location, d, per_manifest, data_snapshot) for d in range(days)]
    commit_manifests(table, parallel_map(write_data_manifest, jobs, workers), data_snapshot)

    table.refresh()
    step = files // dvs
    targets = [(n // per_manifest, n % per_manifest) for n in range(0, files, step)][:dvs]
    per_delete_manifest = min(1000, dvs)
    delete_snapshot = new_snapshot_id()
    seq = table.metadata.last_sequence_number + 1
    delete_jobs = [
        DeleteManifestJob(location, i, tuple(targets[k : k + per_delete_manifest]), delete_snapshot, seq)
        for i, k in enumerate(range(0, len(targets), per_delete_manifest))
    ]
    log(f"planning: writing {dvs} DVs in {len(delete_jobs)} Puffin files and delete manifests ...")
    deletes = parallel_map(write_delete_manifest, delete_jobs, workers)
    commit_manifests(table, deletes, delete_snapshot, operation=Operation.DELETE)
    log(f"planning: table written in {time.perf_counter() - t0:.1f} s")
    return name


@dataclass(frozen=True)
class DVPlanResult:
    """Planning times and what each library planned."""

    label: str
    icefloe: Timing
    pyiceberg: Timing
    icefloe_counts: tuple[int, int]  # (tasks, tasks with a delete file)
    pyiceberg_counts: tuple[int, int]
    expected: tuple[int, int]

    @property
    def agrees(self) -> bool:
        """Both planned the expected tasks; icefloe attached each DV to exactly its data file.

        PyIceberg 0.12 matches a position delete file to data files by the bounds of its
        ``file_path`` column only (``delete_file_index.py``), not by ``referenced_data_file``; DVs
        as Iceberg Java writes them carry no bounds, so PyIceberg attaches every DV of a partition
        to every data file of it (the reader then ignores the DVs of other files). Its count of
        tasks with a DV is therefore reported, not checked.
        """
        tasks_ok = self.icefloe_counts[0] == self.pyiceberg_counts[0] == self.expected[0]
        return tasks_ok and self.icefloe_counts == self.expected


def bench_dv_planning(
    work: str, name: str, files: int, dvs: int, per_manifest: int, runs: int, scan_runs: int
) -> list[DVPlanResult]:
    """Plan one partition and everything, both libraries in turns."""
    ice_table = icefloe_catalog(work).load_table(name)
    py_table = pyiceberg_catalog(work).load_table(name)
    counts: dict[str, tuple[int, int]] = {}
    day = files // per_manifest // 2
    step = files // dvs
    in_day = sum(1 for n in range(0, files, step) if n // per_manifest == day)
    cases = [
        (f"one partition (day = {day})", f"day = {day}", (per_manifest, in_day), runs),
        ("no filter", None, (files, dvs), scan_runs),
    ]

    def ice_plan(row_filter: str | None) -> None:
        scan = ice_table.scan(filter=row_filter) if row_filter else ice_table.scan()
        tasks = scan.plan_files()
        counts["icefloe"] = (len(tasks), sum(1 for t in tasks if t.deletes))

    def py_plan(row_filter: str | None) -> None:
        scan = py_table.scan(row_filter=row_filter) if row_filter else py_table.scan()
        tasks = list(scan.plan_files())
        counts["pyiceberg"] = (len(tasks), sum(1 for t in tasks if t.delete_files))

    ice_plan(cases[0][1])  # warm-up: imports, first calls, manifest list
    py_plan(cases[0][1])
    out = []
    for label, row_filter, expected, n in cases:
        log(f"planning: {label}, {n} run(s) per library ...")
        ice, py = time_interleaved(
            [lambda f=row_filter: ice_plan(f), lambda f=row_filter: py_plan(f)], n, warmup=0
        )
        out.append(DVPlanResult(label, ice, py, counts["icefloe"], counts["pyiceberg"], expected))
        gc.collect()
    return out


# ---------------------------------------------------------------- (b) scan with DVs


@dataclass
class AddDeletionVectors(SnapshotProducer):
    """A row-delta of deletion vectors only: new delete files through the tree write seam."""

    operation: Operation = Operation.DELETE
    dv_files: list[DataFile] = field(default_factory=list)

    def change(self, ctx: AttemptContext, current: TableMetadata, parent: Snapshot | None) -> TreeChange:
        """Only added delete files; the data files they reference are live in ``parent``."""
        return TreeChange(added_delete_files=list(self.dv_files))


def scan_batch(start: int, rows: int, seed: int) -> pa.Table:
    """``rows`` rows of (id, value, category)."""
    rng = np.random.default_rng(seed)
    categories = pa.array([f"category-{i:02d}" for i in range(32)])
    return pa.table(
        {
            "id": pa.array(np.arange(start, start + rows, dtype=np.int64)),
            "value": pa.array(rng.random(rows)),
            "category": pc.take(categories, pa.array(rng.integers(0, 32, rows))),
        }
    )


@dataclass(frozen=True)
class ScanTable:
    """The scan table: its name, the snapshot before the DVs and what the DVs delete."""

    name: str
    base_snapshot_id: int
    rows: int
    deleted: int
    deleted_id_sum: int


def build_scan_table(work: str, rows: int, data_files: int) -> ScanTable:
    """Create (or reuse) the v3 scan table: ``data_files`` appends, then one DV snapshot."""
    from icefloe.formats.puffin.files import write_deletion_vectors
    from icefloe.formats.puffin.roaring64 import PositionBitmap
    from icefloe.tree.locations import LocationProvider

    cat = icefloe_catalog(work)
    name = f"{NAMESPACE}.dvscan_{rows}_{data_files}"
    if cat.table_exists(name):
        table = cat.load_table(name)
        snaps = table.snapshots()
        if len(snaps) == data_files + 1 and snaps[-1].summary.get("bench.deleted-id-sum"):
            log(f"scan: reusing {name}")
            return ScanTable(
                name,
                snaps[-2].snapshot_id,
                rows,
                int(snaps[-1].summary["bench.deleted-rows"]),
                int(snaps[-1].summary["bench.deleted-id-sum"]),
            )
        cat.drop_table(name, purge=True)
    t0 = time.perf_counter()
    table = cat.create_table(name, SCAN_SCHEMA, properties={"format-version": "3"})
    per_file = rows // data_files
    log(f"scan: appending {data_files} Parquet files of {per_file:,} rows ...")
    with table.transaction() as tx:
        for i in range(data_files):
            tx.append(scan_batch(i * per_file, per_file, seed=i))
    table.refresh()
    base = table.current_snapshot()
    assert base is not None
    tasks = table.scan().plan_files()
    rng = np.random.default_rng(42)
    dvs: list[tuple[str, Any]] = []
    deleted = 0
    id_sum = 0
    for task in tasks:
        f = task.data_file
        n = int(f.record_count * DELETE_FRACTION)
        positions = np.sort(rng.choice(f.record_count, n, replace=False)).astype(np.int64)
        dvs.append((f.file_path, PositionBitmap(positions)))
        deleted += n
        # ids are consecutive within a file (see scan_batch): the deleted ids follow from positions
        id_sum += int(positions.sum()) + n * _first_id(f)
    puffin = LocationProvider(table.metadata).new_data_file_path(extension="puffin")
    with table.io.new_output(puffin).create() as stream:
        written = write_deletion_vectors(stream, dvs)
    dv_files = [
        DataFile(
            file_path=puffin,
            file_format="puffin",
            record_count=ref.cardinality,
            file_size_in_bytes=written.file_size,
            content=FileContent.POSITION_DELETES,
            referenced_data_file=ref.referenced_data_file,
            content_offset=ref.offset,
            content_size_in_bytes=ref.length,
        )
        for ref in written.refs
    ]
    with table.transaction() as tx:
        tx.add_action(
            AddDeletionVectors(
                dv_files=dv_files,
                snapshot_properties={"bench.deleted-rows": str(deleted), "bench.deleted-id-sum": str(id_sum)},
            )
        )
    log(f"scan: table written in {time.perf_counter() - t0:.1f} s ({deleted:,} rows deleted by DVs)")
    return ScanTable(name, base.snapshot_id, rows, deleted, id_sum)


def _first_id(f: DataFile) -> int:
    """The first ``id`` of a scan-table data file (its lower bound: ids are consecutive)."""
    from icefloe.spec.conversions import from_bytes

    assert f.lower_bounds is not None
    return int(from_bytes(LongType(), f.lower_bounds[1]))


@dataclass(frozen=True)
class ScanResult:
    """Scan times of both libraries, with and without the DVs."""

    icefloe_base: Timing
    icefloe_dvs: Timing
    pyiceberg_base: Timing
    pyiceberg_dvs: Timing
    rows: dict[str, int]
    checks: dict[str, bool]


def bench_scan(work: str, t: ScanTable, runs: int) -> ScanResult:
    """``scan().to_arrow()`` before and after the DVs, both libraries, in turns."""
    ice_table = icefloe_catalog(work).load_table(t.name)
    py_table = pyiceberg_catalog(work).load_table(t.name)
    all_ids = t.rows * (t.rows - 1) // 2
    rows: dict[str, int] = {}
    checks: dict[str, bool] = {}

    def check(key: str, table: pa.Table, with_dvs: bool) -> None:
        rows[key] = table.num_rows
        id_sum = pc.sum(table.column("id")).as_py()
        want_rows = t.rows - t.deleted if with_dvs else t.rows
        want_sum = all_ids - t.deleted_id_sum if with_dvs else all_ids
        checks[key] = table.num_rows == want_rows and id_sum == want_sum

    fns = [
        lambda: check("icefloe base", ice_table.scan(snapshot_id=t.base_snapshot_id).to_arrow(), False),
        lambda: check("icefloe dvs", ice_table.scan().to_arrow(), True),
        lambda: check("pyiceberg base", py_table.scan(snapshot_id=t.base_snapshot_id).to_arrow(), False),
        lambda: check("pyiceberg dvs", py_table.scan().to_arrow(), True),
    ]
    log(f"scan: to_arrow() of {t.rows:,} rows, {runs} run(s) of each of 4 reads ...")
    ice_base, ice_dvs, py_base, py_dvs = time_interleaved(fns, runs)
    return ScanResult(ice_base, ice_dvs, py_base, py_dvs, rows, checks)


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its tables; exit status 1 if a result is wrong."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_deletes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: the whole run in under a minute")
    parser.add_argument("--files", type=int, help="data files to plan (default 100,000; quick 20,000)")
    parser.add_argument("--dvs", type=int, help="deletion vectors to plan (default 10,000; quick 2,000)")
    parser.add_argument("--files-per-manifest", type=int, default=1000)
    parser.add_argument(
        "--rows", type=int, help="rows of the scan table (default 10,000,000; quick 1,000,000)"
    )
    parser.add_argument(
        "--data-files", type=int, help="Parquet files of the scan table (default 20; quick 4)"
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs per measurement (default 3)")
    parser.add_argument("--scan-runs", type=int, help="timed plans of all files (default 3)")
    parser.add_argument("--workers", type=int, default=default_workers(), help="processes writing manifests")
    parser.add_argument("--skip-plan", action="store_true", help="skip (a), planning with DVs")
    parser.add_argument("--skip-scan", action="store_true", help="skip (b), scans with DVs")
    parser.add_argument("--dir", help="work directory, kept and reused (default: a temporary one, removed)")
    args = parser.parse_args(argv)

    files = args.files or (20_000 if args.quick else 100_000)
    dvs = args.dvs or (2_000 if args.quick else 10_000)
    per = min(args.files_per_manifest, files)
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    data_files = args.data_files or (4 if args.quick else 20)
    scan_runs = args.scan_runs or 3
    if files % per or dvs > files or rows % data_files:
        parser.error(
            "--files must be a multiple of --files-per-manifest, --dvs <= --files, "
            "--rows a multiple of --data-files"
        )
    settings = {
        "files": f"{files:,}",
        "dvs": f"{dvs:,}",
        "rows": f"{rows:,}",
        "data-files": data_files,
        "deleted": f"{DELETE_FRACTION:.0%}",
        "runs": args.runs,
        "scan-runs": scan_runs,
    }
    print_environment(
        "bench_deletes: icefloe vs PyIceberg, planning and scanning with deletion vectors",
        command_line("bench.bench_deletes", argv),
        settings,
    )
    ok = True
    with workspace(args.dir, "icefloe-bench-deletes-") as work:
        if not args.skip_plan:
            name = build_planning_table(work, files, dvs, per, args.workers)
            results = bench_dv_planning(work, name, files, dvs, per, args.runs, scan_runs)
            print_table(
                f"(a) plan_files() of a v3 table: {files:,} data files, {dvs:,} DVs "
                "(median; libraries in turns)",
                [
                    "filter",
                    "tasks / with DV",
                    "PyIceberg: with DV*",
                    "runs",
                    "icefloe",
                    "PyIceberg",
                    "PyIceberg / icefloe",
                ],
                [
                    [
                        r.label,
                        f"{r.icefloe_counts[0]:,} / {r.icefloe_counts[1]:,}" + ("" if r.agrees else " (!)"),
                        f"{r.pyiceberg_counts[1]:,}",
                        len(r.icefloe.samples),
                        fmt_s(r.icefloe.median),
                        fmt_s(r.pyiceberg.median),
                        ratio(r.pyiceberg.median, r.icefloe.median),
                    ]
                    for r in results
                ],
            )
            print("* PyIceberg 0.12 matches DVs to data files by file_path bounds, which DVs do not carry")
            print("  (Java writes none): it attaches every DV of a partition to each of its data files.\n")
            for r in results:
                if not r.agrees:
                    ok = False
                    print(
                        f"(!) {r.label}: (tasks, tasks with DV) icefloe {r.icefloe_counts}, "
                        f"PyIceberg {r.pyiceberg_counts}, expected {r.expected}"
                    )
        if not args.skip_scan:
            t = build_scan_table(work, rows, data_files)
            s = bench_scan(work, t, args.runs)
            print_table(
                f"(b) scan().to_arrow() of {rows:,} rows in {data_files} files, {t.deleted:,} rows "
                f"deleted by DVs (median of {args.runs}; reads in turns)",
                ["library", "no deletes", "with DVs", "with DVs / no deletes"],
                [
                    [
                        "icefloe",
                        fmt_s(s.icefloe_base.median),
                        fmt_s(s.icefloe_dvs.median),
                        ratio(s.icefloe_dvs.median, s.icefloe_base.median),
                    ],
                    [
                        "PyIceberg",
                        fmt_s(s.pyiceberg_base.median),
                        fmt_s(s.pyiceberg_dvs.median),
                        ratio(s.pyiceberg_dvs.median, s.pyiceberg_base.median),
                    ],
                    [
                        "PyIceberg / icefloe",
                        ratio(s.pyiceberg_base.median, s.icefloe_base.median),
                        ratio(s.pyiceberg_dvs.median, s.icefloe_dvs.median),
                        "",
                    ],
                ],
            )
            for key, good in s.checks.items():
                if not good:
                    ok = False
                    print(f"(!) {key}: wrong rows ({s.rows[key]:,} rows or a wrong sum of ids)")
    print(f"load avg: {load_average()} (1/5/15 min) at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
