"""Table metadata JSON (spec Appendix C): exact key names and omissions per format version.

Readers are tolerant (unknown keys are kept in ``TableMetadata.extra``, optional keys may be
missing, v1 legacy ``schema``/``partition-spec`` are understood, ``current-snapshot-id: -1`` means
none); malformed input raises ``CorruptMetadata`` and ``format-version`` above 4 ``Unsupported``.

Snapshots and refs are coded in ``json_snapshots``, schemas, specs and sort orders in
``json_structures``; their functions are re-exported here for callers of the whole codec.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from icefloe.errors import CorruptMetadata, IcefloeError, Unsupported
from icefloe.spec.json_fields import as_list, optional_int, optional_list, required, required_int
from icefloe.spec.json_fragments import COMPACT, Fragments, RawArray, fragments_for, thread_fragments_for
from icefloe.spec.json_known import LOG_VALUE_TYPES, KnownForms, exact_prefix
from icefloe.spec.json_snapshots import (
    SNAPSHOT_FORMS,
    ref_from_dict,
    ref_to_dict,
    relative_location,
    resolve_location,
    snapshot_from_dict,
    snapshot_to_dict,
    snapshots_from_list,
)
from icefloe.spec.json_structures import (
    partition_field_to_dict,
    schema_from_dict,
    schema_to_dict,
    sort_order_from_dict,
    sort_order_to_dict,
    spec_from_dict,
    spec_to_dict,
)
from icefloe.spec.partitioning import PARTITION_FIELD_ID_START, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import (
    MAIN_BRANCH,
    MetadataLogEntry,
    RefType,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import SUPPORTED_FORMAT_VERSIONS, TableMetadata

MAX_FORMAT_VERSION = max(SUPPORTED_FORMAT_VERSIONS)
_NONE_VERBATIM: Mapping[str, int] = MappingProxyType({})
T = TypeVar("T")

__all__ = [
    "MAX_FORMAT_VERSION",
    "ArrayText",
    "known_array_texts",
    "ref_from_dict",
    "ref_to_dict",
    "schema_from_dict",
    "schema_to_dict",
    "snapshot_from_dict",
    "snapshot_to_dict",
    "sort_order_from_dict",
    "sort_order_to_dict",
    "spec_from_dict",
    "spec_to_dict",
    "table_metadata_from_json",
    "table_metadata_json_bytes",
    "table_metadata_json_chunks",
    "table_metadata_to_dict",
    "table_metadata_to_json",
]

_KNOWN_TABLE_KEYS = frozenset(
    {
        "format-version",
        "table-uuid",
        "location",
        "last-sequence-number",
        "last-updated-ms",
        "last-column-id",
        "schema",
        "schemas",
        "current-schema-id",
        "partition-spec",
        "partition-specs",
        "default-spec-id",
        "last-partition-id",
        "properties",
        "current-snapshot-id",
        "snapshots",
        "snapshot-log",
        "metadata-log",
        "sort-orders",
        "default-sort-order-id",
        "refs",
        "statistics",
        "partition-statistics",
        "next-row-id",
        "encryption-keys",
    }
)


# ---------------------------------------------------------------------------------------------
# table metadata


def _load(text: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(text, Mapping):
        return text
    if isinstance(text, bytes | bytearray):
        raw = bytes(text)
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError) as exc:
                raise CorruptMetadata(f"table metadata is not valid gzip: {exc}") from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptMetadata(f"table metadata is not UTF-8 text: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptMetadata(f"table metadata is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CorruptMetadata(f"table metadata must be a JSON object, got {type(data).__name__}")
    return data


def table_metadata_from_json(
    text: str | bytes | Mapping[str, Any],
    known: TableMetadata | None = None,
    verbatim: Mapping[str, int] = _NONE_VERBATIM,
) -> TableMetadata:
    """Parse table metadata from JSON text, (optionally gzipped) bytes, or an already-parsed dict.

    ``known`` is metadata of the same table held already (e.g. what a commit proposed, when the
    catalog answers with what it committed): a snapshot the JSON repeats field for field is taken
    from it instead of parsed again, so answering a commit costs the new snapshots, not the table's
    history. The result is the same as without ``known``.

    ``verbatim`` maps members (``snapshots``, ``snapshot-log``) to a count ``k``: the member's
    first item is a marker standing for ``known``'s first ``k`` items, whose text the JSON held
    exactly as ``known_array_texts(known)`` spells it and which was left unparsed (``json_reply``).
    Those are taken from ``known``, as parsing that text would have given; the items after the
    marker are parsed.
    """
    data = _load(text)
    try:
        return _table_metadata_from_dict(data, known, verbatim)
    except (CorruptMetadata, Unsupported):
        raise
    except IcefloeError as exc:
        raise CorruptMetadata(f"invalid table metadata: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptMetadata(f"invalid table metadata: {type(exc).__name__}: {exc}") from exc


def _table_metadata_from_dict(
    data: Mapping[str, Any], known: TableMetadata | None = None, verbatim: Mapping[str, int] = _NONE_VERBATIM
) -> TableMetadata:
    what = "table metadata"
    fv = required_int(data, "format-version", what)
    if fv > MAX_FORMAT_VERSION:
        raise Unsupported(
            f"table format-version {fv} is not supported (icefloe reads 1 to {MAX_FORMAT_VERSION})"
        )
    if fv < 1:
        raise CorruptMetadata(f"invalid table format-version {fv}")

    # schemas
    if data.get("schemas") is not None:
        schemas = [schema_from_dict(s) for s in as_list(data["schemas"], "schemas", what)]
        current_schema_id = optional_int(data, "current-schema-id", what)
        if current_schema_id is None:
            if fv >= 2 or data.get("schema") is None:
                raise CorruptMetadata(f"{what} is missing required field 'current-schema-id'")
            current_schema_id = schema_from_dict(data["schema"]).schema_id
    elif fv == 1 and data.get("schema") is not None:
        legacy = schema_from_dict(data["schema"])
        schemas, current_schema_id = [legacy], legacy.schema_id
    else:
        raise CorruptMetadata(f"{what} is missing required field 'schemas'")
    if not any(s.schema_id == current_schema_id for s in schemas):
        raise CorruptMetadata(f"current-schema-id {current_schema_id} is not among the table's schemas")

    # partition specs
    if data.get("partition-specs") is not None:
        specs = [spec_from_dict(s) for s in as_list(data["partition-specs"], "partition-specs", what)]
        default_spec_id = optional_int(data, "default-spec-id", what)
        if default_spec_id is None:
            if fv >= 2:
                raise CorruptMetadata(f"{what} is missing required field 'default-spec-id'")
            default_spec_id = specs[0].spec_id if specs else 0
    elif fv == 1 and data.get("partition-spec") is not None:
        specs = [spec_from_dict(data["partition-spec"])]
        default_spec_id = 0
    else:
        raise CorruptMetadata(f"{what} is missing required field 'partition-specs'")
    last_partition_id = optional_int(data, "last-partition-id", what)
    if last_partition_id is None:
        if fv >= 2:
            raise CorruptMetadata(f"{what} is missing required field 'last-partition-id'")
        last_partition_id = max(
            (s.last_assigned_field_id for s in specs), default=PARTITION_FIELD_ID_START - 1
        )

    # sort orders (tolerate their absence: some writers omit them)
    if data.get("sort-orders") is not None:
        orders = [sort_order_from_dict(o) for o in as_list(data["sort-orders"], "sort-orders", what)]
    else:
        orders = [SortOrder(order_id=0)]
    default_sort_order_id = optional_int(data, "default-sort-order-id", what)
    if default_sort_order_id is None:
        default_sort_order_id = orders[0].order_id if orders else 0

    table_location = data.get("location")
    table = f"{data.get('table-uuid')}@{table_location}"  # whose held lists the memos keep
    relative_to = table_location if fv >= 4 and isinstance(table_location, str) else ""
    held = verbatim.get("snapshots", 0) if known is not None else 0
    if known is not None and held:
        rest = optional_list(data, "snapshots", what)[1:]  # after the marker for known's first ones
        snapshots = _after_held(known.snapshots, held, snapshots_from_list(rest, relative_to, (), fv, table))
    else:
        snapshots = snapshots_from_list(
            optional_list(data, "snapshots", what),
            relative_to,
            known.snapshots if known is not None and fv >= 2 else (),
            fv,
            table,
        )
    current_snapshot_id = optional_int(data, "current-snapshot-id", what)
    if current_snapshot_id == -1:
        current_snapshot_id = None

    refs_data = data.get("refs")
    refs: dict[str, SnapshotRef] = {}
    if refs_data is not None:
        if not isinstance(refs_data, dict):
            raise CorruptMetadata(f"{what} field 'refs' must be a JSON object")
        refs = {str(name): ref_from_dict(r) for name, r in refs_data.items()}
    if MAIN_BRANCH not in refs and current_snapshot_id is not None:
        refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id, RefType.BRANCH)

    held = verbatim.get("snapshot-log", 0) if known is not None else 0
    if known is not None and held:
        rest = optional_list(data, "snapshot-log", what)[1:]
        snapshot_log = _after_held(known.snapshot_log, held, _snapshot_log({"snapshot-log": rest}, (), table))
    else:
        snapshot_log = _snapshot_log(data, known.snapshot_log if known is not None else (), table)
    metadata_log = _metadata_log(data, known.metadata_log if known is not None else (), table, relative_to)

    properties = data.get("properties") or {}
    if not isinstance(properties, dict):
        raise CorruptMetadata(f"{what} field 'properties' must be a JSON object")

    if fv >= 2:
        table_uuid = str(required(data, "table-uuid", what))
        last_sequence_number = required_int(data, "last-sequence-number", what)
    else:
        table_uuid = str(data.get("table-uuid") or "")
        last_sequence_number = optional_int(data, "last-sequence-number", what) or 0

    location = data.get("location")
    if location is None and fv < 4:
        raise CorruptMetadata(f"{what} is missing required field 'location'")

    next_row_id: int | None = None
    if fv >= 3:
        next_row_id = optional_int(data, "next-row-id", what)
        if next_row_id is None:  # tolerate writers that omit it: past every assigned row id
            next_row_id = max(
                (
                    (s.first_row_id or 0) + (s.added_rows or 0)
                    for s in snapshots
                    if s.first_row_id is not None
                ),
                default=0,
            )

    return TableMetadata(
        format_version=fv,
        table_uuid=table_uuid,
        location="" if location is None else str(location),
        last_updated_ms=required_int(data, "last-updated-ms", what),
        last_column_id=required_int(data, "last-column-id", what),
        schemas=tuple(schemas),
        current_schema_id=current_schema_id,
        partition_specs=tuple(specs),
        default_spec_id=default_spec_id,
        last_partition_id=last_partition_id,
        sort_orders=tuple(orders),
        default_sort_order_id=default_sort_order_id,
        last_sequence_number=last_sequence_number,
        properties={str(k): str(v) for k, v in properties.items()},
        current_snapshot_id=current_snapshot_id,
        snapshots=snapshots,
        snapshot_log=snapshot_log,
        metadata_log=metadata_log,
        refs=refs,
        statistics=tuple(optional_list(data, "statistics", what)),
        partition_statistics=tuple(optional_list(data, "partition-statistics", what)),
        next_row_id=next_row_id,
        encryption_keys=tuple(optional_list(data, "encryption-keys", what)),
        extra={k: v for k, v in data.items() if k not in _KNOWN_TABLE_KEYS},
    )


def _after_held(known: tuple[T, ...], held: int, rest: tuple[T, ...]) -> tuple[T, ...]:
    """``known``'s first ``held`` items, then ``rest`` (``known`` itself when that is all of it:
    the next commit's memos then find the very same tuple)."""
    if not rest:
        return known if held == len(known) else known[:held]
    return (*known[:held], *rest)


