"""v1–v3 Avro manifests: write ``ManifestEntry`` objects, read them back (raw, no inheritance).

Writing returns the ``ManifestFile`` summary a manifest list needs (counts, partition field
summaries, minimum data sequence number). A manifest written for a snapshot that is not committed
yet carries ``sequence_number = UNASSIGNED_SEQ``; the manifest-list writer fills it in.

Reading resolves every field by its Iceberg field id (names differ between writers), decodes
partition values from the writer's own Avro types, and orders each partition tuple by the fields
of the file's partition spec. Inheritance (snapshot id, sequence numbers, first row id) is the read
seam's job: values here are exactly as stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Any

from icefloe.errors import CorruptMetadata, ValidationError, reading
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.container import container_bytes, manifest_entry_writer
from icefloe.spec.content import (
    DataFile,
    EntryStatus,
    FileContent,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    PartitionFieldSummary,
)
from icefloe.spec.conversions import to_bytes
from icefloe.spec.json_codec import schema_to_dict, spec_to_dict
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.types import DoubleType, FloatType, IcebergType, StructType

UNASSIGNED_SEQ = -1
"""Sequence number of a manifest (or entry) written before its snapshot's number is known."""

SpecLookup = Mapping[int, PartitionSpec] | Callable[[int], PartitionSpec | None] | None

_CONTENT_NAMES = {ManifestContent.DATA: "data", ManifestContent.DELETES: "deletes"}


# -- writing -------------------------------------------------------------------------------------


class PartitionSummaryBuilder:
    """Accumulates the manifest-list summary (nulls, NaNs, bounds) of each partition field."""

    def __init__(self, partition_type: StructType) -> None:
        self.types: list[IcebergType] = [f.field_type for f in partition_type.fields]
        n = len(self.types)
        self._floating = [isinstance(t, FloatType | DoubleType) for t in self.types]
        self.contains_null = [False] * n
        self.contains_nan = [False] * n
        self.lower: list[Any] = [None] * n
        self.upper: list[Any] = [None] * n

    def update(self, partition: tuple[Any, ...]) -> None:
        """Add one partition tuple."""
        for i, v in enumerate(partition):
            if v is None:
                self.contains_null[i] = True
                continue
            if self._floating[i]:
                if math.isnan(v):
                    self.contains_nan[i] = True
                    continue
                key: Any = (v, math.copysign(1.0, v))  # orders -0.0 before +0.0
                if self.lower[i] is None or key < (self.lower[i], math.copysign(1.0, self.lower[i])):
                    self.lower[i] = v
                if self.upper[i] is None or key > (self.upper[i], math.copysign(1.0, self.upper[i])):
                    self.upper[i] = v
                continue
            if self.lower[i] is None or v < self.lower[i]:
                self.lower[i] = v
            if self.upper[i] is None or v > self.upper[i]:
                self.upper[i] = v

    def summaries(self) -> tuple[PartitionFieldSummary, ...]:
        """The field summaries, bounds serialised with the single-value binary encoding."""
        out = []
        for i, t in enumerate(self.types):
            lo, hi = self.lower[i], self.upper[i]
            out.append(
                PartitionFieldSummary(
                    contains_null=self.contains_null[i],
                    contains_nan=self.contains_nan[i],
                    lower_bound=None if lo is None else to_bytes(t, lo),
                    upper_bound=None if hi is None else to_bytes(t, hi),
                )
            )
        return tuple(out)


def _kv(m: Mapping[int, Any] | None) -> tuple[str, list[dict[str, Any]]] | None:
    # ("array", value) names the union branch for fastavro, which otherwise validates every item
    if m is None:
        return None
    return ("array", [{"key": k, "value": v} for k, v in m.items()])


def _arr(values: Iterable[int] | None) -> tuple[str, list[int]] | None:
    return None if values is None else ("array", list(values))


@dataclass
class _ManifestStats:
    added_files: int = 0
    existing_files: int = 0
    deleted_files: int = 0
    added_rows: int = 0
    existing_rows: int = 0
    deleted_rows: int = 0
    min_seq: int | None = None

    def update(self, status: EntryStatus, record_count: int, data_seq: int | None) -> None:
        if status == EntryStatus.ADDED:
            self.added_files += 1
            self.added_rows += record_count
        elif status == EntryStatus.EXISTING:
            self.existing_files += 1
            self.existing_rows += record_count
        else:
            self.deleted_files += 1
            self.deleted_rows += record_count
        if status != EntryStatus.DELETED and data_seq is not None and data_seq >= 0:
            self.min_seq = data_seq if self.min_seq is None else min(self.min_seq, data_seq)


