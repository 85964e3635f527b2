"""The Python-API pipeline (the Spark main job's twin) runs end to end on a small size."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.cli.pipeline import run


def test_pipeline_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ICEFLOE_CATALOG_URI", raising=False)
    monkeypatch.delenv("ICEFLOE_WAREHOUSE", raising=False)
    report = dict(run(rows=3000, batches=3).lines)
    assert report["rows in first snapshot"] == "1,000"
    assert report["snapshots"] == "8"
    assert report["operations"] == "appendx6, overwritex2"
    planned, total = report["files read for the 3-day query"].split(" of ")
    assert 0 < int(planned) < int(total)
    assert (tmp_path / ".icefloe" / "catalog.db").exists()
