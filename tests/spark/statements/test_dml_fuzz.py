"""Differential fuzzing of SQL DML: icefloe's tables against a plain Python model (``dml_model``).

Hypothesis draws a table (format v2, v3 or v4; copy-on-write or merge-on-read per verb;
unpartitioned, ``identity(grp)`` or ``bucket(2, id)``), its first rows, a source of rows, and a
few statements: INSERT, DELETE (plain, ``[NOT] IN (SELECT ...)``, ``[NOT] EXISTS``), UPDATE with
simultaneous assignments, INSERT OVERWRITE (static with and without ``PARTITION``, dynamic) and
MERGE with several ordered clauses of each kind over a temp view, a subquery, an icefloe table or
the target itself. NULLs are everywhere: in the rows, the keys, the conditions and ``IN`` lists.

After every statement the table's rows must equal the model's exactly (as a multiset), DELETE,
UPDATE and MERGE must report the model's counts, and a MERGE the model refuses (a target row
matched by several source rows) must fail and leave the table's snapshot unchanged. On v3 and v4
the row lineage is checked too: ``_row_id`` unique among live rows, an updated or untouched row
keeps its id, a new row gets one at or above the table's ``next-row-id`` before the statement.

Derandomised, so CI replays the same cases; ``ICEFLOE_PROPERTY_EXAMPLES`` raises the count and
``ICEFLOE_PROPERTY_SEED`` draws other cases for a local hunt.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, note, seed, settings
from hypothesis import strategies as st

from icefloe.catalog.base import Catalog
from icefloe.spark import sql
from tests.spark.statements.dml_model import (
    COLUMNS,
    BoolLit,
    BoolOp,
    Coalesce,
    Col,
    Compare,
    Concat,
    Delete,
    DeleteExists,
    DeleteInSubquery,
    Expr,
    InList,
    Insert,
    IsNull,
    Lit,
    Merge,
    Not,
    OverwriteDynamic,
    OverwriteStatic,
    Plus,
    Pred,
    Refused,
    Row,
    Statement,
    Update,
    Values,
    WhenMatched,
    WhenNotMatched,
    WhenNotMatchedBySource,
)

EXAMPLES = int(os.environ.get("ICEFLOE_PROPERTY_EXAMPLES", "10"))  # ~60 s on a loaded 2-core machine
SEED = os.environ.get("ICEFLOE_PROPERTY_SEED")
LOG = os.environ.get("ICEFLOE_DML_FUZZ_LOG")  # a file each statement run is appended to, for a hunt's tally
SHRINK = os.environ.get("ICEFLOE_PROPERTY_SHRINK", "1") != "0"  # 0: report the first failure as drawn
PARTITIONINGS = {"none": "", "identity": " PARTITIONED BY (grp)", "bucket": " PARTITIONED BY (bucket(2, id))"}
MODES = ("copy-on-write", "merge-on-read")

# ------------------------------------------------------------------------------ strategies
INT = st.one_of(st.none(), st.integers(0, 3))
GRP = st.sampled_from([None, "a", "b"])
VALUES = st.tuples(INT, GRP, INT)
ROWS = st.lists(VALUES, max_size=6).map(tuple)


def int_expr(quals: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    col = st.builds(Col, st.sampled_from(quals), st.sampled_from(["id", "v"]))
    lit = st.builds(Lit, INT)
    return st.one_of(col, col, lit, st.builds(Plus, col, st.integers(1, 2)), st.builds(Coalesce, col, lit))


def str_expr(quals: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    col = st.builds(Col, st.sampled_from(quals), st.just("grp"))
    lit = st.builds(Lit, GRP, st.just(True))
    return st.one_of(col, col, lit, st.builds(Concat, col, st.just("x")), st.builds(Coalesce, col, lit))


def expr_for(column: str, quals: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    return str_expr(quals) if column == "grp" else int_expr(quals)


def atom(quals: tuple[str, ...]) -> st.SearchStrategy[Pred]:
    ints, strs = int_expr(quals), str_expr(quals)
    return st.one_of(
        st.builds(Compare, st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"]), ints, ints),
        st.builds(Compare, st.sampled_from(["=", "<>", "<=>"]), strs, strs),
        st.builds(IsNull, st.one_of(ints, strs), st.booleans()),
        st.builds(
            InList, ints, st.lists(st.builds(Lit, INT), min_size=1, max_size=3).map(tuple), st.booleans()
        ),
        st.builds(
            InList,
            strs,
            st.lists(st.builds(Lit, GRP, st.just(True)), min_size=1, max_size=2).map(tuple),
            st.booleans(),
        ),
        st.builds(BoolLit, st.booleans()),
    )


def pred(quals: tuple[str, ...]) -> st.SearchStrategy[Pred]:
    return st.recursive(
        atom(quals),
        lambda inner: st.one_of(
            st.builds(BoolOp, st.sampled_from(["AND", "OR"]), inner, inner), st.builds(Not, inner)
        ),
        max_leaves=3,
    )


def assignments(quals: tuple[str, ...]) -> st.SearchStrategy[tuple[tuple[str, Expr], ...]]:
    """One to three distinct columns, each from any column: ``SET id = t.v, v = t.id`` swaps."""

    @st.composite
    def draw_sets(draw: st.DrawFn) -> tuple[tuple[str, Expr], ...]:
        columns = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=3, unique=True))
        return tuple((c, draw(expr_for(c, quals))) for c in columns)

    return draw_sets()


@st.composite
def ordered_clauses(
    draw: st.DrawFn, clause: st.SearchStrategy[Any], condition: st.SearchStrategy[Pred]
) -> tuple:
    """Zero to three clauses of one kind; only the last may lack a condition (Spark's rule)."""
    n = draw(st.integers(0, 3))
    out = []
    for i in range(n):
        c = draw(clause)
        if i < n - 1 and c.condition is None:
            c = type(c)(draw(condition), *[getattr(c, f) for f in c.__dataclass_fields__ if f != "condition"])
        out.append(c)
    return tuple(out)


@st.composite
def merge(draw: st.DrawFn) -> Merge:
    ts, t, s = ("t", "s"), ("t",), ("s",)
    # keys as users write them: the same column on both sides (either way round), null-safe,
    # another source column, a string key
    key = st.sampled_from(
        [
            Compare("=", Col("t", "id"), Col("s", "id")),
            Compare("=", Col("s", "id"), Col("t", "id")),
            Compare("<=>", Col("t", "id"), Col("s", "id")),
            Compare("=", Col("t", "id"), Col("s", "v")),
            Compare("=", Col("t", "grp"), Col("s", "grp")),
        ]
    )
    on = draw(st.one_of(key, key, st.builds(BoolOp, st.just("AND"), key, pred(ts)), pred(ts)))
    maybe = lambda p: st.one_of(st.none(), p)  # noqa: E731
    matched = st.one_of(
        st.builds(WhenMatched, maybe(pred(ts)), assignments(ts)),
        st.builds(WhenMatched, maybe(pred(ts)), st.none()),
        st.builds(WhenMatched, maybe(pred(ts)), st.none(), st.just(True)),
    )
    not_matched = st.builds(
        WhenNotMatched,
        maybe(pred(s)),
        st.one_of(st.none(), st.tuples(*(expr_for(c, s) for c in COLUMNS))),
    )
    by_source = st.builds(WhenNotMatchedBySource, maybe(pred(t)), st.one_of(st.none(), assignments(t)))
    while True:
        clauses = (
            draw(ordered_clauses(matched, pred(ts))),
            draw(ordered_clauses(not_matched, pred(s))),
            draw(ordered_clauses(by_source, pred(t))),
        )
        if any(clauses):
            break
    source = draw(st.sampled_from(["view", "view", "subquery", "table", "self"]))
    source_filter = draw(pred(s)) if source == "subquery" else None
    return Merge(source, source_filter, on, *clauses)


def statement(partitioning: str) -> st.SearchStrategy[Statement]:
    t, s, ts = ("t",), ("s",), ("t", "s")
    kinds: list[st.SearchStrategy[Any]] = [
        st.builds(Insert, ROWS.filter(bool)),
        st.builds(Delete, pred(t)),
        st.builds(DeleteInSubquery, st.sampled_from(["id", "v", "grp"]), st.booleans(), pred(s)),
        st.builds(DeleteExists, st.booleans(), pred(ts)),
        st.builds(Update, assignments(t), st.one_of(st.none(), pred(t))),
        st.builds(Update, assignments(t), st.one_of(st.none(), pred(t))),
        st.builds(OverwriteStatic, st.none(), ROWS.filter(bool)),
        merge(),
        merge(),
        merge(),
    ]
    if partitioning == "identity":
        kinds.append(st.builds(OverwriteStatic, st.sampled_from(["a", "b"]), ROWS.filter(bool)))
    if partitioning != "bucket":  # the model does not compute Iceberg's bucket hash
        kinds.append(st.builds(OverwriteDynamic, ROWS.filter(bool), st.just(partitioning == "identity")))
    return st.one_of(kinds)


@dataclass(frozen=True)
class Case:
    version: int
    modes: tuple[str, str, str]  # write.delete.mode, write.update.mode, write.merge.mode
    partitioning: str
    rows: tuple[Values, ...]
    source: tuple[Values, ...]
    statements: tuple[Statement, ...]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    partitioning = draw(st.sampled_from(sorted(PARTITIONINGS)))
    return Case(
        version=draw(st.sampled_from([2, 3, 4])),
        modes=draw(st.tuples(*[st.sampled_from(MODES)] * 3)),
        partitioning=partitioning,
        rows=draw(ROWS),
        source=draw(ROWS),
        statements=tuple(draw(st.lists(statement(partitioning), min_size=2, max_size=5))),
    )


# ------------------------------------------------------------------------------------ runner
_names = itertools.count()


def _sorted(values: list[Values]) -> list[Values]:
    return sorted(values, key=lambda r: [(x is not None, x) for x in r])


def _table_rows(spark: Any, table: str) -> list[Values]:
    return _sorted([tuple(r) for r in sql(spark, f"SELECT id, grp, v FROM {table}").collect()])


def _bind_row_ids(expected: list[Row], catalog: Catalog, ident: str, floor: int) -> list[Row]:
    """Check the table's row lineage against ``expected``; give new model rows the ids the table gave."""
    arrow = catalog.load_table(ident).scan(columns=(*COLUMNS, "_row_id")).to_arrow()
    actual = [(tuple(r[c] for c in COLUMNS), r["_row_id"]) for r in arrow.to_pylist()]
    ids = [rid for _, rid in actual]
    assert None not in ids and len(set(ids)) == len(ids), f"_row_id not unique among live rows: {sorted(ids)}"
    by_id = dict((rid, values) for values, rid in actual)
    kept = {r.row_id: r.values for r in expected if r.row_id is not None}
    assert {rid: by_id.get(rid) for rid in kept} == kept, "a kept or updated row lost its _row_id"
    fresh = [(values, rid) for values, rid in actual if rid not in kept]
    assert all(rid >= floor for _, rid in fresh), f"new rows reuse _row_ids below {floor}: {fresh}"
    pool: dict[Values, list[int]] = {}
    for values, rid in fresh:
        pool.setdefault(values, []).append(rid)
    return [r if r.row_id is not None else Row(r.values, pool[r.values].pop()) for r in expected]


def _render(stmt: Statement, table: str, view: str, table_source: str) -> str:
    return stmt.sql(table).replace("{view}", view).replace("{table_source}", table_source)


def run_case(spark: Any, catalog: Catalog, case: Case) -> None:
    n = next(_names)
    ident, source_ident, view = f"db.dml_fuzz_{n}", f"db.dml_fuzz_src_{n}", f"dml_fuzz_src_{n}"
    table, table_source = f"icefloe.{ident}", f"icefloe.{source_ident}"
    delete_mode, update_mode, merge_mode = case.modes
    sql(
        spark,
        f"CREATE TABLE {table} (id INT, grp STRING, v INT) USING iceberg{PARTITIONINGS[case.partitioning]} "
        f"TBLPROPERTIES ('format-version' = '{case.version}', 'write.delete.mode' = '{delete_mode}', "
        f"'write.update.mode' = '{update_mode}', 'write.merge.mode' = '{merge_mode}')",
    )
    spark.createDataFrame(list(case.source), "id int, grp string, v int").createOrReplaceTempView(view)
    if any(isinstance(x, Merge) and x.source == "table" for x in case.statements):
        sql(spark, f"CREATE TABLE {table_source} (id INT, grp STRING, v INT) USING iceberg")
        if case.source:
            sql(spark, Insert(case.source).sql(table_source))
    try:
        model: list[Row] = []
        half = len(case.rows) // 2  # two inserts: two data files per partition to find rows in
        first = tuple(Insert(part) for part in (case.rows[:half], case.rows[half:]) if part)
        statements = first + case.statements
        for stmt in statements:
            model = _step(spark, catalog, case, ident, stmt, model, _render(stmt, table, view, table_source))
    finally:
        spark.catalog.dropTempView(view)


def _step(
    spark: Any, catalog: Catalog, case: Case, ident: str, stmt: Statement, model: list[Row], text: str
) -> list[Row]:
    table = f"icefloe.{ident}"
    note(text)
    if LOG:
        with open(LOG, "a") as log:
            log.write(text.replace("\n", " ") + "\n")
    before = catalog.load_table(ident)
    floor = before.metadata.next_row_id or 0
    try:
        outcome = stmt.apply(model, list(case.source))
    except Refused:
        with pytest.raises(Exception, match="match"):
            sql(spark, text)
        after = catalog.load_table(ident).metadata.current_snapshot_id
        assert after == before.metadata.current_snapshot_id, f"a refused statement committed: {text}"
        return model
    dynamic = isinstance(stmt, OverwriteDynamic)
    if dynamic:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        result = [tuple(r) for r in sql(spark, text).collect()]
    finally:
        if dynamic:
            spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    want = _sorted([r.values for r in outcome.rows])
    assert _table_rows(spark, table) == want, text
    if outcome.counts is not None:
        assert result == [outcome.counts], text
    if case.version >= 3:
        return _bind_row_ids(outcome.rows, catalog, ident, floor)
    return outcome.rows


def _settings(test: Any) -> Any:
    test = settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        print_blob=True,
        phases=list(Phase) if SHRINK else [Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.function_scoped_fixture,
            HealthCheck.data_too_large,
        ],
    )(test)
    return seed(int(SEED))(test) if SEED is not None else test


@_settings
@given(case=cases())
def test_dml_matches_the_model(spark: Any, catalog: Catalog, case: Case) -> None:
    run_case(spark, catalog, case)
