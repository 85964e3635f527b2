"""Model-based test: for random histories, the changelog equals the difference of full-scan states.

Hypothesis draws sequences of appends, overwrites, deletes, updates and merges (copy-on-write and
merge-on-read), equality-delete upserts, compactions and snapshot expiries, on v2, v3 and v4
(v4 with inline roots and with leaves + manifest DVs). After each commit the table's state is
recorded from a full scan. Then, for every pair of snapshots still in the metadata:

- the net changelog equals the state difference, by ``_row_id`` on v3/v4 (a row id on both sides
  with other values is an UPDATE_BEFORE/UPDATE_AFTER pair) and as multisets of rows on v2;
- replaying the per-commit changelog (every commit, every ordinal) on the older state gives the
  newer state exactly: every DELETE / UPDATE_BEFORE removes a row that was there with those
  values, every INSERT / UPDATE_AFTER adds one.

Derandomized (fixed examples); fewer examples when ``CI`` is set.
"""

from __future__ import annotations

import os
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog import load_catalog
from icefloe.errors import ValidationError
from icefloe.maintenance.expire_snapshots import expire_snapshots
from icefloe.maintenance.rewrite_data_files import rewrite_data_files
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))
LAYOUTS = {
    "v2": {"format-version": "2"},
    "v3": {"format-version": "3"},
    "v4": {"format-version": "4"},
    "v4-leaves": {
        "format-version": "4",
        "write.v4.root.max-inline-entries": "0",
        "write.v4.leaf.min-live-ratio": "0",
    },
    "v4-column-updates": {"format-version": "4", "write.v4.column-updates.enabled": "true"},
}
EXAMPLES = int(os.environ.get("ICEFLOE_MODEL_EXAMPLES", 3 if os.environ.get("CI") else 12))
MODES = st.sampled_from(["copy-on-write", "merge-on-read"])
RANGE = st.tuples(st.integers(0, 40), st.integers(1, 15))

OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 6)),
    st.tuples(st.just("overwrite"), RANGE),
    st.tuples(st.just("delete"), RANGE, MODES),
    st.tuples(st.just("update"), RANGE, MODES),
    st.tuples(st.just("merge"), RANGE, MODES),
    st.tuples(st.just("upsert_eq"), RANGE),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("expire"), st.integers(2, 4)),
)

Row = tuple[int, str]


