"""bench_sql at a tiny size on the test session, so it cannot rot (its own result checks pass)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import bench_sql


def test_bench_sql_tiny(spark: Any, catalog: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--rows", "4000", "--files", "2", "--runs", "1", "--overhead-runs", "2"]
    bench_sql.main(argv, spark=spark)  # timings at this size are noise: the exit code is not checked
    out = capsys.readouterr().out
    assert "command:  python -m bench.bench_sql --rows 4000 --files 2" in out
    assert "## (a) SELECT: 4,000 rows in 2 files" in out
    assert "selective: id in [500, 520]" in out and "1/2" in out
    assert "results differ" not in out and "merge counted" not in out
    assert "## (b) MERGE of 80 source rows (40 updates, 40 inserts) into 4,000 rows" in out
    assert "overhead per statement:" in out
