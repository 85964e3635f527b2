"""Maintenance never deletes a view's metadata files, even ones another engine (or an icefloe
without the view location rules) wrote under a table's location."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy import insert

from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.sql_views import VIEW_TYPE, SqlViews
from icefloe.io.fileio import local_path
from icefloe.maintenance.remove_orphan_files import remove_orphan_files
from icefloe.spec.view_metadata import SqlRepresentation, ViewMetadata, ViewVersion, view_metadata_to_dict
from icefloe.table.table import Table
from tests.maintenance.helpers import SCHEMA, make_table

pytestmark = pytest.mark.catalog_namespaces("db")

# where the view's metadata file lies, relative to the table's location
LAYOUTS = ["metadata/00000-0b5e8a44-7a63.metadata.json", "v/metadata/00000-view.metadata.json"]


def _smuggle_view(catalog: SqlCatalog, table: Table, relative: str) -> Path:
    """Write a view's metadata file under ``table``'s location and add its row directly, as an
    engine that does not check locations would."""
    view_dir = f"{table.location()}/{relative}".rsplit("/metadata/", 1)[0]
    version = ViewVersion(1, 1000, 0, (SqlRepresentation("SELECT 1", "spark"),), ("db",), {})
    md = ViewMetadata.new(view_dir, version, SCHEMA, {})
    path = Path(local_path(f"{table.location()}/{relative}") or "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(view_metadata_to_dict(md)))
    row = {
        "catalog_name": catalog.name,
        "table_namespace": "db",
        "table_name": "v",
        "metadata_location": f"{table.location()}/{relative}",
        "iceberg_type": VIEW_TYPE,
    }
    with catalog.engine.begin() as conn:
        conn.execute(insert(catalog._t).values(**row))
    assert SqlViews(catalog).load("db.v")[0] == md
    return path


@pytest.mark.parametrize("relative", LAYOUTS)
def test_orphan_removal_keeps_a_view_file_under_the_table(catalog: SqlCatalog, relative: str) -> None:
    table = make_table(catalog, "db.t", 2, batches=1)
    view_file = _smuggle_view(catalog, table, relative)
    stray = Path(local_path(table.location()) or "") / "data" / "stray.parquet"
    stray.write_bytes(b"not referenced")
    result = remove_orphan_files(table, older_than=int(time.time() * 1000) + 3_600_000)
    assert result.orphan_files == (f"file://{stray}",)  # the view's file is not even a candidate
    assert not stray.exists()
    assert view_file.exists()
    assert SqlViews(catalog).load("db.v")[1].endswith(relative)


@pytest.mark.parametrize("relative", LAYOUTS)
def test_purge_keeps_a_view_file_under_the_table(catalog: SqlCatalog, relative: str) -> None:
    """Purge deletes only what the table's metadata names, so this holds on older code too; it
    guards that the views' protection does not also keep the table's own data."""
    table = make_table(catalog, "db.t", 2, batches=1)
    view_file = _smuggle_view(catalog, table, relative)
    data_files = [Path(local_path(f.file_path) or "") for f in table.scan().plan_files()]
    assert data_files and all(f.exists() for f in data_files)
    catalog.drop_table("db.t", purge=True)
    assert not any(f.exists() for f in data_files)  # the table's own files went
    assert view_file.exists()
    assert SqlViews(catalog).load("db.v")[0].location.startswith(table.location())
