"""Reading mutants: a worker process writes each mutant in place and reads the table; a watchdog.

A table read has three steps: read the metadata file, plan (manifest list or v4 root, manifests or
leaves, manifest DVs), read the planned files (data, position deletes, Puffin DVs). Each step is a
function of the files it opens and of what the steps before it gave, and a mutant changes one
file: the steps before the first one that opens it give the same results as for the original.
So the worker computes those once (:class:`ReadPrefix`) and, for every mutant, resumes the read
at that step (:func:`read_from`) — exactly the code a fresh read runs from there on, caches of
decoded metadata cleared. For data and delete files this skips opening the metadata and planning,
most of a read's cost. The claim is checked, not assumed: the first ``cross_checks`` distinct
mutants of every run are also read from scratch (:func:`read_rows`) and must give the same
verdict and message, or the mutant fails.

Identical mutant bytes (a small file gets the same flip twice) are read once; the duplicates take
the first one's verdict and are counted. The worker reports outcomes in batches; which mutant it is
reading is kept in shared memory, and the parent (:func:`run_mutants`) fails the run when that
index stays the same for ``MUTANT_TIMEOUT_S``: a hang fails, a passing mutant never depends on the
limit.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.fuzz.harness import PLAIN_JSON_KINDS, UNCHECKSUMMED_KINDS, Target

MUTANT_TIMEOUT_S = 20.0
"""Generous per-mutant limit (reads take milliseconds): only a hang ever reaches it."""

STARTUP_GRACE_S = 60.0
"""Extra time for the worker to start (imports, reading the original table) before the first mutant."""

BATCH_SIZE = 64
"""Outcomes per message from the worker (also sent when half a second has passed)."""

METADATA, PLAN, FILES = "metadata", "plan", "files"


@dataclass
class Outcome:
    """What reading the mutants of one target gave."""

    same: int = 0
    errors: int = 0
    failures: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # no checksum: a valid but different table
    hung: str | None = None
    duplicates: int = 0  # mutants whose bytes an earlier mutant had (verdict reused)
    cross_checked: int = 0  # mutants also read from scratch, with the same verdict required

    @property
    def total(self) -> int:
        return self.same + self.errors + len(self.changed) + len(self.failures)


# -- the read, whole or resumed ------------------------------------------------------------------


def read_step(kind: str) -> str:
    """The first step of a table read that opens a file of ``kind``."""
    if "metadata-json" in kind:
        return METADATA
    if any(part in kind for part in ("manifest", "root", "leaf")):
        return PLAN
    return FILES


@dataclass(frozen=True)
class ReadPrefix:
    """Where the read of a mutant resumes, with what the original table's read computed before.

    ``step`` METADATA: the whole read. PLAN: from planning, with the table metadata. FILES: only
    the planned tasks that open the mutated file (``tasks``): a read's result is the concatenation
    of its tasks' results, each a function of the files that task opens, so the other tasks give
    the original's rows and cannot fail.
    """

    step: str
    metadata_location: str
    metadata: Any = None  # TableMetadata, for PLAN and FILES
    tasks: tuple[Any, ...] = ()  # FileScanTasks opening the mutated file, for FILES
    keep_caches: bool = False  # the mutated file is not of a kind icefloe caches decoded


CACHED_KINDS = ("metadata-json", "manifest-list", "root", "manifest-dv")
"""Kinds of files whose decoded form icefloe caches (metadata files, manifest lists, v4 roots)."""


def _io(keep_caches: bool) -> Any:
    """A FileIO for one read; unless ``keep_caches``, the caches of decoded metadata are cleared
    first, so that a mutated metadata file, manifest list or root is decoded afresh. Reads of other
    mutants keep them: those hold only files the mutant did not change, decoded exactly as a fresh
    read decodes them."""
    from icefloe.formats.metadata.files import clear_metadata_cache
    from icefloe.io.fileio import FileIO
    from icefloe.tree import read_seam

    if not keep_caches:
        clear_metadata_cache()
        read_seam.clear_caches()
    return FileIO()


def read_rows(metadata_location: str) -> list[tuple[Any, ...]]:
    """Every row of the table whose metadata file is ``metadata_location``, sorted, nothing cached."""
    return read_from(ReadPrefix(METADATA, metadata_location))


def read_from(prefix: ReadPrefix) -> list[tuple[Any, ...]]:
    """The rows :func:`read_rows` gives (sorted by ``repr``: a mutant may hold nulls anywhere), with
    the read resumed at ``prefix.step``."""
    from icefloe.formats.metadata.files import read_table_metadata
    from icefloe.scan.table_scan import TableScan

    io = _io(prefix.keep_caches)
    md = read_table_metadata(io, prefix.metadata_location) if prefix.step == METADATA else prefix.metadata
    scan = TableScan(io, md, metadata_location=prefix.metadata_location)
    tasks = list(prefix.tasks) if prefix.step == FILES else scan.plan_files()
    return sorted((tuple(r.values()) for r in scan.read_planned(tasks).to_pylist()), key=repr)


def read_prefix(target: Target) -> ReadPrefix:
    """Run the steps of the original table's read that come before the one opening the target."""
    from icefloe.formats.metadata.files import read_table_metadata
    from icefloe.scan.table_scan import TableScan

    step = read_step(target.kind)
    if step == METADATA:
        return ReadPrefix(step, target.metadata_location)
    io = _io(False)
    md = read_table_metadata(io, target.metadata_location)
    keep = not any(part in target.kind for part in CACHED_KINDS)
    if step == PLAN:
        return ReadPrefix(step, target.metadata_location, md, keep_caches=keep)
    tasks = TableScan(io, md, metadata_location=target.metadata_location).plan_files()
    opening = tuple(t for t in tasks if target.path in _files_opened(t))
    assert opening, f"no planned task of {target.metadata_location} opens {target.path}"
    return ReadPrefix(step, target.metadata_location, md, opening, keep)


