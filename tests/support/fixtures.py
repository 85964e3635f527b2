"""The one way tests reach the acceptance corpus (``tests/fixtures/iceberg-acceptance``).

The corpus is part of the repository: tables written by other Iceberg implementations, with
expected results in ``cases.json`` and ``<case>/expected/``. Its metadata embeds absolute
locations under ``file:///tmp/iceberg-acceptance/``, so a test that reads a table through its
metadata first installs the corpus there; a test that only looks at single files (metadata JSON,
Puffin, manifests) reads them straight from the repository with ``corpus_files``.

The check runner reads through PyIceberg (or another reader of ``tests.support.interop``), so the
harness itself is validated independently of icefloe.

    install_acceptance_fixtures()            # copy to /tmp/iceberg-acceptance once (the tables embed it)
    for case, check in iter_checks(): ...
    table = run_check(case, check, reader="pyiceberg")
    assert fingerprint(table, check["columns"]) == expected_result(check)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support import fingerprint as _fingerprint
from tests.support.filter_expr import (
    convert,
    filter_columns,
    filter_expr_to_pyiceberg,
    filter_expr_to_sql,
    filter_expr_walk,
    filter_table,
)

CORPUS_NAME = "iceberg-acceptance"
CORPUS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / CORPUS_NAME
INSTALL_ROOT = Path("/tmp") / CORPUS_NAME  # fixed: every metadata file embeds file:///tmp/iceberg-acceptance/
# The two spellings of the install root in the corpus' file locations (Iceberg Java writes file:/).
LOCATION_PREFIXES = (f"file://{INSTALL_ROOT}/", f"file:{INSTALL_ROOT}/")
ROW_LINEAGE_COLUMNS = ("_row_id", "_last_updated_sequence_number")

__all__ = [
    "CORPUS_DIR",
    "INSTALL_ROOT",
    "ROW_LINEAGE_COLUMNS",
    "canonical_rows",
    "case_by_name",
    "check_id",
    "convert",
    "corpus_dir",
    "corpus_files",
    "corpus_path",
    "expected_result",
    "expected_table",
    "filter_columns",
    "filter_expr_to_pyiceberg",
    "filter_expr_to_sql",
    "filter_expr_walk",
    "filter_table",
    "fingerprint",
    "install_acceptance_fixtures",
    "iter_checks",
    "load_cases",
    "load_corpus",
    "reader_verdict",
    "run_check",
]


# ---------------------------------------------------------------- locating and installing


def corpus_dir() -> Path:
    """The corpus in the repository (read-only source of the install)."""
    if not (CORPUS_DIR / "cases.json").is_file():  # only a damaged checkout gets here
        raise FileNotFoundError(f"acceptance corpus missing from the repository: {CORPUS_DIR}")
    return CORPUS_DIR


def corpus_files(pattern: str) -> list[Path]:
    """Files of the corpus matching a glob relative to its root, e.g. ``*/data/*.puffin``; sorted."""
    return sorted(corpus_dir().glob(pattern))


def corpus_path(location: str) -> Path:
    """The repository copy of a file named by its location in the corpus' metadata."""
    for prefix in LOCATION_PREFIXES:
        if location.startswith(prefix):
            return corpus_dir() / location[len(prefix) :]
    raise ValueError(f"not a location of the acceptance corpus: {location}")


def _corpus_members(source: Path) -> Iterator[Path]:
    """What an install copies: cases.json and every case folder (not the README)."""
    yield source / "cases.json"
    for case_dir in sorted(p for p in source.iterdir() if p.is_dir()):
        yield case_dir
        yield from sorted(case_dir.rglob("*"))


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``b`` exists with exactly ``a``'s bytes."""
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
    except FileNotFoundError:
        return False
    return a.read_bytes() == b.read_bytes()


def _copy_atomically(src: Path, dest: Path) -> None:
    """Copy through a temporary sibling and rename, so no reader ever sees a half-written file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    shutil.copy2(src, tmp)
    os.replace(tmp, dest)


_installed: set[Path] = set()


def install_acceptance_fixtures(target: Path = INSTALL_ROOT, recheck: bool = False) -> Path:
    """Copy the corpus to /tmp/iceberg-acceptance and return that path.

    Idempotent and safe to run concurrently (a file lock; files are replaced atomically, and only
    when missing or different, so a copy that a test damaged is restored). Files that are not part
    of the corpus are left alone. Checked once per process unless ``recheck``.
    """
    target = Path(target)
    if target in _installed and not recheck:
        return target
    source = corpus_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for src in _corpus_members(source):
                dest = target / src.relative_to(source)
                if src.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                elif not _same_file(src, dest):
                    _copy_atomically(src, dest)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _installed.add(target)
    return target


# ---------------------------------------------------------------- cases


@cache
def load_corpus() -> dict[str, Any]:
    """The whole parsed cases.json (corpus header, reader versions, cases)."""
    with open(corpus_dir() / "cases.json", encoding="utf-8") as f:
        return json.load(f)


def load_cases() -> list[dict[str, Any]]:
    """The list of case dicts of cases.json (each with ``metadata_location`` and ``checks``)."""
    return list(load_corpus()["cases"])


def case_by_name(name: str) -> dict[str, Any]:
    """One case by its ``case`` name (e.g. ``p01_v1_appends``)."""
    for case in load_cases():
        if case["case"] == name:
            return case
    raise KeyError(f"no acceptance case named {name!r}")


def iter_checks() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (case, check) pair of the corpus, in file order."""
    for case in load_cases():
        for check in case["checks"]:
            yield case, check


def check_id(case: dict[str, Any], check: dict[str, Any]) -> str:
    """A stable test id, ``<case>/<check id>``."""
    return f"{case['case']}/{check['id']}"


# ---------------------------------------------------------------- fingerprints and expected results


def fingerprint(
    table: pa.Table, columns: list[str] | None = None, uuid_columns: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``{"row_count": n, "fingerprint": "<32 hex>"}`` of ``table`` per the corpus' fingerprint v1."""
    return _fingerprint.fingerprint(table, columns, uuid_columns)


def canonical_rows(
    table: pa.Table, columns: list[str] | None = None, uuid_columns: tuple[str, ...] = ()
) -> list[list[str]]:
    """Per-row lists of canonical cell strings (the fingerprint's rendering; NULL is ``\\N``)."""
    return _fingerprint.canonical_rows(table, columns, uuid_columns)


def expected_table(case: dict[str, Any], check: dict[str, Any]) -> pa.Table:
    """The expected rows of a check (``<case>/expected/<id>.parquet``, the writer's Arrow types)."""
    return pq.read_table(corpus_dir() / case["case"] / check["expected_parquet"])


def expected_result(
    check: dict[str, Any], columns: list[str] | None = None, case: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The expected fingerprint; for a subset of ``columns`` it is computed from the expected Parquet."""
    if columns is None or list(columns) == list(check["columns"]):
        return {"row_count": check["row_count"], "fingerprint": check["fingerprint"]}
    if case is None:
        raise ValueError("expected_result over other columns needs the case (to find expected/*.parquet)")
    return fingerprint(expected_table(case, check), list(columns))


# ---------------------------------------------------------------- the check runner (any reader)


def reader_verdict(check: dict[str, Any], reader: str) -> tuple[list[str] | None, str]:
    """What ``reader`` is expected to get right for ``check``, from its cross_checks.

    Returns ``(columns, "")`` when the reader matched (``columns`` = the columns it matched on:
    the check's own, or ``compared_columns`` when it cannot produce some of them), or
    ``(None, reason)`` when it did not (the reason quotes the corpus' explanation).
    """
    cross = check.get("cross_checks", {}).get(reader)
    if cross is None:
        return None, f"{reader} was not cross-checked on this check"
    if cross.get("result") == "match":
        return list(cross.get("compared_columns") or check["columns"]), ""
    detail = cross.get("error") or (
        f"got {cross.get('row_count')} rows, fingerprint {cross.get('fingerprint')}"
    )
    reason = f"{reader} {cross.get('result')} in cases.json ({detail})"
    if check.get("status") == "disputed":
        reason += "; disputed check: " + str(check.get("dispute", ""))
    return None, reason


def run_check(
    case: dict[str, Any],
    check: dict[str, Any],
    reader: str = "pyiceberg",
    columns: list[str] | None = None,
) -> pa.Table:
    """Run one check (snapshot or ref, filter, projection) with an interop reader and return the rows."""
    from tests.support import interop

    install_acceptance_fixtures()
    read = interop.READERS[reader]
    return read(
        case["metadata_location"],
        snapshot_id=check.get("snapshot_id"),
        ref=check.get("ref"),
        columns=list(columns or check["columns"]),
        row_filter=check.get("filter_expr"),
    )