def _log_entries(
    data: Mapping[str, Any], key: str, value_key: str, cls: Callable[[int, Any], Any]
) -> tuple[Any, ...]:
    """Parse ``snapshot-log`` / ``metadata-log`` entries (``timestamp-ms`` plus one value each)."""
    what = f"{key} entry"
    value_type = int if value_key == "snapshot-id" else str
    out = []
    for e in optional_list(data, key, "table metadata"):
        if type(e) is dict and type(e.get("timestamp-ms")) is int and type(e.get(value_key)) is value_type:
            out.append(cls(e["timestamp-ms"], e[value_key]))
        elif value_type is int:
            out.append(cls(required_int(e, "timestamp-ms", what), required_int(e, value_key, what)))
        else:
            out.append(cls(required_int(e, "timestamp-ms", what), str(required(e, value_key, what))))
    return tuple(out)


def _snapshot_log(
    data: Mapping[str, Any], held: Sequence[SnapshotLogEntry], table: str
) -> tuple[SnapshotLogEntry, ...]:
    """The snapshot log; a prefix repeating ``held`` exactly is taken from it."""
    items = optional_list(data, "snapshot-log", "table metadata")
    forms = _SNAPSHOT_LOG_FORMS.forms(held, table) if held else None
    reused = exact_prefix(items, forms, LOG_VALUE_TYPES) if forms is not None else 0
    rest = _log_entries({"snapshot-log": items[reused:]}, "snapshot-log", "snapshot-id", SnapshotLogEntry)
    return (*held[:reused], *rest)


