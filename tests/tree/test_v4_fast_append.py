"""The v4 fast append writes the root the general path writes, byte for byte.

Each test brings a table into some shape with ordinary commits, then writes one append-only
commit twice from the same request: by the fast path (counted, so it was really taken) and by the
general path (``general_path_only``). The two roots must be the same bytes, with the same summary,
row-id range and live references.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from icefloe.catalog.base import Catalog
from icefloe.spec.content import DataFile
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import DoubleType, LongType, NestedField, StringType
from icefloe.table.table import Table
from icefloe.tree.changes import TreeChange, TreeResult, TreeWriteRequest
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import clear_caches, entries_added_by, stored_additions_of
from icefloe.tree.v4_fast_append import FAST_APPENDS, general_path_only
from icefloe.tree.write_seam import write_snapshot_tree
from tests.tree.v4_helpers import head, local

pytestmark = pytest.mark.catalog_namespaces("db")

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "cat", StringType(), False),
    NestedField(3, "price", DoubleType(), False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
V4 = {"format-version": "4"}
DV_AND_COLUMNS = {
    **V4,
    "write.delete.mode": "merge-on-read",  # deletion vectors: inline DVs, manifest DVs on leaves
    "write.update.mode": "merge-on-read",
    "write.v4.column-updates.enabled": "true",
}
LEAVES = {
    **DV_AND_COLUMNS,
    "write.v4.root.max-inline-entries": "3",  # flush to leaves often
    "write.v4.compaction.small-leaf-entries": "8",
    "write.v4.compaction.min-small-leaves": "3",
}


def _rows(start: int, n: int, schema: Schema = SCHEMA) -> pa.Table:
    ids = list(range(start, start + n))
    columns = {
        "id": pa.array(ids, pa.int64()),
        "cat": pa.array(["ab"[i % 2] for i in ids]),
        "price": pa.array([float("nan") if i % 7 == 0 else i / 2 for i in ids]),
        "cost": pa.array([i / 4 for i in ids]),
        "note": pa.array([f"n{i}" for i in ids]),
    }
    return pa.table({f.name: columns[f.name] for f in schema.fields})


def _new_files(catalog: Catalog, like: Table, start: int, n: int) -> list[DataFile]:
    """Data files of ``like``'s schema and current spec, written by a scratch table (row ids unset)."""
    name = f"db.scratch_{uuid.uuid4().hex[:8]}"
    scratch = catalog.create_table(
        name, like.metadata.schema(), partition_spec=like.metadata.spec(), properties=dict(V4)
    )
    scratch.append(_rows(start, n, like.metadata.schema()))
    added = entries_added_by(scratch.io, scratch.metadata, head(scratch.metadata))
    spec_id = like.metadata.default_spec_id
    return [dataclasses.replace(e.data_file, first_row_id=None, spec_id=spec_id) for e in added]


def _request(table: Table, files: list[DataFile]) -> TreeWriteRequest:
    md = table.metadata
    return TreeWriteRequest(
        io=table.io,
        metadata=md,
        parent=md.current_snapshot(),
        change=TreeChange(added_data_files=files),
        snapshot_id=4242,
        sequence_number=md.last_sequence_number + 1,
    )


def _write(request: TreeWriteRequest) -> TreeResult:
    fresh = dataclasses.replace(request, location_provider=LocationProvider(request.metadata))
    return write_snapshot_tree(fresh)


def _assert_same_roots(fast: TreeResult, general: TreeResult) -> None:
    fast_bytes = Path(local(fast.root_manifest_location)).read_bytes()
    general_bytes = Path(local(general.root_manifest_location)).read_bytes()
    assert fast_bytes == general_bytes
    assert fast.summary == general.summary
    assert (fast.first_row_id, fast.added_rows) == (general.first_row_id, general.added_rows)
    assert list(fast.manifests) == list(general.manifests)
    assert fast.removed_entries == general.removed_entries == []


def _fast_equals_general(
    catalog: Catalog, table: Table, n_files: int = 2, from_files: bool = False
) -> TreeResult:
    """The next append of ``n_files`` files, by both paths: the same root (the fast one taken)."""
    request = _request(table, _new_files(catalog, table, 1000 + table.metadata.last_sequence_number, n_files))
    if from_files:  # the parent's rows known only from its file: another process wrote it
        clear_caches()
    taken = FAST_APPENDS.taken
    fast = _write(request)
    assert FAST_APPENDS.taken == taken + 1
    with general_path_only():
        general = _write(request)
    assert FAST_APPENDS.taken == taken + 1
    _assert_same_roots(fast, general)
    return fast


