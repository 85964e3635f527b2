"""Shared helpers of the icefloe-vs-PyIceberg benchmarks (bench_core, bench_deletes).

Both libraries are measured in the same process, on the same files, one after the other:
one warm-up call each, then ``runs`` timed calls, reported as the median (and p90 where the
spread matters). Tables are shared through one SQLite catalog database: icefloe's ``SqlCatalog``
and PyIceberg's ``SqlCatalog`` both use the Iceberg JDBC catalog tables, so a table registered by
one is loaded by the other from the same metadata file.

Synthetic tables (millions of data files) are built by writing Avro manifests with icefloe's
``write_manifest`` and committing a snapshot whose manifest list references them (the
``CommitManifests`` action below); planning reads only metadata, so the data files need not exist.
"""

from __future__ import annotations

import gc
import os
import platform
import shlex
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from icefloe.formats.avro.manifest_list import write_manifest_list
from icefloe.spec.content import ManifestContent, ManifestFile
from icefloe.spec.snapshots import MAIN_BRANCH, Operation, RefType, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import AddSnapshot, SetSnapshotRef, TableUpdate
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import manifest_refs
from icefloe.txn.producers import new_snapshot_id
from icefloe.txn.transaction import AttemptContext

T = TypeVar("T")
R = TypeVar("R")

NAMESPACE = "bench"
CATALOG_NAME = "default"

pack_long = struct.Struct("<q").pack
pack_int = struct.Struct("<i").pack
pack_double = struct.Struct("<d").pack


# ---------------------------------------------------------------- environment and reporting


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """The command being run, as typed from the repository root."""
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python -m {module}", *(shlex.quote(a) for a in args)])


def versions() -> dict[str, str]:
    """Versions of the libraries under test and of what they stand on."""
    import fastavro
    import numpy
    import pyarrow

    import icefloe

    out = {
        "python": platform.python_version(),
        "icefloe": icefloe.__version__,
        "pyarrow": pyarrow.__version__,
        "fastavro": fastavro.__version__,
        "numpy": numpy.__version__,
    }
    try:
        import pyiceberg

        out["pyiceberg"] = pyiceberg.__version__
    except ImportError:  # pragma: no cover - the test extra installs it
        out["pyiceberg"] = "not installed"
    return out


def print_environment(title: str, command: str, settings: dict[str, Any]) -> None:
    """Print what ran where: title, command, CPUs, versions, settings and the machine's load."""
    cpus = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = cpus
    print(f"# {title}")
    print(f"command:  {command}")
    print(
        f"machine:  {platform.machine()} {platform.system()} {platform.release()}, "
        f"{cpus} CPUs ({usable} usable)"
    )
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    print("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    print(f"load avg: {load_average()} (1/5/15 min) at start")
    print(flush=True)


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
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


def log(message: str) -> None:
    """Progress on stderr, so stdout stays the report."""
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    """Timed calls of one operation, in seconds."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        """Median of the samples."""
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        """90th percentile (nearest rank: with 20 samples, the 18th smallest)."""
        ordered = sorted(self.samples)
        rank = max(1, -(-9 * len(ordered) // 10))
        return ordered[rank - 1]

    @property
    def best(self) -> float:
        """Fastest sample."""
        return min(self.samples)


def time_calls(fn: Callable[[], Any], runs: int, warmup: int = 1) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``runs`` times timed."""
    return time_interleaved([fn], runs, warmup)[0]


def time_interleaved(fns: Sequence[Callable[[], Any]], runs: int, warmup: int = 1) -> list[Timing]:
    """Warm each function up, then time them in turns (a, b, a, b, ...).

    Taking turns spreads any drift of the machine (other processes, thermal state) over all the
    functions alike, so their ratio stays meaningful on a busy machine.
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, out in zip(fns, samples, strict=True):
            gc.collect()
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [Timing(tuple(s)) for s in samples]


def load_average() -> str:
    """The 1/5/15-minute load averages (the machine may be shared: say so in the report)."""
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not available
        return "n/a"


def fmt_ms(seconds: float) -> str:
    """Milliseconds with sensible precision."""
    ms = seconds * 1000
    return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:.1f} ms"


def fmt_s(seconds: float) -> str:
    """Seconds, or milliseconds below one second."""
    return f"{seconds:.2f} s" if seconds >= 1 else fmt_ms(seconds)


def ratio(slow: float, fast: float) -> str:
    """``slow / fast`` as ``12.3x``."""
    return "n/a" if fast <= 0 else f"{slow / fast:.1f}x"


# ---------------------------------------------------------------- workspace and catalogs


@contextmanager
def workspace(path: str | None, prefix: str) -> Iterator[str]:
    """``path`` (created, kept afterwards) or a temporary directory (removed afterwards)."""
    if path:
        os.makedirs(path, exist_ok=True)
        yield os.path.abspath(path)
        return
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def spark_bench_session(name: str, master: str, work: str, **conf: str) -> Any:
    """A local SparkSession for a Spark benchmark: icefloe's catalog in ``work`` (SQLite, local
    warehouse) with namespace ``bench`` made, Spark's log at ERROR."""
    from icefloe.spark import session
    from icefloe.spark.runtime import resolve_catalog

    spark = session(
        app_name=f"icefloe-{name}",
        master=master,
        catalog_uri=f"sqlite:///{os.path.join(work, 'catalog.db')}",
        warehouse=os.path.join(work, "warehouse"),
        **conf,
    )
    spark.sparkContext.setLogLevel("ERROR")
    resolve_catalog(spark, None).create_namespace(("bench",))
    return spark