def manifest_metadata(
    spec: PartitionSpec, schema: Schema, format_version: int, content: ManifestContent
) -> dict[str, str]:
    """The Avro key-value metadata of a manifest (schema, partition spec, version, content)."""
    try:
        return dict(_manifest_metadata(spec, schema, format_version, ManifestContent(content)))
    except TypeError:  # a schema holding an unhashable default value: made afresh
        return dict(_manifest_metadata.__wrapped__(spec, schema, format_version, ManifestContent(content)))


@lru_cache(maxsize=64)
def _manifest_metadata(
    spec: PartitionSpec, schema: Schema, format_version: int, content: ManifestContent
) -> dict[str, str]:
    # A table's commits write manifests for equal schemas and specs (the objects differ when the
    # metadata was parsed again, e.g. from a REST reply): their JSON is made once.
    spec_json = spec_to_dict(spec)
    fields = spec_json.get("fields", []) if isinstance(spec_json, dict) else spec_json
    meta = {
        "schema": json.dumps(schema_to_dict(schema), separators=(",", ":")),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps(fields, separators=(",", ":")),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version),
    }
    if format_version >= 2:
        meta["content"] = _CONTENT_NAMES[content]
    return meta


def write_manifest(
    output: Any,
    entries: Iterable[ManifestEntry],
    spec: PartitionSpec,
    schema: Schema,
    format_version: int,
    content: ManifestContent,
    snapshot_id: int,
    *,
    path: str | None = None,
    partition_type: StructType | None = None,
    codec: str = avs.DEFAULT_CODEC,
) -> ManifestFile:
    """Write a v1–v3 manifest to an ``OutputFile`` or binary stream; returns its list entry.

    Entries are written as given; a missing entry ``snapshot_id`` becomes ``snapshot_id``. The
    returned ``ManifestFile`` has ``sequence_number = UNASSIGNED_SEQ`` (v2+) for the manifest list
    writer to fill in, and ``path`` (or the output's location) as ``manifest_path``.
    """
    if format_version not in (1, 2, 3):
        raise ValidationError(f"Avro manifests are written for format versions 1-3, not {format_version}")
    content = ManifestContent(content)
    ptype = partition_type if partition_type is not None else spec.partition_type(schema)
    if len(ptype.fields) != len(spec.fields):
        raise ValidationError(f"partition type has {len(ptype.fields)} fields, spec has {len(spec.fields)}")
    writer = manifest_entry_writer(format_version, ptype)
    names = [avs.avro_name(f.name) for f in ptype.fields]
    convs = [avs.partition_writer(f.field_type) for f in ptype.fields]
    summary = PartitionSummaryBuilder(ptype)
    stats = _ManifestStats()
    v1, v3 = format_version == 1, format_version >= 3
    nparts = len(names)

    def record(e: ManifestEntry) -> dict[str, Any]:
        df = e.data_file
        status = EntryStatus(e.status)
        if status not in (EntryStatus.EXISTING, EntryStatus.ADDED, EntryStatus.DELETED):
            raise ValidationError(f"entry status {status.name} exists only in v4 trees")
        is_data = df.content == FileContent.DATA
        if is_data != (content == ManifestContent.DATA):
            raise ValidationError(
                f"{df.file_path}: {FileContent(df.content).name} file in a {content.name} manifest"
            )
        if v1 and not is_data:
            raise ValidationError(f"{df.file_path}: format version 1 has no delete files")
        if len(df.partition) != nparts:
            raise ValidationError(
                f"{df.file_path}: partition tuple has {len(df.partition)} values, "
                f"spec {spec.spec_id} has {nparts} fields"
            )
        summary.update(df.partition)
        stats.update(status, df.record_count, e.sequence_number)
        partition = {
            n: (c(v) if c is not None else v) for n, c, v in zip(names, convs, df.partition, strict=True)
        }
        d: dict[str, Any] = {
            "file_path": df.file_path,
            "file_format": df.file_format.upper(),
            "partition": partition,
            "record_count": df.record_count,
            "file_size_in_bytes": df.file_size_in_bytes,
            "column_sizes": _kv(df.column_sizes),
            "value_counts": _kv(df.value_counts),
            "null_value_counts": _kv(df.null_value_counts),
            "nan_value_counts": _kv(df.nan_value_counts),
            "lower_bounds": _kv(df.lower_bounds),
            "upper_bounds": _kv(df.upper_bounds),
            "key_metadata": df.key_metadata,
            "split_offsets": _arr(df.split_offsets),
            "sort_order_id": df.sort_order_id,
        }
        sid = e.snapshot_id if e.snapshot_id is not None else snapshot_id
        if v1:
            d["block_size_in_bytes"] = avs.V1_BLOCK_SIZE
            return {"status": int(status), "snapshot_id": sid, "data_file": d}
        d["content"] = int(df.content)
        d["equality_ids"] = _arr(df.equality_ids)
        d["referenced_data_file"] = df.referenced_data_file
        if v3:
            d["first_row_id"] = df.first_row_id
            d["content_offset"] = df.content_offset
            d["content_size_in_bytes"] = df.content_size_in_bytes
        return {
            "status": int(status),
            "snapshot_id": sid,
            "sequence_number": e.sequence_number,
            "file_sequence_number": e.file_sequence_number,
            "data_file": d,
        }

    meta = manifest_metadata(spec, schema, format_version, content)
    data = container_bytes(writer, (record(e) for e in entries), meta, codec)
    avs.write_to(output, data)
    seq = 0 if v1 else UNASSIGNED_SEQ
    return ManifestFile(
        manifest_path=path if path is not None else avs.source_location(output),
        manifest_length=len(data),
        partition_spec_id=spec.spec_id,
        content=content,
        sequence_number=seq,
        min_sequence_number=0 if v1 else (stats.min_seq if stats.min_seq is not None else UNASSIGNED_SEQ),
        added_snapshot_id=snapshot_id,
        added_files_count=stats.added_files,
        existing_files_count=stats.existing_files,
        deleted_files_count=stats.deleted_files,
        added_rows_count=stats.added_rows,
        existing_rows_count=stats.existing_rows,
        deleted_rows_count=stats.deleted_rows,
        partitions=summary.summaries(),
        format_version=format_version,
    )


