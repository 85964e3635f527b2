"""A model of concurrent commits: transactions planned from one base, committed in some order.

The fuzzers in ``tests/txn/test_concurrent_commits_model.py`` and
``tests/server/test_concurrent_commits_rest.py`` load one table several times (every copy sees the
same base snapshot), queue one operation on each copy, commit the copies in some order and compare
the table with a plain Python model of the rows.

The model is a dict ``id -> (grp, val)``. Ids are never reused and every update writes a ``val``
never seen before, so ``(id, val)`` names one version of one row. A row-level operation (delete,
update, overwrite) is planned against the base, so when it commits it may only touch the *base*
versions of the rows its filter selects; whatever else it does is a lost update, a lost delete or
a resurrected row. What Iceberg's validation rules (Java's ``MergingSnapshotProducer``:
``validateNoConflictingData`` / ``validateNoConflictingDeletes`` / ``validateDeletedFiles``,
``BaseRewriteFiles``) say about each pair:

- an append, an equality delete and a property change never conflict (an equality delete is
  refused only when a concurrent v4 column update gave its data files column files);
- under ``serializable`` isolation a row-level operation must be refused when a concurrent commit
  added rows its filter matches; under ``snapshot`` those rows stay;
- an update whose base rows were deleted or updated concurrently must be refused (it would bring
  them back or lose the other update); a copy-on-write rewrite of a file whose rows changed
  concurrently would show in the contents as a resurrected row;
- a compaction must be refused when a rewritten file got deletes or was removed concurrently;
  concurrent appends and equality deletes (the rewritten rows keep their sequence number) are fine.

Refusals must be non-retryable ``CommitConflict``s (see ``commit`` for the one documented
``ValidationError``). A refusal is allowed only when a concurrent commit could cause it
(``may_conflict``); refusing a commit nothing touched is a bug too. Commits that setup changes
make first give the base deletes, deletion vectors and column files to meet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from icefloe.errors import CommitConflict, ValidationError
from icefloe.maintenance.rewrite_data_files import LocalGroupWriter, plan_rewrite, rewrite_action
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import IntegerType, LongType, NestedField
from icefloe.table.table import Table
from icefloe.table.table_transaction import TableTransaction
from icefloe.txn.commit_options import CommitOptions
from icefloe.txn.equality_deletes import write_equality_delete_files
from icefloe.txn.producers import RowDelta
from icefloe.txn.schema_evolution import UpdateSchema

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "grp", IntegerType(), True),
    NestedField(3, "val", LongType(), True),
)
BY_GRP = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "grp"))
ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32(), nullable=False),
        pa.field("val", pa.int64(), nullable=False),
    ]
)
OP_TAG = "fuzz-op"  # snapshot summary property naming the operation that wrote the snapshot
SERIALIZABLE, SNAPSHOT = "serializable", "snapshot"
COW, MOR = "copy-on-write", "merge-on-read"

Rows = dict[int, tuple[int, int]]  # id -> (grp, val)

# The base: two appends (two files per partition when partitioned); groups 0-2 hold rows, group 3
# is empty so an overwrite or delete of it reads nothing from the base.
BASE_BATCHES: tuple[Rows, ...] = (
    {i: (i % 3, 100 + i) for i in range(0, 5)},
    {i: (i % 3, 100 + i) for i in range(5, 9)},
)


# ---------------------------------------------------------------- row filters


@dataclass(frozen=True)
class Filter:
    """A row filter both the table (as filter text) and the model (as a predicate) evaluate."""

    column: str  # "id" | "grp" | "val"
    op: str  # "=" | "<" | ">="
    value: int

    @property
    def text(self) -> str:
        return f"{self.column} {self.op} {self.value}"

    def matches(self, row_id: int, row: tuple[int, int]) -> bool:
        value = {"id": row_id, "grp": row[0], "val": row[1]}[self.column]
        if self.op == "=":
            return value == self.value
        if self.op == "<":
            return value < self.value
        return value >= self.value


# ---------------------------------------------------------------- operations


@dataclass(frozen=True)
class Append:
    groups: tuple[int, ...]  # one new row per entry, in that group


@dataclass(frozen=True)
class Overwrite:
    group: int  # replaces the base rows of this group (copy-on-write) with one new row


@dataclass(frozen=True)
class Delete:
    filter: Filter
    mode: str
    isolation: str


@dataclass(frozen=True)
class Update:
    filter: Filter
    mode: str
    isolation: str


@dataclass(frozen=True)
class EqualityDelete:
    ids: tuple[int, ...]  # base ids whose rows (any version) go


@dataclass(frozen=True)
class Compact:
    group: int | None  # None: every file


@dataclass(frozen=True)
class AddColumn:
    pass


@dataclass(frozen=True)
class SetProperty:
    pass


Operation = Append | Overwrite | Delete | Update | EqualityDelete | Compact | AddColumn | SetProperty
ROW_LEVEL = (Overwrite, Delete, Update)


def isolation_of(op: Operation) -> str:
    """The isolation level a row-level operation commits with (overwrite: the default)."""
    return op.isolation if isinstance(op, Delete | Update) else SERIALIZABLE


def filter_of(op: Operation) -> Filter:
    """The rows a row-level operation reads."""
    if isinstance(op, Overwrite):
        return Filter("grp", "=", op.group)
    assert isinstance(op, Delete | Update)
    return op.filter


# ---------------------------------------------------------------- tables


COLUMN_UPDATES = {"write.v4.column-updates.enabled": "true"}  # v4 merge-on-read updates write column files


def create_table(
    catalog: object, name: str, version: int, partitioned: bool, properties: Mapping[str, str] | None = None
) -> Table:
    """The base table: ``BASE_BATCHES`` appended one after the other."""
    table: Table = catalog.create_table(  # type: ignore[attr-defined]
        name,
        SCHEMA,
        partition_spec=BY_GRP if partitioned else None,
        properties={"format-version": str(version), **(properties or {})},
    )
    for batch in BASE_BATCHES:
        table.append(arrow_rows(batch))
    return table


def base_rows() -> Rows:
    return {k: v for batch in BASE_BATCHES for k, v in batch.items()}


def arrow_rows(rows: Mapping[int, tuple[int, int]]) -> pa.Table:
    ids = sorted(rows)
    return pa.table(
        [
            pa.array(ids, pa.int64()),
            pa.array([rows[i][0] for i in ids], pa.int32()),
            pa.array([rows[i][1] for i in ids], pa.int64()),
        ],
        schema=ARROW,
    )


def table_rows(table: Table) -> list[tuple[int, int, int]]:
    """Every live row as (id, grp, val), sorted; duplicates kept so they show."""
    data = table.scan(columns=("id", "grp", "val")).to_arrow().to_pylist()
    return sorted((r["id"], r["grp"], r["val"]) for r in data)


def row_ids(table: Table) -> list[tuple[int, int | None]]:
    """(id, _row_id) of every live row (v3+)."""
    data = table.scan(columns=("id", "_row_id")).to_arrow().to_pylist()
    return sorted((r["id"], r["_row_id"]) for r in data)


@dataclass
class Queued:
    """One operation queued on its own copy of the table (nothing committed yet)."""

    index: int
    op: Operation
    tx: TableTransaction
    new_rows: Rows = field(default_factory=dict)  # rows the operation adds (append, overwrite)
    new_val: int | None = None  # the value an update writes
    is_noop: bool = False  # nothing queued: a delete / update matching nothing, nothing to compact
    writes_column_files: bool = False  # a v4 merge-on-read update with column updates on


def queue(index: int, op: Operation, table: Table, next_id: int) -> Queued:
    """Queue ``op`` on ``table`` (its own freshly loaded copy); new ids start at ``next_id``."""
    tag = CommitOptions(snapshot_properties={OP_TAG: str(index)})
    tx = TableTransaction(table)
    queued = Queued(index, op, tx)
    md = table.metadata
    if isinstance(op, Append):
        queued.new_rows = {next_id + k: (g, 10_000 + next_id + k) for k, g in enumerate(op.groups)}
        tx.append(arrow_rows(queued.new_rows), options=tag)
    elif isinstance(op, Overwrite):
        queued.new_rows = {next_id: (op.group, 10_000 + next_id)}
        tx.overwrite(arrow_rows(queued.new_rows), f"grp = {op.group}", options=tag)
    elif isinstance(op, Delete):
        options = CommitOptions(snapshot_properties=tag.properties, isolation_level=op.isolation)
        queued.is_noop = not tx.delete(op.filter.text, mode=op.mode, options=options).changed
    elif isinstance(op, Update):
        options = CommitOptions(snapshot_properties=tag.properties, isolation_level=op.isolation)
        queued.new_val = 20_000 + next_id
        result = tx.update({"val": queued.new_val}, op.filter.text, mode=op.mode, options=options)
        queued.is_noop = not result.changed
        columns = md.properties.get("write.v4.column-updates.enabled", "false") == "true"
        queued.writes_column_files = columns and op.mode == MOR and result.changed
    elif isinstance(op, EqualityDelete):
        base = base_rows()
        keys = arrow_rows({i: base[i] for i in op.ids}).select(["id", "grp"])
        files = write_equality_delete_files(table.io, md, keys, (1, 2))
        head = md.current_snapshot()
        tx.add_action(
            RowDelta(
                snapshot_properties=tag.properties,
                owned_files=[f.file_path for f in files],
                added_deletes=files,
                base_snapshot_id=head.snapshot_id if head else None,
            )
        )
    elif isinstance(op, Compact):
        row_filter = None if op.group is None else f"grp = {op.group}"
        plan = plan_rewrite(table.io, md, md.current_snapshot(), row_filter, rewrite_all=True)
        queued.is_noop = not plan.groups
        if plan.groups:
            added = LocalGroupWriter().write(table, plan)
            tx.add_action(rewrite_action(plan, added, snapshot_properties=tag.properties))
    elif isinstance(op, AddColumn):
        tx.add_action(UpdateSchema(md).add_column(f"extra_{index}", LongType()))
    else:
        tx.set_properties({f"fuzz.prop-{index}": "set"})
    return queued


Refusal = CommitConflict | ValidationError


def commit(queued: Queued) -> Refusal | None:
    """Commit with the library's normal retry: None when it committed, else the refusal.

    A refusal is a non-retryable ``CommitConflict``, or the ``ValidationError`` of an equality
    delete meeting v4 column files (documented as refused outright, also when a concurrent update
    wrote them); anything else is a bug and propagates.
    """
    try:
        queued.tx.commit()
    except CommitConflict as exc:
        assert not exc.retryable, f"a conflict that ran out of retries: {exc}"
        return exc
    except ValidationError as exc:
        if not (isinstance(queued.op, EqualityDelete) and "column files" in str(exc)):
            raise
        return exc
    return None


# ---------------------------------------------------------------- the model


def _touches_data(op: Operation) -> bool:
    return not isinstance(op, AddColumn | SetProperty)


def may_conflict(op: Operation, earlier: list[Queued]) -> bool:
    """Whether a refusal of ``op`` is allowed after the ``earlier`` successful concurrent commits."""
    done = [q for q in earlier if not q.is_noop]
    if isinstance(op, EqualityDelete):  # documented: never on a data file with v4 column files
        return any(q.writes_column_files for q in done)
    if isinstance(op, Append | SetProperty):
        return False
    if isinstance(op, AddColumn):
        return any(isinstance(q.op, AddColumn) for q in done)
    if isinstance(op, Compact):
        return any(isinstance(q.op, (*ROW_LEVEL, Compact)) for q in done)
    removing = any(isinstance(q.op, (*ROW_LEVEL, EqualityDelete, Compact)) for q in done)
    adding = any(q.new_rows or q.new_val is not None for q in done)
    return removing or (adding and isolation_of(op) == SERIALIZABLE)


@dataclass
class Model:
    """The rows after the commits applied so far, and what each commit was allowed to do."""

    base: Rows
    rows: Rows = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rows = dict(self.base)

    def _base_version(self, row_id: int) -> bool:
        return row_id in self.base and self.rows.get(row_id) == self.base[row_id]

    def wrongly_accepted(self, op: Operation) -> str | None:
        """Why ``op`` committing now breaks Iceberg's rules (None: it may commit)."""
        if not isinstance(op, ROW_LEVEL):
            return None
        f = filter_of(op)
        if isinstance(op, Update):  # a base row it rewrites changed or went concurrently
            for row_id, row in self.base.items():
                if f.matches(row_id, row) and not self._base_version(row_id):
                    return f"it updates row {row_id}, which a concurrent commit changed or deleted"
        if isolation_of(op) == SERIALIZABLE:
            for row_id, row in self.rows.items():
                if not self._base_version(row_id) and f.matches(row_id, row):
                    return f"a concurrent commit added row {row_id} {row} matching {f.text} (serializable)"
        return None

    def apply(self, q: Queued) -> None:
        """Apply a successful commit of ``q``."""
        op = q.op
        if isinstance(op, ROW_LEVEL):
            f = filter_of(op)
            hit = [i for i, row in self.base.items() if f.matches(i, row) and self._base_version(i)]
            for row_id in hit:
                if isinstance(op, Update):
                    assert q.new_val is not None
                    self.rows[row_id] = (self.rows[row_id][0], q.new_val)
                else:
                    del self.rows[row_id]
        elif isinstance(op, EqualityDelete):
            for row_id in op.ids:
                self.rows.pop(row_id, None)
        self.rows.update(q.new_rows)

    def expected(self) -> list[tuple[int, int, int]]:
        return sorted((i, g, v) for i, (g, v) in self.rows.items())


