"""Crash safety of row-level commits: a writer SIGKILLed at random points never breaks the table.

A child process runs a deterministic sequence of steps through the public Table API — delete,
update, merge (with a not-matched-by-source delete), upsert, upsert with equality deletes, and
appends in between — on a v2, v3 or v4 table, in copy-on-write or merge-on-read mode. Step ``k``
is chosen from ``k`` and the table's rows after step ``k - 1`` only, and is committed with the
snapshot summary marker ``crash-test.step = k``, so the parent can replay the model to any step.

Where the kills land matters more than how many there are: most of a step's time is spent reading
and writing data, and the catalog swap takes about a millisecond, so kills at uniformly random
times would need hundreds of rounds to hit it. The child therefore runs a sampler thread that
writes "step, verb, phase of the writer's innermost recognised frame" to a small shared file every
0.2 ms; the parent polls it and SIGKILLs the child a seeded random fraction of a millisecond after
it is seen in the phase aimed at (read, write data, write deletes, write tree, write metadata
JSON, catalog swap — each once at CI=1, for every verb otherwise), then a few kills at plain
random times, then lets one last child finish. The kill is counted in the phase of the child's
last sample. Whether a sample catches a short phase depends on the machine's load, so a target
the sampled attempts did not hit gets one deterministic attempt: the child stops itself (SIGSTOP,
from a profile hook) on entering the phase, or after the verb's step ran without it ("absent"),
and is killed there. Which phases are hit therefore never depends on timing. After every kill:

- the table loads, and the current snapshot's marker ``m`` names a step that was committed exactly
  once (the ancestry's markers are ``m, m-1, ..., 0``) and no earlier than the last check's;
- the rows equal the model after step ``m``;
- on v3/v4, ``_row_id`` is non-null and unique;
- every file the current snapshot references exists (manifest list / v4 root, manifests or
  leaves, data files, delete files, deletion-vector Puffin files);
- the next child resumes from that state and commits further.

SIGKILL leaves the page cache intact, so this proves the commit protocol (what is published when),
not durability after power loss.
"""

from __future__ import annotations

import mmap
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog import load_catalog
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree.read_seam import live_entries, manifest_refs

MARKER = "crash-test.step"
IDENT = "db.t"
CATS = ("a", "b", "c")
INITIAL_ROWS = 24
SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), True),
    NestedField(3, "v", LongType(), True),
    identifier_field_ids=[1],
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
# Small thresholds so a few commits already merge manifests (v2/v3) or build and compact leaves (v4).
TREE_PROPERTIES = {
    "commit.manifest.min-count-to-merge": "4",
    "write.v4.root.max-inline-entries": "7",
    "write.v4.compaction.min-small-leaves": "3",
}
VERBS = ("delete", "update", "merge", "append", "upsert", "equality-upsert")

Row = tuple[int, str, int]
Model = dict[int, Row]


# ---- the step sequence and its model (shared by parent and child) --------------------------------


@dataclass(frozen=True)
class Step:
    """One row-level commit: which rows it deletes, updates (``v = number``) and inserts."""

    number: int
    verb: str
    deleted: tuple[int, ...] = ()
    updated: tuple[int, ...] = ()
    inserted: tuple[int, ...] = ()


def row(key: int, version: int) -> Row:
    """The row with id ``key`` as written by step ``version`` (its partition never changes)."""
    return (key, CATS[key % len(CATS)], version)


def plan_step(number: int, model: Model) -> Step:
    """Step ``number`` given the rows after the previous step; every step changes something."""
    verb = VERBS[(number - 1) % len(VERBS)]
    picked = random.Random(number).sample(sorted(model), 3)
    fresh = [1000 * number + j for j in range(6)]
    if verb == "delete":
        return Step(number, verb, deleted=tuple(sorted(picked[:2])))
    if verb == "update":
        return Step(number, verb, updated=tuple(sorted(picked)))
    if verb == "merge":
        return Step(
            number,
            verb,
            deleted=(picked[2],),
            updated=tuple(sorted(picked[:2])),
            inserted=(fresh[0], fresh[1]),
        )
    if verb == "append":
        return Step(number, verb, inserted=tuple(fresh))
    return Step(number, verb, updated=tuple(sorted(picked[:2])), inserted=(fresh[0],))


