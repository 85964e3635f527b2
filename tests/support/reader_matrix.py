"""Run every acceptance check with every interop reader and print a match/mismatch/error matrix.

    .venv/bin/python -m tests.support.reader_matrix [reader ...] [--json]

A diagnostic, not a test: it shows which reader agrees with the expected results where, and why
not (the first line of the error). Readers that cannot select the row-lineage columns are compared
on the remaining columns (marked ``~``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tests.support.fixtures import (
    ROW_LINEAGE_COLUMNS,
    check_id,
    expected_result,
    fingerprint,
    install_acceptance_fixtures,
    iter_checks,
    run_check,
)
from tests.support.interop import READERS, ReaderUnavailable, ReaderUnsupported


def run_one(reader: str, case: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    """Outcome of one check with one reader: ``{"result": match|partial|MISMATCH|ERROR, ...}``."""
    columns = list(check["columns"])
    partial = False
    try:
        try:
            table = run_check(case, check, reader=reader, columns=columns)
        except ReaderUnsupported:
            columns = [c for c in columns if c not in ROW_LINEAGE_COLUMNS]
            partial = True
            table = run_check(case, check, reader=reader, columns=columns)
    except ReaderUnavailable:
        raise
    except Exception as exc:  # a diagnostic: record any reader failure
        first = (str(exc).strip().splitlines() or [""])[0]
        return {"result": "ERROR", "error": f"{type(exc).__name__}: {first[:200]}"}
    got = fingerprint(table, columns)
    want = expected_result(check, columns, case)
    if got == want:
        return {"result": "partial" if partial else "match", "columns": columns}
    return {"result": "MISMATCH", "got_rows": got["row_count"], "want_rows": want["row_count"]}


def main(argv: list[str] | None = None) -> int:
    """Print the matrix (or JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("readers", nargs="*", default=list(READERS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    install_acceptance_fixtures()
    out: dict[str, dict[str, Any]] = {}
    for case, check in iter_checks():
        key = check_id(case, check)
        out[key] = {}
        for reader in args.readers:
            try:
                out[key][reader] = run_one(reader, case, check)
            except ReaderUnavailable as exc:
                out[key][reader] = {"result": "UNAVAILABLE", "error": str(exc)[:200]}
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        return 0
    marks = {"match": "ok", "partial": "~", "MISMATCH": "MISMATCH", "ERROR": "ERROR", "UNAVAILABLE": "n/a"}
    print(f"{'check':45s} " + " ".join(f"{r:14s}" for r in args.readers))
    for key, row in out.items():
        cells = " ".join(f"{marks[row[r]['result']]:14s}" for r in args.readers)
        problems = "; ".join(
            f"{r}: {v.get('error') or v.get('got_rows', '')} (want {v.get('want_rows', '')})"
            for r, v in row.items()
            if v["result"] not in ("match", "partial")
        )
        print(f"{key:45s} {cells} {problems}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