def check_lineage(base_ids: Mapping[int, int | None], actual: list[tuple[int, int | None]]) -> None:
    """v3+: live ``_row_id``s are set and unique; base rows (updated or not) keep theirs."""
    ids = [r for _, r in actual]
    assert None not in ids, f"a live row without _row_id: {actual}"
    assert len(set(ids)) == len(ids), f"two live rows share a _row_id: {actual}"
    for row_id, lineage in actual:
        if row_id in base_ids:
            assert lineage == base_ids[row_id], (
                f"row {row_id} changed _row_id {base_ids[row_id]} -> {lineage}"
            )


def commit_order_from_log(table: Table, base: Snapshot | None) -> list[int]:
    """Indexes of the operations whose snapshots follow ``base`` on main, oldest first."""
    out: list[int] = []
    snap = table.current_snapshot()
    while snap is not None and (base is None or snap.snapshot_id != base.snapshot_id):
        tag = (snap.summary or {}).get(OP_TAG)
        assert tag is not None, f"snapshot {snap.snapshot_id} was not written by the fuzzer: {snap.summary}"
        out.append(int(tag))
        snap = table.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
    return out[::-1]


Loader = Callable[[], Table]


# ---------------------------------------------------------------- one scenario


@dataclass
class Scenario:
    """Operations queued on copies of one base, not committed yet."""

    queued: list[Queued]
    base: Snapshot | None
    rows: Rows  # the base's rows
    lineage: dict[int, int | None]  # id -> _row_id of the base rows (v3+)

    @classmethod
    def queue_all(cls, load: Loader, ops: list[Operation], setup: list[Operation]) -> Scenario:
        """Commit ``setup`` one after the other (the base then holds deletes, column files ...),
        load one copy per operation before anything else commits (one base), queue each."""
        rows = base_rows()
        for k, op in enumerate(setup):
            q = queue(90 + k, op, load(), 500 + 10 * k)
            assert commit(q) is None, f"setup {op} refused"
            model = Model(rows)
            if not q.is_noop:
                model.apply(q)
            rows = model.rows
        tables = [load() for _ in ops]
        lineage = dict(row_ids(tables[0])) if tables[0].format_version >= 3 else {}
        queued = [queue(i, op, t, 1_000 + 100 * i) for i, (op, t) in enumerate(zip(ops, tables, strict=True))]
        return cls(queued, tables[0].current_snapshot(), rows, lineage)

    def check(self, final: Table, order: list[int], story: list[str]) -> None:
        """The table after the successful commits ``order`` (in commit order) equals the model."""
        model = Model(self.rows)
        for i in order:
            q = self.queued[i]
            if q.is_noop:
                continue
            why = model.wrongly_accepted(q.op)
            assert why is None, f"#{i} {q.op} committed although {why}: {story}"
            model.apply(q)
        assert table_rows(final) == model.expected(), f"table differs from the model: {story}"
        logged = commit_order_from_log(final, self.base)
        snapshots = [i for i in order if _touches_data(self.queued[i].op) and not self.queued[i].is_noop]
        assert logged == snapshots, (
            f"snapshot log {logged} is not the successful commits {snapshots}: {story}"
        )
        if final.format_version >= 3:
            check_lineage(self.lineage, row_ids(final))