def apply_step(model: Model, step: Step) -> Model:
    """The rows after ``step``, computed in plain Python."""
    after = {key: value for key, value in model.items() if key not in step.deleted}
    for key in step.updated + step.inserted:
        after[key] = row(key, step.number)
    return after


def initial_model() -> Model:
    """Step 0: the table's first append."""
    return {key: row(key, 0) for key in range(INITIAL_ROWS)}


def model_at(step_number: int) -> Model:
    """The rows after step ``step_number``, replayed from step 0."""
    model = initial_model()
    for number in range(1, step_number + 1):
        model = apply_step(model, plan_step(number, model))
    return model


def arrow_rows(rows: list[Row]) -> pa.Table:
    """Rows as an Arrow table of the test schema."""
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": pa.array([r[1] for r in rows], pa.string()),
            "v": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def run_step(table: Table, step: Step, mode: str) -> None:
    """Commit ``step`` through the public Table API (one snapshot, marked with the step number)."""
    marker = {MARKER: str(step.number)}
    changed = arrow_rows([row(key, step.number) for key in step.updated + step.inserted])
    if step.verb == "append":
        table.append(changed, snapshot_properties=marker)
    elif step.verb == "delete":
        table.delete(_id_filter(step.deleted), mode=mode, snapshot_properties=marker)
    elif step.verb == "update":
        table.update({"v": step.number}, _id_filter(step.updated), mode=mode, snapshot_properties=marker)
    elif step.verb == "merge":
        table.merge(
            changed,
            on="id",
            when_not_matched_by_source_delete=pc.field("id") == step.deleted[0],
            mode=mode,
            snapshot_properties=marker,
        )
    elif step.verb == "upsert":
        table.upsert(changed, on="id", mode=mode, snapshot_properties=marker)
    else:
        table.upsert_with_equality_deletes(changed, on=["id", "cat"], snapshot_properties=marker)


def _id_filter(keys: tuple[int, ...]) -> str:
    return f"id in ({', '.join(str(k) for k in keys)})"


def step_of(snapshot: Snapshot | None) -> int:
    """The marker of the step that committed ``snapshot``."""
    assert snapshot is not None
    return int(snapshot.summary[MARKER])


# ---- the child and its phase sampler ---------------------------------------------------------------

# Innermost matching frame wins: (path fragment of the module, function name prefix or "*", phase).
PHASE_RULES: tuple[tuple[str, str, str], ...] = (
    ("catalog/sql.py", "_swap_metadata_location", "swap"),
    ("formats/metadata/files.py", "write_table_metadata", "write-metadata-json"),
    ("catalog/base.py", "commit_table", "swap"),
    ("catalog/base.py", "load_table", "load"),
    ("txn/transaction.py", "_cleanup", "cleanup"),
    ("txn/validation.py", "*", "validate"),
    ("txn/producers.py", "*", "write-tree"),  # tree/ is not a rule: scans and writers use it too
    ("txn/delete_writer.py", "*", "write-deletes"),
    ("dml/position_deletes.py", "*", "write-deletes"),
    ("txn/equality_deletes.py", "*", "write-deletes"),
    ("txn/data_writer.py", "*", "write-data"),
    ("dml/row_io.py", "write_", "write-data"),
    ("scan/", "*", "read"),
)
# The phases of a commit every case must kill at least once, in the order a step runs them.
PHASES = ("read", "write-data", "write-deletes", "write-tree", "write-metadata-json", "swap")
SAMPLE_BYTES = 64


def classify(frame: FrameType | None) -> str:
    """The phase of the innermost frame a rule recognises ("between" when none does)."""
    while frame is not None:
        path, name = frame.f_code.co_filename.replace(os.sep, "/"), frame.f_code.co_name
        for fragment, function, phase in PHASE_RULES:
            if fragment in path and (function == "*" or name.startswith(function)):
                return phase
        frame = frame.f_back
    return "between"


@dataclass(frozen=True)
class Sample:
    """Where the writer was: step number, its verb, and the phase."""

    step: int
    verb: str
    phase: str

    @classmethod
    def parse(cls, raw: bytes) -> Sample | None:
        """None for an empty or torn sample."""
        fields = raw.decode(errors="replace").split()
        if len(fields) != 4 or fields[3] != ";" or not fields[0].isdigit():
            return None
        return cls(int(fields[0]), fields[1], fields[2])


