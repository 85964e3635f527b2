"""Row-level conformance: every engine x format version x write mode gives the same table contents.

One table per test: ids 1..6 in two appends, partitioned by ``cat``, ``val`` = 10 * id. Each case
changes it once through the engine and must leave exactly the expected rows and exactly one new
snapshot. Engines come from ``tests.support.engines``; an operation an engine does not have yet is
a strict xfail (``NOT_IMPLEMENTED``), so the suite fails when it appears until the mark is removed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from tests.support.engines import (
    ENGINES,
    NOT_IMPLEMENTED,
    Compare,
    FromSource,
    Literal,
    MergeSpec,
    PlusSource,
    PythonEngine,
    RowLevelEngine,
    Scaled,
    SourceBelow,
    SparkEngine,
    SqlEngine,
    When,
    fresh_table_name,
)

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "val", LongType(), False),
)
BY_CAT = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
FORMAT_VERSIONS = (2, 3, 4)
MODES = ("copy-on-write", "merge-on-read")

Rows = dict[int, tuple[str, int]]
START: Rows = {1: ("a", 10), 2: ("b", 20), 3: ("c", 30), 4: ("a", 40), 5: ("b", 50), 6: ("c", 60)}


def arrow_rows(rows: list[tuple[int, str, int]]) -> pa.Table:
    """Rows as the table's Arrow shape."""
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "cat": pa.array([r[1] for r in rows], pa.string()),
            "val": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


@dataclass(frozen=True)
class Case:
    """One change through an engine and the rows it must leave."""

    operation: str
    run: Callable[[RowLevelEngine, Table, str], None]
    expected: Rows


def _with(changes: Rows, without: tuple[int, ...] = ()) -> Rows:
    rows = {k: v for k, v in START.items() if k not in without}
    rows.update(changes)
    return rows


CASES: dict[str, Case] = {
    "delete": Case(
        "delete",
        lambda engine, table, mode: engine.delete(table, "cat = 'b' or id = 6", mode),
        _with({}, without=(2, 5, 6)),
    ),
    "update_literal_and_expression_moving_partitions": Case(
        "update",
        lambda engine, table, mode: engine.update(
            table, {"cat": Literal("z"), "val": Scaled("val", 10)}, "id in (1, 5)", mode
        ),
        _with({1: ("z", 100), 5: ("z", 500)}),
    ),
    "merge_matched_update_not_matched_insert": Case(
        "merge",
        lambda engine, table, mode: engine.merge(
            table,
            arrow_rows([(2, "b", 21), (7, "a", 70)]),
            MergeSpec("id", matched_update=True, not_matched_insert=True),
            mode,
        ),
        _with({2: ("b", 21), 7: ("a", 70)}),
    ),
    "merge_matched_delete_and_expression_update": Case(
        "merge",
        lambda engine, table, mode: engine.merge(
            table,
            arrow_rows([(1, "a", -1), (3, "c", 3), (8, "b", 80)]),
            MergeSpec("id", matched_update={"val": PlusSource("val")}, matched_delete=SourceBelow("val", 0)),
            mode,
        ),
        _with({3: ("c", 33)}, without=(1,)),
    ),
    "merge_not_matched_by_source_delete": Case(
        "merge",
        lambda engine, table, mode: engine.merge(
            table,
            arrow_rows([(4, "a", 44), (5, "b", 55)]),
            MergeSpec("id", matched_update=True, not_matched_by_source_delete=True),
            mode,
        ),
        {4: ("a", 44), 5: ("b", 55)},
    ),
    "merge_ordered_conditional_clauses_of_every_kind": Case(
        "merge",
        lambda engine, table, mode: engine.merge(
            table,
            arrow_rows([(1, "a", -1), (2, "b", 5), (3, "z", 300), (7, "a", 700), (8, "b", 80), (9, "c", 9)]),
            MergeSpec(
                "id",
                clauses=(
                    When("matched", "delete", Compare("source", "val", "<", 0)),
                    When("matched", "update", Compare("source", "val", "<", 10), {"val": PlusSource("val")}),
                    When("matched", "update"),  # UPDATE SET *, into another partition
                    When("not_matched", "insert", Compare("source", "val", ">=", 500)),
                    When(
                        "not_matched",
                        "insert",
                        Compare("source", "cat", "=", "b"),
                        {"id": FromSource("id"), "cat": Literal("new"), "val": FromSource("val")},
                    ),
                    When("by_source", "delete", Compare("target", "val", ">=", 60)),
                    When(
                        "by_source", "update", Compare("target", "cat", "=", "a"), {"val": Scaled("val", 10)}
                    ),
                ),
            ),
            mode,
        ),
        # 1 deleted; 2 first matching update; 9 no insert applies; 6 deleted, 4 updated, 5 kept (by source)
        {2: ("b", 25), 3: ("z", 300), 4: ("a", 400), 5: ("b", 50), 7: ("a", 700), 8: ("new", 80)},
    ),
    "upsert": Case(
        "upsert",
        lambda engine, table, mode: engine.upsert(
            table, arrow_rows([(3, "c", 300), (9, "c", 90)]), "id", mode
        ),
        _with({3: ("c", 300), 9: ("c", 90)}),
    ),
}


