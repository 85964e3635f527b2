"""One catalog database shared with PyIceberg's SqlCatalog (the independent peer), both directions."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg import schema as py_schema
from pyiceberg import types as py_types
from pyiceberg.catalog import sql as pyiceberg_sql
from sqlalchemy import create_engine, text

from icefloe.catalog.sql import SqlCatalog
from icefloe.errors import AlreadyExists, NoSuchTable
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema

pytestmark = pytest.mark.all_catalogs


def _py_catalog(name: str, uri: str, warehouse: Path) -> object:
    return pyiceberg_sql.SqlCatalog(name, uri=uri, warehouse=f"file://{warehouse}")


def test_table_created_by_pyiceberg_is_listed_and_loaded(
    catalog_uri: str, catalog_name: str, warehouse: Path
) -> None:
    peer = _py_catalog(catalog_name, catalog_uri, warehouse)
    peer.create_namespace("pyns")  # type: ignore[attr-defined]
    peer.create_namespace(("pyns", "deep"), {"owner": "py"})  # type: ignore[attr-defined]
    py_table = peer.create_table(  # type: ignore[attr-defined]
        "pyns.events",
        schema=py_schema.Schema(
            py_types.NestedField(1, "id", py_types.LongType(), required=True),
            py_types.NestedField(2, "name", py_types.StringType(), required=False),
        ),
        properties={"made-by": "pyiceberg"},
    )

    ours = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    try:
        assert ours.list_namespaces() == [("pyns",)]
        assert ours.list_namespaces("pyns") == [("pyns", "deep")]
        assert ours.load_namespace_properties(("pyns", "deep")) == {"owner": "py"}
        assert ours.list_tables("pyns") == [("pyns", "events")]
        table = ours.load_table("pyns.events")
        assert table.metadata_location == py_table.metadata_location
        assert table.metadata.table_uuid == str(py_table.metadata.table_uuid)
        assert table.metadata.properties["made-by"] == "pyiceberg"
        assert [f.name for f in table.metadata.schema().fields] == ["id", "name"]

        # icefloe commits on top of PyIceberg's metadata; PyIceberg sees the change.
        md = table.metadata
        new_md = md.with_changes(
            properties={**md.properties, "touched-by": "icefloe"}, last_updated_ms=md.last_updated_ms + 1
        )
        ours.commit_table("pyns.events", table.metadata_location, new_md, base_metadata=md)
        reloaded = peer.load_table("pyns.events")  # type: ignore[attr-defined]
        assert reloaded.properties["touched-by"] == "icefloe"
        assert [e.metadata_file for e in reloaded.metadata.metadata_log] == [table.metadata_location]
    finally:
        ours.close()


def test_table_created_by_icefloe_is_listed_and_loaded_by_pyiceberg(
    catalog_uri: str, catalog_name: str, warehouse: Path, schema: Schema
) -> None:
    ours = SqlCatalog(catalog_name, uri=catalog_uri, warehouse=str(warehouse))
    try:
        ours.create_namespace("ns", {"team": "data"})
        ours.create_namespace(("ns", "sub"))
        created = ours.create_table("ns.items", schema, properties={"made-by": "icefloe"})

        peer = _py_catalog(catalog_name, catalog_uri, warehouse)
        assert ("ns",) in peer.list_namespaces()  # type: ignore[attr-defined]
        assert peer.list_namespaces("ns") == [("ns", "sub")]  # type: ignore[attr-defined]
        assert peer.load_namespace_properties("ns")["team"] == "data"  # type: ignore[attr-defined]
        assert peer.list_tables("ns") == [("ns", "items")]  # type: ignore[attr-defined]
        py_table = peer.load_table("ns.items")  # type: ignore[attr-defined]
        assert py_table.metadata_location == created.metadata_location
        assert str(py_table.metadata.table_uuid) == created.metadata.table_uuid
        assert py_table.properties["made-by"] == "icefloe"
        assert [f.name for f in py_table.schema().fields] == ["id", "name"]

        # PyIceberg appends through the shared compare-and-swap; icefloe sees its snapshot.
        py_table.append(
            pa.table(
                {"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", None]},
                schema=py_table.schema().as_arrow(),
            )
        )
        loaded = ours.load_table("ns.items")
        snapshot = loaded.metadata.current_snapshot()
        assert snapshot is not None
        assert snapshot.summary["added-records"] == "3"
        assert [e.metadata_file for e in loaded.metadata.metadata_log] == [created.metadata_location]

        # Names are shared: neither side may create over the other's table.
        with pytest.raises(AlreadyExists):
            ours.create_table("ns.items", schema)
        peer.drop_table("ns.items")  # type: ignore[attr-defined]
        with pytest.raises(NoSuchTable):
            ours.load_table("ns.items")
    finally:
        ours.close()


def test_purge_removes_pyiceberg_written_data(sqlite_uri: str, warehouse: Path, schema: Schema) -> None:
    ours = SqlCatalog("default", uri=sqlite_uri, warehouse=str(warehouse))
    try:
        ours.create_namespace("ns")
        created = ours.create_table("ns.t", schema)
        peer = _py_catalog("default", sqlite_uri, warehouse)
        py_table = peer.load_table("ns.t")  # type: ignore[attr-defined]
        for batch in range(2):
            py_table.append(
                pa.table(
                    {"id": pa.array([batch], pa.int64()), "name": ["x"]}, schema=py_table.schema().as_arrow()
                )
            )
        table_dir = Path(local_path(created.metadata.location))
        assert list(table_dir.rglob("*.parquet"))
        ours.drop_table("ns.t", purge=True)
        assert [p for p in table_dir.rglob("*") if p.is_file()] == []
    finally:
        ours.close()


def test_old_layout_without_iceberg_type_and_view_rows(
    sqlite_uri: str, warehouse: Path, schema: Schema
) -> None:
    """Tables made by an older Java/PyIceberg (no iceberg_type column) work; view rows are not tables."""
    engine = create_engine(sqlite_uri)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
                "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
                "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
                "PRIMARY KEY (catalog_name, table_namespace, table_name))"
            )
        )
        conn.execute(
            text(
                "CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, namespace "
                "VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), "
                "PRIMARY KEY (catalog_name, namespace, property_key))"
            )
        )
    engine.dispose()
    ours = SqlCatalog("jdbc", uri=sqlite_uri, warehouse=str(warehouse))
    try:
        ours.create_namespace("ns")
        t = ours.create_table("ns.t", schema)
        md = t.metadata
        ours.commit_table(
            "ns.t", t.metadata_location, md.with_changes(properties={"a": "1"}), base_metadata=md
        )
        assert ours.load_table("ns.t").metadata.properties == {"a": "1"}
        assert ours.list_tables("ns") == [("ns", "t")]
    finally:
        ours.close()

    # New layout: a VIEW row written by Java is neither listed nor loadable as a table.
    other = Path(sqlite_uri.removeprefix("sqlite:///")).with_name("v1.db")
    ours = SqlCatalog("jdbc", uri=f"sqlite:///{other}", warehouse=str(warehouse))
    try:
        ours.create_namespace("ns")
        with ours.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO iceberg_tables VALUES "
                    "('jdbc', 'ns', 'v', '/x/v.metadata.json', NULL, 'VIEW')"
                )
            )
        assert ours.list_tables("ns") == []
        assert not ours.table_exists("ns.v")
        with pytest.raises(AlreadyExists, match="view"):
            ours.create_table("ns.v", schema)
    finally:
        ours.close()