def _metadata_log(
    data: Mapping[str, Any], held: Sequence[MetadataLogEntry], table: str, table_location: str
) -> tuple[MetadataLogEntry, ...]:
    """The metadata log, files resolved against ``table_location`` (v4; "" leaves them as
    written); a prefix repeating ``held`` exactly is taken from it."""
    items = optional_list(data, "metadata-log", "table metadata")
    forms = _METADATA_LOG_FORMS.forms(held, (table, table_location)) if held else None
    reused = exact_prefix(items, forms, LOG_VALUE_TYPES) if forms is not None else 0
    rest = _log_entries({"metadata-log": items[reused:]}, "metadata-log", "metadata-file", MetadataLogEntry)
    if table_location:
        rest = tuple(
            MetadataLogEntry(e.timestamp_ms, resolve_location(e.metadata_file, table_location)) for e in rest
        )
    return (*held[:reused], *rest)


def _snapshot_log_form(entry: SnapshotLogEntry, table: str) -> dict[str, Any]:
    return _snapshot_log_entry_to_dict(entry)


def _snapshot_log_parses_back(form: dict[str, Any], entry: SnapshotLogEntry, table: str) -> bool:
    return type(entry.timestamp_ms) is int and type(entry.snapshot_id) is int


def _metadata_log_form(entry: MetadataLogEntry, context: tuple[str, str]) -> dict[str, Any]:
    """As a metadata file writes it: relative to the table location when one is given (v4)."""
    return _metadata_log_entry_to_dict(entry, context[1])


