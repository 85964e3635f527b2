"""v4 roots describe their own manifest-DV encoding, and their bitmaps are checked against the root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.catalog import load_catalog
from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.bitmaps import MUMBLING_V1, PORTABLE_ROARING
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree import v4_read
from icefloe.tree.v4_policy import MANIFEST_DV_ENCODING
from icefloe.tree.v4_root_checks import MDV_ENCODING_KEY
from tests.tree.v4_helpers import footer, local

SCHEMA = Schema(NestedField(1, "id", LongType(), True), NestedField(2, "cat", StringType(), False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
CATS = "abcdefgh"


def _table(tmp_path: Path) -> Table:
    """A v4 table whose appends go to leaves and whose removals become manifest DVs (8 files a leaf)."""
    catalog = load_catalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace(("db",))
    props = {
        "format-version": "4",
        "write.v4.root.max-inline-entries": "0",
        "write.v4.leaf.min-live-ratio": "0",
        "write.v4.compaction.enabled": "false",
    }
    return catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties=props)


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([CATS[i % 8] for i in ids])})


def _ids(table: Table) -> list[int]:
    return sorted(table.scan().to_arrow()["id"].to_pylist())


def _mdv_refs(table: Table) -> list[Any]:
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    root = v4_read.read_root(table.io, table.metadata, snap.root_manifest)
    return [r for r in root.refs if r.mdv is not None]


def test_changing_the_encoding_keeps_old_bitmaps_readable_and_writes_new_ones_in_it(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.append(_rows(0, 80))
    table.delete("cat = 'a'")  # one file of the leaf: a Mumbling manifest DV in the root
    expected = [i for i in range(80) if i % 8 != 0]
    snap = table.current_snapshot()
    assert snap is not None
    assert footer(snap.root_manifest)[MDV_ENCODING_KEY] == MUMBLING_V1
    assert len(_mdv_refs(table)) == 1

    table.set_properties(**{MANIFEST_DV_ENCODING: PORTABLE_ROARING})
    assert _ids(table) == expected  # the root says Mumbling: the property change does not matter

    table.delete("cat = 'b'")  # the next root carries the old bitmap and adds to it, in Roaring
    expected = [i for i in expected if i % 8 != 1]
    snap = table.current_snapshot()
    assert snap is not None and footer(snap.root_manifest)[MDV_ENCODING_KEY] == PORTABLE_ROARING
    assert _ids(table) == expected
    (ref,) = _mdv_refs(table)
    assert len(v4_read.positions(v4_read.dv_codec(table.metadata), ref.mdv, "x")) == 2

    table.set_properties(**{MANIFEST_DV_ENCODING: MUMBLING_V1})  # and back: both roots stay readable
    assert _ids(table) == expected
    first, second = table.snapshots()[1:3]
    assert _ids_at(table, first.snapshot_id) == [i for i in range(80) if i % 8 != 0]
    assert _ids_at(table, second.snapshot_id) == expected
    table.delete("cat = 'c'")
    assert _ids(table) == [i for i in expected if i % 8 != 2]


def _ids_at(table: Table, snapshot_id: int) -> list[int]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def test_a_root_without_the_key_reads_with_the_table_property(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.append(_rows(0, 16))
    table.delete("cat = 'a'")
    snap = table.current_snapshot()
    assert snap is not None
    _rewrite_root(snap.root_manifest, drop_key=True)
    v4_read.clear_root_cache()
    assert _ids(table) == [i for i in range(16) if i % 8 != 0]


def _rewrite_root(location: str | None, *, drop_key: bool = False, cardinality: int | None = None) -> None:
    """Rewrite a root in place: without the encoding key, or with another recorded MDV cardinality."""
    path = local(location)
    pf = pq.ParquetFile(path)
    meta = dict(pf.metadata.metadata or {})
    if drop_key:
        meta.pop(MDV_ENCODING_KEY.encode(), None)
    table = pf.read()
    if cardinality is not None:
        table = _with_cardinality(table, cardinality)
    table = table.replace_schema_metadata(meta)
    pq.write_table(table, path)


def _with_cardinality(table: pa.Table, value: int) -> pa.Table:
    i = next(i for i, f in enumerate(table.schema) if field_id_of(f) == ce.MANIFEST_INFO)
    info = table.column(i).combine_chunks()
    children = []
    for j in range(info.type.num_fields):
        child = info.field(j)
        if field_id_of(info.type.field(j)) == ce.MDV_CARDINALITY:
            child = pa.array([None if v is None else value for v in child.to_pylist()], child.type)
        children.append(child)
    fields = [info.type.field(j) for j in range(info.type.num_fields)]
    rebuilt = pa.StructArray.from_arrays(children, fields=fields, mask=info.is_null())
    return table.set_column(i, table.schema.field(i), rebuilt)


def test_a_recorded_cardinality_the_bitmap_does_not_hold_blames_the_root(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.append(_rows(0, 16))
    table.delete("cat = 'a'")
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    _rewrite_root(snap.root_manifest, cardinality=5)
    v4_read.clear_root_cache()
    with pytest.raises(CorruptMetadata, match="dv_cardinality 5") as err:
        table.scan().to_arrow()
    assert err.value.location == snap.root_manifest


def test_an_unknown_encoding_in_the_footer_is_the_roots_fault(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.append(_rows(0, 16))
    table.delete("cat = 'a'")
    snap = table.current_snapshot()
    assert snap is not None and snap.root_manifest is not None
    path = local(snap.root_manifest)
    pf = pq.ParquetFile(path)
    meta = {**(pf.metadata.metadata or {}), MDV_ENCODING_KEY.encode(): b"zip-9"}
    pq.write_table(pf.read().replace_schema_metadata(meta), path)
    v4_read.clear_root_cache()
    with pytest.raises(CorruptMetadata, match="zip-9") as err:
        table.scan().to_arrow()
    assert err.value.location == snap.root_manifest
