"""Row-level deletes on read: DVs and position deletes written by icefloe, and the errors they raise."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import CorruptMetadata, NotFound
from icefloe.io.fileio import local_path
from icefloe.spec.schema import Schema
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.txn.delete_writer import write_deletion_vectors_file, write_position_delete_file
from icefloe.txn.producers import RowDelta
from tests.support.interop import read_with_duckdb, read_with_pyiceberg

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "tag", StringType(), False))


def _table(catalog: Catalog, fv: int) -> Table:
    t = catalog.create_table("db.t", SCHEMA, properties={"format-version": str(fv)})
    t.append(pa.table({"id": pa.array(range(0, 10), pa.int64()), "tag": [f"a{i}" for i in range(10)]}))
    t.append(pa.table({"id": pa.array(range(10, 20), pa.int64()), "tag": [f"b{i}" for i in range(10)]}))
    return t


def _delete_positions(table: Table, positions: dict[int, list[int]]) -> None:
    """Delete rows by position: key 0 is the file of the first append, 1 of the second."""
    rows = table.scan(columns=("id", "_file")).to_arrow().to_pylist()
    first_id_of_file: dict[str, int] = {}
    for r in rows:
        first_id_of_file[r["_file"]] = min(r["id"], first_id_of_file.get(r["_file"], r["id"]))
    by_path = {t.data_file.file_path: t.data_file for t in table.scan().plan_files()}
    ordered = [by_path[p] for p in sorted(first_id_of_file, key=first_id_of_file.__getitem__)]
    md = table.metadata
    if md.format_version >= 3:
        targets = {ordered[i].file_path: (ordered[i], pos) for i, pos in positions.items()}
        deletes = write_deletion_vectors_file(table.io, md, targets)
    else:
        deletes = [write_position_delete_file(table.io, md, ordered[i], pos) for i, pos in positions.items()]
    with table.transaction() as tx:
        tx.add_action(RowDelta(added_deletes=deletes))


@pytest.mark.parametrize("fv", [2, 3])
def test_deletes_apply_and_other_readers_agree(catalog: Catalog, fv: int) -> None:
    table = _table(catalog, fv)
    _delete_positions(table, {0: [0, 3, 9], 1: [5]})
    want = sorted(set(range(20)) - {0, 3, 9, 15})
    assert table.current_snapshot().operation == "delete"  # type: ignore[union-attr]
    assert sorted(table.to_arrow()["id"].to_pylist()) == want
    assert sorted(read_with_pyiceberg(table.metadata_location)["id"].to_pylist()) == want
    assert sorted(read_with_duckdb(table.metadata_location)["id"].to_pylist()) == want
    # _pos keeps the physical row position; _row_id keeps lineage on v3.
    got = table.scan(columns=("id", "_pos")).to_arrow().to_pylist()
    assert all(r["_pos"] == r["id"] % 10 for r in got)
    if fv == 3:
        lineage = table.scan(columns=("id", "_row_id")).to_arrow().to_pylist()
        assert all(r["_row_id"] == r["id"] for r in lineage)
    summary = table.current_snapshot().summary  # type: ignore[union-attr]
    assert summary["total-records"] == "20"
    assert summary["added-delete-files"] == "2"
    assert summary.get("added-dvs", "0") == ("2" if fv == 3 else "0")


def test_corrupted_dv_blob_names_the_file(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    _delete_positions(table, {0: [1, 2]})
    dv = next(d.delete_file for t in table.scan().plan_files() for d in t.deletes)
    assert dv.content_offset is not None
    path = Path(local_path(dv.file_path))
    data = bytearray(path.read_bytes())
    data[dv.content_offset + 10] ^= 0xFF  # flip a byte inside the bitmap: the CRC must catch it
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptMetadata, match=path.name):
        table.to_arrow()


def test_missing_data_file_names_the_file(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    victim = table.scan().plan_files()[0].data_file.file_path
    Path(local_path(victim)).unlink()
    with pytest.raises(NotFound, match=Path(local_path(victim)).name):
        table.to_arrow()


def test_missing_delete_file_names_the_file(catalog: Catalog) -> None:
    table = _table(catalog, 2)
    _delete_positions(table, {0: [1]})
    delete_path = next(d.delete_file.file_path for t in table.scan().plan_files() for d in t.deletes)
    Path(local_path(delete_path)).unlink()
    with pytest.raises(NotFound, match=Path(local_path(delete_path)).name):
        table.to_arrow()


def test_empty_projection_keeps_the_row_count(catalog: Catalog) -> None:
    table = _table(catalog, 3)
    _delete_positions(table, {0: [5, 6]})  # ids 5 and 6
    scan = table.scan(columns=(), filter="id >= 5")  # ids 7..19 remain
    assert scan.to_arrow().num_rows == 13
    assert scan.to_arrow().num_columns == 0
