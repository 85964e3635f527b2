"""v1–v3 Avro manifest lists: write and read the ``manifest_file`` entries of one snapshot.

Writing assigns what only the commit knows: the snapshot's sequence number for manifests written
by this snapshot (``sequence_number``/``min_sequence_number`` of ``UNASSIGNED_SEQ``) and, in v3,
``first_row_id`` for data manifests that lack one (a counter starting at the snapshot's
``first-row-id``, advanced by each assigned manifest's added + existing row counts).
Reading resolves fields by id and defaults v1 lists to content DATA and sequence numbers 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from icefloe.errors import CorruptMetadata, ValidationError, reading
from icefloe.formats.avro import schemas as avs
from icefloe.formats.avro.container import (
    WriterSchema,
    can_frame,
    container_bytes,
    encode_record,
    framed_bytes,
    manifest_list_writer,
)
from icefloe.formats.avro.manifest import UNASSIGNED_SEQ
from icefloe.spec.content import ManifestContent, ManifestFile, PartitionFieldSummary


@dataclass(frozen=True)
class ManifestListResult:
    """What writing a manifest list produced: the entries as written, the row-id counter, and the
    entries exactly as :func:`read_manifest_list` will decode them from the bytes written
    (``as_read``: the reader's defaults applied, so a reader may take them instead of decoding)."""

    manifests: list[ManifestFile]
    length: int
    first_row_id: int | None = None
    next_row_id: int | None = None
    as_read: tuple[ManifestFile, ...] = ()

    @property
    def added_rows(self) -> int | None:
        """Row ids assigned by this list (v3 snapshot ``added-rows``), None before v3."""
        if self.first_row_id is None or self.next_row_id is None:
            return None
        return self.next_row_id - self.first_row_id


@dataclass(frozen=True)
class ManifestListHeader:
    """The key-value metadata of a manifest list (missing keys are None)."""

    format_version: int
    snapshot_id: int | None
    parent_snapshot_id: int | None
    sequence_number: int | None
    first_row_id: int | None
    metadata: dict[str, str]


def assign_commit_values(
    manifests: Iterable[ManifestFile],
    format_version: int,
    sequence_number: int,
    first_row_id: int | None,
) -> tuple[list[ManifestFile], int | None]:
    """Fill unassigned sequence numbers and (v3) data manifests' ``first_row_id``.

    Returns the updated manifests and the row-id counter after the last assignment (None below v3).
    """
    out: list[ManifestFile] = []
    next_row_id = first_row_id
    if format_version >= 3 and first_row_id is None:
        raise ValidationError("a v3 manifest list needs the snapshot's first-row-id")
    for m in manifests:
        changes: dict[str, Any] = {}
        if format_version >= 2:
            if m.sequence_number is None or m.sequence_number == UNASSIGNED_SEQ:
                changes["sequence_number"] = sequence_number
            if m.min_sequence_number is None or m.min_sequence_number == UNASSIGNED_SEQ:
                changes["min_sequence_number"] = sequence_number
        if format_version >= 3:
            if m.content != ManifestContent.DATA:
                if m.first_row_id is not None:
                    changes["first_row_id"] = None
            elif m.first_row_id is None:
                assert next_row_id is not None
                changes["first_row_id"] = next_row_id
                next_row_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        out.append(m.with_changes(**changes) if changes else m)
    return out, (next_row_id if format_version >= 3 else None)


def _summary_records(parts: Sequence[PartitionFieldSummary] | None) -> list[dict] | None:
    if parts is None:
        return None
    return [
        {
            "contains_null": bool(p.contains_null),
            "contains_nan": p.contains_nan,
            "lower_bound": p.lower_bound,
            "upper_bound": p.upper_bound,
        }
        for p in parts
    ]


def _record(m: ManifestFile, format_version: int) -> dict[str, Any]:
    counts = {
        "added_files_count": m.added_files_count,
        "existing_files_count": m.existing_files_count,
        "deleted_files_count": m.deleted_files_count,
        "added_rows_count": m.added_rows_count,
        "existing_rows_count": m.existing_rows_count,
        "deleted_rows_count": m.deleted_rows_count,
    }
    if format_version >= 2:
        missing = [k for k, v in counts.items() if v is None]
        if missing:
            raise ValidationError(f"manifest {m.manifest_path} lacks {', '.join(missing)} (required in v2+)")
    rec: dict[str, Any] = {
        "manifest_path": m.manifest_path,
        "manifest_length": m.manifest_length,
        "partition_spec_id": m.partition_spec_id,
        "added_snapshot_id": m.added_snapshot_id,
        **counts,
        "partitions": _summary_records(m.partitions),
        "key_metadata": m.key_metadata,
    }
    if format_version >= 2:
        rec["content"] = int(m.content)
        rec["sequence_number"] = m.sequence_number
        rec["min_sequence_number"] = m.min_sequence_number
    if format_version >= 3:
        rec["first_row_id"] = m.first_row_id
    return rec


def write_manifest_list(
    output: Any,
    manifests: Iterable[ManifestFile],
    format_version: int,
    snapshot_id: int,
    parent_snapshot_id: int | None,
    sequence_number: int,
    first_row_id: int | None = None,
    *,
    codec: str = avs.DEFAULT_CODEC,
    decoded: Iterable[ManifestFile] = (),
) -> ManifestListResult:
    """Write a v1–v3 manifest list to an ``OutputFile`` or binary stream.

    Unassigned sequence numbers become ``sequence_number``; in v3, data manifests without a
    ``first_row_id`` are assigned one starting at ``first_row_id``. The result carries the
    manifests as written and the counter end, so ``added_rows`` is the snapshot's ``added-rows``.
    ``decoded`` may name manifests that are what :func:`read_manifest_list` returned for a list
    (e.g. the parent's): those of this format version are their own ``as_read`` form.
    """
    if format_version not in (1, 2, 3):
        raise ValidationError(f"manifest lists are written for format versions 1-3, not {format_version}")
    assigned, next_row_id = assign_commit_values(manifests, format_version, sequence_number, first_row_id)
    meta = {
        "snapshot-id": str(snapshot_id),
        "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
        "format-version": str(format_version),
    }
    if format_version >= 2:
        meta["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        meta["first-row-id"] = str(first_row_id)
    writer = manifest_list_writer(format_version)
    if can_frame(len(assigned), codec):
        records, encoded = _encoded_records(assigned, format_version, writer)
        data = framed_bytes(writer, encoded, meta, codec)
    else:
        records = [_record(m, format_version) for m in assigned]
        data = container_bytes(writer, records, meta, codec)
    avs.write_to(output, data)
    return ManifestListResult(
        manifests=assigned,
        length=len(data),
        first_row_id=first_row_id if format_version >= 3 else None,
        next_row_id=next_row_id,
        as_read=_as_read(assigned, records, writer, format_version, decoded),
    )


def _encoded_records(
    manifests: Sequence[ManifestFile], format_version: int, writer: WriterSchema
) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Each manifest's record and its Avro encoding, made once per (frozen) manifest: a table's
    next list repeats the parent list's manifests, and encoding them again was most of the
    list's cost. The records are shared: nothing changes them."""
    records: list[dict[str, Any]] = []
    encoded: list[bytes] = []
    for m in manifests:
        key = (id(m), format_version)
        hit = _ENCODED.get(key)
        if hit is None or hit[0] is not m:
            record = _record(m, format_version)
            hit = (m, record, encode_record(writer, record))
            if len(_ENCODED) >= _ENCODED_MAX:
                _ENCODED.clear()
            _ENCODED[key] = hit
        records.append(hit[1])
        encoded.append(hit[2])
    return records, encoded


_ENCODED: dict[tuple[int, int], tuple[ManifestFile, dict[str, Any], bytes]] = {}
"""(id of a manifest, format version) -> (the manifest, kept alive so the id stays its own; its
record; the record's encoding)."""
_ENCODED_MAX = 4096


def _as_read(
    written: Sequence[ManifestFile],
    records: Sequence[dict[str, Any]],
    writer: WriterSchema,
    format_version: int,
    decoded: Iterable[ManifestFile],
) -> tuple[ManifestFile, ...]:
    """The written manifests as the reader decodes their records. A manifest the reader made from
    a list of this format version is that already (decoding its record gives it back), so it is
    kept as it is; the others are decoded from the records written."""
    same_form = {id(m) for m in decoded if m.format_version == format_version}
    decode = _list_record_decoder(writer, format_version)
    return tuple(m if id(m) in same_form else decode(rec) for m, rec in zip(written, records, strict=True))


@lru_cache(maxsize=16)
def _list_record_decoder(
    writer: WriterSchema, format_version: int
) -> Callable[[dict[str, Any]], ManifestFile]:
    """The record decoder of lists this process writes (one per prepared schema)."""
    return _record_decoder(writer.schema, format_version, None)


def read_manifest_list_header(source: Any) -> ManifestListHeader:
    """Only the key-value metadata of a manifest list."""
    data = avs.source_bytes(source)
    schema, metadata, _ = avs.open_avro(data, avs.source_location(source))
    return _list_header(schema, metadata)


def _list_header(schema: dict, metadata: dict[str, str]) -> ManifestListHeader:
    version = avs.int_or_none(metadata.get("format-version"))
    if version is None:
        ids = avs.fields_by_id(schema)
        version = 3 if 520 in ids else (2 if 517 in ids else 1)
    return ManifestListHeader(
        format_version=version,
        snapshot_id=avs.int_or_none(metadata.get("snapshot-id")),
        parent_snapshot_id=avs.int_or_none(metadata.get("parent-snapshot-id")),
        sequence_number=avs.int_or_none(metadata.get("sequence-number")),
        first_row_id=avs.int_or_none(metadata.get("first-row-id")),
        metadata=metadata,
    )


def read_manifest_list(source: Any) -> list[ManifestFile]:
    """The manifests of a v1–v3 manifest list (bytes, binary stream or ``InputFile``), in order."""
    location = avs.source_location(source)
    data = avs.source_bytes(source)
    schema, metadata, records = avs.open_avro(data, location)
    decode = _record_decoder(schema, _list_header(schema, metadata).format_version, location)
    with reading(location, "decode manifest list entries"):
        return [decode(rec) for rec in records]


def _record_decoder(
    schema: dict, format_version: int, location: str | None
) -> Callable[[dict[str, Any]], ManifestFile]:
    """Turns one record of a manifest list written with ``schema`` into its ``ManifestFile``
    (fields resolved by id; v1 lists default to content DATA and sequence numbers 0)."""
    n = {fid: avs.field_name(schema, fid, default) for fid, default in _LIST_FIELDS.items()}
    _check_field_types(schema, n, location)
    path_name = n[500]
    if path_name is None:
        raise CorruptMetadata(f"{location}: manifest list has no manifest_path field", location=location)
    part_type = n[507] and avs.non_null_branch(avs.fields_by_id(schema).get(507, {}).get("type"))
    summary_record = None
    if isinstance(part_type, dict) and part_type.get("type") == "array":
        summary_record = avs.record_of(part_type.get("items"))
    s_null = avs.field_name(summary_record, 509, "contains_null") or "contains_null"
    s_nan = avs.field_name(summary_record, 518, "contains_nan")
    s_lo = avs.field_name(summary_record, 510, "lower_bound")
    s_hi = avs.field_name(summary_record, 511, "upper_bound")

    def get(rec: dict, fid: int) -> Any:
        name = n[fid]
        return None if name is None else rec.get(name)

    def decode(rec: dict[str, Any]) -> ManifestFile:
        parts = get(rec, 507)
        summaries = None
        if parts is not None:
            summaries = tuple(
                PartitionFieldSummary(
                    contains_null=bool(p.get(s_null)),
                    contains_nan=p.get(s_nan) if s_nan else None,
                    lower_bound=p.get(s_lo) if s_lo else None,
                    upper_bound=p.get(s_hi) if s_hi else None,
                )
                for p in parts
            )
        seq = get(rec, 515)
        min_seq = get(rec, 516)
        content = get(rec, 517)
        return ManifestFile(
            manifest_path=rec[path_name],
            manifest_length=get(rec, 501) or 0,
            partition_spec_id=get(rec, 502) or 0,
            content=ManifestContent(content or 0),
            sequence_number=seq if seq is not None else 0,
            min_sequence_number=min_seq if min_seq is not None else 0,
            added_snapshot_id=get(rec, 503) or 0,
            added_files_count=get(rec, 504),
            existing_files_count=get(rec, 505),
            deleted_files_count=get(rec, 506),
            added_rows_count=get(rec, 512),
            existing_rows_count=get(rec, 513),
            deleted_rows_count=get(rec, 514),
            partitions=summaries,
            key_metadata=get(rec, 519),
            first_row_id=get(rec, 520),
            format_version=format_version,
        )

    return decode


def _check_field_types(schema: dict, names: dict[int, str | None], location: str | None) -> None:
    """Refuse a list whose fields do not have the types their ids promise (a damaged schema could
    otherwise hand a path to arithmetic on row ids), or whose two ids resolve to one field."""
    fields = {f.get("name"): f for f in schema.get("fields", []) if isinstance(f, dict)}
    seen: dict[str, int] = {}
    for fid, name in names.items():
        if name is None:
            continue
        if name in seen:
            raise CorruptMetadata(
                f"{location}: manifest list field {name!r} answers both field ids {seen[name]} and {fid}",
                location=location,
            )
        seen[name] = fid
        found = avs.non_null_branch(fields.get(name, {}).get("type"))
        kind = found.get("type") if isinstance(found, dict) else found
        if kind not in _LIST_FIELD_TYPES[fid]:
            raise CorruptMetadata(
                f"{location}: manifest list field {name!r} (id {fid}) has type {found!r}, "
                f"not one of {sorted(_LIST_FIELD_TYPES[fid])}",
                location=location,
            )


_LIST_FIELDS: dict[int, str] = {
    500: "manifest_path",
    501: "manifest_length",
    502: "partition_spec_id",
    517: "content",
    515: "sequence_number",
    516: "min_sequence_number",
    503: "added_snapshot_id",
    504: "added_files_count",
    505: "existing_files_count",
    506: "deleted_files_count",
    512: "added_rows_count",
    513: "existing_rows_count",
    514: "deleted_rows_count",
    507: "partitions",
    519: "key_metadata",
    520: "first_row_id",
}

_NUMBER = frozenset({"int", "long"})
_LIST_FIELD_TYPES: dict[int, frozenset[str]] = {
    **{fid: _NUMBER for fid in (501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 520)},
    500: frozenset({"string"}),
    507: frozenset({"array"}),
    519: frozenset({"bytes", "fixed"}),
}
"""Avro types a manifest list field may have, by field id (writers differ on int vs long)."""