# -- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestHeader:
    """What a manifest's Avro key-value metadata says (missing keys are None)."""

    format_version: int
    content: ManifestContent | None
    spec_id: int | None
    schema_id: int | None
    schema_json: str | None
    partition_spec_json: str | None
    metadata: dict[str, str]


def _header(metadata: dict[str, str], data_file_record: dict | None) -> ManifestHeader:
    version = avs.int_or_none(metadata.get("format-version"))
    if version is None:  # infer from the columns present
        ids = avs.fields_by_id(data_file_record) if data_file_record else {}
        version = 3 if 142 in ids else (2 if 134 in ids else 1)
    content_text = metadata.get("content")
    content = None
    if content_text is not None:
        content = ManifestContent.DATA if content_text.strip().lower() == "data" else ManifestContent.DELETES
    spec_id = avs.int_or_none(metadata.get("partition-spec-id", metadata.get("partition_spec_id")))
    return ManifestHeader(
        format_version=version,
        content=content,
        spec_id=spec_id,
        schema_id=avs.int_or_none(metadata.get("schema-id", metadata.get("schema_id"))),
        schema_json=metadata.get("schema"),
        partition_spec_json=metadata.get("partition-spec", metadata.get("partition_spec")),
        metadata=metadata,
    )


def read_manifest_header(source: Any) -> ManifestHeader:
    """Only the key-value metadata of a manifest (format version, spec id, content, schema)."""
    data = avs.source_bytes(source)
    schema, metadata, _ = avs.open_avro(data, avs.source_location(source))
    return _header(metadata, avs.record_of(_field_type(schema, 2, "data_file")))


def _field_type(record: dict, field_id: int, name: str) -> Any:
    by_id = avs.fields_by_id(record)
    f = by_id.get(field_id)
    if f is None:
        f = next((x for x in record.get("fields", []) if x.get("name") == name), None)
    return None if f is None else f["type"]