def _metadata_log_parses_back(
    form: dict[str, Any], entry: MetadataLogEntry, context: tuple[str, str]
) -> bool:
    written = form["metadata-file"]
    return (
        type(entry.timestamp_ms) is int
        and type(written) is str
        and (resolve_location(written, context[1]) if context[1] else written) == entry.metadata_file
    )


_SNAPSHOT_LOG_FORMS: KnownForms[SnapshotLogEntry, str] = KnownForms(
    _snapshot_log_form, _snapshot_log_parses_back, LOG_VALUE_TYPES
)
_METADATA_LOG_FORMS: KnownForms[MetadataLogEntry, tuple[str, str]] = KnownForms(
    _metadata_log_form, _metadata_log_parses_back, LOG_VALUE_TYPES
)


def table_metadata_to_dict(md: TableMetadata) -> dict[str, Any]:
    """JSON object of table metadata, with the keys and omissions of its format version."""
    return _metadata_members(md, None)


def _schema_id(s: Schema) -> int:
    return s.schema_id


def _spec_id(s: PartitionSpec) -> int:
    return s.spec_id


def _order_id(o: SortOrder) -> int:
    return o.order_id


def _snapshot_id(s: Snapshot) -> int:
    return s.snapshot_id


def _metadata_members(md: TableMetadata, fragments: Fragments | None) -> dict[str, Any]:
    """The top-level members in file order; with ``fragments`` the big lists are pre-encoded JSON."""
    fv = md.format_version
    out: dict[str, Any] = {"format-version": fv}
    if md.table_uuid or fv >= 2:
        out["table-uuid"] = md.table_uuid
    if md.location or fv < 4:
        out["location"] = md.location
    if fv >= 2:
        out["last-sequence-number"] = md.last_sequence_number
    out["last-updated-ms"] = md.last_updated_ms
    out["last-column-id"] = md.last_column_id
    if fv == 1:
        out["schema"] = schema_to_dict(md.schema())
    out["current-schema-id"] = md.current_schema_id
    if fragments is None:
        out["schemas"] = [schema_to_dict(s) for s in md.schemas]
    else:
        out["schemas"] = fragments.join("schema", md.schemas, _schema_id, _encoder(schema_to_dict))
    if fv == 1:
        out["partition-spec"] = [partition_field_to_dict(f) for f in md.spec().fields]
    out["default-spec-id"] = md.default_spec_id
    if fragments is None:
        out["partition-specs"] = [spec_to_dict(s) for s in md.partition_specs]
    else:
        out["partition-specs"] = fragments.join("spec", md.partition_specs, _spec_id, _encoder(spec_to_dict))
    out["last-partition-id"] = md.last_partition_id
    out["default-sort-order-id"] = md.default_sort_order_id
    if fragments is None:
        out["sort-orders"] = [sort_order_to_dict(o) for o in md.sort_orders]
    else:
        out["sort-orders"] = fragments.join("order", md.sort_orders, _order_id, _encoder(sort_order_to_dict))
    out["properties"] = dict(md.properties)
    if md.current_snapshot_id is not None:
        out["current-snapshot-id"] = md.current_snapshot_id
    else:
        out["current-snapshot-id"] = -1 if fv <= 2 else None
    if fv >= 3:
        out["next-row-id"] = md.next_row_id or 0
    out["refs"] = {name: ref_to_dict(r) for name, r in md.refs.items()}
    if fragments is None:
        out["snapshots"] = [snapshot_to_dict(s, fv, md.location) for s in md.snapshots]
    else:
        out["snapshots"] = _snapshots_text(md, fragments)
    out["statistics"] = list(md.statistics)
    out["partition-statistics"] = list(md.partition_statistics)
    if fragments is None:
        out["snapshot-log"] = [_snapshot_log_entry_to_dict(e) for e in md.snapshot_log]
    else:
        out["snapshot-log"] = _snapshot_log_text(md, fragments)
    relative = md.location if fv >= 4 else ""
    if fragments is None:
        out["metadata-log"] = [_metadata_log_entry_to_dict(e, relative) for e in md.metadata_log]
    else:
        out["metadata-log"] = fragments.join(
            f"metadata-log-{relative}",
            md.metadata_log,
            _metadata_file,
            lambda e: _metadata_log_entry_json(e, relative),
        )
    if md.encryption_keys:
        out["encryption-keys"] = list(md.encryption_keys)
    for key, value in md.extra.items():
        out.setdefault(key, value)
    return out


