"""Property test: random appends, deletes, updates and merges against a plain Python model.

Every step runs on a real table (SQLite catalog, local warehouse) and on a model — a dict from
``id`` to the row — and after every step the table's contents must equal the model's. On format
v3 and v4 the row lineage is modelled too (format/spec.md "Row Lineage"): a row that survives a
step untouched keeps ``_row_id`` and ``_last_updated_sequence_number``; an updated row keeps its
``_row_id`` and takes the new snapshot's sequence number; an inserted row gets a ``_row_id`` never
used before, at or above the table's ``next-row-id`` before the step.

Runs over format versions 2, 3 and 4, copy-on-write and merge-on-read, on a table partitioned
by ``identity(grp)`` (so updates can move rows between partitions). Hypothesis is derandomised so
CI sees the same sequences every run; raise ``ICEFLOE_PROPERTY_EXAMPLES`` locally to search more.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog.sql import SqlCatalog
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import IntegerType, LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "grp", IntegerType(), True),
    NestedField(3, "val", LongType(), True),
    NestedField(4, "name", StringType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "grp"))
ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("grp", pa.int32(), nullable=False),
        pa.field("val", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
    ]
)
EXAMPLES = int(os.environ.get("ICEFLOE_PROPERTY_EXAMPLES", "4"))
NAMES = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))

Row = tuple[int, int, str | None]  # grp, val, name


# ---------------------------------------------------------------- operations


@dataclass(frozen=True)
class Append:
    rows: tuple[tuple[int, int, str | None], ...]  # grp, val, name (ids assigned by the test)


@dataclass(frozen=True)
class Delete:
    kind: str  # "val_below" | "grp" | "ids"
    arg: Any


@dataclass(frozen=True)
class Update:
    kind: str
    arg: Any
    new_grp: int | None  # set grp too (moves rows to another partition)


@dataclass(frozen=True)
class Merge:
    existing: tuple[int, ...]  # indexes into the live ids (mod their count)
    new_rows: int
    delete_matched: bool
    delete_unmatched_target: bool


def _row() -> st.SearchStrategy[tuple[int, int, str | None]]:
    return st.tuples(st.integers(0, 2), st.integers(0, 99), NAMES)


def _filter_kind() -> st.SearchStrategy[tuple[str, Any]]:
    return st.one_of(
        st.tuples(st.just("val_below"), st.integers(0, 100)),
        st.tuples(st.just("grp"), st.integers(0, 2)),
        st.tuples(st.just("ids"), st.lists(st.integers(0, 60), min_size=1, max_size=6)),
    )


OPERATIONS = st.one_of(
    st.builds(Append, st.lists(_row(), min_size=1, max_size=12).map(tuple)),
    _filter_kind().map(lambda k: Delete(*k)),
    st.builds(lambda k, g: Update(k[0], k[1], g), _filter_kind(), st.one_of(st.none(), st.integers(0, 2))),
    st.builds(
        Merge,
        st.lists(st.integers(0, 1000), max_size=5).map(tuple),
        st.integers(0, 4),
        st.booleans(),
        st.booleans(),
    ),
)


def _filter_text(kind: str, arg: Any) -> str:
    if kind == "val_below":
        return f"val < {arg}"
    if kind == "grp":
        return f"grp = {arg}"
    return f"id in ({', '.join(str(i) for i in arg)})"


def _model_matches(kind: str, arg: Any, row_id: int, row: Row) -> bool:
    grp, val, _ = row
    if kind == "val_below":
        return val < arg
    if kind == "grp":
        return grp == arg
    return row_id in arg


# ---------------------------------------------------------------- the model


@dataclass
class Model:
    rows: dict[int, Row]
    lineage: dict[int, tuple[int, int]]  # id -> (_row_id, _last_updated_sequence_number)
    next_id: int = 0


def _arrow_rows(ids: list[int], rows: list[Row]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "grp": [r[0] for r in rows],
            "val": [r[1] for r in rows],
            "name": [r[2] for r in rows],
        },
        schema=ARROW,
    )


def _contents(table: Any) -> dict[int, Row]:
    data = table.scan().to_arrow().to_pylist()
    out = {r["id"]: (r["grp"], r["val"], r["name"]) for r in data}
    assert len(out) == len(data), "duplicate ids in the table"
    return out


def _lineage(table: Any) -> dict[int, tuple[int, int]]:
    data = table.scan(columns=("id", "_row_id", "_last_updated_sequence_number")).to_arrow()
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in data.to_pylist()}


def _step(table: Any, model: Model, op: Any, mode: str) -> tuple[set[int], set[int]]:
    """Apply ``op`` to the table and the model; returns (updated ids, inserted ids)."""
    updated: set[int] = set()
    inserted: set[int] = set()
    if isinstance(op, Append):
        ids = list(range(model.next_id, model.next_id + len(op.rows)))
        model.next_id += len(op.rows)
        table.append(_arrow_rows(ids, list(op.rows)))
        model.rows.update(zip(ids, op.rows, strict=True))
        inserted.update(ids)
    elif isinstance(op, Delete):
        table.delete(_filter_text(op.kind, op.arg), mode=mode)
        for i, row in list(model.rows.items()):
            if _model_matches(op.kind, op.arg, i, row):
                del model.rows[i]
    elif isinstance(op, Update):
        assignments: dict[str, Any] = {"val": pc.field("val") + pc.scalar(1), "name": "u"}
        if op.new_grp is not None:
            assignments["grp"] = op.new_grp
        table.update(assignments, _filter_text(op.kind, op.arg), mode=mode)
        for i, (grp, val, _) in list(model.rows.items()):
            if _model_matches(op.kind, op.arg, i, (grp, val, None)):
                model.rows[i] = (op.new_grp if op.new_grp is not None else grp, val + 1, "u")
                updated.add(i)
    else:
        live = sorted(model.rows)
        matched = sorted({live[k % len(live)] for k in op.existing}) if live else []
        fresh = list(range(model.next_id, model.next_id + op.new_rows))
        model.next_id += op.new_rows
        source_rows = [(1, 500 + i % 7, "m") for i in range(len(matched) + len(fresh))]
        source = _arrow_rows(matched + fresh, source_rows)
        table.merge(
            source,
            on="id",
            when_matched_update=not op.delete_matched,
            when_matched_delete=op.delete_matched,
            when_not_matched_insert=True,
            when_not_matched_by_source_delete=op.delete_unmatched_target,
            mode=mode,
        )
        by_id = dict(zip(matched + fresh, source_rows, strict=True))
        for i in matched:
            if op.delete_matched:
                del model.rows[i]
            else:
                model.rows[i] = by_id[i]
                updated.add(i)
        if op.delete_unmatched_target:
            for i in [i for i in model.rows if i not in by_id]:
                del model.rows[i]
        for i in fresh:
            model.rows[i] = by_id[i]
            inserted.add(i)
    return updated, inserted


def _check_lineage(
    table: Any, model: Model, before_seq: int | None, next_row_id: int, updated: set[int], inserted: set[int]
) -> None:
    actual = _lineage(table)
    assert set(actual) == set(model.rows)
    snapshot = table.current_snapshot()
    seq = snapshot.sequence_number if snapshot is not None else None
    changed = seq != before_seq
    row_ids = [rid for rid, _ in actual.values()]
    assert len(set(row_ids)) == len(row_ids), "a _row_id appears twice"
    for i, (row_id, last_seq) in actual.items():
        if i in inserted:
            assert changed and row_id >= next_row_id and last_seq == seq, (i, row_id, last_seq)
        elif i in updated:
            assert changed and (row_id, last_seq) == (model.lineage[i][0], seq), (i, row_id, last_seq)
        else:
            assert (row_id, last_seq) == model.lineage[i], (i, row_id, last_seq)
    model.lineage = actual


COLUMN_UPDATES = {"write.v4.column-updates.enabled": "true"}
CASES = [
    *((version, mode, {}) for version in (2, 3, 4) for mode in ("copy-on-write", "merge-on-read")),
    (4, "merge-on-read", COLUMN_UPDATES),  # v4 column files for updates
]


@pytest.mark.parametrize(
    ("version", "mode", "extra"), CASES, ids=[f"v{v}-{m}{'-columns' if x else ''}" for v, m, x in CASES]
)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPERATIONS, min_size=3, max_size=9))
def test_random_row_changes_match_the_model(
    tmp_path: Path, version: int, mode: str, extra: dict[str, str], ops: list[Any]
) -> None:
    catalog = SqlCatalog(
        "default", uri=f"sqlite:///{tmp_path}/catalog-{uuid.uuid4().hex}.db", warehouse=str(tmp_path / "wh")
    )
    catalog.create_namespace(("db",))
    name = ("db", f"t_{uuid.uuid4().hex[:8]}")
    table = catalog.create_table(
        name, SCHEMA, partition_spec=SPEC, properties={"format-version": str(version), **extra}
    )
    model = Model(rows={}, lineage={})
    # every table starts with some rows, so deletes, updates and merges have something to hit
    _step(
        table,
        model,
        Append(tuple((i % 3, i * 7 % 100, None if i % 4 == 0 else "s") for i in range(12))),
        mode,
    )
    if version >= 3:
        model.lineage = _lineage(table)
    for op in ops:
        before = table.current_snapshot()
        next_row_id = table.metadata.next_row_id or 0
        updated, inserted = _step(table, model, op, mode)
        table.refresh()
        assert _contents(table) == model.rows, f"after {op}"
        if version >= 3:
            _check_lineage(
                table, model, before.sequence_number if before else None, next_row_id, updated, inserted
            )