def _lookup_spec(spec_lookup: SpecLookup, spec_id: int) -> PartitionSpec | None:
    if spec_lookup is None:
        return None
    if callable(spec_lookup) and not isinstance(spec_lookup, Mapping):
        return spec_lookup(spec_id)
    return spec_lookup.get(spec_id)


def stored_partition_fields(
    part_record: dict | None, spec: PartitionSpec | None, location: str
) -> list[dict | None]:
    """The stored Avro partition field of each spec field (by id, then name, then position).

    Without a spec: the stored fields as they are; None where a spec field is not stored; no
    fields without a stored partition record.
    """
    if part_record is None:
        return []
    avro_fields = part_record.get("fields", [])
    if spec is None:
        return list(avro_fields)
    by_id = avs.fields_by_id(part_record)
    chosen: list[dict | None] = []
    for i, pf in enumerate(spec.fields):
        f = by_id.get(pf.field_id)
        if f is None:
            f = next((x for x in avro_fields if x.get("name") == pf.name), None)
        if f is None and not by_id and i < len(avro_fields):
            f = avro_fields[i]
        chosen.append(f)
    if not by_id and len(avro_fields) != len(spec.fields):
        raise CorruptMetadata(
            f"{location}: partition struct has {len(avro_fields)} fields, spec has {len(spec.fields)}"
        )
    return chosen


def _partition_getter(
    part_record: dict | None, spec: PartitionSpec | None, named: dict[str, dict], location: str
) -> Callable[[Any], tuple[Any, ...]]:
    """Builds the function turning a stored partition record into a tuple in spec field order."""
    if part_record is None:
        return lambda p: ()
    chosen = stored_partition_fields(part_record, spec, location)
    names = [None if f is None else f["name"] for f in chosen]
    convs = [None if f is None else avs.partition_reader(f["type"], named) for f in chosen]
    if not names:
        return lambda p: ()
    if any(n is None for n in names) or any(c is not None for c in convs):

        def slow(p: Any) -> tuple[Any, ...]:
            if p is None:
                return tuple(None for _ in names)
            out = []
            for n, c in zip(names, convs, strict=True):
                v = None if n is None else p.get(n)
                out.append(v if c is None or v is None else c(v))
            return tuple(out)

        return slow
    if len(names) == 1:
        only = names[0]
        return lambda p: (None,) if p is None else (p[only],)
    getter = itemgetter(*names)
    return lambda p: tuple(None for _ in names) if p is None else getter(p)


def _as_dict(value: Any) -> dict[int, Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):  # an Avro map with string keys (non-standard writers)
        return {int(k): v for k, v in value.items()}
    return {e["key"]: e["value"] for e in value}


def read_manifest(
    source: Any,
    spec_lookup: SpecLookup = None,
    *,
    manifest_file: ManifestFile | None = None,
    spec_id: int | None = None,
) -> list[ManifestEntry]:
    """All entries of a v1–v3 Avro manifest, values exactly as stored (no inheritance).

    ``source`` is bytes, a binary stream or an ``InputFile``. The partition spec id is ``spec_id``,
    else the manifest file's ``partition_spec_id`` (the manifest list is authoritative, as in
    Iceberg Java), else the header's (``partition-spec-id`` or ``partition_spec_id``), else 0;
    ``spec_lookup`` (mapping or callable) orders partition tuples by that spec. v1 entries have
    no sequence numbers (None) and are DATA files.
    """
    return read_manifest_with_header(source, spec_lookup, manifest_file=manifest_file, spec_id=spec_id)[1]