class PhaseSampler(threading.Thread):
    """Writes the writer thread's current ``Sample`` to a shared file every 0.2 ms."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        with open(path, "r+b") as f:
            self._map = mmap.mmap(f.fileno(), SAMPLE_BYTES)
        self._main = threading.main_thread().ident or 0
        self.step: Step | None = None
        self.lock = threading.Lock()

    def run(self) -> None:
        while True:
            with self.lock:  # StopAt's last sample is never overwritten
                step = self.step
                if step is not None:
                    self.write(step, classify(sys._current_frames().get(self._main)))
            time.sleep(0.0002)

    def write(self, step: Step, phase: str) -> None:
        """Publish where the writer is."""
        self._map[:SAMPLE_BYTES] = f"{step.number} {step.verb} {phase} ;".encode().ljust(SAMPLE_BYTES)


def own_phase(code: CodeType) -> str | None:
    """The phase of a frame running ``code`` by the first rule that recognises it alone."""
    path, name = code.co_filename.replace(os.sep, "/"), code.co_name
    for fragment, function, phase in PHASE_RULES:
        if fragment in path and (function == "*" or name.startswith(function)):
            return phase
    return None


class StopAt:
    """The deterministic kill point: stop this process on entering ``phase`` in a step of ``verb``
    (any verb when "*"), or once such steps ran without it ("absent": one step of the verb, or a
    whole cycle of verbs for "*"). The parent sees the sample and kills the stopped child."""

    def __init__(self, spec: str, sampler: PhaseSampler) -> None:
        self.verb, self.phase = spec.split(":")
        self.sampler = sampler
        self.steps_without = 0
        self._phases: dict[CodeType, str | None] = {}
        sys.setprofile(self._on_event)

    def _on_event(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        code = frame.f_code
        phase = self._phases[code] if code in self._phases else self._phases.setdefault(code, own_phase(code))
        step = self.sampler.step
        if phase == self.phase and step is not None and self.verb in ("*", step.verb):
            self._stop(step, phase)

    def after_step(self, step: Step) -> None:
        """Called after each committed step: stop as "absent" when the phase had its chance."""
        if self.verb in ("*", step.verb):
            self.steps_without += 1
        if self.steps_without >= (len(VERBS) if self.verb == "*" else 1):
            self._stop(step, "absent")

    def _stop(self, step: Step, phase: str) -> None:
        sys.setprofile(None)
        with self.sampler.lock:
            self.sampler.step = None  # the sampler stops publishing: this sample is the last one
            self.sampler.write(step, phase)
        os.kill(os.getpid(), signal.SIGSTOP)


def child_main(
    uri: str, warehouse: str, last_step: int, mode: str, sample_file: str, stop_at: str = ""
) -> None:
    """Resume the sequence from the table's current step and commit up to ``last_step``
    (``stop_at``: "verb:phase" for a deterministic stop, see ``StopAt``)."""
    sys.setswitchinterval(0.0002)  # lets the sampler see short phases (the swap takes ~1 ms)
    table = load_catalog(uri=uri, warehouse=warehouse).load_table(IDENT)
    done = step_of(table.current_snapshot())
    model = model_at(done)
    sampler = PhaseSampler(sample_file)
    sampler.start()
    stop = StopAt(stop_at, sampler) if stop_at else None
    print("ready", flush=True)
    while done < last_step:
        step = plan_step(done + 1, model)
        sampler.step = step
        run_step(table, step, mode)
        model, done = apply_step(model, step), step.number
        if stop is not None:
            stop.after_step(step)


CHILD = (
    "import sys; from tests.catalog.test_row_level_crash import child_main; "
    "child_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])"
)


# ---- the parent's checks -----------------------------------------------------------------------------


def check_committed_state(uri: str, warehouse: str) -> int:
    """Load the table fresh, check it is a committed state, and return its step."""
    table = load_catalog(uri=uri, warehouse=warehouse).load_table(IDENT)
    snapshot = table.current_snapshot()
    step = step_of(snapshot)
    markers = []
    while snapshot is not None:
        markers.append(step_of(snapshot))
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    assert markers == list(range(step, -1, -1)), f"a step was committed twice or skipped: {markers}"
    _check_files_exist(table)
    columns = ["id", "cat", "v"] + (["_row_id"] if table.format_version >= 3 else [])
    data = table.scan(columns=tuple(columns)).to_arrow().to_pydict()
    got = sorted(zip(data["id"], data["cat"], data["v"], strict=True))
    assert got == sorted(model_at(step).values()), f"rows differ from step {step}'s"
    if table.format_version >= 3:
        row_ids = data["_row_id"]
        assert None not in row_ids and len(set(row_ids)) == len(row_ids), "null or duplicate _row_id"
    return step


def _check_files_exist(table: Table) -> None:
    """Every file the current snapshot references is on disk."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    tree_root = snapshot.manifest_list if snapshot.manifest_list is not None else snapshot.root_manifest
    paths = {table.metadata_location or "", tree_root or ""}
    paths.update(m.manifest_path for m in manifest_refs(table.io, table.metadata, snapshot))
    for entry in live_entries(table.io, table.metadata, snapshot):
        paths.add(entry.data_file.file_path)
        if entry.data_file.deletion_vector is not None:
            paths.add(entry.data_file.deletion_vector.location)
    missing = sorted(p for p in paths if not table.io.exists(p))
    assert not missing, f"the current snapshot references missing files: {missing}"


