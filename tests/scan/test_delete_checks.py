"""Delete and data files are checked against their manifest entries while a scan reads them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.base import Catalog
from icefloe.errors import CorruptMetadata
from icefloe.io.fileio import local_path
from icefloe.table.table import Table
from icefloe.txn.delete_writer import write_deletion_vectors_file, write_position_delete_file
from icefloe.txn.producers import RowDelta
from tests.scan.test_row_deletes import _delete_positions, _table
from tests.support.interop import read_with_pyiceberg


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = load_catalog(uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    cat.create_namespace(("db",))
    return cat


def _delete_file(table: Table) -> Path:
    f = next(d.delete_file for t in table.scan().plan_files() for d in t.deletes)
    return Path(local_path(f.file_path))


def _rewrite(path: Path, change: dict[str, list]) -> None:
    """Rewrite a Parquet file with some columns' values replaced (schema and field ids kept)."""
    table = pq.read_table(path)
    for name, values in change.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    pq.write_table(table, path)


@pytest.mark.parametrize(("pos", "what"), [(-1, "position -1"), (10, "position 10 .* which has 10 rows")])
def test_positions_outside_the_data_file_are_corrupt(catalog: Catalog, pos: int, what: str) -> None:
    table = _table(catalog, 2)
    _delete_positions(table, {0: [1]})
    path = _delete_file(table)
    _rewrite(path, {"pos": [pos]})
    with pytest.raises(CorruptMetadata, match=what) as err:
        table.to_arrow()
    assert path.name in str(err.value) and err.value.location is not None


def test_rows_naming_another_file_than_referenced_data_file_are_corrupt(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    _delete_positions(table, {0: [1]})
    path = _delete_file(table)
    _rewrite(path, {"file_path": ["file:///elsewhere/x.parquet"]})
    with pytest.raises(CorruptMetadata, match="names other data files than its referenced_data_file"):
        table.to_arrow()


def test_a_data_file_path_that_is_no_location_names_the_delete_file(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    _delete_positions(table, {0: [1]})
    path = _delete_file(table)
    _rewrite(path, {"file_path": ["file://.tmp/x.parquet"]})  # a flipped '/' (found by the fuzz suite)
    with pytest.raises(CorruptMetadata, match="names an invalid data file path") as err:
        table.to_arrow()
    assert path.name in str(err.value) and err.value.location is not None


@pytest.mark.parametrize("fv", [2, 3])
def test_deletes_of_a_data_file_the_table_does_not_hold_are_ignored(catalog: Catalog, fv: int) -> None:
    """A dangling delete (its referenced_data_file is no live data file) is legal: an overwrite may
    remove a data file and leave its deletes until compaction. Iceberg Java ignores it; so do we,
    and it changes no row (the delete index attaches it to no task)."""
    table = _table(catalog, fv)
    real = table.scan().plan_files()[0].data_file
    gone = dataclasses.replace(real, file_path=real.file_path.replace(".parquet", "-gone.parquet"))
    if fv >= 3:
        deletes = write_deletion_vectors_file(table.io, table.metadata, {gone.file_path: (gone, [0, 1])})
    else:
        deletes = [write_position_delete_file(table.io, table.metadata, gone, [0, 1])]
    assert deletes[0].referenced_data_file == gone.file_path
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=deletes))
    table = catalog.load_table("db.t")
    assert table.current_snapshot().summary["added-position-deletes"] == "2"  # type: ignore[union-attr]
    assert [len(task.deletes) for task in table.scan().plan_files()] == [0, 0]
    assert sorted(table.to_arrow()["id"].to_pylist()) == list(range(20))
    if fv == 2:
        assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == list(range(20))


def test_a_delete_file_with_other_rows_than_its_manifest_counts_is_corrupt(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    _delete_positions(table, {0: [1, 2]})
    path = _delete_file(table)
    data = pq.read_table(path)
    pq.write_table(data.slice(0, 1), path)  # one deletion lost
    with pytest.raises(CorruptMetadata, match="holds 1 rows, its manifest says 2"):
        table.to_arrow()


def test_flipped_bits_in_a_data_page_are_caught_by_the_page_checksum(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    f = table.scan().plan_files()[0].data_file
    path = Path(local_path(f.file_path))
    data = bytearray(path.read_bytes())
    chunk = pq.read_metadata(path).row_group(0).column(0)
    end = (chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size
    data[end - 10] ^= 0x04  # inside the last page of column id
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptMetadata, match=path.name):
        table.to_arrow()


def test_a_column_the_manifest_counts_values_for_cannot_read_as_all_null(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    f = table.scan().plan_files()[0].data_file
    path = Path(local_path(f.file_path))
    data = pq.read_table(path)
    i = data.schema.get_field_index("tag")
    moved = data.schema.field(i).with_metadata({b"PARQUET:field_id": b"77"})  # as a corrupt footer
    pq.write_table(data.set_column(i, moved, data.column(i)), path)
    with pytest.raises(CorruptMetadata, match=r"column tag \(id 2\) reads as all null"):
        table.to_arrow()
