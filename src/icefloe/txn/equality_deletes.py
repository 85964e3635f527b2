"""Write equality delete files: the keys of deleted rows, matched by value instead of by position.

An equality delete file (content 2) holds rows of the table's *delete columns* (``equality_ids``)
and deletes every data row whose delete columns all equal one of its rows; a null matches a null
(``col IS NULL``). It applies to data files of a strictly lower data sequence number, so data
added in the same snapshot is never deleted by it (format/spec.md "Equality Delete Files",
"Scan Planning"). Writing one needs no read of the table: this is the upsert-by-key primitive.

Delete columns must exist in the current schema, be primitive, not ``float``/``double`` (spec),
not ``unknown``, and not sit inside a list or map (struct nesting is fine). The key table is
matched by column name; table columns that are not delete columns are dropped, so whole rows may
be passed. Duplicate keys are written once.

**Partition scoping.** A delete file written under a partitioned spec applies only to data files
of that spec *and* partition; one written under an unpartitioned spec applies to every data file.
So a key must be written into the partition its deleted rows live in, which is only known when
the partition source columns are among the delete columns. The rule used here covers every spec
that can hold the rows: the default spec (where new rows go) plus the spec of every live data
file of the branch head (found from manifest references, without reading data):

1. if one of these specs is unpartitioned, its files can hold any key: one delete file set
   under it, applying everywhere;
2. else, if every one of them is *covered* (all its non-void partition source columns are delete
   columns), the keys are partitioned by each spec and written scoped to their partitions (cheap
   to apply: a data file only sees the deletes of its own partition);
3. else, if the table has an unpartitioned spec (from before partitioning), the keys are written
   under it, unscoped (correct, but every data file of a lower sequence number must apply them);
4. else the write is refused with a ``ValidationError`` naming the missing partition source
   columns: add them to the key, or a key such as ``id`` alone could miss rows that live in
   another partition.

Files are Parquet with field ids and the usual metrics, rolled at
``write.delete.target-file-size-bytes`` (Iceberg's default, 64 MB).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import check_arrow_compatible, check_required_no_nulls, to_table_schema
from icefloe.formats.parquet.data_files import write_parquet_data_file
from icefloe.formats.partition_arrow import partition_table, source_column
from icefloe.io.fileio import FileIO
from icefloe.spec.content import DataFile, FileContent, ManifestContent, ManifestFile
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema, field_path, prune_columns
from icefloe.spec.snapshots import MAIN_BRANCH, RefType, Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import DoubleType, FloatType, ListType, MapType, StructType, UnknownType
from icefloe.tree.locations import LocationProvider
from icefloe.tree.read_seam import live_entries
from icefloe.txn.data_writer import split_by_size

DELETE_TARGET_FILE_SIZE = "write.delete.target-file-size-bytes"
DEFAULT_DELETE_TARGET_FILE_SIZE = 64 * 1024 * 1024
_ROW_INDEX = "__icefloe_row"


def write_equality_delete_files(
    io: FileIO,
    md: TableMetadata,
    keys: pa.Table,
    equality_field_ids: Sequence[int],
    *,
    branch: str = MAIN_BRANCH,
) -> list[DataFile]:
    """Write the distinct ``keys`` as equality delete files for the table; return their entries.

    ``equality_field_ids`` are the delete columns (current schema field ids); ``branch`` is the
    branch whose live data files decide the partition scoping (module docstring). Nothing is
    written for an empty key table; on error nothing is left behind.
    """
    if md.format_version < 2:
        raise ValidationError(
            f"format version {md.format_version} tables cannot hold delete files; "
            "upgrade the table to format version 2 or later"
        )
    schema = md.schema()
    ids = validate_equality_ids(schema, equality_field_ids)
    key_schema = Schema(*prune_columns(schema, set(ids)).fields, schema_id=schema.schema_id)
    table = conform_keys(keys, schema, key_schema, ids)
    if table.num_rows == 0:
        return []
    table = distinct_keys(table, key_schema, ids)
    specs = scoping_specs(io, md, ids, _branch_head(md, branch))
    locations = LocationProvider(md)
    target = md.int_property(DELETE_TARGET_FILE_SIZE, DEFAULT_DELETE_TARGET_FILE_SIZE)
    written: list[DataFile] = []
    paths: list[str] = []  # every file started, so a half-written one is removed too
    try:
        for spec in specs:
            for partition, part in _partitions(table, key_schema, spec):
                for chunk in split_by_size(part, target):
                    path = locations.new_data_file_path(spec, schema, partition)
                    paths.append(path)
                    written.append(
                        write_parquet_data_file(
                            io,
                            path,
                            chunk,
                            key_schema,
                            spec.spec_id,
                            partition,
                            md.properties,
                            content=FileContent.EQUALITY_DELETES,
                            equality_ids=ids,
                        )
                    )
    except BaseException:
        for path in paths:
            with contextlib.suppress(Exception):  # best effort: an orphan file is harmless
                io.delete(path, missing_ok=True)
        raise
    return written


# ---------------------------------------------------------------------------------------------
# validation


def validate_equality_ids(schema: Schema, equality_field_ids: Sequence[int]) -> tuple[int, ...]:
    """The delete column ids, checked against the spec's rules; ValidationError names the column."""
    ids = tuple(int(i) for i in equality_field_ids)
    if not ids:
        raise ValidationError("equality deletes need at least one delete column (equality_field_ids)")
    seen: set[int] = set()
    for fid in ids:
        if fid in seen:
            raise ValidationError(f"delete column id {fid} is listed more than once")
        seen.add(fid)
        path = field_path(schema, fid)
        if path is None:
            raise ValidationError(
                f"delete column id {fid} is not in the current schema (id {schema.schema_id})"
            )
        name = schema.find_column_name(fid) or str(fid)
        for parent in path[:-1]:
            if isinstance(parent.field_type, ListType | MapType):
                kind = "list" if isinstance(parent.field_type, ListType) else "map"
                raise ValidationError(
                    f"delete column {name!r} is inside the {kind} {parent.name!r}: "
                    "equality delete columns cannot be nested in lists or maps"
                )
        t = path[-1].field_type
        if not t.is_primitive:
            raise ValidationError(
                f"delete column {name!r} has type {t}: equality delete columns are primitive"
            )
        if isinstance(t, FloatType | DoubleType):
            raise ValidationError(
                f"delete column {name!r} has type {t}: the spec forbids float and double delete columns"
            )
        if isinstance(t, UnknownType):
            raise ValidationError(f"delete column {name!r} has type unknown, which holds no values")
    return ids


