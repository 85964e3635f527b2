"""v1–v3 Avro manifests decoded to Arrow columns (DataFusion's Avro reader), objects built on demand.

``avro_manifest.read_manifest`` (fastavro) builds one dict and then one ``ManifestEntry`` per entry,
which costs tens of microseconds each. Planning over millions of files needs only a few columns
of every entry (status, content, partition, one bound) and whole objects only for the entries it
keeps. :func:`read_manifest_columns` decodes a manifest into Arrow arrays keyed by Iceberg field
id (names differ between writers; the ids come from the file's own Avro schema), and
:meth:`ManifestColumns.entries` materialises chosen rows as the same ``ManifestEntry`` /
``DataFile`` objects the fastavro reader returns.

The Arrow path is an accelerator, never the authority: anything it does not recognise (an Avro
``map`` instead of an array of key/value records, an unexpected column type, a codec DataFusion
lacks, DataFusion not installed) raises :class:`ColumnarUnsupported`, and the caller reads that
manifest with the fastavro reader instead.

Values follow ``read_manifest``: raw as stored (no inheritance), partition tuples in the order of
the manifest's partition spec, in the internal representation (dates and timestamps as ints,
decimals as ``Decimal``, uuids as ``uuid.UUID``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import repeat
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.manifest import ManifestHeader, _header, stored_partition_fields
from icefloe.formats.frozen_builders import fast_constructor
from icefloe.io.fileio import local_path
from icefloe.spec.content import DataFile, EntryStatus, FileContent, LazyMap, ManifestEntry
from icefloe.spec.partitioning import PartitionSpec

# Field ids of the manifest_entry record and of its data_file struct.
STATUS, SNAPSHOT_ID, DATA_FILE, SEQUENCE_NUMBER, FILE_SEQUENCE_NUMBER = 0, 1, 2, 3, 4
CONTENT, FILE_PATH, FILE_FORMAT, PARTITION, RECORD_COUNT, FILE_SIZE = 134, 100, 101, 102, 103, 104
COLUMN_SIZES, VALUE_COUNTS, NULL_VALUE_COUNTS, NAN_VALUE_COUNTS = 108, 109, 110, 137
LOWER_BOUNDS, UPPER_BOUNDS = 125, 128
KEY_METADATA, SPLIT_OFFSETS, EQUALITY_IDS, SORT_ORDER_ID = 131, 132, 135, 140
FIRST_ROW_ID, REFERENCED_DATA_FILE, CONTENT_OFFSET, CONTENT_SIZE = 142, 143, 144, 145

_TOP_FIELDS = {STATUS: "status", SNAPSHOT_ID: "snapshot_id", SEQUENCE_NUMBER: "sequence_number"}
_TOP_FIELDS[FILE_SEQUENCE_NUMBER] = "file_sequence_number"

_LONG, _INT, _STRING, _BINARY = pa.int64(), pa.int32(), pa.string(), pa.binary()
_LONG_MAP = pa.list_(pa.field("item", pa.struct([("key", _INT), ("value", _LONG)])))
_BYTES_MAP = pa.list_(pa.field("item", pa.struct([("key", _INT), ("value", _BINARY)])))

# Canonical Arrow type of every column this module hands out (by field id).
CANONICAL_TYPES: dict[int, pa.DataType] = {
    STATUS: _INT,
    SNAPSHOT_ID: _LONG,
    SEQUENCE_NUMBER: _LONG,
    FILE_SEQUENCE_NUMBER: _LONG,
    CONTENT: _INT,
    FILE_PATH: _STRING,
    FILE_FORMAT: _STRING,
    RECORD_COUNT: _LONG,
    FILE_SIZE: _LONG,
    COLUMN_SIZES: _LONG_MAP,
    VALUE_COUNTS: _LONG_MAP,
    NULL_VALUE_COUNTS: _LONG_MAP,
    NAN_VALUE_COUNTS: _LONG_MAP,
    LOWER_BOUNDS: _BYTES_MAP,
    UPPER_BOUNDS: _BYTES_MAP,
    KEY_METADATA: _BINARY,
    SPLIT_OFFSETS: pa.list_(_LONG),
    EQUALITY_IDS: pa.list_(_INT),
    SORT_ORDER_ID: _INT,
    FIRST_ROW_ID: _LONG,
    REFERENCED_DATA_FILE: _STRING,
    CONTENT_OFFSET: _LONG,
    CONTENT_SIZE: _LONG,
}
_DATA_FILE_NAMES: dict[int, str] = {
    CONTENT: "content",
    FILE_PATH: "file_path",
    FILE_FORMAT: "file_format",
    PARTITION: "partition",
    RECORD_COUNT: "record_count",
    FILE_SIZE: "file_size_in_bytes",
    COLUMN_SIZES: "column_sizes",
    VALUE_COUNTS: "value_counts",
    NULL_VALUE_COUNTS: "null_value_counts",
    NAN_VALUE_COUNTS: "nan_value_counts",
    LOWER_BOUNDS: "lower_bounds",
    UPPER_BOUNDS: "upper_bounds",
    KEY_METADATA: "key_metadata",
    SPLIT_OFFSETS: "split_offsets",
    EQUALITY_IDS: "equality_ids",
    SORT_ORDER_ID: "sort_order_id",
    FIRST_ROW_ID: "first_row_id",
    REFERENCED_DATA_FILE: "referenced_data_file",
    CONTENT_OFFSET: "content_offset",
    CONTENT_SIZE: "content_size_in_bytes",
}
_STATUSES = {int(s): s for s in (EntryStatus.EXISTING, EntryStatus.ADDED, EntryStatus.DELETED)}
_CONTENTS = {
    int(c): c for c in (FileContent.DATA, FileContent.POSITION_DELETES, FileContent.EQUALITY_DELETES)
}


_new_data_file = fast_constructor(DataFile)
_new_entry = fast_constructor(ManifestEntry)


class ColumnarUnsupported(Exception):
    """The Arrow decoder cannot (or must not) decode this manifest: read it with fastavro instead.

    An internal signal to the tree's v1–v3 reader (which then reads the manifest as objects), not
    an ``IcefloeError``: it never reaches a user.
    """


# -- the decoder --------------------------------------------------------------------------------

_CONTEXT: Any = None
_CONTEXT_LOCK = threading.Lock()


def decoder_available() -> bool:
    """True when DataFusion (the Avro-to-Arrow decoder) can be imported."""
    try:
        _session()
    except ColumnarUnsupported:
        return False
    return True


def _session() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        with _CONTEXT_LOCK:
            if _CONTEXT is None:
                try:
                    import datafusion
                except ImportError as exc:  # an optional accelerator
                    raise ColumnarUnsupported(f"DataFusion is not installed ({exc})") from exc
                _CONTEXT = datafusion.SessionContext()
    return _CONTEXT


def _decode_file(path: str, location: str) -> pa.Table:
    """The whole Avro file as one Arrow table (columns named as in the writer schema)."""
    try:
        table = _session().read_avro(path).to_arrow_table()
    except (ColumnarUnsupported, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # DataFusion's own exception types; a Rust panic is a BaseException
        raise ColumnarUnsupported(f"{location}: DataFusion cannot decode it ({exc})") from exc
    return cast(pa.Table, table.combine_chunks())


def _decode_bytes(data: bytes, location: str) -> pa.Table:
    """Decode a manifest held in memory (remote storage) through a private temporary file."""
    fd, tmp = tempfile.mkstemp(prefix="icefloe-manifest-", suffix=".avro")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return _decode_file(tmp, location)
    finally:
        os.unlink(tmp)


# -- decoded manifests --------------------------------------------------------------------------


PartitionConverter = Callable[[Any], Any] | None


@dataclass(frozen=True)
class ManifestColumns:
    """One manifest's entries as Arrow arrays by field id (canonical types), partition in spec order.

    ``columns`` holds the manifest_entry fields (0 status, 1 snapshot id, 3/4 sequence numbers) and
    the data_file fields (100...145) present in the file; ``partition`` one array per field of the
    partition spec (None for a field the file does not store), with ``partition_converters``
    finishing the conversion to internal values (decimals, uuids) in Python.
    """

    location: str
    header: ManifestHeader
    spec_id: int
    num_rows: int
    columns: Mapping[int, pa.Array]
    partition: tuple[pa.Array | None, ...]
    partition_converters: tuple[PartitionConverter, ...]

    def column(self, field_id: int) -> pa.Array | None:
        """The column of a field id, or None when the file does not have it."""
        return self.columns.get(field_id)

    def with_columns(self, changes: Mapping[int, pa.Array]) -> ManifestColumns:
        """A copy with some columns replaced (used to apply inheritance)."""
        return replace(self, columns={**self.columns, **changes})

    def numpy(self, field_id: int, fill: int) -> np.ndarray:
        """An integer column as a numpy int64 array, nulls (or a missing column) as ``fill``."""
        arr = self.columns.get(field_id)
        if arr is None:
            return np.full(self.num_rows, fill, dtype=np.int64)
        return cast(np.ndarray, pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)).astype(np.int64)

    def live_mask(self) -> np.ndarray | None:
        """ADDED / EXISTING rows; None when a status or content is not a v1–v3 one (corrupt)."""
        status = self.numpy(STATUS, -1)
        content = self.contents()
        if not ((status >= 0) & (status <= 2) & (content >= 0) & (content <= 2)).all():
            return None
        return cast(np.ndarray, status != int(EntryStatus.DELETED))

    def contents(self) -> np.ndarray:
        """``FileContent`` code of every row (v1 manifests have no column: all DATA)."""
        return self.numpy(CONTENT, 0)

    def record_counts(self) -> np.ndarray:
        """Record count of every row (nulls as 0)."""
        return self.numpy(RECORD_COUNT, 0)

    def spec_groups(self, rows: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """A v1–v3 manifest holds one partition spec: every row is in its group."""
        return [(self.spec_id, rows)]

    def for_spec(self, spec_id: int) -> ManifestColumns:
        """The manifest itself (its only spec)."""
        return self

    def integer_bounds(self, field_id: int, width: int, upper: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """(value, known) per row of one column's bound, decoded from ``width``-byte little-endian ints.

        A bound of another width (promoted types, corrupt data) is unknown. None when the bounds of
        a row repeat the key (the object reader keeps the last one; not worth mirroring here).
        """
        n = self.num_rows
        values = np.zeros(n, dtype=np.int64)
        known = np.zeros(n, dtype=bool)
        arr = self.column(UPPER_BOUNDS if upper else LOWER_BOUNDS)
        if arr is None or len(arr) == 0:
            return values, known
        lists = cast(pa.ListArray, arr)
        keys, data = cast(pa.StructArray, pc.list_flatten(lists)).flatten()
        parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
        is_key = pc.equal(keys, field_id).to_numpy(zero_copy_only=False)
        if not is_key.any():
            return values, known
        owners = parents[is_key]
        if len(np.unique(owners)) != len(owners):
            return None
        right_width = pc.equal(pc.binary_length(data), width).to_numpy(zero_copy_only=False)
        take = is_key & right_width
        if not take.any():
            return values, known
        chosen = cast(pa.BinaryArray, pc.filter(data, pa.array(take)))
        raw = b"".join(cast(list[bytes], chosen.to_pylist()))  # every value has ``width`` bytes
        decoded = np.frombuffer(raw, dtype="<i4" if width == 4 else "<i8").astype(np.int64)
        owned = parents[take]
        values[owned] = decoded
        known[owned] = True
        return values, known

    def partition_values(self, rows: np.ndarray | None = None) -> list[tuple[Any, ...]]:
        """Partition tuples (spec order, internal values) of ``rows`` (all rows when None)."""
        n = self.num_rows if rows is None else len(rows)
        if not self.partition:
            return [()] * n
        columns = [
            _python_values(arr, conv, rows, n)
            for arr, conv in zip(self.partition, self.partition_converters, strict=True)
        ]
        return list(zip(*columns, strict=True))

    def content_locations(self, rows: np.ndarray) -> list[str]:
        """The ``file_path`` of ``rows`` (v1–v3 entries have no colocated DVs)."""
        paths = self.columns.get(FILE_PATH)
        if paths is None or not len(rows):
            return []
        return [p for p in paths.take(pa.array(rows, pa.int64())).to_pylist() if p is not None]

    def entries(self, rows: np.ndarray | None = None) -> list[ManifestEntry]:
        """``ManifestEntry`` objects for ``rows`` (all rows when None), values as stored in the columns."""
        n = self.num_rows if rows is None else len(rows)
        if n == 0:
            return []

        def values(field_id: int, shared: bool = False) -> list[Any]:
            return _python_values(self.columns.get(field_id), None, rows, n, shared=shared)

        def maps(field_id: int) -> list[Any]:
            return _int_maps(self.columns.get(field_id), rows, n)

        def tuples(field_id: int) -> list[Any]:
            return [None if v is None else tuple(v) for v in values(field_id)]

        try:
            statuses = [_STATUSES[s] for s in values(STATUS)]
            contents = [_CONTENTS[c or 0] for c in values(CONTENT)]
        except KeyError as exc:
            raise CorruptMetadata(f"{self.location}: bad entry status or content {exc}") from exc
        formats = None
        if FILE_FORMAT in self.columns:
            stored = values(FILE_FORMAT, shared=True)
            lowered = {f: (f or "").lower() for f in set(stored)}
            formats = list(map(lowered.__getitem__, stored))
        sizes = [s or 0 for s in values(FILE_SIZE)]
        partitions = self.partition_values(rows)
        spec_id = self.spec_id
        files = map(
            _new_data_file,
            values(FILE_PATH),
            formats if formats is not None else ["parquet"] * n,
            values(RECORD_COUNT, shared=True),
            sizes,
            contents,
            [spec_id] * n,
            partitions,
            maps(COLUMN_SIZES),
            maps(VALUE_COUNTS),
            maps(NULL_VALUE_COUNTS),
            maps(NAN_VALUE_COUNTS),
            maps(LOWER_BOUNDS),
            maps(UPPER_BOUNDS),
            values(KEY_METADATA),
            tuples(SPLIT_OFFSETS),
            tuples(EQUALITY_IDS),
            values(SORT_ORDER_ID),
            values(FIRST_ROW_ID),
            values(REFERENCED_DATA_FILE),
            values(CONTENT_OFFSET),
            values(CONTENT_SIZE),
        )
        return list(
            map(
                _new_entry,
                statuses,
                values(SNAPSHOT_ID),
                values(SEQUENCE_NUMBER),
                values(FILE_SEQUENCE_NUMBER),
                files,
            )
        )


def _python_values(
    arr: pa.Array | None, conv: PartitionConverter, rows: np.ndarray | None, n: int, *, shared: bool = False
) -> list[Any]:
    if arr is None:
        return [None] * n
    if rows is not None:
        arr = arr.take(rows)
    out = _shared_pylist(arr) if shared else arr.to_pylist()
    if conv is not None:
        out = [None if v is None else conv(v) for v in out]
    return out


def _shared_pylist(arr: pa.Array) -> list[Any]:
    """``arr.to_pylist()``, one Python object per distinct value when values repeat a lot.

    Only for immutable values (ints, strings, bytes), where sharing cannot be observed: planning
    a million files then allocates a few thousand metric values instead of tens of millions.
    """
    n = len(arr)
    t = arr.type
    if n < 64 or not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t)):
        return cast(list[Any], arr.to_pylist())
    encoded = cast(pa.DictionaryArray, pc.dictionary_encode(arr, null_encoding="encode"))
    distinct = encoded.dictionary.to_pylist()
    if len(distinct) * 4 > n:
        return cast(list[Any], arr.to_pylist())
    return list(map(distinct.__getitem__, encoded.indices.to_numpy(zero_copy_only=False).tolist()))


def _int_maps(arr: pa.Array | None, rows: np.ndarray | None, n: int) -> list[Any]:
    """An int-keyed map column (list of key/value structs) as lazy maps per row (None where null).

    Building the dicts of a million entries costs seconds and most plans never read them: each
    row gets a :class:`~icefloe.spec.content.LazyMap` that builds its dict from the column on first
    use (:class:`_MapColumn`).
    """
    if arr is None:
        return [None] * n
    if rows is not None:
        arr = arr.take(rows)
    lists = cast(pa.ListArray, arr)
    if lists.null_count == len(lists):
        return [None] * n
    column = _MapColumn(lists)
    maps: list[Any] = list(map(LazyMap, repeat(column.row, n), range(n)))
    if lists.null_count:
        for i in np.flatnonzero(~lists.is_valid().to_numpy(zero_copy_only=False)).tolist():
            maps[i] = None
    return maps


class _MapColumn:
    """One decoded map column, turned into Python lists once, on the first row anyone reads."""

    __slots__ = ("_decoded", "_lists")

    def __init__(self, lists: pa.ListArray) -> None:
        self._lists = lists
        self._decoded: tuple[list[Any], list[Any], list[int]] | None = None

    def _decode(self) -> tuple[list[Any], list[Any], list[int]]:
        decoded = self._decoded
        if decoded is None:  # two threads may both decode: the results are equal
            lists = self._lists
            offsets = lists.offsets.to_numpy()
            first, last = int(offsets[0]), int(offsets[-1])
            keys_arr, values_arr = cast(pa.StructArray, lists.values).flatten()
            keys = keys_arr.slice(first, last - first).to_pylist()
            values = _shared_pylist(values_arr.slice(first, last - first))
            decoded = self._decoded = (keys, values, (offsets - first).tolist())
        return decoded

    def row(self, i: int) -> dict[Any, Any]:
        """Row ``i``'s map as a dict (later duplicate keys win, as in the fastavro reader)."""
        keys, values, bounds = self._decode()
        a, b = bounds[i], bounds[i + 1]
        return dict(zip(keys[a:b], values[a:b], strict=True))


