"""The format helpers rewrite_table_path stands on: each changes only what it is asked to.

A manifest rewritten with records unchanged decodes to the same records under the same schema text
and header keys; a Puffin file with a new footer keeps every blob byte for byte; a v4 content-entry
file given its own paths back holds the same rows and footer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.rewrite import Record, field_names, rewrite_records
from icefloe.formats.parquet.delete_paths import with_deleted_file_paths
from icefloe.formats.puffin.files import FileMetadata, read_blob, read_puffin_footer, with_footer
from icefloe.formats.v4.entry_paths import read_entry_paths, with_entry_paths
from icefloe.spec.schema import DELETE_FILE_PATH_ID
from tests.maintenance.helpers import delete_ids, make_table

pytestmark = [pytest.mark.catalog_namespaces("db")]


def _one(root: Path, pattern: str) -> tuple[str, bytes]:
    found = sorted(root.rglob(pattern))
    assert found, pattern
    return str(found[0]), found[0].read_bytes()


def test_a_manifest_list_keeps_its_schema_header_and_other_fields(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 2, batches=2, rows=3)
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    location = snapshot.manifest_list
    data = table.io.new_input(location).read()  # the second append's: two manifests
    schema, meta, records = avs.open_avro(data, location)
    before = list(records)

    def change_for(writer_schema: dict) -> Callable[[Record], Record]:
        path = field_names(writer_schema)[500]
        return lambda r: {**r, path: "s3://elsewhere/" + r[path].rsplit("/", 1)[-1]}

    out = rewrite_records(data, location, change_for)
    schema2, meta2, records2 = avs.open_avro(out, location)
    after = list(records2)
    assert schema2 == schema
    assert {k: v for k, v in meta2.items() if k != avs.BLOCK_CRC_KEY} == {
        k: v for k, v in meta.items() if k != avs.BLOCK_CRC_KEY
    }
    assert [r["manifest_path"] for r in after] == [
        "s3://elsewhere/" + r["manifest_path"].rsplit("/", 1)[-1] for r in before
    ]
    assert [{**r, "manifest_path": None} for r in after] == [{**r, "manifest_path": None} for r in before]
    assert len(after) == 2


def test_a_puffin_footer_is_replaced_behind_unchanged_blobs(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 3, batches=1, rows=6)
    delete_ids(table, {0, 1})
    location, data = _one(Path(table.location().removeprefix("file://")), "*.puffin")
    footer = read_puffin_footer(data, len(data), location)
    moved = tuple(
        dataclasses.replace(b, properties={**b.properties, "referenced-data-file": f"s3://x/{i}"})
        for i, b in enumerate(footer.blobs)
    )
    out = with_footer(data, FileMetadata(moved, footer.properties), location)
    new_footer = read_puffin_footer(out, len(out), location)
    assert [b.properties["referenced-data-file"] for b in new_footer.blobs] == ["s3://x/0", "s3://x/1"]
    assert [read_blob(out, b) for b in new_footer.blobs] == [read_blob(data, b) for b in footer.blobs]
    assert (
        out[: footer.blobs[-1].offset + footer.blobs[-1].length]
        == data[: footer.blobs[-1].offset + footer.blobs[-1].length]
    )


def test_a_v4_root_given_its_own_paths_back_holds_the_same_rows(catalog: Catalog) -> None:
    table = make_table(catalog, "db.t", 4, batches=2, rows=6)
    delete_ids(table, {0, 4})
    location, data = _one(
        Path(table.refresh().location().removeprefix("file://")) / "metadata", "*-root.parquet"
    )
    entries = read_entry_paths(data, location)
    out = with_entry_paths(data, location, entries)
    assert pq.read_table(pa.BufferReader(out)).equals(pq.read_table(pa.BufferReader(data)))
    assert (
        pq.ParquetFile(pa.BufferReader(out)).metadata.metadata
        == pq.ParquetFile(pa.BufferReader(data)).metadata.metadata
    )


def test_a_position_delete_file_changes_only_its_file_paths(catalog: Catalog, tmp_path: Path) -> None:
    table = make_table(catalog, "db.t", 2, batches=1, rows=6)
    delete_ids(table, {0, 3})
    deletes = [
        (str(p), p.read_bytes())
        for p in Path(table.location().removeprefix("file://")).rglob("*.parquet")
        if "file_path" in pq.read_schema(p).names
    ]
    assert len(deletes) == 1
    location, data = deletes[0]
    out = with_deleted_file_paths(data, location, lambda p: "s3://b/" + p.rsplit("/", 1)[-1])
    before, after = pq.read_table(pa.BufferReader(data)), pq.read_table(pa.BufferReader(out))
    assert after.column("pos").to_pylist() == before.column("pos").to_pylist() == [0, 1]
    assert after.column("file_path").to_pylist() == [
        "s3://b/" + p.rsplit("/", 1)[-1] for p in before.column("file_path").to_pylist()
    ]
    assert after.schema.field("file_path").metadata == before.schema.field("file_path").metadata
    assert int(after.schema.field("file_path").metadata[b"PARQUET:field_id"]) == DELETE_FILE_PATH_ID
