"""The benchmark scripts at a tiny size, so they cannot rot (each run checks its own results)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import (
    bench_changelog,
    bench_column_updates,
    bench_core,
    bench_deletes,
    bench_equality_deletes,
    bench_fsync,
    bench_maintenance,
    bench_rest,
    bench_rest_server,
    bench_row_changes,
    bench_v4,
)

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


def test_bench_equality_deletes_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--files", "4", "--rows", "10", "--keys", "15", "--runs", "1", "--dir", str(tmp_path)]
    assert bench_equality_deletes.main(argv) == 0
    out = capsys.readouterr().out
    assert "one scan of 4 files x 10 rows under one equality delete file of 15 keys" in out
    routes = [line.split() for line in out.splitlines() if line.startswith(("to_arrow ", "stream "))]
    assert [(r[0], r[-1]) for r in routes] == [("to_arrow", "1"), ("stream", "1")]  # one read each


def test_bench_row_changes_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--rows", "20000", "--files", "200", "--runs", "1", "--delete-runs", "1", "--dir", str(tmp_path)]
    assert bench_row_changes.run(argv) == 0
    out = capsys.readouterr().out
    assert "rows deleted=20 (0.10%), files touched=2 (1.0%)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("v3 ", "v4 "))]
    measured = [(r[0], r[1]) for r in rows if r[1] in ("copy-on-write", "merge-on-read")]
    assert measured == [(v, m) for v in ("v3", "v4") for m in ("copy-on-write", "merge-on-read")]
    assert "(!)" not in out


V4 = "--files-a 300 --chunk-a 100 --appends 3 --files-cd 400 --chunk 200 --history 20 --runs 2 --plan-runs 1"


def test_bench_v4_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_v4.main([*V4.split(), "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_v4 {V4}" in out
    part_a = out.split("## (a)")[1].split("## (b)")[0]
    rows = {line.split("  ")[0]: line for line in part_a.splitlines() if line.startswith(("v3 ", "v4"))}
    labels = [v.label for v in bench_v4.VARIANTS_A]
    assert all(label in rows for label in labels)
    v4_files, v3_files = float(rows["v4"].split()[1]), float(rows["v3 merge-append"].split()[2])
    assert 2.0 <= v4_files < v3_files == 3.0  # a root (+ a leaf when the root is full) vs list + manifest
    assert "(c) tree files written to delete one data file from a 400-file table" in out
    assert "(d) plan_files() on a 400-file table" in out


def test_bench_maintenance_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--history", "30", "--keep", "5", "--runs", "1", "--appends", "2", "--dir", str(tmp_path)]
    assert bench_maintenance.main(argv) == 0  # exits 1 when the libraries expire different snapshots
    out = capsys.readouterr().out
    assert "(a) expire 25 of 30 snapshots" in out
    part_a = out.split("## (a)")[1].split("## (b)")[0].splitlines()[3:]  # title, header, rule
    rows = {line.split()[0]: line for line in part_a if line}
    assert set(rows) == {"v2", "v3", "v4"} and "cannot write v3+" in rows["v3"]
    assert "(b) metadata file and Table.append latency" in out


CHANGELOG = "--skip-spark --rows 20000 --files 2 --runs 1 --row-group-bytes default,65536"


def test_bench_changelog_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Part (c) only; the Spark parts run on the shared session (tests/spark/test_bench_changelog_*)."""
    assert bench_changelog.main([*CHANGELOG.split(), "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_changelog {CHANGELOG}" in out
    assert "(c) changelog of one MoR update of 0.1% of 20,000 rows in 2 files" in out
    rows = [line for line in out.splitlines() if line.startswith(("default", "64 KiB"))]
    assert [r.split()[0] for r in rows] == ["default", "64"]
    assert all(r.split()[r.split().index("KiB" if "KiB" in r else "MB)") + 1] == "20" for r in rows)


REST = "--appends 2 --history 0 --writers 3 --per-writer 2"


def test_bench_rest_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_rest.main([*REST.split(), "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_rest {REST}" in out
    assert "(a) REST / direct:" in out and "(b) PyIceberg / icefloe on the same server:" in out
    assert "0 lost (target 0)" in out
    assert "(d) client metadata files per append: 1 (target 1)" in out
    assert "(!)" not in out


REST_HISTORY = "--appends 2 --history 0,3 --appenders none"


def test_bench_rest_history_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # every table gets 3 appends before the timed ones; the run checks each table's snapshot and
    # row counts afterwards (PyIceberg's included), so finishing means all of them landed
    assert bench_rest.main([*REST_HISTORY.split(), "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_rest {REST_HISTORY}" in out
    rows = [line.split()[0] for line in out.splitlines() if line[:1].isdigit()]
    assert rows == ["0", "3"]
    assert "(a) REST / direct:" in out and "(b) PyIceberg / icefloe on the same server:" in out
    assert "(a) REST / direct at 3 prior snapshots:" in out
    assert "(b) PyIceberg / icefloe on the same server at 3 prior snapshots:" in out


def test_bench_fsync_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_fsync.main(["--runs", "2", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "command:  python -m bench.bench_fsync --runs 2" in out
    for way in ("per file (before)", "barrier, in turn", "barrier, concurrent (now)"):
        assert way in out
    assert len(list(tmp_path.rglob("*"))) == 2 + 4 * 3 * 3  # data/ and metadata/; 4 files x 3 ways x 3 runs


def test_bench_s3_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_s3

    args = ["--appends", "2", "--plan-files", "40", "--plan-commits", "2", "--plan-runs", "1"]
    assert bench_s3.main(args) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_s3 {' '.join(args)}" in out
    for name in ("icefloe v3", "icefloe v4", "pyiceberg v2"):
        assert f"  {name} " in out
    assert "(b) plan_files() of a 40-file table on S3" in out
    assert "(!)" not in out  # every engine planned the expected files


def test_bench_s3_keeps_plan_tables_in_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_s3

    args = ["--appends", "0", "--plan-files", "40", "--plan-commits", "2", "--plan-runs", "1"]
    assert bench_s3.main([*args, "--dir", str(tmp_path)]) == 0
    assert "tables saved in" in capsys.readouterr().err
    # a second run (a new server, empty) restores the saved tables instead of building them
    assert bench_s3.main([*args, "--dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "tables restored from" in captured.err and "table with 40 files" not in captured.err
    assert "(b) plan_files() of a 40-file table on S3" in captured.out
    assert "(!)" not in captured.out  # the restored tables plan the expected files
    # another size is built anew
    assert (
        bench_s3.main(["--appends", "0", "--plan-files", "20", "--plan-commits", "2", "--dir", str(tmp_path)])
        == 0
    )
    assert "table with 20 files" in capsys.readouterr().err


COLUMNS = "--rows 20000 --columns 8 --files 2 --scan-runs 1"


def test_bench_column_updates_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_column_updates.main([*COLUMNS.split(), "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_column_updates {COLUMNS}" in out
    assert "(a) UPDATE c0 of 2,000 rows (10%) of 20,000 x 8 columns" in out
    rows = {
        line.split("  ")[0]: line.split()
        for line in out.splitlines()
        if line.startswith(("copy", "merge", "column"))
    }
    assert set(rows) == {"copy-on-write", "merge-on-read", "column file"}
    megabytes = {label: float(cells[cells.index("MiB") - 1]) for label, cells in rows.items()}
    assert megabytes["column file"] < megabytes["merge-on-read"] < megabytes["copy-on-write"]
    assert "(!)" not in out and "(b) full scan of the column-update table" in out


REST_SERVER = "--writers 2 --per-writer 2"


def test_bench_rest_server_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_rest_server.main([*REST_SERVER.split(), "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"command:  python -m bench.bench_rest_server {REST_SERVER}" in out
    assert "server CPU per commit outside the rebase:" in out
    rebase = next(line for line in out.splitlines() if line.startswith("rebase of a stale append"))
    assert float(rebase.split()[-2]) > 0  # the timed server did time its rebases


def test_bench_rest_s3_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_rest_s3

    argv = ["--latency-ms", "0,5", "--appends", "1", "--dir", str(tmp_path)]
    assert bench_rest_s3.main(argv) == 0  # it checks every table's snapshot count itself
    out = capsys.readouterr().out
    assert "command:  python -m bench.bench_rest_s3 --latency-ms 0,5 --appends 1" in out
    rows = [line.split()[:2] for line in out.splitlines() if line.startswith(("0 ms", "5 ms"))]
    assert rows == [["0", "ms"], ["5", "ms"]]
