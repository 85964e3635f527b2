"""Static tables: read-only from a metadata file or a table directory, no catalog."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.static import static_table
from icefloe.errors import NotFound, Unsupported
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField
from tests.support.fixtures import install_acceptance_fixtures


def test_static_table_reads_and_refuses_writes(tmp_path: Path) -> None:
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType())))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    first = table.current_snapshot()
    table.append(pa.table({"id": pa.array([3], pa.int64())}))

    static = static_table(table.metadata_location)
    assert sorted(static.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert static.scan(snapshot_id=first.snapshot_id).to_arrow().num_rows == 2  # type: ignore[union-attr]
    assert static.metadata_table("snapshots").num_rows == 2
    files_before = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(Unsupported, match="read-only"):
        static.append(pa.table({"id": pa.array([9], pa.int64())}))
    with pytest.raises(Unsupported, match="read-only"):
        static.set_properties(a="b")
    with pytest.raises(Unsupported, match="read-only"), static.update_schema() as update:
        update.add_column("x", LongType())
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == files_before
    assert catalog.load_table("db.t").metadata_location == table.metadata_location
    catalog.close()


def test_static_table_from_a_hadoop_directory(tmp_path: Path) -> None:
    hadoop = HadoopCatalog("h", warehouse=str(tmp_path / "wh"))
    hadoop.create_namespace("db")
    hadoop.create_table("db.t", Schema(NestedField(1, "id", LongType()))).append(
        pa.table({"id": pa.array([5], pa.int64())})
    )
    static = static_table(str(tmp_path / "wh" / "db" / "t"))
    assert static.metadata_location.endswith("v2.metadata.json")
    assert static.scan().to_arrow().column("id").to_pylist() == [5]
    with pytest.raises(NotFound):
        static_table(str(tmp_path / "wh" / "db"))


def test_static_table_of_a_java_layout_fixture() -> None:
    root = install_acceptance_fixtures()
    static = static_table(str(root / "p10c_sail_v3"))
    assert static.scan().to_arrow().num_rows == 49
