"""The v4 ``content_entry`` row schema (root and leaf manifests) and projection by field id.

Struct order follows Iceberg Java (``TrackedFile``/``Tracking``/``DeletionVector``/``ManifestInfo``);
field ids, names and required-ness follow the v4 spec draft's ``content_entry`` table. Two
columns depend on the table: ``partition`` (102) is the union of the partition fields of every
spec, and ``content_stats`` (146) has one struct per column (``icefloe.formats.v4.content_stats``).
Either column is left out of the file when its struct would be empty (decisions Q7/Q8).

``manifest_info`` file counts are written as ``int`` and read as ``long`` (decision Q1), so the
write type and the read type of an entry differ only there.

The Arrow-level helpers used by ``icefloe.formats.v4.content_entry`` live here too: projection by
field id, location relativising / resolution (facts §5.1), entry validation, and conversion of
entry columns to icefloe's internal Python values.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.arrow_schema import FIELD_ID_KEY, field_id_of, field_to_arrow, to_internal_values
from icefloe.formats.v4.content_stats import CONTENT_STATS_ID, content_stats_type
from icefloe.formats.v4.type_memo import TypeMemo
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import POS_COLUMN_ID, Schema
from icefloe.spec.types import (
    BinaryType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    UnknownType,
)

__all__ = [
    "CONTENT_ENTRY_FIELD_IDS",
    "POS_COLUMN",
    "ContentEntrySchema",
    "column_by_field_id",
    "content_entry_schema",
    "fill_required_members",
    "filter_positions",
    "has_scheme",
    "project_by_field_id",
    "relativize_location",
    "resolve_location",
    "resolve_table_locations",
    "single_array",
    "specs_by_id",
    "to_python_values",
    "union_partition_type",
    "validate_entries",
]

# top-level ids
TRACKING = 147
CONTENT_TYPE = 134
FORMAT_VERSION = 157
LOCATION = 100
FILE_FORMAT = 101
PARTITION = 102
RECORD_COUNT = 103
FILE_SIZE = 104
KEY_METADATA = 131
SPLIT_OFFSETS, SPLIT_OFFSET_ELEMENT = 132, 133
EQUALITY_IDS, EQUALITY_ID_ELEMENT = 135, 136
SORT_ORDER_ID = 140
SPEC_ID = 141
CONTENT_STATS = CONTENT_STATS_ID
DELETION_VECTOR = 148
MANIFEST_INFO = 150
COLUMN_FILES, COLUMN_FILE_ELEMENT = 158, 159
# tracking members
STATUS, SNAPSHOT_ID, SEQUENCE_NUMBER, FILE_SEQUENCE_NUMBER, DV_SNAPSHOT_ID = 0, 1, 3, 4, 5
FIRST_ROW_ID, DELETED_POSITIONS, REPLACED_POSITIONS = 142, 6, 7
LATEST_COLUMN_FILE_SNAPSHOT_ID = 160
# deletion_vector members
DV_LOCATION, DV_OFFSET, DV_SIZE, DV_CARDINALITY, DV_KEY_METADATA = 155, 144, 145, 156, 149
# column_file members
CF_FORMAT_VERSION, CF_FIELD_IDS, CF_FIELD_ID_ELEMENT, CF_LOCATION = 161, 162, 163, 164
CF_FILE_FORMAT, CF_FILE_SIZE, CF_KEY_METADATA = 165, 166, 167
CF_SPLIT_OFFSETS, CF_SPLIT_OFFSET_ELEMENT = 168, 169
# manifest_info members
ADDED_FILES, EXISTING_FILES, DELETED_FILES, REPLACED_FILES, MODIFIED_FILES = 504, 505, 506, 520, 524
ADDED_ROWS, EXISTING_ROWS, DELETED_ROWS, REPLACED_ROWS, MODIFIED_ROWS = 512, 513, 514, 521, 525
MIN_SEQUENCE_NUMBER, MDV, MDV_CARDINALITY = 516, 522, 523

FILE_COUNT_IDS = (ADDED_FILES, EXISTING_FILES, DELETED_FILES, REPLACED_FILES, MODIFIED_FILES)
ROW_COUNT_IDS = (ADDED_ROWS, EXISTING_ROWS, DELETED_ROWS, REPLACED_ROWS, MODIFIED_ROWS)

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_SCHEME_PATTERN = r"^[A-Za-z][A-Za-z0-9+.\-]*:"

MAX_FORMAT_VERSION = 4

POS_COLUMN = "_pos"
"""Name of the 0-based row position column added by the reader (field id 2147483645)."""

TRACKING_TYPE = StructType(
    NestedField(STATUS, "status", IntegerType(), True),
    NestedField(SNAPSHOT_ID, "snapshot_id", LongType()),
    NestedField(SEQUENCE_NUMBER, "sequence_number", LongType()),
    NestedField(FILE_SEQUENCE_NUMBER, "file_sequence_number", LongType()),
    NestedField(DV_SNAPSHOT_ID, "dv_snapshot_id", LongType()),
    NestedField(FIRST_ROW_ID, "first_row_id", LongType()),
    NestedField(DELETED_POSITIONS, "deleted_positions", BinaryType()),
    NestedField(REPLACED_POSITIONS, "replaced_positions", BinaryType()),
    NestedField(LATEST_COLUMN_FILE_SNAPSHOT_ID, "latest_column_file_snapshot_id", LongType()),
)

TRACKING_IDS = tuple(f.field_id for f in TRACKING_TYPE.fields)

DELETION_VECTOR_TYPE = StructType(
    NestedField(DV_LOCATION, "location", StringType(), True),
    NestedField(DV_OFFSET, "offset", LongType(), True),
    NestedField(DV_SIZE, "size_in_bytes", LongType(), True),
    NestedField(DV_CARDINALITY, "cardinality", LongType(), True),
    NestedField(DV_KEY_METADATA, "key_metadata", BinaryType()),
)


COLUMN_FILE_TYPE = StructType(
    NestedField(CF_FORMAT_VERSION, "format_version", IntegerType(), True),
    NestedField(CF_FIELD_IDS, "field_ids", ListType(CF_FIELD_ID_ELEMENT, IntegerType(), True), True),
    NestedField(CF_LOCATION, "location", StringType(), True),
    NestedField(CF_FILE_FORMAT, "file_format", StringType(), True),
    NestedField(CF_FILE_SIZE, "file_size_in_bytes", LongType(), True),
    NestedField(CF_KEY_METADATA, "key_metadata", BinaryType()),
    NestedField(CF_SPLIT_OFFSETS, "split_offsets", ListType(CF_SPLIT_OFFSET_ELEMENT, LongType(), True)),
)
COLUMN_FILES_TYPE = ListType(COLUMN_FILE_ELEMENT, COLUMN_FILE_TYPE, True)


def manifest_info_type(file_count_type: IcebergType) -> StructType:
    """The ``manifest_info`` struct with file counts of the given type (int to write, long to read)."""
    files = ("added", "existing", "deleted", "replaced", "modified")
    return StructType(
        *(
            NestedField(i, f"{n}_files_count", file_count_type, True)
            for i, n in zip(FILE_COUNT_IDS, files, strict=True)
        ),
        *(
            NestedField(i, f"{n}_rows_count", LongType(), True)
            for i, n in zip(ROW_COUNT_IDS, files, strict=True)
        ),
        NestedField(MIN_SEQUENCE_NUMBER, "min_sequence_number", LongType(), True),
        NestedField(MDV, "dv", BinaryType()),
        NestedField(MDV_CARDINALITY, "dv_cardinality", LongType()),
    )


def specs_by_id(specs: Mapping[int, PartitionSpec] | Iterable[PartitionSpec]) -> dict[int, PartitionSpec]:
    """Partition specs keyed by spec id, from a mapping or an iterable of specs."""
    if isinstance(specs, Mapping):
        return dict(specs)
    return {s.spec_id: s for s in specs}


def union_partition_type(
    specs: Mapping[int, PartitionSpec] | Iterable[PartitionSpec], schema: Schema
) -> StructType:
    """The union partition struct of all specs: every partition field once, by field id, sorted.

    All fields are optional and typed by their transform's result type. A field whose source
    column is gone from the schema has no known type and is left out (its values cannot be
    stored). When two fields share a name the later id gets a ``_<field id>`` suffix.
    """
    by_id: dict[int, NestedField] = {}
    source_ids = schema.field_ids()
    for spec in sorted(specs_by_id(specs).values(), key=lambda s: s.spec_id):
        for pf in spec.fields:
            if pf.field_id in by_id:
                continue
            if pf.source_id not in source_ids:
                continue
            result = pf.transform.result_type(schema.find_type(pf.source_id))
            if isinstance(result, UnknownType):
                continue
            by_id[pf.field_id] = NestedField(pf.field_id, pf.name, result)
    fields: list[NestedField] = []
    names: set[str] = set()
    for fid in sorted(by_id):
        f = by_id[fid]
        name = f.name if f.name not in names else f"{f.name}_{fid}"
        names.add(name)
        fields.append(NestedField(fid, name, f.field_type))
    return StructType(*fields)


class ContentEntrySchema:
    """The content-entry schema of one table: Iceberg struct types and Arrow schemas to write/read."""

    def __init__(self, partition_type: StructType, stats_type: StructType) -> None:
        self.partition_type = partition_type
        self.stats_type = stats_type
        self.write_type = self._entry_type(IntegerType())
        self.read_type = self._entry_type(LongType())
        self.write_arrow = pa.schema([field_to_arrow(f) for f in self.write_type.fields])
        self.write_struct = pa.struct(list(self.write_arrow))
        """One entry as a struct of ``write_arrow``'s fields: the same object on every encoding, so
        what is worked out per type is found by identity (:mod:`~icefloe.formats.v4.type_memo`)."""
        read_fields = [field_to_arrow(f) for f in self.read_type.fields]
        pos = pa.field(POS_COLUMN, pa.int64(), False, {FIELD_ID_KEY: str(POS_COLUMN_ID).encode()})
        self.read_arrow = pa.schema([*read_fields, pos])

    @property
    def has_partition(self) -> bool:
        """True when the partition column is stored (some spec has a partition field)."""
        return bool(self.partition_type.fields)

    @property
    def has_stats(self) -> bool:
        """True when the content_stats column is stored."""
        return bool(self.stats_type.fields)

    def _entry_type(self, file_count_type: IcebergType) -> StructType:
        fields = [
            NestedField(TRACKING, "tracking", TRACKING_TYPE, True),
            NestedField(CONTENT_TYPE, "content_type", IntegerType(), True),
            NestedField(FORMAT_VERSION, "format_version", IntegerType(), True),
            NestedField(LOCATION, "location", StringType(), True),
            NestedField(FILE_FORMAT, "file_format", StringType(), True),
            NestedField(RECORD_COUNT, "record_count", LongType(), True),
            NestedField(FILE_SIZE, "file_size_in_bytes", LongType(), True),
            NestedField(SPEC_ID, "spec_id", IntegerType()),
        ]
        if self.has_partition:
            fields.append(NestedField(PARTITION, "partition", self.partition_type))
        if self.has_stats:
            fields.append(NestedField(CONTENT_STATS, "content_stats", self.stats_type))
        fields += [
            NestedField(SORT_ORDER_ID, "sort_order_id", IntegerType()),
            NestedField(DELETION_VECTOR, "deletion_vector", DELETION_VECTOR_TYPE),
            NestedField(MANIFEST_INFO, "manifest_info", manifest_info_type(file_count_type)),
            NestedField(KEY_METADATA, "key_metadata", BinaryType()),
            NestedField(SPLIT_OFFSETS, "split_offsets", ListType(SPLIT_OFFSET_ELEMENT, LongType(), True)),
            NestedField(EQUALITY_IDS, "equality_ids", ListType(EQUALITY_ID_ELEMENT, IntegerType(), True)),
            NestedField(COLUMN_FILES, "column_files", COLUMN_FILES_TYPE),
        ]
        return StructType(*fields)


CONTENT_ENTRY_FIELD_IDS = frozenset(
    f.field_id for f in ContentEntrySchema(StructType(), StructType()).write_type.fields
) | {PARTITION, CONTENT_STATS}


def content_entry_schema(
    table_schema: Schema,
    specs: Mapping[int, PartitionSpec] | Iterable[PartitionSpec],
    *,
    row_lineage: bool = True,
) -> ContentEntrySchema:
    """The content-entry schema of a table with these specs (union partition, per-table stats)."""
    spec_list = specs.values() if isinstance(specs, Mapping) else specs
    return _cached_entry_schema(table_schema, tuple(sorted(spec_list, key=lambda s: s.spec_id)), row_lineage)


@functools.lru_cache(maxsize=64)
def _cached_entry_schema(
    table_schema: Schema, specs: tuple[PartitionSpec, ...], row_lineage: bool
) -> ContentEntrySchema:
    """Built once per (schema, specs): every root and leaf read or written asks for it."""
    return ContentEntrySchema(
        union_partition_type(specs, table_schema), content_stats_type(table_schema, row_lineage=row_lineage)
    )


def single_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A column as one array: its only chunk as it is (``combine_chunks`` copies even one chunk,
    tens of microseconds for a nested column), several chunks combined."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


# -- projection by field id ----------------------------------------------------------------------


def _ids(fields: Iterable[pa.Field]) -> dict[int, int]:
    out: dict[int, int] = {}
    for i, f in enumerate(fields):
        fid = field_id_of(f)
        if fid is not None and fid not in out:
            out[fid] = i
    return out


def _project(arr: pa.Array, target: pa.Field, path: str, source: str) -> pa.Array:
    t = target.type
    if pa.types.is_struct(t):
        if not isinstance(arr, pa.StructArray):
            raise CorruptMetadata(f"{source}: {path} is {arr.type}, expected a struct", location=path)
        src_ids = _ids(arr.type)
        children = arr.flatten()
        out = []
        for child in t:
            fid = field_id_of(child)
            idx = src_ids.get(fid) if fid is not None else None
            if idx is None:
                out.append(pa.nulls(len(arr), child.type))
            else:
                out.append(_project(children[idx], child, f"{path}.{child.name}", source))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(out, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        if not isinstance(arr, pa.ListArray | pa.LargeListArray):
            raise CorruptMetadata(f"{source}: {path} is {arr.type}, expected a list", location=path)
        values = _project(arr.values, t.value_field, f"{path}.element", source)
        offsets = arr.offsets.cast(pa.int32())
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=t, mask=mask)
    if arr.type == t:
        return arr
    try:
        return arr.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptMetadata(
            f"{source}: {path} has type {arr.type}, which cannot be read as {t}", location=path
        ) from exc


def project_by_field_id(
    table: pa.Table, target: pa.Schema, *, source: str, required_ids: Iterable[int] = ()
) -> pa.Table:
    """Project a table onto ``target`` by ``PARQUET:field_id``: missing fields read as null,
    unknown ones are dropped, primitive types are widened (int to long, float to double, ...).

    Raises CorruptMetadata naming ``source`` when a field in ``required_ids`` is missing or a
    type cannot be converted.
    """
    src_ids = _ids(table.schema)
    missing = [i for i in required_ids if i not in src_ids]
    if missing:
        raise CorruptMetadata(
            f"{source}: not a content-entry file, required field ids {missing} are missing", location=source
        )
    columns: list[pa.Array] = []
    for f in target:
        fid = field_id_of(f)
        idx = src_ids.get(fid) if fid is not None else None
        if idx is None:
            columns.append(pa.nulls(table.num_rows, f.type))
        else:
            col: Any = single_array(table.column(idx))
            columns.append(_project(col, f, f.name, source))
    return pa.Table.from_arrays(columns, schema=target)


# -- locations (facts §5.1) ----------------------------------------------------------------------


def has_scheme(location: str) -> bool:
    """True when a location starts with an RFC 3986 scheme (and so is absolute)."""
    return _SCHEME.match(location) is not None


def relativize_location(location: str, table_location: str | None) -> str:
    """The location relative to the table location when it lies under it, else unchanged."""
    if not table_location:
        return location
    prefix = table_location + "/"
    if location.startswith(prefix) and len(location) > len(prefix):
        relative = location[len(prefix) :]
        if not has_scheme(relative):
            return relative
    return location


def resolve_location(location: str, table_location: str | None) -> str:
    """An absolute location: unchanged when it has a scheme, else ``table_location + "/" + location``.

    No normalisation is done (a table location ending in ``/`` yields ``//``, as the spec says).
    Without a table location relative paths are returned as they are.
    """
    if has_scheme(location) or not table_location:
        return location
    return f"{table_location}/{location}"


def _resolve_array(arr: pa.Array, table_location: str) -> pa.Array:
    absolute = pc.match_substring_regex(arr, _SCHEME_PATTERN)
    joined = pc.binary_join_element_wise(pa.scalar(table_location), arr, "/")
    return pc.if_else(absolute, arr, joined)


def _zero(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    return pa.scalar(0, t)


@functools.lru_cache(maxsize=256)
def _has_required_member(t: pa.DataType) -> bool:
    """Whether a struct type has a required member at any depth of structs (nothing to fill otherwise)."""
    return any(not f.nullable or (pa.types.is_struct(f.type) and _has_required_member(f.type)) for f in t)


_SMALL_NULL_STRUCTS = 8


class _FillPlan:
    """What :func:`fill_required_members` visits in arrays of one struct type, worked out once per
    type: its required members and the struct members holding one (an entry's many optional
    leaves need no visit), and its small all-null arrays already filled."""

    __slots__ = ("_lock", "_null_structs", "fields", "members")

    def __init__(self, t: pa.StructType) -> None:
        self.fields = list(t)
        self.members = tuple(
            (i, f, _fill_plans(f.type))
            for i, f in enumerate(self.fields)
            if not f.nullable or _fill_plans(f.type) is not None
        )
        self._null_structs: dict[int, pa.Array] = {}
        self._lock = threading.Lock()

    def null_structs(self, length: int) -> pa.Array:
        """``length`` null structs of this type with their required members filled (built once)."""
        found = self._null_structs.get(length)
        if found is not None:
            return found
        children = []
        for f in self.fields:  # as the general path of fill_required_members does it
            child = pa.nulls(length, f.type)
            if not f.nullable:
                child = child.fill_null(_zero(f.type))
            children.append(fill_required_members(child, f.type, f.name))
        mask = pa.array([True] * length, pa.bool_())
        built = pa.StructArray.from_arrays(children, fields=self.fields, mask=mask)
        with self._lock:
            return self._null_structs.setdefault(length, built)


def _fill_plan_of(t: pa.DataType) -> _FillPlan | None:
    return _FillPlan(t) if pa.types.is_struct(t) and _has_required_member(t) else None


_fill_plans: TypeMemo[_FillPlan | None] = TypeMemo(_fill_plan_of)
"""A struct type's fill plan (None: nothing to fill), by the type object first (see TypeMemo)."""


def fill_required_members(arr: pa.Array, t: pa.DataType, path: str) -> pa.Array:
    """Fill required struct members under null parents (Parquet rejects nulls there).

    Raises ValidationError naming the member when it is null under a non-null parent.
    """
    plan = _fill_plans(t)
    return arr if plan is None else _fill(cast(pa.StructArray, arr), plan, path)


def _fill(struct: pa.StructArray, plan: _FillPlan, path: str) -> pa.Array:
    if 0 < len(struct) <= _SMALL_NULL_STRUCTS and struct.null_count == len(struct):
        return plan.null_structs(len(struct))  # e.g. a small root's absent optional structs
    changed: dict[int, pa.Array] = {}
    for i, f, member_plan in plan.members:
        child = filled = struct.field(i)
        if not f.nullable and child.null_count:
            if pc.any(pc.and_(child.is_null(), struct.is_valid())).as_py():
                raise ValidationError(f"content entry field {path}.{f.name} is required but missing")
            filled = child.fill_null(_zero(f.type))
        if member_plan is not None:
            filled = _fill(cast(pa.StructArray, filled), member_plan, f"{path}.{f.name}")
        if filled is not child:
            changed[i] = filled
    if not changed:  # nothing was null where Parquet needs a value: the array as it is
        return struct
    children = [changed[i] if i in changed else struct.field(i) for i in range(len(plan.fields))]
    mask = struct.is_null() if struct.null_count else None
    return pa.StructArray.from_arrays(children, fields=plan.fields, mask=mask)


def column_by_field_id(table: pa.Table, field_id: int) -> pa.Array | None:
    """The (combined) top-level column with this field id, or None."""
    for i, f in enumerate(table.schema):
        if field_id_of(f) == field_id:
            return single_array(table.column(i))
    return None


def resolve_table_locations(table: pa.Table, table_location: str) -> pa.Table:
    """Resolve relative ``location``, ``deletion_vector.location`` and column file locations (facts §5.1)."""
    for i, f in enumerate(table.schema):
        fid = field_id_of(f)
        if fid == LOCATION:
            col = single_array(table.column(i))
            table = table.set_column(i, f, _resolve_array(col, table_location))
        elif fid == DELETION_VECTOR:
            dv = cast(pa.StructArray, single_array(table.column(i)))
            if dv.null_count == len(dv):
                continue  # no deletion vector, no location (e.g. an append's rows)
            children = dv.flatten()
            for j, child in enumerate(f.type):
                if field_id_of(child) == DV_LOCATION:
                    children[j] = _resolve_array(children[j], table_location)
            mask = dv.is_null() if dv.null_count else None
            table = table.set_column(
                i, f, pa.StructArray.from_arrays(children, fields=list(f.type), mask=mask)
            )
        elif fid == COLUMN_FILES:
            lists = cast(pa.ListArray, single_array(table.column(i)))
            if lists.null_count == len(lists):
                continue
            table = table.set_column(i, f, _resolve_column_file_locations(lists, f, table_location))
    return table


def _resolve_column_file_locations(lists: pa.ListArray, f: pa.Field, table_location: str) -> pa.ListArray:
    """``column_files`` with each element's relative ``location`` resolved."""
    element_field = f.type.value_field
    elements = cast(pa.StructArray, lists.values)
    children = elements.flatten()
    for j, child in enumerate(element_field.type):
        if field_id_of(child) == CF_LOCATION:
            children[j] = _resolve_array(children[j], table_location)
    rebuilt = pa.StructArray.from_arrays(children, fields=list(element_field.type))
    return pa.ListArray.from_arrays(
        lists.offsets, rebuilt, type=f.type, mask=lists.is_null() if lists.null_count else None
    )


def filter_positions(table: pa.Table, positions: Iterable[int]) -> pa.Table:
    """The rows whose ``_pos`` is not in ``positions`` (e.g. applying a manifest DV)."""
    drop = pa.array(sorted(set(positions)), pa.int64())
    if not len(drop):
        return table
    return table.filter(pc.invert(pc.is_in(table.column(POS_COLUMN), value_set=drop)))


def to_python_values(arr: pa.Array, t: IcebergType) -> list[Any]:
    """Internal Python values of an array of Iceberg type ``t`` (structs as dicts by field id)."""
    if isinstance(t, StructType):
        struct = cast(pa.StructArray, arr)
        children = struct.flatten()
        cols = [to_python_values(children[i], f.field_type) for i, f in enumerate(t.fields)]
        ids = [f.field_id for f in t.fields]
        valid = struct.is_valid().to_pylist()
        return [
            dict(zip(ids, vals, strict=True)) if ok else None for ok, *vals in zip(valid, *cols, strict=True)
        ]
    if isinstance(t, ListType):
        if not isinstance(t.element_type, StructType):
            return list(arr.to_pylist())
        lists = cast(pa.ListArray, arr)
        elements = iter(to_python_values(lists.flatten(), t.element_type))
        lengths = pc.list_value_length(lists).to_pylist()
        return [None if n is None else [next(elements) for _ in range(n)] for n in lengths]
    return to_internal_values(arr, t)


def validate_entries(table: pa.Table, source: str, kind: str | None) -> None:
    """Raise CorruptMetadata naming ``source`` when projected entries break the v4 rules.

    Checks required values, content_type (never 1, at most 4, no manifest references in a
    ``"leaf"``), format_version <= 4 and, for a ``"root"``, explicit snapshot id and sequence number.
    """
    for i, f in enumerate(table.schema):
        col = table.column(i)
        if not f.nullable and col.null_count:
            raise CorruptMetadata(f"{source}: required field {f.name} has null values", location=source)
    tracking = column_by_field_id(table, TRACKING)
    if tracking is not None:
        members = dict(zip(TRACKING_IDS, cast(pa.StructArray, tracking).flatten(), strict=True))
        required = (STATUS, SNAPSHOT_ID, SEQUENCE_NUMBER) if kind == "root" else (STATUS,)
        for fid in required:
            if members[fid].null_count:
                name = {f.field_id: f.name for f in TRACKING_TYPE.fields}[fid]
                raise CorruptMetadata(
                    f"{source}: tracking.{name} must be set on every {kind or 'entry'} row", location=source
                )
    content = column_by_field_id(table, CONTENT_TYPE)
    if content is not None and len(content):
        if pc.any(pc.equal(content, 1)).as_py():
            raise CorruptMetadata(
                f"{source}: content_type 1 (position deletes) is not allowed in v4 entries", location=source
            )
        if pc.any(pc.greater(content, 4)).as_py() or pc.any(pc.less(content, 0)).as_py():
            raise CorruptMetadata(
                f"{source}: unknown content_type values in {sorted(set(content.to_pylist()))}"
            )
        if kind == "leaf" and pc.any(pc.greater_equal(content, 3)).as_py():
            raise CorruptMetadata(
                f"{source}: a leaf manifest must not reference other manifests", location=source
            )
    version = column_by_field_id(table, FORMAT_VERSION)
    if version is not None and len(version) and pc.max(version).as_py() > MAX_FORMAT_VERSION:
        raise CorruptMetadata(
            f"{source}: entries written by format version {pc.max(version).as_py()} are not supported "
            f"(at most {MAX_FORMAT_VERSION})"
        )