def _files_opened(task: Any) -> set[str]:
    """Local paths of every file reading ``task`` opens: data file, column files, deletes, DVs."""
    files = [task.data_file, *(ref.delete_file for ref in task.deletes)]
    paths = {f.file_path for f in files}
    paths |= {f.deletion_vector.location for f in files if f.deletion_vector is not None}
    paths |= {c.location for f in files for c in f.column_files or ()}
    return {p.removeprefix("file://") for p in paths}


def classify(
    target: Target, expected: list[tuple[Any, ...]], read: Callable[[], list[tuple[Any, ...]]]
) -> tuple[str, str]:
    """Run ``read`` once: ("same" | "error" | "unnamed" | "escaped" | "wrong", detail)."""
    from icefloe.errors import IcefloeError

    try:
        got = read()
    except IcefloeError as exc:
        text = f"{type(exc).__name__}: {exc}"
        location = getattr(exc, "location", None) or ""
        named = target.blamed in str(exc) or location.endswith(target.blamed)
        return ("error" if named else "unnamed"), text[:400]
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return "escaped", "".join(traceback.format_exception(exc, limit=-4))[-1500:]
    if got == expected:
        return "same", ""
    want, have = Counter(map(repr, expected)), Counter(map(repr, got))
    missing, extra = want - have, have - want
    return "wrong", f"{missing.total()} rows missing, {extra.total()} rows extra"


# -- manifest DVs: mutants of one column value inside a v4 root ----------------------------------


def _mdv_mutator(target: Target) -> Callable[[bytes], bytes]:
    """Writes a root whose manifest DV of ``target.mdv_of`` is replaced by the given bytes."""
    from icefloe.formats.arrow_schema import field_id_of
    from icefloe.formats.v4 import content_entry_schema as ce

    original = pq.ParquetFile(target.path)
    table, meta = original.read(), original.metadata.metadata
    loc_i = next(i for i, f in enumerate(table.schema) if field_id_of(f) == ce.LOCATION)
    info_i = next(i for i, f in enumerate(table.schema) if field_id_of(f) == ce.MANIFEST_INFO)
    locations = table.column(loc_i).to_pylist()
    row = next(i for i, v in enumerate(locations) if target.mdv_of is not None and target.mdv_of.endswith(v))
    info = table.column(info_i).combine_chunks()
    mdv_j = next(j for j in range(info.type.num_fields) if field_id_of(info.type.field(j)) == ce.MDV)

    def write(mdv: bytes) -> bytes:
        children = [info.field(j) for j in range(info.type.num_fields)]
        values = children[mdv_j].to_pylist()
        values[row] = mdv
        children[mdv_j] = pa.array(values, children[mdv_j].type)
        fields = [info.type.field(j) for j in range(info.type.num_fields)]
        rebuilt = pa.StructArray.from_arrays(children, fields=fields, mask=info.is_null())
        out = table.set_column(info_i, table.schema.field(info_i), rebuilt).replace_schema_metadata(meta)
        sink = pa.BufferOutputStream()
        pq.write_table(out, sink)
        return bytes(sink.getvalue().to_pybytes())

    return write


