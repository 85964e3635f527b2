"""The acceptance corpus (tables by Iceberg Java, PyIceberg, chDB, LakeSail) read through Spark.

Covers position deletes, deletion vectors, equality of renamed/widened columns by field id,
partition evolution, branches and tags, nested types and row lineage, each through the route
``read_table`` picks (native Parquet reader, or the Python route for files with deletes).
The full corpus is marked slow; the default run reads one representative check per table.
"""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.catalog.base import Catalog
from icefloe.spark import read_table
from icefloe.table.table import Table
from tests.scan.test_acceptance_fixtures import IcefloeBuilder
from tests.spark.conftest import CI
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


@pytest.fixture(scope="module")
def corpus(spark, catalog: Catalog) -> dict[str, Table]:  # type: ignore[no-untyped-def]
    """Every corpus table registered in the Spark session's catalog."""
    install_acceptance_fixtures()
    if not catalog.namespace_exists(("acceptance",)):
        catalog.create_namespace(("acceptance",))
    out = {}
    for case in load_cases():
        ident = ("acceptance", case["case"])
        if not catalog.table_exists(ident):
            catalog.register_table(ident, case["metadata_location"])
        out[case["case"]] = catalog.load_table(ident)
    return out


def _representative(case: dict[str, Any], check: dict[str, Any]) -> bool:
    first = check is case["checks"][0]
    lineage = any(c.startswith("_") for c in check["columns"])
    return first or lineage or (bool(check.get("filter_expr")) and check is case["checks"][-1])


ALL = [(case, check) for case, check in iter_checks() if not CI or _representative(case, check)]
CHECKS = [
    pytest.param(
        case,
        check,
        id=f"{case['case']}-{check['id']}",
        marks=() if _representative(case, check) else (pytest.mark.slow,),
    )
    for case, check in ALL
]


@pytest.mark.parametrize(("case", "check"), CHECKS)
def test_spark_read_matches_fingerprint(spark, corpus, case, check) -> None:  # type: ignore[no-untyped-def]
    row_filter = convert(check.get("filter_expr"), IcefloeBuilder())
    df = read_table(
        spark,
        ("acceptance", case["case"]),
        snapshot_id=check.get("snapshot_id"),
        ref=check.get("ref"),
        filter=row_filter,
        columns=check["columns"],
    )
    result = df.toArrow()
    got = fingerprint(result, columns=check["columns"])
    want = expected_result(check)
    if got != want:
        expected_rows = canonical_rows(expected_table(case, check), columns=check["columns"])
        actual_rows = canonical_rows(result, columns=check["columns"])
        missing = [r for r in expected_rows if r not in actual_rows][:3]
        extra = [r for r in actual_rows if r not in expected_rows][:3]
        pytest.fail(f"{check['description']}: got {got}, want {want}\nmissing {missing}\nextra {extra}")