# Spark and SQL run on one (format version, mode) pair per version: a Spark job costs seconds, and
# tests/spark/test_row_level.py covers its full matrix with more assertions.
SPARK_COMBINATIONS = ((2, "copy-on-write"), (3, "merge-on-read"), (4, "merge-on-read"))


def _combinations(engine: str) -> tuple[tuple[int, str], ...]:
    if engine in ("spark", "sql"):
        return SPARK_COMBINATIONS
    return tuple((fv, mode) for fv in FORMAT_VERSIONS for mode in MODES)


def _matrix() -> list[Any]:
    """(engine, case, format version, mode) params: Spark ones marked ``spark``, missing
    operations strict xfails."""
    params = []
    for engine in ENGINES:
        for name, case in CASES.items():
            marks: list[Any] = [pytest.mark.spark] if engine in ("spark", "sql") else []
            reason = NOT_IMPLEMENTED.get((engine, case.operation))
            if reason is not None:
                marks.append(
                    pytest.mark.xfail(
                        strict=True, raises=NotImplementedError, reason=f"not implemented: {reason}"
                    )
                )
            for fv, mode in _combinations(engine):
                params.append(
                    pytest.param(engine, name, fv, mode, marks=marks, id=f"{engine}-{name}-v{fv}-{mode}")
                )
    return params


def make_engine(name: str, request: pytest.FixtureRequest) -> RowLevelEngine:
    """The engine ``name`` on the fixtures it needs (Spark: the shared session's catalog)."""
    if name == "spark":
        return SparkEngine(request.getfixturevalue("spark"))
    if name == "sql":
        return SqlEngine(request.getfixturevalue("spark"))
    return PythonEngine(request.getfixturevalue("catalog"))


def start_table(engine: RowLevelEngine, format_version: int) -> Table:
    """The six starting rows in two appends (two files per partition for ids 1..6)."""
    table = engine.catalog().create_table(
        fresh_table_name(engine),
        SCHEMA,
        partition_spec=BY_CAT,
        properties={"format-version": str(format_version)},
    )
    table.append(arrow_rows([(i, *START[i]) for i in (1, 2, 3)]))
    table.append(arrow_rows([(i, *START[i]) for i in (4, 5, 6)]))
    return table


def table_rows(table: Table) -> Rows:
    """The table's rows by id."""
    rows = table.scan().to_arrow().to_pylist()
    by_id = {r["id"]: (r["cat"], r["val"]) for r in rows}
    assert len(by_id) == len(rows), "duplicate ids"
    return by_id


@pytest.mark.parametrize(("engine_name", "case_name", "format_version", "mode"), _matrix())
def test_row_level_change(
    engine_name: str, case_name: str, format_version: int, mode: str, request: pytest.FixtureRequest
) -> None:
    case = CASES[case_name]
    engine = make_engine(engine_name, request)
    table = start_table(engine, format_version)
    snapshots = len(table.snapshots())
    case.run(engine, table, mode)
    table.refresh()
    assert table_rows(table) == case.expected
    assert len(table.snapshots()) == snapshots + 1