def _original_mdv(target: Target) -> bytes:
    from icefloe.formats.metadata.files import read_table_metadata
    from icefloe.io.fileio import FileIO
    from icefloe.tree import v4_read

    io = FileIO()
    md = read_table_metadata(io, target.metadata_location)
    snap = md.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = v4_read.read_root(io, md, snap.root_manifest)
    ref = next(r for r in root.refs if r.manifest_path == target.mdv_of)
    assert ref.mdv is not None
    return ref.mdv


def mutated_source(target: Target) -> bytes:
    """The bytes the mutations apply to: the file, or for a manifest-DV target the DV in the root."""
    return _original_mdv(target) if target.mdv_of is not None else Path(target.path).read_bytes()


def mutant_label(target: Target, seed: int, index: int) -> str:
    """What mutant ``index`` of a run changes (the mutants are generated again from the seed)."""
    from tests.support.mutation import mutants

    for i, (label, _) in enumerate(mutants(mutated_source(target), seed, index + 1)):
        if i == index:
            return label
    return "?"


# -- the worker and its watchdog -----------------------------------------------------------------


def _worker(target: Target, seed: int, count: int, cross_checks: int, progress: Any, conn: Any) -> None:
    """Read ``count`` mutants of ``target``; send batches of (index, label, verdict, detail, duplicate)."""
    from tests.support.mutation import mutants

    path = Path(target.path)
    original = path.read_bytes()
    expected = read_rows(target.metadata_location)
    prefix = read_prefix(target)
    expected_from_prefix = read_from(prefix)
    render: Callable[[bytes], bytes] = _mdv_mutator(target) if target.mdv_of is not None else bytes
    seen: dict[bytes, tuple[str, str]] = {}
    batch: list[tuple[int, str, str, str, bool]] = []
    sent = time.monotonic()
    checked = 0
    try:
        for i, (label, data) in enumerate(mutants(mutated_source(target), seed, count)):
            progress.value = i
            key = hashlib.sha256(data).digest()
            known = seen.get(key)
            duplicate = known is not None
            if known is None:
                path.write_bytes(render(data))
                known = classify(target, expected_from_prefix, lambda: read_from(prefix))
                if checked < cross_checks:
                    checked += 1
                    whole = classify(target, expected, lambda: read_rows(target.metadata_location))
                    if whole != known:
                        known = ("mismatch", f"resumed read: {known}; read from scratch: {whole}")
                seen[key] = known
            batch.append((i, label, known[0], known[1], duplicate))
            if len(batch) >= BATCH_SIZE or time.monotonic() - sent > 0.5:
                conn.send(("done", batch))
                batch, sent = [], time.monotonic()
    finally:
        path.write_bytes(original)
    conn.send(("done", batch))
    conn.send(("end", checked))


def run_mutants(target: Target, seed: int, count: int, cross_checks: int = 0) -> Outcome:
    """Read ``count`` mutants of ``target`` in a watchdog-guarded worker process."""
    return MutantRun(target, seed, count, cross_checks).wait()