def conform_keys(keys: pa.Table, schema: Schema, key_schema: Schema, ids: Sequence[int]) -> pa.Table:
    """The key columns of ``keys`` in the exact Arrow form of ``key_schema`` (other table columns dropped).

    Every delete column must be present (by name; nested ones inside their struct columns);
    columns the table does not have are an error, as are nulls in required delete columns.
    """
    known = set(schema.column_names())
    unknown = [n for n in keys.column_names if n not in known]
    if unknown:
        raise ValidationError(
            f"key column {unknown[0]!r} is not in the table schema "
            f"(table columns: {', '.join(schema.column_names())})"
        )
    if len(set(keys.column_names)) != len(keys.column_names):
        dup = next(n for n in keys.column_names if keys.column_names.count(n) > 1)
        raise ValidationError(f"key column {dup!r} appears more than once in the input")
    columns: list[pa.ChunkedArray] = []
    fields: list[pa.Field] = []
    for f in key_schema.fields:
        if f.name not in keys.column_names:
            raise ValidationError(
                f"delete column {_first_key_under(key_schema, f.name, ids)!r} is missing from the keys"
            )
        col = keys.column(f.name)
        if isinstance(f.field_type, StructType):
            col = _select_struct(col, f.field_type, f.name, key_schema, ids)
        columns.append(col)
        fields.append(pa.field(f.name, col.type))
    selected = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    check_arrow_compatible(key_schema, selected.schema)
    conformed = to_table_schema(selected, key_schema)
    check_required_no_nulls(key_schema, conformed)
    return conformed


def _first_key_under(key_schema: Schema, prefix: str, ids: Sequence[int]) -> str:
    names = [key_schema.find_column_name(i) or "" for i in ids]
    return next((n for n in names if n == prefix or n.startswith(prefix + ".")), prefix)


def _select_struct(
    col: pa.ChunkedArray, t: StructType, path: str, key_schema: Schema, ids: Sequence[int]
) -> pa.ChunkedArray:
    """Keep only the struct children the key schema names (recursively); missing ones are an error."""
    storage = col.type.storage_type if isinstance(col.type, pa.BaseExtensionType) else col.type
    if not pa.types.is_struct(storage):
        raise ValidationError(f"key column {path!r} must be a struct holding the nested delete column(s)")
    chunks = []
    for chunk in col.chunks:
        arr = chunk.storage if isinstance(chunk, pa.ExtensionArray) else chunk
        children, fields = [], []
        for f in t.fields:
            idx = arr.type.get_field_index(f.name)
            child_path = f"{path}.{f.name}"
            if idx < 0:
                missing = _first_key_under(key_schema, child_path, ids)
                raise ValidationError(f"delete column {missing!r} is missing from the keys")
            child = pa.chunked_array([arr.field(idx)])
            if isinstance(f.field_type, StructType):
                child = _select_struct(child, f.field_type, child_path, key_schema, ids)
            child_arr = child.combine_chunks() if child.num_chunks != 1 else child.chunk(0)
            children.append(child_arr)
            fields.append(pa.field(f.name, child_arr.type))
        mask = arr.is_null() if arr.null_count else None
        chunks.append(pa.StructArray.from_arrays(children, fields=fields, mask=mask))
    if not chunks:
        return pa.chunked_array([], pa.struct([]))
    return pa.chunked_array(chunks)


