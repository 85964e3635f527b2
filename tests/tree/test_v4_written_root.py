"""The root a writer remembers equals the root decoded from its bytes, for every kind of commit."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog.base import Catalog
from icefloe.errors import IcefloeError
from icefloe.formats.v4.bitmaps import PORTABLE_ROARING
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree import v4_read
from icefloe.tree.read_seam import clear_caches
from icefloe.tree.v4_fast_append import general_path_only
from icefloe.tree.v4_policy import MANIFEST_DV_ENCODING
from tests.tree.v4_helpers import head, local

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "price", DoubleType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
SMALL_TREE = {
    "format-version": "4",
    "write.v4.root.max-inline-entries": "3",  # flush to leaves often
    "write.v4.compaction.small-leaf-entries": "4",
    "write.v4.compaction.min-small-leaves": "2",  # and compact them
    "write.delete.mode": "merge-on-read",  # deletion vectors: REPLACED / MODIFIED rows, manifest DVs
    "write.update.mode": "merge-on-read",
    "write.v4.column-updates.enabled": "true",
}


NO_FLOATS = Schema(*SCHEMA.fields[:2])  # files without NaN counts: written with an empty map


def _rows(start: int, n: int, schema: Schema = SCHEMA) -> pa.Table:
    ids = list(range(start, start + n))
    columns = {
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array(["ab"[i % 2] for i in ids]),
        "price": pa.array([float("nan") if i % 7 == 0 else i / 2 for i in ids]),
    }
    return pa.table({f.name: columns[f.name] for f in schema.fields})


def _remembered_equals_decoded(table: Table, tmp_path: Path) -> None:
    """The current root comes from memory (its file is moved away) and equals the decoded file."""
    location = head(table.metadata).root_manifest
    assert location is not None
    path, aside = Path(local(location)), tmp_path / "root-aside.parquet"
    path.rename(aside)
    try:
        remembered = v4_read.read_root(table.io, table.metadata, location)
    finally:
        aside.rename(path)
    clear_caches()
    decoded = v4_read.read_root(table.io, table.metadata, location)
    assert remembered == decoded


@pytest.mark.parametrize("schema", [SCHEMA, NO_FLOATS], ids=["nan-counts", "no-floats"])
def test_every_commit_remembers_the_root_it_wrote(catalog: Catalog, tmp_path: Path, schema: Schema) -> None:
    table = catalog.create_table("db.t", schema, partition_spec=SPEC, properties=SMALL_TREE)
    changed = {"price": pc.multiply(pc.field("price"), 10.0)} if schema == SCHEMA else {"cat": "c"}
    steps = [
        lambda: table.append(_rows(0, 4, schema)),  # inline entries, two partitions
        lambda: table.append(_rows(4, 1, schema)),
        lambda: table.append(_rows(5, 6, schema)),  # too many for the root: leaves
        lambda: table.append(_rows(11, 6, schema)),  # small leaves compacted
        lambda: table.delete("id = 4"),  # a DV for an inline file
        lambda: table.delete("id = 12"),  # a DV for a file in a leaf (manifest DV)
        lambda: table.delete("cat = 'a'"),  # whole files removed
        lambda: table.update(changed, "id in (1, 3)"),  # column files (or rewritten rows)
        lambda: table.overwrite(_rows(100, 3, schema), filter="id < 10"),
    ]
    for step in steps:
        step()
        _remembered_equals_decoded(table, tmp_path)
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [11, 13, 15, 100, 101, 102]


def test_a_reader_converting_to_another_bitmap_encoding_decodes_the_file(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties=SMALL_TREE)
    for start in (0, 4, 8):  # leaves with manifest DVs after the deletes
        table.append(_rows(start, 4))
    table.delete("id in (5, 9)")
    location = head(table.metadata).root_manifest
    assert location is not None
    other = table.metadata.with_changes(
        properties={**table.metadata.properties, MANIFEST_DV_ENCODING: PORTABLE_ROARING}
    )
    path = Path(local(location))
    data = path.read_bytes()
    path.unlink()
    with pytest.raises(IcefloeError, match="root"):  # not from memory: it must read the file
        v4_read.read_root(table.io, other, location)
    path.write_bytes(data)
    transcoded = v4_read.read_root(table.io, other, location)
    assert any(r.mdv for r in transcoded.refs)
    assert [r.mdv for r in transcoded.refs] != [
        r.mdv for r in v4_read.read_root(table.io, table.metadata, location).refs
    ]


def _general_path(step: Callable[[], object]) -> None:
    with general_path_only():
        step()


WIDE_ROOT = {k: v for k, v in SMALL_TREE.items() if not k.startswith("write.v4.root.")}  # all inline


@pytest.mark.parametrize("schema", [SCHEMA, NO_FLOATS], ids=["nan-counts", "no-floats"])
def test_rows_carried_on_from_a_decoded_parent_are_written_as_they_are(
    catalog: Catalog, tmp_path: Path, schema: Schema
) -> None:
    """A parent root written by another process (here: decoded after the caches are cleared) has
    its rows carried on as the decoded objects, without converting them again, and the root
    remembered from them still equals the file decoded (DVs, column files, NaN counts, no stats).

    The general path's behaviour: appends here would otherwise take the v4 fast path, which carries
    Arrow rows, not objects (``tests/tree/test_v4_fast_append.py``)."""
    table = catalog.create_table("db.t", schema, partition_spec=SPEC, properties=WIDE_ROOT)
    changed = {"price": pc.multiply(pc.field("price"), 10.0)} if schema == SCHEMA else {"cat": "c"}
    steps = [
        lambda: table.append(_rows(0, 4, schema)),
        lambda: table.append(_rows(4, 3, schema)),
        lambda: table.delete("id = 4"),  # a DV on an inline file
        lambda: table.update(changed, "id in (1, 3)"),  # column files (or rewritten rows)
        lambda: table.append(_rows(7, 2, schema)),
    ]
    carried = 0
    for step in steps:
        clear_caches()
        step = partial(_general_path, step)
        parent = table.metadata.current_snapshot()
        decoded = v4_read.read_root(table.io, table.metadata, parent.root_manifest) if parent else None  # type: ignore[arg-type]
        step()
        if decoded is not None:
            written = v4_read.read_root(table.io, table.metadata, head(table.metadata).root_manifest)  # type: ignore[arg-type]
            carried += sum(any(e is d for d in decoded.inline) for e in written.inline)
        _remembered_equals_decoded(table, tmp_path)
    assert carried >= 5  # decoded rows were carried on as they are
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3, 5, 6, 7, 8]