Step = Callable[[Table], object]
SHAPES: dict[str, tuple[Schema, PartitionSpec | None, dict[str, str], list[Step]]] = {
    "unpartitioned": (SCHEMA, None, V4, [lambda t: t.append(_rows(0, 3)), lambda t: t.append(_rows(3, 2))]),
    "no-stats": (
        SCHEMA,
        SPEC,
        {**V4, "write.metadata.metrics.default": "none"},
        [lambda t: t.append(_rows(0, 4)), lambda t: t.append(_rows(4, 1))],
    ),
    "partitioned": (SCHEMA, SPEC, V4, [lambda t: t.append(_rows(0, 4)), lambda t: t.append(_rows(4, 3))]),
    "two-specs": (
        SCHEMA,
        SPEC,
        V4,
        [
            lambda t: t.append(_rows(0, 4)),
            lambda t: t.update_spec().add_identity("id").commit(),
            lambda t: t.append(_rows(4, 3)),
        ],
    ),
    "evolved-schema": (  # parent rows stored under the older stats layout
        SCHEMA,
        SPEC,
        V4,
        [
            lambda t: t.append(_rows(0, 4)),
            lambda t: t.update_schema().add_column("note", StringType()).commit(),
            lambda t: t.update_schema().rename_column("price", "cost").commit(),
        ],
    ),
    "inline-dvs-and-column-files": (
        SCHEMA,
        SPEC,
        DV_AND_COLUMNS,
        [
            lambda t: t.append(_rows(0, 4)),
            lambda t: t.append(_rows(4, 3)),
            lambda t: t.delete("id = 4"),  # a DV on an inline file: REPLACED + MODIFIED rows
            lambda t: t.update({"price": pc.multiply(pc.field("price"), 10.0)}, "id in (1, 3)"),
        ],
    ),
    "leaves-with-manifest-dvs": (
        SCHEMA,
        SPEC,
        LEAVES,
        [
            lambda t: t.append(_rows(0, 4)),
            lambda t: t.append(_rows(4, 6)),  # too many for the root: a leaf
            lambda t: t.delete("id = 5"),  # a manifest DV on the leaf (MODIFIED reference)
            lambda t: t.delete("cat = 'a' and id < 4"),  # files removed: DELETED rows
        ],
    ),
}


