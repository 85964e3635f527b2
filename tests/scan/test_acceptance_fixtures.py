"""Every check of every table in the acceptance corpus, read by icefloe, must match its fingerprint.

The tables were written by Iceberg Java, PyIceberg, chDB and LakeSail; the expected values are
what the writers (and the independent readers that agree with them) return.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog import load_catalog
from icefloe.expressions import ast
from icefloe.table.table import Table
from tests.support.filter_expr import convert
from tests.support.fixtures import (
    canonical_rows,
    expected_result,
    expected_table,
    fingerprint,
    install_acceptance_fixtures,
    iter_checks,
    load_cases,
)


class IcefloeBuilder:
    """Builds icefloe expressions from the corpus' JSON filters."""

    def and_(self, operands: list[ast.Expression]) -> ast.Expression:
        return ast.And(*operands)

    def or_(self, operands: list[ast.Expression]) -> ast.Expression:
        return ast.Or(*operands)

    def not_(self, operand: ast.Expression) -> ast.Expression:
        return ast.Not(operand)

    def compare(self, op: str, column: str, value: Any) -> ast.Expression:
        ops = {
            "=": ast.EqualTo,
            "!=": ast.NotEqualTo,
            "<>": ast.NotEqualTo,
            "<": ast.LessThan,
            "<=": ast.LessThanOrEqual,
            ">": ast.GreaterThan,
            ">=": ast.GreaterThanOrEqual,
        }
        return ops[op](column, value)

    def in_(self, column: str, values: list[Any]) -> ast.Expression:
        return ast.In(column, values)

    def not_in(self, column: str, values: list[Any]) -> ast.Expression:
        return ast.NotIn(column, values)

    def is_null(self, column: str) -> ast.Expression:
        return ast.IsNull(column)

    def not_null(self, column: str) -> ast.Expression:
        return ast.NotNull(column)


@pytest.fixture(scope="module")
def corpus_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    """Each corpus table registered in a fresh SQLite catalog (exercises register_table too)."""
    install_acceptance_fixtures()
    root: Path = tmp_path_factory.mktemp("corpus")
    catalog = load_catalog(  # the corpus lives outside the warehouse
        uri=f"sqlite:///{root}/catalog.db", warehouse=str(root / "wh"), **{"allow-external-locations": "true"}
    )
    catalog.create_namespace(("acceptance",))
    return {
        case["case"]: catalog.register_table(("acceptance", case["case"]), case["metadata_location"])
        for case in load_cases()
    }


CHECKS = [pytest.param(case, check, id=f"{case['case']}-{check['id']}") for case, check in iter_checks()]


@pytest.mark.parametrize(("case", "check"), CHECKS)
def test_check_matches_fingerprint(
    corpus_tables: dict[str, Table], case: dict[str, Any], check: dict[str, Any]
) -> None:
    table = corpus_tables[case["case"]]
    row_filter = convert(check.get("filter_expr"), IcefloeBuilder())
    scan = table.scan(
        filter=row_filter,
        columns=tuple(check["columns"]),
        snapshot_id=check.get("snapshot_id"),
        ref=check.get("ref"),
    )
    result = scan.to_arrow()
    got = fingerprint(result, columns=check["columns"])
    want = expected_result(check)
    if got != want:
        expected_rows = canonical_rows(expected_table(case, check), columns=check["columns"])
        actual_rows = canonical_rows(result, columns=check["columns"])
        missing = [r for r in expected_rows if r not in actual_rows][:5]
        extra = [r for r in actual_rows if r not in expected_rows][:5]
        pytest.fail(f"{check['description']}: got {got}, want {want}\nmissing {missing}\nextra {extra}")