# ---------------------------------------------------------------------------------------------
# keys


def key_values(table: pa.Table, key_schema: Schema, ids: Sequence[int]) -> pa.Table:
    """One flat column per delete column (dotted names; a null struct parent makes the key null)."""
    arrays = [source_column(table, key_schema, fid) for fid in ids]
    names = [key_schema.find_column_name(fid) or str(fid) for fid in ids]
    return pa.Table.from_arrays(arrays, names=names)


def key_groups(table: pa.Table, key_schema: Schema, ids: Sequence[int]) -> pa.Table:
    """Distinct keys with the first row holding each (``first``) and how many rows do (``count``)."""
    flat = key_values(table, key_schema, ids)
    names = flat.column_names
    flat = flat.append_column(_ROW_INDEX, pa.array(range(flat.num_rows), pa.int64()))
    grouped = flat.group_by(names, use_threads=False).aggregate([(_ROW_INDEX, "min"), (_ROW_INDEX, "count")])
    return grouped.rename_columns([*names, "first", "count"])


def distinct_keys(table: pa.Table, key_schema: Schema, ids: Sequence[int]) -> pa.Table:
    """``table`` without repeated keys (null equals null), first occurrence kept, order kept."""
    groups = key_groups(table, key_schema, ids)
    if groups.num_rows == table.num_rows:
        return table
    first = np.sort(groups.column("first").to_numpy())
    return table.take(pa.array(first))


# ---------------------------------------------------------------------------------------------
# partition scoping


def _branch_head(md: TableMetadata, branch: str) -> Snapshot | None:
    ref = md.refs.get(branch)
    if ref is not None:
        if ref.ref_type is not RefType.BRANCH:
            raise ValidationError(f"{branch!r} is a tag; deletes are written for branches")
        return md.snapshot_by_id(ref.snapshot_id)
    return md.current_snapshot()


def live_data_spec_ids(io: FileIO, md: TableMetadata, snapshot: Snapshot | None) -> set[int]:
    """Spec ids of the live data files of ``snapshot``, from manifest references where they tell."""
    if snapshot is None:
        return set()
    found: set[int] = set()

    def known(m: ManifestFile) -> bool:
        if m.partition_spec_id >= 0:  # a manifest / leaf of one spec: no need to open it
            found.add(m.partition_spec_id)
            return False
        return True

    for e in live_entries(io, md, snapshot, manifest_filter=known, content=ManifestContent.DATA):
        found.add(e.data_file.spec_id)
    return found


def _source_ids(spec: PartitionSpec) -> set[int]:
    """Source columns a spec's non-void partition fields read."""
    out: set[int] = set()
    for pf in spec.fields:
        if str(pf.transform) != "void":
            out.update(pf.source_ids or (pf.source_id,))
    return out


def scoping_specs(
    io: FileIO, md: TableMetadata, ids: Sequence[int], head: Snapshot | None
) -> list[PartitionSpec]:
    """The specs to write the delete files under (rules 1–4 of the module docstring)."""
    all_specs = md.specs_by_id()
    in_use = sorted({md.default_spec_id} | live_data_spec_ids(io, md, head))
    specs = [all_specs[i] for i in in_use if i in all_specs]
    default = md.spec()
    unpartitioned = [s for s in specs if s.is_unpartitioned]
    if unpartitioned:
        return [default if default.is_unpartitioned else unpartitioned[0]]
    keys = set(ids)
    uncovered = [s for s in specs if not _source_ids(s) <= keys]
    if not uncovered:
        return specs
    fallback = sorted((s for s in all_specs.values() if s.is_unpartitioned), key=lambda s: s.spec_id)
    if fallback:
        return [fallback[0]]
    schema = md.schema()
    spec = uncovered[0]
    missing = ", ".join(
        repr(schema.find_column_name(i) or f"id {i}") for i in sorted(_source_ids(spec) - keys)
    )
    key_names = ", ".join(repr(schema.find_column_name(i) or str(i)) for i in ids)
    raise ValidationError(
        f"cannot scope equality deletes on ({key_names}) to partitions of spec {spec.spec_id}: its partition "
        f"source column(s) {missing} are not delete columns, so rows with these keys may live in any "
        f"partition, and the table has no unpartitioned spec for unscoped deletes; add {missing} to the key"
    )


def _partitions(
    table: pa.Table, key_schema: Schema, spec: PartitionSpec
) -> list[tuple[tuple[object, ...], pa.Table]]:
    """``partition_table`` for the keys; void fields (whose source need not be a key) are null."""
    kept = [pf for pf in spec.fields if str(pf.transform) != "void"]
    if len(kept) == len(spec.fields):
        return partition_table(table, key_schema, spec)
    parts = partition_table(table, key_schema, PartitionSpec(*kept, spec_id=spec.spec_id))
    out = []
    for values, part in parts:
        it = iter(values)
        out.append((tuple(None if str(pf.transform) == "void" else next(it) for pf in spec.fields), part))
    return out