def run_in_order(
    load: Loader, ops: list[Operation], order: list[int], setup: list[Operation] | None = None
) -> list[str]:
    """Queue ``ops`` on copies of one base (after ``setup``), commit them one after the other in
    ``order``, check. Returns what happened, one line per commit.
    """
    scenario = Scenario.queue_all(load, ops, setup or [])
    succeeded: list[Queued] = []
    story: list[str] = []
    for i in order:
        q = scenario.queued[i]
        refusal = commit(q)
        if refusal is not None:
            story.append(f"#{i} {q.op} refused: {refusal}")
            assert may_conflict(q.op, succeeded), f"refused with nothing to conflict with: {story}"
            continue
        story.append(f"#{i} {q.op} committed{' (no-op)' if q.is_noop else ''}")
        succeeded.append(q)
    scenario.check(load(), [q.index for q in succeeded], story)
    return story


def run_in_threads(load: Loader, ops: list[Operation], setup: list[Operation] | None = None) -> list[str]:
    """Queue ``ops`` on copies of one base (after ``setup``), commit them from one thread each at
    once, check.

    The commit order is the one the snapshot log shows (metadata-only commits leave no snapshot
    and change no rows, so their place does not matter); no timing is assumed.
    """
    scenario = Scenario.queue_all(load, ops, setup or [])
    start = threading.Barrier(len(ops))
    outcomes: list[Refusal | BaseException | None] = [None] * len(ops)

    def run(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = commit(scenario.queued[i])
        except BaseException as exc:  # re-raised below, on the test's thread
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(ops))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    story = [f"#{q.index} {q.op}: {outcomes[q.index] or 'committed'}" for q in scenario.queued]
    for q, outcome in zip(scenario.queued, outcomes, strict=True):
        if outcome is not None and not isinstance(outcome, Refusal):
            raise AssertionError(
                f"#{q.index} {q.op} failed with something else than a conflict: {story}"
            ) from outcome
        if outcome is not None:
            assert isinstance(q.op, (*ROW_LEVEL, Compact, AddColumn)), f"#{q.index} must commit: {story}"
    final = load()
    logged = commit_order_from_log(final, scenario.base)
    others = [q.index for q in scenario.queued if outcomes[q.index] is None and q.index not in logged]
    scenario.check(final, logged + others, story)
    return story