@pytest.mark.parametrize("from_files", [False, True], ids=["remembered", "from-file"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_fast_path_writes_the_general_paths_root(catalog: Catalog, shape: str, from_files: bool) -> None:
    schema, spec, props, steps = SHAPES[shape]
    table = catalog.create_table("db.t", schema, partition_spec=spec, properties=props)
    for step in steps:
        step(table)
    n_files = 1 if props is LEAVES else 2  # three inline entries at most: one more stays inline
    fast = _fast_equals_general(catalog, table, n_files, from_files=from_files)
    if props is LEAVES:  # a carried leaf reference with its manifest DV
        assert any(ref.mdv for ref in fast.manifests)


def test_a_parent_written_by_the_general_path_then_a_chain_of_fast_appends(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties=DV_AND_COLUMNS)
    with general_path_only():
        table.append(_rows(0, 3))
        table.append(_rows(3, 3))
    _fast_equals_general(catalog, table)
    taken = FAST_APPENDS.taken
    for i in range(3):  # each parent now the root the fast path wrote a moment ago
        table.append(_rows(10 + i, 1))
    assert FAST_APPENDS.taken == taken + 3
    _fast_equals_general(catalog, table)
    _fast_equals_general(catalog, table, from_files=True)
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3, 4, 5, 10, 11, 12]


def test_a_commit_flushing_the_root_or_compacting_takes_the_general_path(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties=LEAVES)
    table.append(_rows(0, 2))
    request = _request(table, _new_files(catalog, table, 100, 2))  # 4 inline entries > 3: flushed
    before = dataclasses.astuple(FAST_APPENDS)
    result = _write(request)
    assert FAST_APPENDS.taken == before[0] and FAST_APPENDS.general == before[1] + 1
    assert len(result.manifests) == 1  # the new leaf
    for start in range(100, 600, 100):  # appends of two files: 2 inline, 4 flushed to a leaf, ...
        table.append(_rows(start, 4))
    assert len(head(table.metadata).summary) and FAST_APPENDS.taken == before[0] + 2
    taken = FAST_APPENDS.taken
    table.append(_rows(600, 4))  # fits inline, but three small leaves of one tier are due to be merged
    assert FAST_APPENDS.taken == taken
    assert len(table.scan().to_arrow()) == 26


@pytest.mark.parametrize("shape", ["partitioned", "two-specs", "inline-dvs-and-column-files"])
def test_an_append_re_applied_from_its_stored_rows_writes_the_general_paths_root(
    catalog: Catalog, shape: str
) -> None:
    """A REST server rebasing a client's append: the client's ADDED rows are taken from its root
    as stored, and the root is the one the general path writes from the decoded files."""
    schema, spec, props, steps = SHAPES[shape]
    table = catalog.create_table("db.t", schema, partition_spec=spec, properties=props)
    for step in steps:
        step(table)
    head_before = table.metadata
    table.append(_rows(500, 4))  # the client's append: two files, inline in its root
    client = head(table.metadata)
    clear_caches()  # the client's root known only from its file (another process wrote it)
    stored = stored_additions_of(table.io, table.metadata, client)
    assert stored is not None
    files, rows = stored
    # the files as the general read decodes them (absolute paths, metrics), row ids unset
    assert files == [
        dataclasses.replace(e.data_file, first_row_id=None)
        for e in entries_added_by(table.io, table.metadata, client)
    ]
    assert all(f.file_path.startswith(table.metadata.location + "/") for f in files)
    request = dataclasses.replace(  # the append re-applied on the head it was made on
        _request(table, files),
        metadata=head_before,
        parent=head_before.current_snapshot(),
        sequence_number=head_before.last_sequence_number + 1,
    )
    with_rows = dataclasses.replace(request, change=TreeChange(added_data_files=files, stored_additions=rows))
    taken, stored_rows = FAST_APPENDS.taken, FAST_APPENDS.stored_rows
    fast = _write(with_rows)
    assert (FAST_APPENDS.taken, FAST_APPENDS.stored_rows) == (taken + 1, stored_rows + len(files))
    with general_path_only():
        general = _write(request)
    _assert_same_roots(fast, general)


def test_stored_rows_of_a_snapshot_that_did_more_than_append_inline_are_not_offered(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, partition_spec=SPEC, properties=LEAVES)
    table.append(_rows(0, 2))
    table.append(_rows(2, 4))  # flushed into a leaf: the added rows are not in the root
    assert stored_additions_of(table.io, table.metadata, head(table.metadata)) is None
    table.append(_rows(6, 2))
    table.delete("id = 6")  # a delete, not an append
    assert stored_additions_of(table.io, table.metadata, head(table.metadata)) is None


def _rewrite_root(location: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite a root in place with its stored rows changed (as another writer could have written
    it), footer kept; the process forgets what it remembered of it."""
    path = Path(local(location))
    stored = pq.ParquetFile(path)
    table, footer = change(stored.read()), stored.metadata.metadata
    with pq.ParquetWriter(path, table.schema, store_schema=False) as out:
        out.write_table(table)
        out.add_key_value_metadata(footer)
    clear_caches()


def _with_snapshot_ids(table: pa.Table, ids: list[int | None]) -> pa.Table:
    tracking = table.column("tracking").combine_chunks()
    children = [
        pa.array(ids, pa.int64()) if f.name == "snapshot_id" else tracking.field(i)
        for i, f in enumerate(tracking.type)
    ]
    rebuilt = pa.StructArray.from_arrays(children, fields=list(tracking.type))
    i = table.schema.get_field_index("tracking")
    return table.set_column(i, table.schema.field(i), rebuilt)


def _client_append(catalog: Catalog) -> tuple[Table, TableMetadata]:
    """A table with inline rows, then a client's append of two files; (table, the head before it)."""
    schema, spec, props, steps = SHAPES["partitioned"]
    table = catalog.create_table("db.t", schema, partition_spec=spec, properties=props)
    for step in steps:
        step(table)
    before = table.metadata
    table.append(_rows(500, 4))  # two files (two partitions), the root's last two rows
    return table, before


def test_added_rows_found_anywhere_in_the_clients_root_are_re_applied_as_the_general_path_does(
    catalog: Catalog,
) -> None:
    table, before = _client_append(catalog)
    client = head(table.metadata)
    expected = [e.data_file.file_path for e in entries_added_by(table.io, table.metadata, client)]
    # another writer's order: one added row first, the carried rows, the other added row last
    _rewrite_root(
        cast(str, client.root_manifest),
        lambda t: t.take(pa.array([t.num_rows - 2, *range(t.num_rows - 2), t.num_rows - 1])),
    )
    stored = stored_additions_of(table.io, table.metadata, client)
    assert stored is not None
    files, rows = stored
    assert sorted(f.file_path for f in files) == sorted(expected)
    request = dataclasses.replace(
        _request(table, files),
        metadata=before,
        parent=before.current_snapshot(),
        sequence_number=before.last_sequence_number + 1,
    )
    with_rows = TreeChange(added_data_files=files, stored_additions=rows)
    fast = _write(dataclasses.replace(request, change=with_rows))
    with general_path_only():
        general = _write(request)
    _assert_same_roots(fast, general)


@pytest.mark.parametrize("lie", ["one-row-not-tracked-to-it", "an-extra-row-claims-it"])
def test_a_client_root_whose_added_rows_disagree_with_its_summary_is_not_trusted(
    catalog: Catalog, lie: str
) -> None:
    table, _ = _client_append(catalog)
    client = head(table.metadata)
    assert client.summary["added-data-files"] == "2"

    def lying(t: pa.Table) -> pa.Table:
        ids = t.column("tracking").combine_chunks().field("snapshot_id").to_pylist()
        if lie == "one-row-not-tracked-to-it":
            ids[-1] = client.parent_snapshot_id
            return _with_snapshot_ids(t, ids)
        return _with_snapshot_ids(pa.concat_tables([t, t.slice(t.num_rows - 1)]), [*ids, ids[-1]])

    _rewrite_root(cast(str, client.root_manifest), lying)
    assert stored_additions_of(table.io, table.metadata, client) is None


def _with_last_value(
    table: pa.Table, column: str, member: tuple[str, int, pa.DataType] | None, value: Callable[[Any], Any]
) -> pa.Table:
    """``table`` with the last row's ``column`` (or its struct ``member``: name, field id, type;
    added when the compact writer left it out) set to ``value(its value)``."""
    i = table.schema.get_field_index(column)
    arr = table.column(i).combine_chunks()
    if member is None:
        values = arr.to_pylist()
        values[-1] = value(values[-1])
        return table.set_column(i, table.schema.field(i), pa.array(values, arr.type))
    name, field_id, member_type = member
    fields = list(arr.type)
    children = [arr.field(j) for j in range(len(fields))]
    if name not in [f.name for f in fields]:
        fields.append(pa.field(name, member_type, True, {b"PARQUET:field_id": str(field_id).encode()}))
        children.append(pa.nulls(len(arr), member_type))
    j = [f.name for f in fields].index(name)
    values = children[j].to_pylist()
    values[-1] = value(values[-1])
    children[j] = pa.array(values, member_type)
    rebuilt = pa.StructArray.from_arrays(children, fields=fields)
    return table.set_column(
        i,
        pa.field(column, rebuilt.type, table.schema.field(i).nullable, table.schema.field(i).metadata),
        rebuilt,
    )


@pytest.mark.parametrize(
    ("column", "member", "value"),
    [
        ("file_format", None, lambda _: "PARQUET"),  # decoded in lower case, encoded "parquet"
        ("tracking", ("first_row_id", 142, pa.int64()), lambda _: None),  # a DATA row without row id
        ("tracking", ("dv_snapshot_id", 5, pa.int64()), lambda _: 7),  # a DV's snapshot id, no DV
        ("location", None, None),  # absolute under the table's location: encoded relative
    ],
    ids=["upper-case-format", "data-row-without-row-id", "dv-snapshot-id-without-dv", "absolute-location"],
)
def test_a_client_root_whose_added_rows_would_not_encode_back_as_stored_is_not_taken_as_stored(
    catalog: Catalog,
    column: str,
    member: tuple[str, int, pa.DataType] | None,
    value: Callable[[Any], Any] | None,
) -> None:
    table, _ = _client_append(catalog)
    client = head(table.metadata)
    assert stored_additions_of(table.io, table.metadata, client) is not None
    change = value or (lambda relative: f"{table.metadata.location}/{relative}")
    _rewrite_root(cast(str, client.root_manifest), lambda t: _with_last_value(t, column, member, change))
    assert stored_additions_of(table.io, table.metadata, client) is None
