"""bench_changelog's Spark parts (streaming throughput, commit-to-sink latency) at a tiny size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import bench_changelog


def test_bench_changelog_spark_tiny(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = "--rows 20000 --files 2 --row-group-bytes default --stream-rows 20000 --stream-files 2"
    argv += " --commits 2 --runs 1"
    assert bench_changelog.run([*argv.split(), "--dir", str(tmp_path)], spark=spark) == 0
    out = capsys.readouterr().out
    assert "(a) streaming read, Trigger.AvailableNow into noop" in out
    assert "20,000 rows, 2 files" in out
    assert "(b) commit to rows in a memory sink, 1-second trigger" in out
    assert "2 commits of 100 rows" in out
    assert "(!)" not in out