def catalog_uri(work: str) -> str:
    """The SQLite catalog database of a workspace."""
    return f"sqlite:///{work}/catalog.db"


def icefloe_catalog(work: str) -> Any:
    """icefloe's SqlCatalog on the workspace database, with the ``bench`` namespace."""
    from icefloe.catalog import load_catalog

    catalog = load_catalog(CATALOG_NAME, uri=catalog_uri(work), warehouse=f"{work}/warehouse")
    if not catalog.namespace_exists((NAMESPACE,)):
        catalog.create_namespace((NAMESPACE,))
    return catalog


def pyiceberg_catalog(work: str) -> Any:
    """PyIceberg's SqlCatalog on the same database (same catalog name, so it sees the same tables)."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(CATALOG_NAME, uri=catalog_uri(work), warehouse=f"file://{work}/warehouse")


def local_path(location: str) -> str:
    """A local filesystem path from a ``file:`` location."""
    if location.startswith("file://"):
        return location[len("file://") :]
    if location.startswith("file:"):
        return location[len("file:") :]
    return location


# ---------------------------------------------------------------- synthetic snapshots


@dataclass
class CommitManifests:
    """A transaction action: one snapshot whose manifest list is the parent's plus ``manifests``.

    The manifests must have been written for ``snapshot_id`` (entries ADDED, sequence numbers left
    to inheritance); the manifest list writer assigns the snapshot's sequence number and, in v3,
    the first row ids of the data manifests.
    """

    manifests: list[ManifestFile]
    snapshot_id: int = field(default_factory=new_snapshot_id)
    operation: Operation = Operation.APPEND
    extra_summary: dict[str, str] = field(default_factory=dict)

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Write the manifest list and return AddSnapshot + SetSnapshotRef(main)."""
        parent = current.current_snapshot()
        fv = current.format_version
        seq = current.last_sequence_number + 1 if fv >= 2 else 0
        kept = manifest_refs(ctx.io, current, parent) if parent is not None else []
        path = LocationProvider(current).new_manifest_list_path(self.snapshot_id)
        result = write_manifest_list(
            ctx.io.new_output(path),
            [*self.manifests, *kept],
            fv,
            self.snapshot_id,
            parent.snapshot_id if parent else None,
            seq,
            (current.next_row_id or 0) if fv >= 3 else None,
        )
        ctx.written_files.append(path)
        snapshot = Snapshot(
            snapshot_id=self.snapshot_id,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=seq,
            timestamp_ms=ctx.now_ms if parent is None else max(ctx.now_ms, parent.timestamp_ms + 1),
            manifest_list=path,
            summary={"operation": self.operation.value, **self._summary(parent), **self.extra_summary},
            schema_id=current.current_schema_id,
            first_row_id=result.first_row_id if fv >= 3 else None,
            added_rows=result.added_rows if fv >= 3 else None,
        )
        return [AddSnapshot(snapshot), SetSnapshotRef(MAIN_BRANCH, self.snapshot_id, RefType.BRANCH)]

    def committed_files(self) -> list[str]:
        """The manifests are the caller's; nothing to clean up on failure."""
        return []

    def _summary(self, parent: Snapshot | None) -> dict[str, str]:
        def total(key: str) -> int:
            if parent is None or parent.summary is None:
                return 0
            return int(parent.summary.get(key, 0))

        data = [m for m in self.manifests if m.content == ManifestContent.DATA]
        deletes = [m for m in self.manifests if m.content == ManifestContent.DELETES]
        files = sum(m.added_files_count or 0 for m in data)
        rows = sum(m.added_rows_count or 0 for m in data)
        del_files = sum(m.added_files_count or 0 for m in deletes)
        del_rows = sum(m.added_rows_count or 0 for m in deletes)
        out = {
            "added-data-files": str(files),
            "added-records": str(rows),
            "total-data-files": str(total("total-data-files") + files),
            "total-records": str(total("total-records") + rows),
            "total-delete-files": str(total("total-delete-files") + del_files),
            "total-position-deletes": str(total("total-position-deletes") + del_rows),
            "total-equality-deletes": str(total("total-equality-deletes")),
            "total-files-size": str(total("total-files-size")),
        }
        if del_files:
            out["added-delete-files"] = str(del_files)
            out["added-dvs"] = str(del_files)
            out["added-position-deletes"] = str(del_rows)
        return out


def commit_manifests(table: Any, manifests: list[ManifestFile], snapshot_id: int, **kwargs: Any) -> None:
    """Commit one ``CommitManifests`` snapshot to an icefloe table."""
    with table.transaction() as tx:
        tx.add_action(CommitManifests(manifests, snapshot_id, **kwargs))


def parallel_map(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[fn(x) for x in items]`` on ``workers`` processes (in-process when ``workers`` <= 1)."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items, chunksize=max(1, len(items) // (workers * 8))))


def default_workers() -> int:
    """Processes for generating synthetic manifests (all usable CPUs)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
