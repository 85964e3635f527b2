"""Validate the acceptance-corpus harness with readers other than icefloe.

Every check of every case runs through PyIceberg and DuckDB and must give the expected fingerprint
wherever cases.json says that reader matched (on its ``compared_columns`` when it cannot produce
the row-lineage columns); the others are skipped with the corpus' reason. iceberg-rust, which the
corpus did not cross-check, must match everywhere except its known failures (strict xfail), on the
columns it can produce. The Arrow evaluation of every ``filter_expr`` is checked too.

Pointing this at icefloe = adding a reader with the same signature to ``interop.READERS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.filter_expr import filter_columns, filter_table
from tests.support.fixtures import (
    INSTALL_ROOT,
    ROW_LINEAGE_COLUMNS,
    case_by_name,
    check_id,
    expected_result,
    expected_table,
    fingerprint,
    install_acceptance_fixtures,
    iter_checks,
    load_cases,
    reader_verdict,
    run_check,
)
from tests.support.interop import (
    KNOWN_FAILURES,
    READERS,
    SUPPORT,
    ReaderUnavailable,
    ReaderUnsupported,
    assert_same_rows,
)

CHECKS = list(iter_checks())
IDS = [check_id(case, check) for case, check in CHECKS]
CROSS_CHECKED = ("pyiceberg", "duckdb")


@pytest.fixture(scope="module", autouse=True)
def _corpus_installed() -> None:
    install_acceptance_fixtures()


def test_install_is_idempotent() -> None:
    """Installing twice is harmless and leaves every case's metadata file in place."""
    assert install_acceptance_fixtures() == INSTALL_ROOT
    assert install_acceptance_fixtures() == INSTALL_ROOT
    for case in load_cases():
        assert (INSTALL_ROOT / case["case"]).is_dir()
        assert case["metadata_location"].startswith(f"file://{INSTALL_ROOT}/")
        assert (INSTALL_ROOT / case["metadata_location"][len(f"file://{INSTALL_ROOT}/") :]).is_file()


def test_install_restores_damaged_copy(tmp_path: Path) -> None:
    """A missing or modified file of an installed copy is put back; extra files are left alone."""
    target = tmp_path / "corpus"
    install_acceptance_fixtures(target)
    metadata = target / load_cases()[0]["metadata_location"][len(f"file://{INSTALL_ROOT}/") :]
    original = metadata.read_bytes()
    metadata.write_bytes(b"{}")
    (target / "cases.json").unlink()
    (target / "extra.txt").write_text("mine")
    install_acceptance_fixtures(target, recheck=True)
    assert metadata.read_bytes() == original
    assert (target / "cases.json").is_file()
    assert (target / "extra.txt").read_text() == "mine"


@pytest.mark.parametrize("reader", sorted(READERS))
def test_row_lineage_support_is_as_recorded(reader: str) -> None:
    """A reader marked able to select _row_id / _last_updated_sequence_number does; the others refuse."""
    case = case_by_name("p04_v3_deletion_vectors")
    check = case["checks"][0]
    assert check["columns"][:2] == list(ROW_LINEAGE_COLUMNS)
    if SUPPORT[reader]["row_lineage_columns"] is True:
        _assert_check(case, check, reader, check["columns"])
    else:
        with pytest.raises((ReaderUnsupported, ReaderUnavailable)):
            run_check(case, check, reader=reader)


@pytest.mark.parametrize(("case", "check"), CHECKS, ids=IDS)
def test_expected_files_match_fingerprint(case: dict[str, Any], check: dict[str, Any]) -> None:
    """expected/<id>.parquet has the check's fingerprint (the fingerprint module loads and agrees)."""
    got = fingerprint(expected_table(case, check), check["columns"])
    assert got == expected_result(check)


def _assert_check(case: dict[str, Any], check: dict[str, Any], reader: str, columns: list[str]) -> None:
    table = run_check(case, check, reader=reader, columns=columns)
    want = expected_result(check, columns, case)
    got = fingerprint(table, columns)
    if got != want:
        assert_same_rows(table, expected_table(case, check), columns, labels=(reader, "expected"))
        raise AssertionError(f"{reader}: fingerprint {got} != expected {want} (rows render alike?)")


def _cross_checked() -> list[Any]:
    """(case, check, reader) params; strict xfail where cases.json records the reader's mismatch."""
    params = []
    for (case, check), test_id in zip(CHECKS, IDS, strict=True):
        for reader in CROSS_CHECKED:
            columns, reason = reader_verdict(check, reader)
            marks = [] if columns is not None else [pytest.mark.xfail(strict=True, reason=reason)]
            params.append(pytest.param(case, check, reader, id=f"{test_id}-{reader}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "check", "reader"), _cross_checked())
def test_check_with_cross_checked_reader(case: dict[str, Any], check: dict[str, Any], reader: str) -> None:
    """The reader reproduces every expected result that cases.json says it matched, and still gets
    the others wrong (a reader that starts matching fails here until cases.json is updated)."""
    columns, _ = reader_verdict(check, reader)
    _assert_check(case, check, reader, columns if columns is not None else list(check["columns"]))


def _with_known_failures(reader: str) -> list[Any]:
    """The checks as pytest params, strict xfail where ``KNOWN_FAILURES`` lists the case."""
    params = []
    for (case, check), test_id in zip(CHECKS, IDS, strict=True):
        reason = KNOWN_FAILURES[reader].get(case["case"])
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case, check, id=test_id, marks=marks))
    return params


@pytest.mark.parametrize(("case", "check"), _with_known_failures("iceberg_rust"))
def test_check_with_iceberg_rust(case: dict[str, Any], check: dict[str, Any]) -> None:
    """iceberg-rust reproduces every expected result but its known failures (lineage columns left out)."""
    columns = [c for c in check["columns"] if c not in ROW_LINEAGE_COLUMNS]
    _assert_check(case, check, "iceberg_rust", columns)


FILTERED = [(c, k) for c, k in CHECKS if k["filter_expr"] and reader_verdict(k, "duckdb")[0] == k["columns"]]


@pytest.mark.parametrize(("case", "check"), FILTERED, ids=[check_id(c, k) for c, k in FILTERED])
def test_arrow_filter_evaluation(case: dict[str, Any], check: dict[str, Any]) -> None:
    """Filtering the unfiltered snapshot with ``filter_table`` gives the expected rows."""
    columns = list(
        dict.fromkeys([*check["columns"], *(c.split(".")[0] for c in filter_columns(check["filter_expr"]))])
    )
    unfiltered = READERS["duckdb"](
        case["metadata_location"], snapshot_id=check["snapshot_id"], ref=check["ref"], columns=columns
    )
    got = filter_table(unfiltered, check["filter_expr"])
    assert fingerprint(got, check["columns"]) == expected_result(check)