def _snapshots_text(md: TableMetadata, fragments: Fragments) -> RawArray:
    fv = md.format_version
    return fragments.join(
        f"snapshot-v{fv}-{md.location}",
        md.snapshots,
        _snapshot_id,
        _encoder(lambda s: snapshot_to_dict(s, fv, md.location)),
    )


def _snapshot_log_text(md: TableMetadata, fragments: Fragments) -> RawArray:
    return fragments.join("snapshot-log", md.snapshot_log, None, _snapshot_log_entry_json)


class ArrayText(NamedTuple):
    """A held array as icefloe writes it: its UTF-8 without the closing ``]``, how many items it
    holds, and how long the text of all but its last item is (0 when it holds one)."""

    body: bytes
    items: int
    head: int


def known_array_texts(md: TableMetadata) -> dict[str, ArrayText]:
    """The members of ``md``'s JSON that parsing gives back as ``md``'s very objects, as icefloe
    writes them: ``snapshots`` and ``snapshot-log``, their text from the calling thread's memo of the
    table (``thread_fragments_for``; not copied). A member is left out when it is empty or one of its
    items would not parse back exactly (and for v1, whose snapshots are always parsed). For
    ``json_reply``: a reply that repeats this text verbatim, or the text of all but the last item,
    need not be parsed there."""
    if md.format_version < 2:
        return {}
    fragments = thread_fragments_for(md)
    texts: dict[str, ArrayText] = {}
    table = f"{md.table_uuid}@{md.location}"  # the parser's memo context (_table_metadata_from_dict)
    context = (md.format_version, md.location if md.format_version >= 4 else "", table)
    if md.snapshots and SNAPSHOT_FORMS.forms(md.snapshots, context) is not None:
        raw = _snapshots_text(md, fragments)
        texts["snapshots"] = ArrayText(raw.body, len(md.snapshots), raw.head)
    if md.snapshot_log and _SNAPSHOT_LOG_FORMS.forms(md.snapshot_log, table) is not None:
        raw = _snapshot_log_text(md, fragments)
        texts["snapshot-log"] = ArrayText(raw.body, len(md.snapshot_log), raw.head)
    return texts


