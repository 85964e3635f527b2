"""The ``position_deletes`` metadata table as Arrow: a position delete file that stores the deleted
rows (as Iceberg Java may write them) gives them in ``row``; equality deletes are not listed; the
schema follows Java's ``PositionDeletesTable`` (no ``partition`` when unpartitioned, DV columns
from v3)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.scan.metadata_tables_all import any_metadata_table
from icefloe.scan.position_deletes_table import DELETE_FILE_ROW_ID, position_deletes_schema
from icefloe.spec.content import FileContent
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType, StructType
from icefloe.tree.locations import LocationProvider
from icefloe.txn.delete_writer import POSITION_DELETE_SCHEMA
from icefloe.txn.equality_deletes import write_equality_delete_files
from icefloe.txn.producers import RowDelta

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "name", StringType(), False))


def test_stored_rows_are_returned_and_equality_deletes_are_not_listed(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, properties={"format-version": "2"})
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]}))
    table = catalog.load_table("db.t")
    data_path = table.scan().plan_files()[0].data_file.file_path
    with_rows = Schema(
        *POSITION_DELETE_SCHEMA.fields,
        NestedField(DELETE_FILE_ROW_ID, "row", StructType(*SCHEMA.fields), required=False),
    )
    stored = pa.table(
        {
            "file_path": [data_path, data_path],
            "pos": pa.array([0, 2], pa.int64()),
            "row": [{"id": 1, "name": "a"}, {"id": 3, "name": "c"}],
        }
    )
    md = table.metadata
    path = LocationProvider(md).new_data_file_path(extension="parquet")
    deletes = write_parquet_data_file(
        table.io, path, stored, with_rows, 0, (), md.properties, content=FileContent.POSITION_DELETES
    )
    equality = write_equality_delete_files(table.io, md, pa.table({"id": pa.array([2], pa.int64())}), [1])
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=[deletes, *equality]))
    table = catalog.load_table("db.t")
    got = any_metadata_table(table.io, table.metadata, "position_deletes")
    assert got.schema == position_deletes_schema(table.metadata)
    assert got.column_names == ["file_path", "pos", "row", "spec_id", "delete_file_path"]
    assert got.to_pylist() == [
        {
            "file_path": data_path,
            "pos": 0,
            "row": {"id": 1, "name": "a"},
            "spec_id": 0,
            "delete_file_path": path,
        },
        {
            "file_path": data_path,
            "pos": 2,
            "row": {"id": 3, "name": "c"},
            "spec_id": 0,
            "delete_file_path": path,
        },
    ]
    assert table.to_arrow().to_pylist() == []  # every row is deleted, one of them by equality


def test_v3_tables_have_the_deletion_vector_columns(catalog: Catalog) -> None:
    table = catalog.create_table("db.t3", SCHEMA, properties={"format-version": "3"})
    assert position_deletes_schema(table.metadata).names == [
        "file_path",
        "pos",
        "row",
        "spec_id",
        "delete_file_path",
        "content_offset",
        "content_size_in_bytes",
    ]
    assert any_metadata_table(table.io, table.metadata, "position_deletes").num_rows == 0