class MutantRun:
    """One target's mutants being read by a worker process (started at once; :meth:`wait` watches)."""

    def __init__(self, target: Target, seed: int, count: int, cross_checks: int = 0) -> None:
        self.target, self.seed = target, seed
        self.original = Path(target.path).read_bytes()  # restored even when the worker is killed
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=False)
        self.progress = ctx.Value("q", -1, lock=False)  # the index of the mutant being read
        args = (target, seed, count, cross_checks, self.progress, child)
        self.proc = ctx.Process(target=_worker, args=args, daemon=True)
        self.proc.start()
        child.close()

    def wait(self) -> Outcome:
        """Collect the outcomes; a mutant read that makes no progress for ``MUTANT_TIMEOUT_S`` is a hang."""
        target, seed, outcome = self.target, self.seed, Outcome()
        watched, since = -1, time.monotonic()
        try:
            while True:
                if self.conn.poll(1.0):
                    try:
                        msg = self.conn.recv()
                    except EOFError:
                        outcome.hung = f"{target.kind}: the worker died while {_doing(target, seed, watched)}"
                        return outcome
                    if msg[0] == "end":
                        outcome.cross_checked = msg[1]
                        return outcome
                    for entry in msg[1]:
                        _record(outcome, target, seed, *entry)
                index = self.progress.value
                if index != watched:
                    watched, since = index, time.monotonic()
                elif time.monotonic() - since > MUTANT_TIMEOUT_S + (STARTUP_GRACE_S if index < 0 else 0):
                    self.proc.kill()
                    self.proc.join(10)
                    outcome.hung = _hang_report(target, seed, index)
                    return outcome
        finally:
            self.stop()

    def stop(self) -> None:
        """End the worker (if still running) and put the original file back."""
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(10)
        self.conn.close()
        Path(self.target.path).write_bytes(self.original)


class MutantRuns:
    """The runs of several kinds, ``len(lanes)`` at a time: lane ``i`` reads its kinds one after
    the other on its own copy of the tables (``lanes[i]``: targets by kind), so runs in different
    lanes never mutate a file of the same table. Outcomes are asked for kind by kind; the runs
    start in ``kinds`` order."""

    def __init__(
        self, lanes: list[dict[str, Target]], kinds: list[str], seed: int, count: int, cross_checks: int
    ) -> None:
        self.lanes = lanes
        self.queues: list[list[str]] = [kinds[i :: len(lanes)] for i in range(len(lanes))]
        self.lane_of = {kind: i % len(lanes) for i, kind in enumerate(kinds)}
        self.active: list[MutantRun | None] = [None] * len(lanes)
        self.done: dict[str, Outcome] = {}
        self.args = (seed, count, cross_checks)

    def outcome(self, kind: str) -> Outcome:
        """The outcome of ``kind``'s run (waiting for the runs queued before it in its lane)."""
        lane = self.lane_of[kind]
        while kind not in self.done:
            self._start_idle_lanes()
            run = self.active[lane]
            assert run is not None, f"{kind} is queued in no lane"
            self.done[run.target.kind] = run.wait()
            self.active[lane] = None
        self._start_idle_lanes()  # the next runs go on while the caller checks this outcome
        return self.done.pop(kind)

    def _start_idle_lanes(self) -> None:
        for i, queue in enumerate(self.queues):
            if self.active[i] is None and queue:
                self.active[i] = MutantRun(self.lanes[i][queue.pop(0)], *self.args)

    def close(self) -> None:
        """Stop the runs still going (a test run ended early)."""
        for run in self.active:
            if run is not None:
                run.stop()


def _doing(target: Target, seed: int, index: int) -> str:
    if index < 0:
        return "starting the worker"
    return f"reading mutant #{index} ({mutant_label(target, seed, index)}, seed {seed})"


def _hang_report(target: Target, seed: int, index: int) -> str:
    kept = Path(target.path).with_name(Path(target.path).name + ".hang")
    kept.write_bytes(Path(target.path).read_bytes())  # the mutant, for replaying it
    return (
        f"{target.kind}: no answer within {MUTANT_TIMEOUT_S:.0f} s while {_doing(target, seed, index)}; "
        f"the mutated file is kept as {kept}"
    )


def _record(
    outcome: Outcome, target: Target, seed: int, index: int, label: str, verdict: str, detail: str, dup: bool
) -> None:
    outcome.duplicates += dup
    if verdict == "same":
        outcome.same += 1
    elif verdict == "error":
        outcome.errors += 1
    elif verdict == "wrong" and target.kind in PLAIN_JSON_KINDS | UNCHECKSUMMED_KINDS:
        outcome.changed.append(f"mutant #{index} ({label}, seed {seed}): {detail}")
    else:
        outcome.failures.append(f"mutant #{index} ({label}, seed {seed}): {verdict}: {detail}")
