"""v4 content-entry files (root and leaf manifests): Parquet bytes <-> rows.

This is the byte layer of the v4 tree. It knows the ``content_entry`` layout but no tree logic:
which rows go inline, into leaves or into manifest DVs is decided by ``icefloe.tree``, and
inheritance (snapshot id, sequence numbers, first row id) is applied by the read seam.

Rows are version-neutral (``ContentRow``):

* ``ManifestEntry`` — a DATA (content_type 0) or EQUALITY_DELETES (2) file with its tracking
  values; ``data_file.partition`` is in the entry's own spec order and is mapped into the union
  partition struct by partition field id; v1–v3 metric maps become ``content_stats``; a colocated
  DV is ``data_file.deletion_vector`` (with ``dv_snapshot_id``).
* ``ManifestFile`` — a reference to a manifest (DATA_MANIFEST 3 / DELETE_MANIFEST 4): a v4 leaf
  (``format_version`` 4) or a legacy v1–v3 Avro manifest (written as ``format_version`` 0 and
  read back as 0), with its counts, manifest DV (``mdv``) and aggregated ``content_stats``
  (a ``ContentStats``, see ``icefloe.formats.v4.content_stats``).

Reading returns a pyarrow Table projected by field id onto the table's expected entry schema,
with relative locations resolved and a ``_pos`` column (0-based row ordinal in the file) so the
seam can apply a manifest DV after any filtering; ``icefloe.formats.v4.content_rows`` turns
those rows into objects when they are wanted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypedDict, Unpack, cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata, ValidationError
from icefloe.formats.arrow_schema import (
    field_id_of,
)
from icefloe.formats.v4 import content_entry_schema as ce
from icefloe.formats.v4.bitmaps import manifest_dv_codec
from icefloe.formats.v4.content_entry_schema import (
    POS_COLUMN,
    ContentEntrySchema,
    content_entry_schema,
    fill_required_members,
    filter_positions,
    has_scheme,
    project_by_field_id,
    relativize_location,
    resolve_location,
    resolve_table_locations,
    specs_by_id,
    validate_entries,
)
from icefloe.formats.v4.content_stats import (
    ContentStats,
    StatsLayout,
    content_stats_to_struct_value,
    struct_value_from_metrics,
)
from icefloe.formats.v4.encoded_rows import ENCODED_ROWS
from icefloe.formats.v4.null_columns import prune_null_columns
from icefloe.formats.v4.row_values import entry_values_to_arrow
from icefloe.spec.content import (
    ColumnFile,
    DataFile,
    DeletionVectorRef,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
)
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema

__all__ = [
    "ENTRY_FORMAT_VERSION",
    "LEGACY_FORMAT_VERSION",
    "ContentRow",
    "EntryFileOptions",
    "Kind",
    "content_entries_table",
    "encode_content_entries",
    "encode_entries_table",
    "filter_positions",
    "has_scheme",
    "manifest_file_format",
    "read_content_entries",
    "read_footer_metadata",
    "relativize_location",
    "resolve_location",
    "write_content_entries",
]

ContentRow: TypeAlias = ManifestEntry | ManifestFile
"""One content-entry row: a data / equality-delete file entry or a manifest reference."""

Kind = Literal["root", "leaf"]
SpecsArg = Mapping[int, PartitionSpec] | Iterable[PartitionSpec]

ENTRY_FORMAT_VERSION = 4
LEGACY_FORMAT_VERSION = 0
ROOT_CONTENT = "root-manifest"
LEAF_CONTENT = {FileContent.DATA: "data", FileContent.EQUALITY_DELETES: "equality-deletes"}
_LEAF_CONTENT_NAMES = {"data", "deletes", "equality-deletes"}
_MANIFEST_CONTENT = {
    ManifestContent.DATA: FileContent.DATA_MANIFEST,
    ManifestContent.DELETES: FileContent.DELETE_MANIFEST,
}
_REQUIRED_IDS = (
    ce.TRACKING,
    ce.CONTENT_TYPE,
    ce.FORMAT_VERSION,
    ce.LOCATION,
    ce.FILE_FORMAT,
    ce.RECORD_COUNT,
    ce.FILE_SIZE,
)
POSITION_BITMAP_FIELDS = (
    ("deleted_positions", ce.DELETED_POSITIONS),
    ("replaced_positions", ce.REPLACED_POSITIONS),
)


# -- writing -------------------------------------------------------------------------------------


class _RowWriter:
    """Turns ``ContentRow`` objects into content-entry struct values (dicts by field id)."""

    def __init__(
        self,
        schema: ContentEntrySchema,
        specs: dict[int, PartitionSpec],
        kind: Kind,
        table_location: str | None,
        mdv_encoding: str | None,
    ) -> None:
        self.schema = schema
        self.specs = specs
        self.kind = kind
        self.table_location = table_location
        self.codec = manifest_dv_codec(mdv_encoding)
        self.partition_ids = {f.field_id for f in schema.partition_type.fields}
        self.stats = StatsLayout(schema.stats_type)

    def row(self, row: ContentRow) -> dict[int, Any]:
        """The struct value of one row."""
        if isinstance(row, ManifestEntry):
            return self.entry(row)
        if isinstance(row, ManifestFile):
            return self.reference(row)
        raise ValidationError(
            f"content entries are ManifestEntry or ManifestFile rows, got {type(row).__name__}"
        )

    def entry(self, e: ManifestEntry) -> dict[int, Any]:
        """A DATA / EQUALITY_DELETES row."""
        df = e.data_file
        content = FileContent(df.content)
        where = df.file_path
        if content not in LEAF_CONTENT:
            raise ValidationError(
                f"{where}: content {content.name} cannot be written to a v4 content entry "
                "(v4 deletion vectors are colocated with their data file)"
            )
        if self.kind == "root" and None in (e.snapshot_id, e.sequence_number, e.file_sequence_number):
            raise ValidationError(f"{where}: root entries need explicit snapshot id and sequence numbers")
        if self.kind == "root" and content == FileContent.DATA and df.first_row_id is None:
            raise ValidationError(f"{where}: root DATA entries need an explicit first_row_id")
        dv = df.deletion_vector
        if dv is not None and content != FileContent.DATA:
            raise ValidationError(f"{where}: only DATA entries can carry a deletion vector")
        if (dv is None) != (e.dv_snapshot_id is None):
            raise ValidationError(f"{where}: dv_snapshot_id must be set exactly when a deletion vector is")
        if content == FileContent.EQUALITY_DELETES and not df.equality_ids:
            raise ValidationError(f"{where}: equality delete entries need equality_ids")
        if df.column_files and content != FileContent.DATA:
            raise ValidationError(f"{where}: only DATA entries can carry column files")
        if bool(df.column_files) != (e.latest_column_file_snapshot_id is not None):
            raise ValidationError(
                f"{where}: latest_column_file_snapshot_id must be set exactly when column files are"
            )
        return {
            ce.TRACKING: {
                ce.STATUS: int(e.status),
                ce.SNAPSHOT_ID: e.snapshot_id,
                ce.SEQUENCE_NUMBER: e.sequence_number,
                ce.FILE_SEQUENCE_NUMBER: e.file_sequence_number,
                ce.DV_SNAPSHOT_ID: e.dv_snapshot_id,
                ce.FIRST_ROW_ID: df.first_row_id if content == FileContent.DATA else None,
                ce.LATEST_COLUMN_FILE_SNAPSHOT_ID: e.latest_column_file_snapshot_id,
            },
            ce.CONTENT_TYPE: int(content),
            ce.FORMAT_VERSION: ENTRY_FORMAT_VERSION,
            ce.LOCATION: relativize_location(df.file_path, self.table_location),
            ce.FILE_FORMAT: df.file_format.lower(),
            ce.RECORD_COUNT: df.record_count,
            ce.FILE_SIZE: df.file_size_in_bytes,
            ce.SPEC_ID: df.spec_id,
            ce.PARTITION: self.partition(df),
            ce.CONTENT_STATS: struct_value_from_metrics(df, self.stats),
            ce.SORT_ORDER_ID: df.sort_order_id,
            ce.DELETION_VECTOR: None if dv is None else self.deletion_vector(dv),
            ce.KEY_METADATA: df.key_metadata,
            ce.SPLIT_OFFSETS: None if df.split_offsets is None else list(df.split_offsets),
            ce.EQUALITY_IDS: None if df.equality_ids is None else list(df.equality_ids),
            ce.COLUMN_FILES: [self.column_file(c) for c in df.column_files] if df.column_files else None,
        }

    def column_file(self, cf: ColumnFile) -> dict[int, Any]:
        """One element of the column_files list."""
        return {
            ce.CF_FORMAT_VERSION: cf.format_version,
            ce.CF_FIELD_IDS: list(cf.field_ids),
            ce.CF_LOCATION: relativize_location(cf.location, self.table_location),
            ce.CF_FILE_FORMAT: cf.file_format.lower(),
            ce.CF_FILE_SIZE: cf.file_size_in_bytes,
            ce.CF_KEY_METADATA: cf.key_metadata,
            ce.CF_SPLIT_OFFSETS: None if cf.split_offsets is None else list(cf.split_offsets),
        }

    def partition(self, df: DataFile) -> dict[int, Any] | None:
        """The union partition struct value of a file (its spec's fields set, the others null)."""
        spec = self.specs.get(df.spec_id)
        if spec is None:
            raise ValidationError(f"{df.file_path}: unknown partition spec id {df.spec_id}")
        if len(df.partition) != len(spec.fields):
            raise ValidationError(
                f"{df.file_path}: partition {df.partition!r} does not match spec {df.spec_id} "
                f"({len(spec.fields)} fields)"
            )
        if not self.partition_ids:
            return None
        return {
            pf.field_id: value
            for pf, value in zip(spec.fields, df.partition, strict=True)
            if pf.field_id in self.partition_ids
        }

    def deletion_vector(self, dv: DeletionVectorRef) -> dict[int, Any]:
        """The deletion_vector struct value."""
        return {
            ce.DV_LOCATION: relativize_location(dv.location, self.table_location),
            ce.DV_OFFSET: dv.offset,
            ce.DV_SIZE: dv.size_in_bytes,
            ce.DV_CARDINALITY: dv.cardinality,
            ce.DV_KEY_METADATA: dv.key_metadata,
        }

    def reference(self, m: ManifestFile) -> dict[int, Any]:
        """A DATA_MANIFEST / DELETE_MANIFEST row."""
        where = m.manifest_path
        if self.kind != "root":
            raise ValidationError(f"{where}: manifest references are only allowed in a root manifest")
        if m.format_version > ENTRY_FORMAT_VERSION:
            raise ValidationError(f"{where}: cannot reference a format-version {m.format_version} manifest")
        legacy = m.format_version < ENTRY_FORMAT_VERSION
        file_counts = [m.added_files_count, m.existing_files_count, m.deleted_files_count]
        row_counts = [m.added_rows_count, m.existing_rows_count, m.deleted_rows_count]
        if None in file_counts or None in row_counts:
            raise ValidationError(f"{where}: manifest references need file and row counts")
        files = [*cast(list[int], file_counts), m.replaced_files_count, m.modified_files_count]
        rows = [*cast(list[int], row_counts), m.replaced_rows_count, m.modified_rows_count]
        if legacy and m.partition_spec_id < 0:
            raise ValidationError(f"{where}: references to legacy manifests need their partition spec id")
        if (m.mdv is None) != (m.dv_snapshot_id is None):
            raise ValidationError(f"{where}: dv_snapshot_id must be set exactly when a manifest DV is")
        if m.mdv is not None and legacy:
            raise ValidationError(f"{where}: manifest DVs apply only to v4 leaf manifests")
        is_data = m.content == ManifestContent.DATA
        if is_data and m.first_row_id is None:
            raise ValidationError(f"{where}: root DATA_MANIFEST references need an explicit first_row_id")
        info: dict[int, Any] = dict(zip(ce.FILE_COUNT_IDS, files, strict=True))
        info.update(zip(ce.ROW_COUNT_IDS, rows, strict=True))
        info[ce.MIN_SEQUENCE_NUMBER] = m.min_sequence_number
        info[ce.MDV] = m.mdv
        info[ce.MDV_CARDINALITY] = None if m.mdv is None else self.codec.cardinality(m.mdv, source=where)
        tracking = {
            ce.STATUS: int(m.status),
            ce.SNAPSHOT_ID: m.added_snapshot_id,
            ce.SEQUENCE_NUMBER: m.sequence_number,
            ce.FILE_SEQUENCE_NUMBER: m.sequence_number,
            ce.DV_SNAPSHOT_ID: m.dv_snapshot_id,
            ce.FIRST_ROW_ID: m.first_row_id if is_data else None,
        }
        for name, fid in POSITION_BITMAP_FIELDS:
            tracking[fid] = getattr(m, name, None)
        stats = cast(ContentStats | None, m.content_stats)
        return {
            ce.TRACKING: tracking,
            ce.CONTENT_TYPE: int(_MANIFEST_CONTENT[ManifestContent(m.content)]),
            ce.FORMAT_VERSION: LEGACY_FORMAT_VERSION if legacy else ENTRY_FORMAT_VERSION,
            ce.LOCATION: relativize_location(m.manifest_path, self.table_location),
            ce.FILE_FORMAT: manifest_file_format(m.manifest_path, legacy),
            ce.RECORD_COUNT: m.record_count if m.record_count is not None else sum(files),
            ce.FILE_SIZE: m.manifest_length,
            ce.SPEC_ID: m.partition_spec_id if m.partition_spec_id >= 0 else None,
            ce.CONTENT_STATS: content_stats_to_struct_value(stats, self.stats),
            ce.MANIFEST_INFO: info,
            ce.KEY_METADATA: m.key_metadata,
        }


def manifest_file_format(path: str, legacy: bool) -> str:
    """The ``file_format`` a reference to the manifest at ``path`` is written with."""
    lower = path.lower()
    for fmt in ("parquet", "avro"):
        if lower.endswith("." + fmt):
            return fmt
    return "avro" if legacy else "parquet"


class EntryFileOptions(TypedDict, total=False):
    """Optional settings of ``write_content_entries`` / ``encode_content_entries``."""

    table_location: str | None  # locations under it are written relative to it
    leaf_content: FileContent | None  # DATA / EQUALITY_DELETES, for empty leaves
    snapshot_id: int | None  # root footer (required for roots)
    parent_snapshot_id: int | None  # root footer
    sequence_number: int | None  # root footer (required for roots)
    metadata: Mapping[str, str] | None  # extra footer key/values
    mdv_encoding: str | None  # manifest DV codec name (default Mumbling v1)
    row_lineage: bool  # stats structs for _row_id / _last_updated_sequence_number (default True)
    compact: bool  # no all-null optional columns, column statistics or dictionaries; delta-coded ints


def encode_content_entries(
    rows: Iterable[ContentRow],
    *,
    table_schema: Schema,
    specs: SpecsArg,
    kind: Kind,
    **options: Unpack[EntryFileOptions],
) -> bytes:
    """The Parquet bytes of a root or leaf content-entry file (see ``write_content_entries``)."""
    row_list = list(rows)
    table = content_entries_table(row_list, table_schema=table_schema, specs=specs, kind=kind, **options)
    if kind == "leaf":
        options["leaf_content"] = _leaf_content(row_list, options.get("leaf_content"))
    return encode_entries_table(table, table_schema=table_schema, kind=kind, **options)


def content_entries_table(
    rows: Sequence[ContentRow],
    *,
    table_schema: Schema,
    specs: SpecsArg,
    kind: Kind,
    **options: Unpack[EntryFileOptions],
) -> pa.Table:
    """The rows as the encoder writes them, before any pruning: every column of the table's
    ``content_entry_schema(...).write_arrow``, locations relative to ``table_location``.

    Raises ValidationError when a row cannot be written.
    """
    if kind not in ("root", "leaf"):
        raise ValidationError(f"kind must be 'root' or 'leaf', got {kind!r}")
    spec_map = specs_by_id(specs)
    schema = content_entry_schema(table_schema, spec_map, row_lineage=options.get("row_lineage", True))
    location = options.get("table_location")
    writer = _RowWriter(schema, spec_map, kind, location, options.get("mdv_encoding"))
    target = schema.write_struct

    def encode_rows(batch: list[ContentRow]) -> pa.Array:
        values = [writer.row(r) for r in batch]
        return fill_required_members(entry_values_to_arrow(schema, values, target), target, "content_entry")

    # rows carried on from a root this process encoded a moment ago are not converted again
    key = (schema, kind, location, options.get("mdv_encoding"))
    entries = ENCODED_ROWS.encode(key, rows, encode_rows)
    return pa.Table.from_arrays(cast(pa.StructArray, entries).flatten(), schema=schema.write_arrow)


def encode_entries_table(
    table: pa.Table,
    *,
    table_schema: Schema,
    kind: Kind,
    **options: Unpack[EntryFileOptions],
) -> bytes:
    """The Parquet bytes of a content-entry file holding ``table`` (as ``content_entries_table``
    builds it), with the footer and writer settings of ``encode_content_entries``."""
    footer = {"format-version": str(ENTRY_FORMAT_VERSION), "schema-id": str(table_schema.schema_id)}
    snapshot_id, sequence_number = options.get("snapshot_id"), options.get("sequence_number")
    parent_snapshot_id = options.get("parent_snapshot_id")
    if kind == "root":
        if snapshot_id is None or sequence_number is None:
            raise ValidationError("a root manifest needs its snapshot id and sequence number")
        footer.update({"content": ROOT_CONTENT, "snapshot-id": str(snapshot_id)})
        if parent_snapshot_id is not None:
            footer["parent-snapshot-id"] = str(parent_snapshot_id)
        footer["sequence-number"] = str(sequence_number)
    else:
        footer["content"] = LEAF_CONTENT[_leaf_content((), options.get("leaf_content"))]
    footer.update(options.get("metadata") or {})
    for f, col in zip(table.schema, table.columns, strict=True):
        if not f.nullable and col.null_count:
            raise ValidationError(f"content entry field {f.name} is required but missing")
    compact = options.get("compact", False)
    if compact:  # readers project by field id: a missing optional column reads as null
        table = prune_null_columns(table)
    buf = pa.BufferOutputStream()  # written by Arrow, not through a Python file object's write calls
    with pq.ParquetWriter(
        buf,
        table.schema,
        compression=_COMPRESSION[kind],
        version="2.6",
        store_schema=False,
        write_statistics=not compact,
        use_dictionary=not compact,
        column_encoding=_delta_encodings(table.schema) if compact else None,
        write_page_checksum=True,  # readers verify page CRCs: a flipped bit is an error, not a row
    ) as out:
        out.write_table(table)
        out.add_key_value_metadata(footer)
    return cast(bytes, buf.getvalue().to_pybytes())


_COMPRESSION: dict[Kind, str] = {"root": "snappy", "leaf": "zstd"}
"""Parquet codec per file kind. A root is small and written once per commit, and zstd costs a
fixed few microseconds per column chunk: on a root of 1–100 rows snappy wrote in about half the
time (0.7 vs 1.7 ms) and read in about 60% (0.6 vs 1.0 ms), for 0–35% more bytes. Leaves are
large and written rarely: zstd."""


def _delta_encodings(schema: pa.Schema) -> dict[str, str] | None:
    """``column_encoding`` of a compact file: DELTA_BINARY_PACKED for every INT32 / INT64 column.

    Counts, ids, sequence numbers and bounds of neighbouring rows are close, so their deltas pack
    into a few bits. Strings and booleans stay PLAIN: on a typical root, delta-encoding
    ``location`` came out slightly larger.
    """
    return {path: "DELTA_BINARY_PACKED" for path in _integer_column_paths(schema)} or None


_SCHEMAS_KEPT = 64
_recent_integer_paths: list[tuple[pa.Schema, tuple[str, ...]]] = []


def _integer_column_paths(schema: pa.Schema) -> tuple[str, ...]:
    """Dotted Parquet paths of the leaf columns that Parquet stores as INT32 or INT64.

    Worked out once per schema: every root of a table is written with one of a few. A schema is
    found again by equality, never by hashing it (tens of microseconds for a root's schema); the
    pruning gives a table's roots the same Arrow schema each time
    (:mod:`icefloe.formats.v4.null_columns`), which compares equal at once.
    """
    global _recent_integer_paths
    recent = _recent_integer_paths
    for known, paths in reversed(recent):
        if known.equals(schema):
            return paths
    is_integer: dict[str, bool] = {}
    for path, t in _leaf_columns(list(schema), ()):
        # names may contain dots: a path shared with a non-integer leaf gets no special encoding
        is_integer[path] = is_integer.get(path, True) and _stored_as_integer(t)
    found = tuple(path for path, ok in is_integer.items() if ok)
    _recent_integer_paths = [*recent[-(_SCHEMAS_KEPT - 1) :], (schema, found)]
    return found


def _leaf_columns(fields: list[pa.Field], prefix: tuple[str, ...]) -> Iterator[tuple[str, pa.DataType]]:
    for f in fields:
        yield from _leaves_of(f.type, (*prefix, f.name))


def _leaves_of(t: pa.DataType, path: tuple[str, ...]) -> Iterator[tuple[str, pa.DataType]]:
    if pa.types.is_struct(t):
        yield from _leaf_columns(list(t), path)
    elif pa.types.is_map(t):  # Parquet's MAP layout: <name>.key_value.{key,value}
        yield from _leaves_of(t.key_type, (*path, "key_value", "key"))
        yield from _leaves_of(t.item_type, (*path, "key_value", "value"))
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _leaves_of(t.value_type, (*path, "list", "element"))  # Parquet's LIST layout
    else:
        yield ".".join(path), t


def _stored_as_integer(t: pa.DataType) -> bool:
    """True for Arrow types pyarrow writes as Parquet INT32 / INT64 (decimals go fixed-length)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
    )


def _leaf_content(rows: Sequence[ContentRow], declared: FileContent | None) -> FileContent:
    kinds = {FileContent(r.data_file.content) for r in rows if isinstance(r, ManifestEntry)}
    if declared is not None:
        kinds.add(FileContent(declared))
    if len(kinds) > 1:
        names = sorted(k.name for k in kinds)
        raise ValidationError(f"a leaf manifest holds one kind of content, got {names}")
    content = kinds.pop() if kinds else FileContent.DATA
    if content not in LEAF_CONTENT:
        raise ValidationError(f"a leaf manifest cannot hold {content.name} entries")
    return content


def write_content_entries(
    sink: Any,
    rows: Iterable[ContentRow],
    *,
    table_schema: Schema,
    specs: SpecsArg,
    kind: Kind,
    **options: Unpack[EntryFileOptions],
) -> int:
    """Write a root or leaf content-entry Parquet file; returns its length in bytes.

    ``sink`` is an ``OutputFile`` (``write_bytes``), a writable binary stream or a local path.
    ``specs`` are all the table's partition specs (the partition column is their union). Leaves
    hold only DATA or only EQUALITY_DELETES entries; roots may also hold manifest references.
    Footer: ``format-version``=4, ``schema-id``, ``content`` = ``root-manifest`` | ``data`` |
    ``equality-deletes``, plus ``snapshot-id``, ``parent-snapshot-id``, ``sequence-number`` on roots.
    Raises ValidationError (nothing written) when a row cannot be written.
    """
    data = encode_content_entries(rows, table_schema=table_schema, specs=specs, kind=kind, **options)
    if hasattr(sink, "write_bytes"):
        sink.write_bytes(data)
    elif hasattr(sink, "write"):
        sink.write(data)
    elif isinstance(sink, str | os.PathLike):
        with open(sink, "wb") as out:
            out.write(data)
    else:
        raise TypeError(f"cannot write content entries to {type(sink).__name__}")
    return len(data)


# -- reading -------------------------------------------------------------------------------------


def _source_name(data: Any, source: str | None) -> str:
    if source:
        return source
    for attr in ("location", "path", "name"):
        value = getattr(data, attr, None)
        if isinstance(value, str):
            return value
    return "<content entries>"


def _parquet_file(data: Any, source: str) -> pq.ParquetFile:
    if isinstance(data, bytes | bytearray | memoryview):
        data = pa.BufferReader(bytes(data))
    elif not isinstance(data, pa.NativeFile | str | os.PathLike) and hasattr(data, "read"):
        data = pa.BufferReader(bytes(data.read()))
    try:
        return pq.ParquetFile(data, page_checksum_verification=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadata(
            f"{source}: not a readable Parquet content-entry file: {exc}", location=source
        ) from exc


def read_footer_metadata(data: Any, *, source: str | None = None) -> dict[str, str]:
    """The footer key/value metadata of a content-entry file (decoded as UTF-8)."""
    name = _source_name(data, source)
    return _footer(_parquet_file(data, name))


def _footer(pf: pq.ParquetFile) -> dict[str, str]:
    raw = pf.metadata.metadata or {}
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw.items()}


def _kind_from_footer(footer: Mapping[str, str]) -> Kind | None:
    content = footer.get("content")
    if content == ROOT_CONTENT:
        return "root"
    if content in _LEAF_CONTENT_NAMES:
        return "leaf"
    return None


SMALL_FILE_ROWS = 4096
"""Content-entry files with at most this many rows are decoded without Arrow's thread pool."""


def read_content_entries(
    data: Any,
    *,
    table_schema: Schema,
    specs: SpecsArg,
    table_location: str | None = None,
    source: str | None = None,
    kind: Kind | None = None,
    columns: Collection[int] | None = None,
    row_lineage: bool = True,
    rows: Sequence[int] | Callable[[pa.Table], Sequence[int]] | None = None,
) -> pa.Table:
    """The rows of a content-entry file as a pyarrow Table, projected by field id.

    ``data`` is bytes, a pyarrow ``NativeFile``, an ``InputFile`` or a local path. The result
    has the table's expected entry schema (``content_entry_schema(...).read_arrow``; file counts
    as long, missing fields null, unknown ones dropped) plus ``_pos``, each row's 0-based ordinal
    in the file. Relative ``location`` and ``deletion_vector.location`` values are resolved
    against ``table_location`` when it is given. ``columns`` limits the top-level field ids read
    (content_type, format_version and ``_pos`` are always kept). ``kind`` (else the footer's
    ``content`` key) enables the leaf check. ``rows`` keeps only the rows at those ascending
    0-based positions, or the positions a function returns when given every row's content_type
    and tracking columns (projected): the other rows are not projected, resolved or checked, and
    ``_pos`` stays each kept row's position in the file. No inheritance is applied.

    Raises CorruptMetadata naming ``source`` on unreadable input, content_type 1,
    format_version > 4, or manifest references inside a leaf.
    """
    name = _source_name(data, source)
    pf = _parquet_file(data, name)
    kind = kind or _kind_from_footer(_footer(pf))
    schema = content_entry_schema(table_schema, specs, row_lineage=row_lineage)
    keep = None if columns is None else {*columns, ce.CONTENT_TYPE, ce.FORMAT_VERSION}
    target_fields = [f for f in schema.read_arrow if f.name != POS_COLUMN]
    if keep is not None:
        target_fields = [f for f in target_fields if field_id_of(f) in keep]
    file_names = {field_id_of(f): f.name for f in pf.schema_arrow}
    wanted = [file_names[fid] for f in target_fields if (fid := field_id_of(f)) in file_names]
    try:
        # a small file (a root) is read faster by this thread than by handing each column to
        # the pool: a one-row root took 1.1 ms with threads, 0.7 ms without
        threads = pf.metadata.num_rows > SMALL_FILE_ROWS
        raw = pf.read(columns=list(dict.fromkeys(wanted)), use_threads=threads)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadata(f"{name}: cannot read content entries: {exc}") from exc
    kept = rows(_probe(raw, target_fields, file_names, name)) if callable(rows) else rows
    if kept is not None:
        raw = raw.take(pa.array(kept, pa.int64()))
    required = [i for i in _REQUIRED_IDS if keep is None or i in keep]
    table = project_by_field_id(raw, pa.schema(target_fields), source=name, required_ids=required)
    every_field = schema if row_lineage else content_entry_schema(table_schema, specs, row_lineage=True)
    _check_top_level_ids(pf.schema_arrow, every_field.read_arrow, name)
    validate_entries(table, name, kind)
    pos_field = schema.read_arrow.field(POS_COLUMN)
    positions = range(table.num_rows) if kept is None else kept
    table = table.append_column(pos_field, pa.array(positions, pa.int64()))
    if table_location:
        table = resolve_table_locations(table, table_location)
    return table


_PROBED_IDS = (ce.CONTENT_TYPE, ce.TRACKING)


def _probe(
    raw: pa.Table, target_fields: list[pa.Field], file_names: dict[int | None, str], name: str
) -> pa.Table:
    """The content_type and tracking columns of a raw content-entry table, projected by field id."""
    fields = [f for f in target_fields if field_id_of(f) in _PROBED_IDS]
    present = [file_names[fid] for f in fields if (fid := field_id_of(f)) in file_names]
    required = [i for i in _REQUIRED_IDS if i in _PROBED_IDS]
    return project_by_field_id(
        raw.select(list(dict.fromkeys(present))), pa.schema(fields), source=name, required_ids=required
    )


def _check_top_level_ids(found: pa.Schema, expected: pa.Schema, name: str) -> None:
    """Refuse a file whose top-level field ids cannot come from any content-entry writer.

    Projection by id drops fields it does not know (a newer writer's additions) and reads absent
    ones as null (an older writer's file). A corrupted id looks like both at once: the field it
    belonged to goes missing while a field appears whose id is no top-level content-entry field (a
    nested id, none at all) or repeats an earlier one. Read as null, the missing field would
    silently lose what it held (a deletion vector, a column file), so the file is refused here,
    naming it, rather than by a later check of the snapshot's totals that can only name the root.
    """
    known = {field_id_of(f) for f in expected if f.name != POS_COLUMN}
    seen: set[int | None] = set()
    foreign = []
    for f in found:
        fid = field_id_of(f)
        if fid not in known or fid in seen:
            foreign.append(f.name)
        seen.add(fid)
    missing = sorted(i for i in known if i is not None and i not in seen)
    if foreign and missing:
        raise CorruptMetadata(
            f"{name}: fields {foreign} carry ids that are not top-level content-entry fields or "
            f"repeat one, while field id(s) {missing} are missing: the file's schema is corrupt",
            location=name,
        )