def table_metadata_to_json(md: TableMetadata, indent: int | None = None) -> str:
    """Serialise table metadata to JSON text (compact unless ``indent`` is given).

    The compact form is what metadata files hold (``table_metadata_json_bytes`` gives its UTF-8
    directly). Its snapshots, schemas, partition specs, sort orders, snapshot-log and
    metadata-log are encoded once per table and reused by later writes of the same table (they
    are immutable), so a commit to a table with a long history mostly joins cached text. The
    text is exactly ``json.dumps(table_metadata_to_dict(md), separators=(",", ":"),
    ensure_ascii=False)``.
    """
    if indent is not None:
        return json.dumps(
            table_metadata_to_dict(md), indent=indent, separators=(",", ": "), ensure_ascii=False
        )
    return table_metadata_json_bytes(md).decode("utf-8")


def table_metadata_json_bytes(md: TableMetadata) -> bytes:
    """The UTF-8 of ``table_metadata_to_json(md)``: a metadata file's bytes, made with one copy
    of the table's kept arrays (no string is built and encoded)."""
    return b"".join(table_metadata_json_chunks(md))


def table_metadata_json_chunks(md: TableMetadata) -> list[bytes]:
    """The UTF-8 of ``table_metadata_to_json(md)`` in pieces, for incremental codecs.

    The odd-numbered chunks are the bodies of the memoised arrays (snapshots, snapshot-log,
    metadata-log, schemas, specs, sort orders) without their closing ``]``: from one commit of a table to the
    next such a body usually only grows at its end. The even-numbered chunks are the text around
    them.
    """
    encode = COMPACT.encode
    chunks: list[bytes] = []
    pending: list[str] = []
    for key, value in _metadata_members(md, fragments_for(md)).items():
        pending += (",", encode_basestring(key), ":")
        kind = type(value)
        if kind is RawArray:
            chunks += ("".join(pending).encode("utf-8"), value.body)
            pending = ["]"]
        elif kind is int:  # the scalars spelled as the encoder would, without its set-up per call
            pending.append(int.__repr__(value))
        elif kind is str:
            pending.append(encode_basestring(value))
        elif value is None:
            pending.append("null")
        else:
            pending.append(encode(value))
    pending.append("}")
    chunks.append("".join(pending).encode("utf-8"))
    chunks[0] = b"{" + chunks[0][1:]
    return chunks


def _encoder(to_dict: Callable[[Any], Any]) -> Callable[[Any], str]:
    return lambda item: COMPACT.encode(to_dict(item))


def _metadata_file(e: MetadataLogEntry) -> str:
    return e.metadata_file


def _metadata_log_entry_to_dict(e: MetadataLogEntry, table_location: str) -> dict[str, Any]:
    return {
        "timestamp-ms": e.timestamp_ms,
        "metadata-file": relative_location(e.metadata_file, table_location),
    }


def _metadata_log_entry_json(e: MetadataLogEntry, table_location: str) -> str:
    if type(e.timestamp_ms) is int and type(e.metadata_file) is str:
        file = encode_basestring(relative_location(e.metadata_file, table_location))
        return f'{{"timestamp-ms":{e.timestamp_ms},"metadata-file":{file}}}'
    return COMPACT.encode(_metadata_log_entry_to_dict(e, table_location))


def _snapshot_log_entry_to_dict(e: SnapshotLogEntry) -> dict[str, Any]:
    return {"timestamp-ms": e.timestamp_ms, "snapshot-id": e.snapshot_id}


def _snapshot_log_entry_json(e: SnapshotLogEntry) -> str:
    if type(e.timestamp_ms) is int and type(e.snapshot_id) is int:
        return f'{{"timestamp-ms":{e.timestamp_ms},"snapshot-id":{e.snapshot_id}}}'
    return COMPACT.encode(_snapshot_log_entry_to_dict(e))
