"""The benchmark scripts at a tiny size, so they cannot rot (each run checks its own results)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_core, bench_deletes, bench_row_changes

CORE = "--snapshots 1,2 --appends 1 --files 200 --files-per-manifest 100 --cases partition,metrics,all"
DELETES = "--files 200 --dvs 20 --files-per-manifest 100 --rows 4000 --data-files 2"
TINY = "--runs 1 --scan-runs 1 --workers 1"


def test_bench_core_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*CORE.split(), *TINY.split(), "--dir", str(tmp_path)]
    assert bench_core.main(argv) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_core {CORE}" in out
    assert "(a) append-commit latency" in out
    assert "(b) plan_files() over 200 data files in 2 manifests" in out
    assert "(!)" not in out
    # a second run reuses the planning table and rebuilds the history tables
    assert bench_core.main(argv) == 0
    assert "(!)" not in capsys.readouterr().out


def test_bench_deletes_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*DELETES.split(), *TINY.split(), "--dir", str(tmp_path)]
    assert bench_deletes.main(argv) == 0
    out = capsys.readouterr().out
    assert "(a) plan_files() of a v3 table: 200 data files, 20 DVs" in out
    assert "(b) scan().to_arrow() of 4,000 rows in 2 files, 40 rows deleted by DVs" in out
    assert "(!)" not in out
    # a second run reuses both tables
    assert bench_deletes.main(argv) == 0
    assert "(!)" not in capsys.readouterr().out


def test_bench_row_changes_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--rows", "20000", "--files", "200", "--runs", "1", "--delete-runs", "1", "--dir", str(tmp_path)]
    assert bench_row_changes.run(argv) == 0
    out = capsys.readouterr().out
    assert "rows deleted=20 (0.10%), files touched=2 (1.0%)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("v3 ", "v4 "))]
    measured = [(r[0], r[1]) for r in rows if r[1] in ("copy-on-write", "merge-on-read")]
    assert measured == [(v, m) for v in ("v3", "v4") for m in ("copy-on-write", "merge-on-read")]
    assert "(!)" not in out
