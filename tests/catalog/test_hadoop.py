"""HadoopCatalog: Iceberg Java's file-system layout, written by icefloe and read in place."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.hadoop import HadoopCatalog, current_version_file
from icefloe.errors import AlreadyExists, CommitConflict, NamespaceNotEmpty, NoSuchTable, Unsupported
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from tests.support.fixtures import install_acceptance_fixtures
from tests.support.interop import duckdb_connection

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType()))


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"r{i}" for i in ids]})


@pytest.fixture
def hadoop(tmp_path: Path) -> HadoopCatalog:
    catalog = load_catalog("h", type="hadoop", warehouse=str(tmp_path / "wh"))
    assert isinstance(catalog, HadoopCatalog)
    return catalog


def test_layout_and_round_trip(hadoop: HadoopCatalog, tmp_path: Path) -> None:
    hadoop.create_namespace(("db", "eu"))
    table = hadoop.create_table(("db", "eu", "t"), SCHEMA, properties={"format-version": "3"})
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    metadata_dir = tmp_path / "wh" / "db" / "eu" / "t" / "metadata"
    assert (metadata_dir / "version-hint.text").read_text() == "3"
    assert sorted(p.name for p in metadata_dir.glob("v*.metadata.json")) == [
        "v1.metadata.json",
        "v2.metadata.json",
        "v3.metadata.json",
    ]
    loaded = hadoop.load_table("db.eu.t")
    assert loaded.metadata_location.endswith("/metadata/v3.metadata.json")
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert hadoop.list_namespaces() == [("db",)]
    assert hadoop.list_namespaces("db") == [("db", "eu")]
    assert hadoop.list_tables("db.eu") == [("db", "eu", "t")]
    with pytest.raises(AlreadyExists):
        hadoop.create_table("db.eu.t", SCHEMA)
    with pytest.raises(NamespaceNotEmpty):
        hadoop.drop_namespace("db.eu")
    with pytest.raises(Unsupported):
        hadoop.rename_table("db.eu.t", "db.eu.u")
    hadoop.drop_table("db.eu.t")
    assert not (tmp_path / "wh" / "db" / "eu" / "t").exists()
    with pytest.raises(NoSuchTable):
        hadoop.load_table("db.eu.t")
    hadoop.drop_namespace("db.eu")
    assert hadoop.list_namespaces("db") == []


def test_commit_creates_the_next_version_exclusively(hadoop: HadoopCatalog) -> None:
    hadoop.create_namespace("db")
    table = hadoop.create_table("db.t", SCHEMA)
    base_md, base_location = table.metadata, table.metadata_location
    changed = base_md.with_changes(properties={"a": "1"})
    first = hadoop.commit_table("db.t", base_location, changed, base_metadata=base_md)
    assert first.endswith("/v2.metadata.json")
    with pytest.raises(CommitConflict):  # a second writer from the same base loses
        hadoop.commit_table("db.t", base_location, base_md.with_changes(properties={"b": "2"}))
    assert hadoop.load_table("db.t").properties == {"a": "1"}


def test_a_handle_on_a_dropped_table_commits_onto_the_table_created_in_its_place(
    hadoop: HadoopCatalog,
) -> None:
    """``v1.metadata.json`` is written again by the new table: the old handle must read it, not trust
    the metadata it held under the same name."""
    hadoop.create_namespace("db")
    old = hadoop.create_table("db.t", SCHEMA)
    hadoop.drop_table("db.t")
    new = hadoop.create_table("db.t", SCHEMA, properties={"format-version": "3"})
    assert new.metadata_location == old.metadata_location
    old.append(_rows([1]))
    loaded = hadoop.load_table("db.t")
    assert loaded.metadata.table_uuid == new.metadata.table_uuid
    assert loaded.format_version == 3
    assert loaded.scan().to_arrow().column("id").to_pylist() == [1]


def test_a_version_file_without_its_hint_is_found(hadoop: HadoopCatalog, tmp_path: Path) -> None:
    """A writer that died between creating v<N+1> and updating the hint: readers still see v<N+1>."""
    hadoop.create_namespace("db")
    hadoop.create_table("db.t", SCHEMA).append(_rows([7]))
    metadata_dir = tmp_path / "wh" / "db" / "t" / "metadata"
    (metadata_dir / "version-hint.text").write_text("1")
    found = current_version_file(str(tmp_path / "wh" / "db" / "t"))
    assert found is not None and found.endswith("v2.metadata.json")
    assert hadoop.load_table("db.t").scan().to_arrow().num_rows == 1


def test_duckdb_reads_the_version_hint_layout(hadoop: HadoopCatalog, tmp_path: Path) -> None:
    """DuckDB's iceberg_scan on the table directory follows version-hint.text to icefloe's metadata."""
    hadoop.create_namespace("db")
    table = hadoop.create_table("db.t", SCHEMA)
    table.append(_rows([1, 2, 3]))
    table.delete("id = 2")
    con = duckdb_connection()
    table_dir = tmp_path / "wh" / "db" / "t"
    rows = con.execute(f"SELECT id FROM iceberg_scan('{table_dir}') ORDER BY id").fetchall()
    assert rows == [(1,), (3,)]


def test_java_layout_fixture_loads_in_place(tmp_path: Path) -> None:
    """The LakeSail-written v3 fixture (v<N>.metadata.json + version-hint.text) as a Hadoop table."""
    root = install_acceptance_fixtures()
    catalog = HadoopCatalog("fixtures", warehouse=str(root.parent))
    identifier = (root.name, "p10c_sail_v3")
    table = catalog.load_table(identifier)
    assert table.metadata_location.endswith("/metadata/v6.metadata.json")
    assert table.format_version == 3
    assert table.scan().to_arrow().num_rows == 49
    assert table.scan(snapshot_id=1740572423653841261).to_arrow().num_rows == 40
    assert identifier in catalog.list_tables(root.name)


def test_icefloe_writes_a_copy_of_the_java_layout(tmp_path: Path) -> None:
    """Appending to a Hadoop table written by another engine continues its version sequence."""
    root = install_acceptance_fixtures()
    warehouse = tmp_path / "wh"
    shutil.copytree(root / "p10c_sail_v3" / "metadata", warehouse / "db" / "sail" / "metadata")
    catalog = HadoopCatalog("copy", warehouse=str(warehouse))
    table = catalog.load_table("db.sail")
    before = table.scan().to_arrow().num_rows
    assert before == 49
    # new files go under the copied table's own location: point it at the copy first
    from icefloe.spec.updates import SetLocation, apply_updates

    moved = apply_updates(table.metadata, [SetLocation(f"file://{warehouse}/db/sail")])
    catalog.commit_table("db.sail", table.metadata_location, moved, base_metadata=table.metadata)
    table = catalog.load_table("db.sail")
    table.append(table.scan(limit=1).to_arrow())
    assert os.path.basename(table.metadata_location) == "v8.metadata.json"
    assert (warehouse / "db" / "sail" / "metadata" / "version-hint.text").read_text() == "8"
    assert catalog.load_table("db.sail").scan().to_arrow().num_rows == before + 1
