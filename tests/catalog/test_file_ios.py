"""A catalog keeps one FileIO per distinct set of table properties, for the sets used last."""

from __future__ import annotations

from pathlib import Path

from icefloe.catalog.base import _FILE_IOS_KEPT
from icefloe.catalog.sql import SqlCatalog


def test_a_file_io_per_property_set_the_least_recently_used_made_again(tmp_path: Path) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    try:
        sets = [{"client.tag": str(i)} for i in range(_FILE_IOS_KEPT + 1)]
        made = [catalog._file_io(props, None) for props in sets[:-1]]
        assert catalog._file_io(dict(sets[0]), None) is made[0]  # an equal set: now the most recent
        catalog._file_io(sets[-1], None)  # the second set's FileIO leaves
        assert [
            catalog._file_io(props, None) is io for props, io in zip(sets[2:-1], made[2:], strict=True)
        ] == [True] * (_FILE_IOS_KEPT - 2)
        assert catalog._file_io(sets[0], None) is made[0]
        assert catalog._file_io(sets[1], None) is not made[1]
    finally:
        catalog.close()
