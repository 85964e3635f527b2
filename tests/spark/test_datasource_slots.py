"""How many slots (Spark tasks) a current-state data source read gets: Spark's packing of the
current snapshot's files, from its summary, 8 to 256 (``datasource.slot_count``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import icefloe
from icefloe.spark.datasource import MAX_SLOTS, MIN_SLOTS, slot_count

MB = 1024 * 1024


@pytest.fixture(scope="module")
def forty_small_files(tmp_path_factory: pytest.TempPathFactory) -> icefloe.Table:
    """A table of 40 one-row files (a few hundred bytes each)."""
    root: Path = tmp_path_factory.mktemp("slots")
    catalog = icefloe.load_catalog("slots", uri=f"sqlite:///{root / 'c.db'}", warehouse=str(root / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    for i in range(40):
        table.append(pa.table({"id": [i]}))
    summary = table.metadata.current_snapshot().summary
    assert (summary["total-data-files"], int(summary["total-files-size"]) < 40 * 4 * MB) == ("40", True)
    return table


def _with(table: icefloe.Table, **properties: str) -> object:
    return table.metadata.with_changes(properties={**table.metadata.properties, **properties})


def test_small_files_weigh_the_open_file_cost_and_fill_the_minimum(forty_small_files: icefloe.Table) -> None:
    # 40 x 4 MB = 160 MB over at least 8 slots: 8 slots of 20 MB, not a slot per file
    assert slot_count(forty_small_files.metadata) == MIN_SLOTS == 8


@pytest.mark.parametrize(
    ("split", "slots"), [(8 * MB, 20), (5 * MB, 32), (1 * MB, 160), (MB // 8, MAX_SLOTS)]
)
def test_a_slot_holds_at_most_a_split(forty_small_files: icefloe.Table, split: int, slots: int) -> None:
    metadata = _with(forty_small_files, **{"read.split.target-size": str(split)})
    assert slot_count(metadata) == slots


def test_the_open_file_cost_is_the_table_property(forty_small_files: icefloe.Table) -> None:
    # 40 x 1 MB over 8 MB splits: 5 slots, raised to the minimum; 40 x 16 MB over 32 MB splits: 20
    assert slot_count(_with(forty_small_files, **{"read.split.open-file-cost": str(MB)})) == MIN_SLOTS
    properties = {"read.split.open-file-cost": str(16 * MB), "read.split.target-size": str(32 * MB)}
    assert slot_count(_with(forty_small_files, **properties)) == 20


def test_an_empty_table_gets_the_minimum(tmp_path: Path) -> None:
    catalog = icefloe.load_catalog(
        "empty", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh")
    )
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64())]))
    assert slot_count(table.metadata) == MIN_SLOTS