# -- schema resolution --------------------------------------------------------------------------


def _canonical(arr: pa.Array, field_id: int, location: str) -> pa.Array:
    """``arr`` cast to the canonical type of ``field_id``; ColumnarUnsupported for other shapes."""
    want = CANONICAL_TYPES[field_id]
    have = arr.type
    if _same_layout(have, want):
        return arr
    if pa.types.is_null(have):
        return pa.nulls(len(arr), want)
    if _castable(have, want):
        try:
            return arr.cast(want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ColumnarUnsupported(f"{location}: field {field_id}: {exc}") from exc
    raise ColumnarUnsupported(f"{location}: field {field_id} decoded as {have}, expected {want}")


def _same_layout(have: pa.DataType, want: pa.DataType) -> bool:
    """Equal types up to field names and nullability (no cast needed to read the values)."""
    if have.id != want.id:
        return False
    if pa.types.is_list(want):
        return _same_layout(have.value_type, want.value_type)
    if pa.types.is_struct(want):
        return have.num_fields == want.num_fields and all(
            _same_layout(have.field(i).type, want.field(i).type) for i in range(want.num_fields)
        )
    return bool(have.equals(want))


def _castable(have: pa.DataType, want: pa.DataType) -> bool:
    """Lossless, representation-only casts (int widths, string/binary flavours, list layouts)."""
    if pa.types.is_integer(want):
        return pa.types.is_integer(have)
    if pa.types.is_string(want):
        return pa.types.is_string(have) or pa.types.is_large_string(have) or pa.types.is_string_view(have)
    if pa.types.is_binary(want):
        return (
            pa.types.is_binary(have)
            or pa.types.is_large_binary(have)
            or pa.types.is_binary_view(have)
            or pa.types.is_fixed_size_binary(have)
        )
    if pa.types.is_list(want):
        if not (pa.types.is_list(have) or pa.types.is_large_list(have) or pa.types.is_list_view(have)):
            return False
        item_have, item_want = have.value_type, want.value_type
        if pa.types.is_struct(item_want):
            if not pa.types.is_struct(item_have) or item_have.num_fields != 2:
                return False
            return (
                all(_castable(item_have.field(i).type, item_want.field(i).type) for i in range(2))
                and item_have.field(0).name == "key"
            )
        return _castable(item_have, item_want)
    return False


def _partition_column(arr: pa.Array, avro_type: Any, named: dict[str, dict], location: str) -> pa.Array:
    """A partition field's Arrow values with temporal logical types turned back into ints."""
    t = arr.type
    if pa.types.is_date32(t):
        return arr.cast(_INT)
    if pa.types.is_time64(t) or pa.types.is_timestamp(t) or pa.types.is_time32(t) or pa.types.is_date64(t):
        return arr.cast(_LONG)
    plain = (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_decimal(t)
        or pa.types.is_null(t)
    )
    if not plain:
        raise ColumnarUnsupported(f"{location}: partition field decoded as {t} ({avro_type})")
    base = avs.non_null_branch(avro_type)
    if isinstance(base, str) and base in named:
        base = named[base]
    kind = base.get("type") if isinstance(base, dict) else base
    if kind == "int" and pa.types.is_integer(t) and t.bit_width > 32:
        return arr.cast(_INT)
    return arr


def _field_type(record: dict, field_id: int, name: str) -> Any:
    f = avs.fields_by_id(record).get(field_id)
    if f is None:
        f = next((x for x in record.get("fields", []) if x.get("name") == name), None)
    return None if f is None else f["type"]


def _struct_child(arr: pa.StructArray, name: str) -> pa.Array:
    idx = arr.type.get_field_index(name)
    if idx < 0:
        raise ColumnarUnsupported(f"decoded struct has no field {name!r}")
    if arr.offset == 0 and arr.null_count == 0:
        return arr.field(idx)  # no parent nulls or slicing to apply: the child as it is
    return pc.struct_field(arr, [idx])


def _without_empty_records(schema: Any) -> Any:
    """``schema`` without record fields whose type is a record with no fields (they encode as no bytes).

    DataFusion cannot build an Arrow struct without fields (an unpartitioned spec's partition
    tuple); dropping such fields from the writer schema leaves the encoded data readable as is.
    Returns ``schema`` itself (the same object) when there is nothing to drop.
    """
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind == "record":
        fields = schema.get("fields", [])
        kept = [f for f in fields if not _is_empty_record(f["type"])]
        types = [_without_empty_records(f["type"]) for f in kept]
        if len(kept) == len(fields) and all(t is f["type"] for t, f in zip(types, kept, strict=True)):
            return schema
        return {**schema, "fields": [{**f, "type": t} for f, t in zip(kept, types, strict=True)]}
    if kind == "array":
        items_type = _without_empty_records(schema["items"])
        return schema if items_type is schema["items"] else {**schema, "items": items_type}
    if isinstance(kind, dict):
        inner = _without_empty_records(kind)
        return schema if inner is kind else {**schema, "type": inner}
    return schema


def _is_empty_record(avro_type: Any) -> bool:
    if isinstance(avro_type, dict) and isinstance(avro_type.get("type"), dict):
        return _is_empty_record(avro_type["type"])
    return isinstance(avro_type, dict) and avro_type.get("type") == "record" and not avro_type.get("fields")


_PLAIN_PATH = re.compile(r"[A-Za-z0-9/_.=+,@~-]+\.avro")
"""Local paths DataFusion is given as they are (others could read as globs or URLs: copied first)."""


def _local_or_bytes(io: Any, location: str) -> tuple[str | None, bytes]:
    """(path DataFusion may read directly or None, the file's bytes)."""
    path = local_path(location)
    if path is not None and _PLAIN_PATH.fullmatch(path):
        try:
            with open(path, "rb") as f:
                return path, f.read()
        except OSError:
            pass  # let the FileIO report it the usual way
    return None, avs.source_bytes(io.new_input(location))


@dataclass(frozen=True)
class _SchemaPlan:
    """What one writer schema says about where each field is (computed once per distinct schema)."""

    schema: dict
    readable_schema_json: bytes | None  # the schema DataFusion gets, when it differs
    data_file_record: dict
    top_names: dict[int, str]
    data_file_name: str
    data_file_names: dict[int, str]
    partition_name: str | None
    partition_record: dict | None
    named: dict[str, dict]


@lru_cache(maxsize=64)
def _schema_plan(schema_json: bytes) -> _SchemaPlan:
    """The plan of a writer schema (cached: a table's manifests share a handful of schemas)."""
    try:
        schema = json.loads(schema_json)
    except ValueError as exc:
        raise ColumnarUnsupported(f"unreadable Avro schema ({exc})") from exc
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise ColumnarUnsupported("the Avro schema is not a record")
    df_record = avs.record_of(_field_type(schema, DATA_FILE, "data_file"))
    if df_record is None:
        raise ColumnarUnsupported("the manifest has no data_file record")
    readable = _without_empty_records(schema)
    top = {fid: n for fid, d in _TOP_FIELDS.items() if (n := avs.field_name(schema, fid, d)) is not None}
    names = {
        fid: n
        for fid, d in _DATA_FILE_NAMES.items()
        if fid != PARTITION and (n := avs.field_name(df_record, fid, d)) is not None
    }
    n_part = avs.field_name(df_record, PARTITION, "partition")
    return _SchemaPlan(
        schema=schema,
        readable_schema_json=None if readable is schema else json.dumps(readable).encode("utf-8"),
        data_file_record=df_record,
        top_names=top,
        data_file_name=avs.field_name(schema, DATA_FILE, "data_file") or "data_file",
        data_file_names=names,
        partition_name=n_part,
        partition_record=avs.record_of(_field_type(df_record, PARTITION, "partition")) if n_part else None,
        named=avs.named_types(schema),
    )


def read_manifest_columns(
    io: Any,
    location: str,
    spec_lookup: Mapping[int, PartitionSpec],
    *,
    spec_id: int | None = None,
) -> ManifestColumns:
    """Decode a v1–v3 Avro manifest into Arrow columns by field id (values as stored).

    ``spec_id`` is the manifest list's partition spec id (authoritative, as for ``read_manifest``);
    the header's is used when it is None. Raises ColumnarUnsupported when the Arrow decoder cannot
    be used for this file, CorruptMetadata when the file is not a manifest.
    """
    path, data = _local_or_bytes(io, location)
    try:
        raw_meta, sync_at = avs._parse_header(data, location)
        schema_json = raw_meta["avro.schema"]
    except (KeyError, ValueError, IndexError) as exc:
        raise ColumnarUnsupported(f"{location}: unreadable Avro header ({exc})") from exc
    try:
        plan = _schema_plan(schema_json)
    except ColumnarUnsupported as exc:
        raise ColumnarUnsupported(f"{location}: {exc}") from exc
    avs.check_bounded_schema(plan.schema, location)  # before any decoder loops over its arrays
    metadata = avs.text_metadata(raw_meta)
    # framing and recorded block checksums first: DataFusion spins on some corrupt blocks
    expected_rows = avs.block_record_count(data, sync_at, location, raw_meta)
    if avs.BLOCK_CRC_KEY not in raw_meta:
        # Blocks without recorded checksums (other writers) could be corrupt in ways only a full decode
        # finds, and DataFusion may spin on them: fastavro (which always terminates) reads them first.
        for _ in avs.open_avro(data, location)[2]:
            pass
    if plan.readable_schema_json is not None:  # DataFusion cannot build a struct without fields
        raw_meta["avro.schema"] = plan.readable_schema_json
        path, data = None, avs.encode_header(raw_meta) + data[sync_at:]
    header = _header(metadata, plan.data_file_record)
    sid = spec_id if spec_id is not None else header.spec_id
    sid = 0 if sid is None else sid
    spec = spec_lookup.get(sid)

    table = _decode_file(path, location) if path is not None else _decode_bytes(data, location)
    if table.num_rows != expected_rows:  # never trust a partial decode (e.g. a truncated file)
        raise ColumnarUnsupported(
            f"{location}: decoded {table.num_rows} entries, the file holds {expected_rows}"
        )
    columns: dict[int, pa.Array] = {}
    for fid, name in plan.top_names.items():
        if name in table.column_names:
            columns[fid] = _canonical(table.column(name).combine_chunks(), fid, location)
    if STATUS not in columns or plan.data_file_name not in table.column_names:
        raise ColumnarUnsupported(f"{location}: decoded table lacks status or data_file")
    df_arr = table.column(plan.data_file_name).combine_chunks()
    if not pa.types.is_struct(df_arr.type) or df_arr.null_count:
        raise ColumnarUnsupported(f"{location}: data_file decoded as {df_arr.type}")
    df_struct = cast(pa.StructArray, df_arr)
    for fid, name in plan.data_file_names.items():
        columns[fid] = _canonical(_struct_child(df_struct, name), fid, location)
    if FILE_PATH not in columns or RECORD_COUNT not in columns:
        raise CorruptMetadata(f"{location}: data_file lacks file_path or record_count", location=location)

    partition: list[pa.Array | None] = []
    converters: list[PartitionConverter] = []
    chosen = stored_partition_fields(plan.partition_record, spec, location)
    if chosen and plan.partition_name is not None:
        part_arr = _struct_child(df_struct, plan.partition_name)
        if not pa.types.is_struct(part_arr.type):
            raise ColumnarUnsupported(f"{location}: partition decoded as {part_arr.type}")
        for f in chosen:
            if f is None:
                partition.append(None)
                converters.append(None)
                continue
            child = _struct_child(cast(pa.StructArray, part_arr), f["name"])
            partition.append(_partition_column(child, f["type"], plan.named, location))
            converters.append(avs.partition_reader(f["type"], plan.named))
    return ManifestColumns(
        location=location,
        header=header,
        spec_id=sid,
        num_rows=table.num_rows,
        columns=columns,
        partition=tuple(partition),
        partition_converters=tuple(converters),
    )


def read_manifest_entries_columnar(
    io: Any, location: str, spec_lookup: Mapping[int, PartitionSpec], *, spec_id: int | None = None
) -> tuple[ManifestHeader, list[ManifestEntry]]:
    """Every entry of a manifest through the Arrow decoder (the counterpart of ``read_manifest``)."""
    cols = read_manifest_columns(io, location, spec_lookup, spec_id=spec_id)
    return cols.header, cols.entries()


__all__: Sequence[str] = [
    "CANONICAL_TYPES",
    "ColumnarUnsupported",
    "ManifestColumns",
    "decoder_available",
    "read_manifest_columns",
    "read_manifest_entries_columnar",
]