def read_manifest_with_header(
    source: Any,
    spec_lookup: SpecLookup = None,
    *,
    manifest_file: ManifestFile | None = None,
    spec_id: int | None = None,
) -> tuple[ManifestHeader, list[ManifestEntry]]:
    """Like :func:`read_manifest`, also returning the header (format version, content, spec id)."""
    location = manifest_file.manifest_path if manifest_file is not None else avs.source_location(source)
    data = avs.source_bytes(source)
    schema, metadata, records = avs.open_avro(data, location)
    df_record = avs.record_of(_field_type(schema, 2, "data_file"))
    if df_record is None:
        raise CorruptMetadata(f"{location}: manifest has no data_file record", location=location)
    header = _header(metadata, df_record)
    sid = spec_id
    if sid is None:
        sid = manifest_file.partition_spec_id if manifest_file is not None else header.spec_id
    if sid is None:
        sid = 0
    spec = _lookup_spec(spec_lookup, sid)
    named = avs.named_types(schema)
    part_record = avs.record_of(_field_type(df_record, 102, "partition"))
    partition_of = _partition_getter(part_record, spec, named, location)

    n_status = avs.field_name(schema, 0, "status") or "status"
    n_snap = avs.field_name(schema, 1, "snapshot_id")
    n_seq = avs.field_name(schema, 3, "sequence_number")
    n_fseq = avs.field_name(schema, 4, "file_sequence_number")
    n_df = avs.field_name(schema, 2, "data_file") or "data_file"
    d = {fid: avs.field_name(df_record, fid, default) for fid, default in _DATA_FILE_FIELDS.items()}
    n_content, n_path, n_format, n_part = d[134], d[100], d[101], d[102]
    n_count, n_size = d[103], d[104]
    n_cs, n_vc, n_nc, n_nan, n_lo, n_hi = d[108], d[109], d[110], d[137], d[125], d[128]
    n_key, n_split, n_eq, n_sort = d[131], d[132], d[135], d[140]
    n_frid, n_ref, n_off, n_csize = d[142], d[143], d[144], d[145]
    if n_path is None or n_count is None:
        raise CorruptMetadata(f"{location}: data_file lacks file_path or record_count", location=location)

    statuses = {s.value: s for s in EntryStatus}
    contents = {c.value: c for c in FileContent}
    out: list[ManifestEntry] = []
    append = out.append
    with reading(location, "decode manifest entries"):
        for rec in records:
            df = rec[n_df]
            g = df.get
            split = g(n_split) if n_split else None
            eq = g(n_eq) if n_eq else None
            data_file = DataFile(
                file_path=df[n_path],
                file_format=(df[n_format] or "").lower() if n_format else "parquet",
                record_count=df[n_count],
                file_size_in_bytes=g(n_size) or 0,
                content=contents[g(n_content) or 0] if n_content else FileContent.DATA,
                spec_id=sid,
                partition=partition_of(df[n_part]) if n_part else (),
                column_sizes=_as_dict(g(n_cs)) if n_cs else None,
                value_counts=_as_dict(g(n_vc)) if n_vc else None,
                null_value_counts=_as_dict(g(n_nc)) if n_nc else None,
                nan_value_counts=_as_dict(g(n_nan)) if n_nan else None,
                lower_bounds=_as_dict(g(n_lo)) if n_lo else None,
                upper_bounds=_as_dict(g(n_hi)) if n_hi else None,
                key_metadata=g(n_key) if n_key else None,
                split_offsets=None if split is None else tuple(split),
                equality_ids=None if eq is None else tuple(eq),
                sort_order_id=g(n_sort) if n_sort else None,
                first_row_id=g(n_frid) if n_frid else None,
                referenced_data_file=g(n_ref) if n_ref else None,
                content_offset=g(n_off) if n_off else None,
                content_size_in_bytes=g(n_csize) if n_csize else None,
            )
            append(
                ManifestEntry(
                    status=statuses[rec[n_status]],
                    snapshot_id=rec.get(n_snap) if n_snap else None,
                    sequence_number=rec.get(n_seq) if n_seq else None,
                    file_sequence_number=rec.get(n_fseq) if n_fseq else None,
                    data_file=data_file,
                )
            )
    return header, out


_DATA_FILE_FIELDS: dict[int, str] = {
    134: "content",
    100: "file_path",
    101: "file_format",
    102: "partition",
    103: "record_count",
    104: "file_size_in_bytes",
    108: "column_sizes",
    109: "value_counts",
    110: "null_value_counts",
    137: "nan_value_counts",
    125: "lower_bounds",
    128: "upper_bounds",
    131: "key_metadata",
    132: "split_offsets",
    135: "equality_ids",
    140: "sort_order_id",
    142: "first_row_id",
    143: "referenced_data_file",
    144: "content_offset",
    145: "content_size_in_bytes",
}