class Model:
    """The table under test, a counter for fresh ids, and the recorded state of every snapshot."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.next_id = 0
        self.step = 0
        self.states: dict[int, Any] = {}
        self.order: list[int] = []

    @property
    def lineage(self) -> bool:
        return self.table.format_version >= 3

    def fresh(self, n: int, tag: str) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return pa.table({"id": pa.array(ids, pa.int64()), "tag": [f"{tag}{i}" for i in ids]})

    def record(self) -> None:
        snap = self.table.current_snapshot()
        if snap is None or snap.snapshot_id in self.states:
            return
        cols = ("id", "tag", "_row_id") if self.lineage else ("id", "tag")
        rows = self.table.scan(snapshot_id=snap.snapshot_id, columns=cols).to_arrow().to_pylist()
        if self.lineage:
            state: Any = {r["_row_id"]: (r["id"], r["tag"]) for r in rows}
            assert len(state) == len(rows), "row ids are unique"
        else:
            state = Counter((r["id"], r["tag"]) for r in rows)
        self.states[snap.snapshot_id] = state
        self.order.append(snap.snapshot_id)

    def apply(self, op: tuple[Any, ...]) -> None:
        self.step += 1
        t, kind = self.table, op[0]
        if kind in ("overwrite", "delete", "update", "merge", "upsert_eq"):
            lo, width = op[1]
            where = f"id >= {lo} and id < {lo + width}"
        if kind == "append":
            t.append(self.fresh(op[1], "a"))
        elif kind == "overwrite":
            t.overwrite(self.fresh(2, "o"), where)
        elif kind == "delete":
            t.delete(where, mode=op[2])
        elif kind == "update":
            t.update(
                {"tag": pc.binary_join_element_wise(pc.field("tag"), f"u{self.step}", "")}, where, mode=op[2]
            )
        elif kind == "merge":
            lo, width = op[1]
            keys = sorted({lo, lo + width // 2, self.next_id})
            self.next_id += 1
            source = pa.table({"id": pa.array(keys, pa.int64()), "tag": [f"m{self.step}"] * len(keys)})
            t.merge(
                source, on="id", when_not_matched_by_source_delete=pc.field("id") == lo + width, mode=op[2]
            )
        elif kind == "upsert_eq":
            lo, _ = op[1]
            rows = pa.table({"id": pa.array([lo], pa.int64()), "tag": [f"q{self.step}"]})
            try:
                t.upsert_with_equality_deletes(rows, on="id")
            except ValidationError as exc:  # files with column files take no equality deletes
                assert "column files" in str(exc)
                rewrite_data_files(t, rewrite_all=True)
                self.record()
                t.upsert_with_equality_deletes(rows, on="id")
        elif kind == "compact":
            rewrite_data_files(t, rewrite_all=True)
        elif kind == "expire":
            expire_snapshots(t, older_than=2**62, retain_last=op[1])
            live = {s.snapshot_id for s in t.snapshots()}
            self.order = [s for s in self.order if s in live]
        self.record()


def _net_expected(model: Model, old: int, new: int) -> Counter[tuple[Any, ...]]:
    a, b = model.states[old], model.states[new]
    out: Counter[tuple[Any, ...]] = Counter()
    if model.lineage:
        for rid, row in a.items():
            if rid not in b:
                out[("DELETE", rid, *row)] += 1
            elif b[rid] != row:
                out[("UPDATE_BEFORE", rid, *row)] += 1
                out[("UPDATE_AFTER", rid, *b[rid])] += 1
        for rid, row in b.items():
            if rid not in a:
                out[("INSERT", rid, *row)] += 1
        return out
    for row, n in (a - b).items():
        out[("DELETE", None, *row)] += n
    for row, n in (b - a).items():
        out[("INSERT", None, *row)] += n
    return out


def _records(model: Model, old: int, new: int, net: bool) -> list[tuple[Any, ...]]:
    cols = ("*", "_row_id") if model.lineage else ("*",)
    scan = model.table.changelog(start_snapshot_id=old, end_snapshot_id=new, columns=cols, net_changes=net)
    rows = scan.to_arrow().to_pylist()
    return [(r["_change_type"], r.get("_row_id"), r["id"], r["tag"], r["_change_ordinal"]) for r in rows]


def _replay(model: Model, old: int, new: int) -> None:
    by_id: dict[int, Row] = dict(model.states[old]) if model.lineage else {}
    rows: Counter[Row] = Counter() if model.lineage else Counter(model.states[old])
    for kind, rid, key, tag, _ in _records(model, old, new, net=False):
        row = (key, tag)
        if kind in ("DELETE", "UPDATE_BEFORE"):
            if model.lineage:
                assert by_id.pop(rid) == row, (kind, rid, row)
            else:
                assert rows[row] > 0, (kind, row)
                rows[row] -= 1
        elif model.lineage:
            assert rid not in by_id, (kind, rid, row)
            by_id[rid] = row
        else:
            rows[row] += 1
    assert (by_id if model.lineage else +rows) == model.states[new]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(OPS, min_size=1, max_size=7))
def test_changelog_is_the_state_difference(tmp_path: Path, layout: str, ops: list[tuple[Any, ...]]) -> None:
    root = tmp_path / f"m{abs(hash(tuple(ops)))}"
    catalog = load_catalog(uri=f"sqlite:///{root}.db", warehouse=str(root))
    catalog.create_namespace(("db",))
    table = catalog.create_table("db.t", SCHEMA, properties=LAYOUTS[layout])
    model = Model(table)
    table.append(model.fresh(8, "s"))
    model.record()
    for op in ops:
        model.apply(op)
    table.refresh()
    for old, new in combinations(model.order, 2):
        got = Counter(r[:4] for r in _records(model, old, new, net=True))
        assert got == _net_expected(model, old, new), (old, new, ops)
    first, last = model.order[0], model.order[-1]
    if first != last:
        _replay(model, first, last)