# ---- the parent: kill schedule -------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Kill as soon as the writer is seen in ``phase`` (of a ``verb`` step, or any when None)."""

    phase: str
    verb: str | None = None

    def matches(self, sample: Sample) -> bool:
        """Whether ``sample`` is inside the target."""
        return sample.phase == self.phase and self.verb in (None, sample.verb)


def kill_targets() -> list[Target]:
    """Every phase once at CI=1; every phase of every verb otherwise (in the order steps run)."""
    if os.environ.get("CI"):
        return [Target(phase) for phase in PHASES]
    return [Target(phase, verb) for verb in VERBS for phase in PHASES]


RANDOM_KILLS = 2 if os.environ.get("CI") else 8
TARGET_ATTEMPTS = 3


@dataclass
class KillLog:
    """Where the kills landed (phase -> count, from the writer's last sample) and what was not hit."""

    phases: Counter[str]
    absent: list[Target] = field(default_factory=list)  # the verb's step does not have that phase
    missed: list[Target] = field(default_factory=list)  # the kills landed after the phase ended
    rounds: int = 0

    @property
    def kills(self) -> int:
        """How many children were killed."""
        return sum(self.phases.values())


class CrashRun:
    """One table, and child writers that the test kills while they commit."""

    def __init__(self, tmp_path: Path, format_version: int, mode: str, seed: str) -> None:
        self.uri, self.warehouse = f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse")
        self.mode = mode
        self.rng = random.Random(seed)
        self.log = KillLog(Counter())
        self.done = 0
        self._sample_file = tmp_path / "sample"
        self._sample_file.write_bytes(b" " * SAMPLE_BYTES)
        repo = Path(__file__).parents[2]
        self._env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), str(repo), *sys.path])}
        catalog = load_catalog(uri=self.uri, warehouse=self.warehouse)
        catalog.create_namespace(("db",))
        table = catalog.create_table(
            IDENT,
            SCHEMA,
            partition_spec=SPEC,
            properties={"format-version": str(format_version), **TREE_PROPERTIES},
        )
        table.append(arrow_rows(sorted(initial_model().values())), snapshot_properties={MARKER: "0"})

    def _start(self, last_step: int, stop_at: str = "") -> subprocess.Popen[str]:
        self.log.rounds += 1
        self._sample_file.write_bytes(b" " * SAMPLE_BYTES)
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                self.uri,
                self.warehouse,
                str(last_step),
                self.mode,
                str(self._sample_file),
                stop_at,
            ],
            env=self._env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"  # imports done, table loaded: it commits now
        return child

    def _kill(self, child: subprocess.Popen[str]) -> Sample | None:
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
        last = Sample.parse(self._sample_file.read_bytes())
        self.log.phases[last.phase if last else "before-first-step"] += 1
        return last

    def _after_round(self) -> None:
        now = check_committed_state(self.uri, self.warehouse)
        assert now >= self.done, f"the table went back from step {self.done} to {now}"
        self.done = now

    def aim_at(self, targets: list[Target]) -> None:
        """Kill children in each target in turn (one child keeps running past absent targets)."""
        child: subprocess.Popen[str] | None = None
        try:
            for target in targets:
                outcome = "missed"
                for _ in range(TARGET_ATTEMPTS):
                    child = child or self._start(last_step=self.done + 10 * len(VERBS))
                    outcome = self._kill_in(child, target)
                    if outcome == "absent":
                        break
                    child = None
                    self._after_round()
                    if outcome == "hit":
                        break
                if outcome == "hit":
                    continue
                if child is not None:  # the sampled attempts saw no such phase: make sure
                    self._kill(child)
                    child = None
                    self._after_round()
                self.log.missed.append(target)
                if self._kill_at_entry(target) == "absent":
                    self.log.absent.append(target)
                self._after_round()
        finally:
            if child is not None:
                self._kill(child)
        self._after_round()

    def _kill_in(self, child: subprocess.Popen[str], target: Target) -> str:
        """Kill ``child`` once it is seen in ``target``; say whether its last sample was still there.

        "hit": the last sample is in the target; "missed": the child had moved on; "absent" (the
        child is left running): a step of the target's verb (any verb: a whole cycle) ran without it.
        """
        with open(self._sample_file, "rb") as f:
            samples = mmap.mmap(f.fileno(), SAMPLE_BYTES, access=mmap.ACCESS_READ)
        first_step: int | None = None
        try:
            while child.poll() is None:
                sample = Sample.parse(samples[:SAMPLE_BYTES])
                if sample is not None and target.matches(sample):
                    time.sleep(self.rng.uniform(0.0, 0.0005))
                    last = self._kill(child)
                    return "hit" if last is not None and target.matches(last) else "missed"
                if sample is not None and (target.verb is None or sample.verb == target.verb):
                    first_step = sample.step if first_step is None else first_step
                    if sample.step > first_step + (len(VERBS) if target.verb is None else 0):
                        return "absent"
                time.sleep(0.0002)
        finally:
            samples.close()
        raise AssertionError(f"the writer finished without reaching {target}")

    def _kill_at_entry(self, target: Target) -> str:
        """Kill a child stopped on entering ``target`` ("hit"), or stopped after its steps ran
        without it ("absent"). The wait only polls for the child's own report."""
        spec = f"{target.verb or '*'}:{target.phase}"
        child = self._start(last_step=self.done + 2 * len(VERBS), stop_at=spec)
        with open(self._sample_file, "rb") as f:
            samples = mmap.mmap(f.fileno(), SAMPLE_BYTES, access=mmap.ACCESS_READ)
        deadline = time.monotonic() + 600  # only a broken child gets near it: fail, do not hang
        try:
            while child.poll() is None and time.monotonic() < deadline:
                sample = Sample.parse(samples[:SAMPLE_BYTES])
                if sample is not None and sample.phase == "absent":
                    os.kill(child.pid, signal.SIGKILL)
                    assert child.wait() == -signal.SIGKILL
                    return "absent"
                if sample is not None and target.matches(sample):
                    last = self._kill(child)
                    assert last is not None and target.matches(last), (target, last)
                    return "hit"
                time.sleep(0.0002)
        finally:
            samples.close()
        if child.poll() is None:
            self._kill(child)
        raise AssertionError(f"the writer finished without reaching {target} or reporting it absent")

    def kill_at_random(self) -> None:
        """Run a child and kill it after a random time."""
        child = self._start(last_step=self.done + 4 * len(VERBS))
        try:
            child.wait(timeout=self.rng.uniform(0.0, 0.6))
        except subprocess.TimeoutExpired:
            self._kill(child)
        self._after_round()

    def finish(self, steps: int) -> None:
        """A last child, not killed, resumes and commits ``steps`` more steps."""
        target = self.done + steps
        child = self._start(last_step=target)
        assert child.wait(timeout=120) == 0
        self._after_round()
        assert self.done == target


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize("format_version", [2, 3, 4])
def test_killed_row_level_writers_leave_a_committed_state(
    tmp_path: Path, format_version: int, mode: str
) -> None:
    run = CrashRun(tmp_path, format_version, mode, seed=f"{format_version}-{mode}")
    run.aim_at(kill_targets())
    for _ in range(RANDOM_KILLS):
        run.kill_at_random()
    run.finish(len(VERBS))
    log = run.log
    print(f"\nv{format_version} {mode}: {log.kills} kills in {log.rounds} rounds; phases {dict(log.phases)}")
    print(f"  not in that step: {[f'{t.verb} {t.phase}' for t in log.absent]}; missed: {log.missed}")
    assert set(PHASES) <= set(log.phases), f"no kill in {set(PHASES) - set(log.phases)}"
