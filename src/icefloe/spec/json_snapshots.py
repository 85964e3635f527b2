"""Snapshot and ref JSON objects (spec Appendix C), and the v4 rule that writes metadata locations
relative to the table location.

Parsing a table's snapshots is the part of reading table metadata that grows with its history, so
``snapshots_from_list`` takes snapshots the caller already holds (a commit's reply repeats what
the client proposed) instead of parsing their objects again, when those say exactly what they hold.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from icefloe.errors import CorruptMetadata
from icefloe.spec.json_fields import as_list, optional_int, required, required_int
from icefloe.spec.json_known import SNAPSHOT_VALUE_TYPES, KnownForms, exact_prefix
from icefloe.spec.snapshots import RefType, Snapshot, SnapshotRef

# ---------------------------------------------------------------------------------------------
# locations (format version 4 writes metadata locations relative to the table location)

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def relative_location(location: str, table_location: str) -> str:
    """``location`` relative to ``table_location`` when it lies under it (Java
    ``LocationUtil.relativizeLocation``); unchanged otherwise or without a table location."""
    if table_location and not table_location.endswith("/") and location.startswith(table_location + "/"):
        return location[len(table_location) + 1 :]
    return location


def is_relative_location(location: str) -> bool:
    """Whether a metadata location has no URI scheme (it is relative to the table location)."""
    return not _SCHEME.match(location)


def resolve_location(location: str, table_location: str) -> str:
    """A metadata location as an absolute one: a location without a URI scheme is relative to the
    table location (spec "Path Resolution": joined with one ``/``, nothing normalised)."""
    if not table_location or _SCHEME.match(location):
        return location
    return f"{table_location}/{location}"


def _resolved_root(snapshot: Snapshot, table_location: str) -> Snapshot:
    root = snapshot.root_manifest
    if root is None or _SCHEME.match(root):
        return snapshot
    return dataclasses.replace(snapshot, root_manifest=resolve_location(root, table_location))


# ---------------------------------------------------------------------------------------------
# snapshots and refs


def snapshot_to_dict(snapshot: Snapshot, format_version: int = 2, table_location: str = "") -> dict[str, Any]:
    """JSON object of a snapshot, with the keys the format version writes.

    From format version 4 on, a ``root-manifest`` under ``table_location`` is written relative to it.
    """
    out: dict[str, Any] = {}
    if format_version >= 2:
        out["sequence-number"] = snapshot.sequence_number
    out["snapshot-id"] = snapshot.snapshot_id
    if snapshot.parent_snapshot_id is not None:
        out["parent-snapshot-id"] = snapshot.parent_snapshot_id
    out["timestamp-ms"] = snapshot.timestamp_ms
    if snapshot.summary or format_version >= 2:
        out["summary"] = dict(snapshot.summary)
    if snapshot.root_manifest is not None:
        out["root-manifest"] = (
            relative_location(snapshot.root_manifest, table_location)
            if format_version >= 4
            else snapshot.root_manifest
        )
    if snapshot.manifest_list is not None:
        out["manifest-list"] = snapshot.manifest_list
    if snapshot.manifests is not None:
        out["manifests"] = list(snapshot.manifests)
    if snapshot.schema_id is not None:
        out["schema-id"] = snapshot.schema_id
    if snapshot.first_row_id is not None:
        out["first-row-id"] = snapshot.first_row_id
    if snapshot.added_rows is not None:
        out["added-rows"] = snapshot.added_rows
    if snapshot.key_id is not None:
        out["key-id"] = snapshot.key_id
    return out


def snapshot_from_dict(data: Any) -> Snapshot:
    """Parse a snapshot object (v1 ``manifests`` list, v3 row lineage, v4 ``root-manifest``)."""
    fast = _snapshot_from_dict_fast(data)
    return fast if fast is not None else _snapshot_from_dict_checked(data)


def _snapshot_from_dict_fast(data: Any) -> Snapshot | None:
    """The common well-formed case without per-field checks (None: take the checked path)."""
    if type(data) is not dict or "manifests" in data:
        return None
    get = data.get
    snapshot_id, timestamp_ms, summary = get("snapshot-id"), get("timestamp-ms"), get("summary")
    parent, seq, schema_id = get("parent-snapshot-id"), get("sequence-number"), get("schema-id")
    first_row_id, added_rows = get("first-row-id"), get("added-rows")
    manifest_list, root_manifest, key_id = get("manifest-list"), get("root-manifest"), get("key-id")
    if type(snapshot_id) is not int or type(timestamp_ms) is not int:
        return None
    for number in (parent, seq, schema_id, first_row_id, added_rows):
        if number is not None and type(number) is not int:
            return None
    for text in (manifest_list, root_manifest, key_id):
        if text is not None and type(text) is not str:
            return None
    if manifest_list is None and root_manifest is None:
        return None
    if summary is None:
        summary = {}
    elif type(summary) is not dict:
        return None
    else:
        summary = {k: v if type(v) is str else str(v) for k, v in summary.items()}
    return Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=timestamp_ms,
        summary=summary,
        parent_snapshot_id=parent,
        sequence_number=seq or 0,
        manifest_list=manifest_list,
        root_manifest=root_manifest,
        schema_id=schema_id,
        first_row_id=first_row_id,
        added_rows=added_rows,
        key_id=key_id,
    )


def _snapshot_from_dict_checked(data: Any) -> Snapshot:
    what = "snapshot"
    snapshot_id = required_int(data, "snapshot-id", what)
    what = f"snapshot {snapshot_id}"
    summary = data.get("summary") or {}
    if not isinstance(summary, dict):
        raise CorruptMetadata(f"{what} field 'summary' must be a JSON object")
    manifests = data.get("manifests")
    if manifests is not None:
        manifests = tuple(str(m) for m in as_list(manifests, "manifests", what))
    manifest_list = data.get("manifest-list")
    root_manifest = data.get("root-manifest")
    if manifest_list is None and manifests is None and root_manifest is None:
        raise CorruptMetadata(f"{what} has none of 'manifest-list', 'manifests' or 'root-manifest'")
    key_id = data.get("key-id")
    return Snapshot(
        snapshot_id=snapshot_id,
        timestamp_ms=required_int(data, "timestamp-ms", what),
        summary={str(k): str(v) for k, v in summary.items()},
        parent_snapshot_id=optional_int(data, "parent-snapshot-id", what),
        sequence_number=optional_int(data, "sequence-number", what) or 0,
        manifest_list=None if manifest_list is None else str(manifest_list),
        manifests=manifests,
        root_manifest=None if root_manifest is None else str(root_manifest),
        schema_id=optional_int(data, "schema-id", what),
        first_row_id=optional_int(data, "first-row-id", what),
        added_rows=optional_int(data, "added-rows", what),
        key_id=None if key_id is None else str(key_id),
    )


def snapshots_from_list(
    items: Sequence[Any], table_location: str, held: Sequence[Snapshot], format_version: int, table: str = ""
) -> tuple[Snapshot, ...]:
    """The table's snapshots (v4 roots resolved against ``table_location`` when it is given).

    ``held`` are snapshots of the same table held already: when the list starts with exactly
    their JSON forms (the common reply to a commit: what the client proposed, then what the
    catalog added), those are taken with one C-level comparison; after that, one of ``held`` is
    taken where its item says exactly what it holds, the rest parsed."""
    reused = 0
    if held:
        forms = SNAPSHOT_FORMS.forms(held, (format_version, table_location, table))
        if forms is not None:
            reused = exact_prefix(items, forms, SNAPSHOT_FORMS.value_types)
    out: list[Snapshot] = list(held[:reused])
    known = {s.snapshot_id: s for s in held[reused:]}
    for item in items[reused:]:
        snapshot_id = item.get("snapshot-id") if known and type(item) is dict else None
        found = known.get(snapshot_id) if type(snapshot_id) is int else None
        if found is not None and _says_exactly(item, found, table_location):
            out.append(found)
            continue
        snapshot = snapshot_from_dict(item)
        out.append(_resolved_root(snapshot, table_location) if table_location else snapshot)
    return tuple(out)


def _snapshot_form(snapshot: Snapshot, context: tuple[int, str, str]) -> dict[str, Any]:
    format_version, table_location, _ = context
    return snapshot_to_dict(snapshot, format_version, table_location)


def _parses_back(form: dict[str, Any], snapshot: Snapshot, context: tuple[int, str, str]) -> bool:
    snapshot_id = form.get("snapshot-id")
    return (
        type(snapshot_id) is int
        and snapshot_id == snapshot.snapshot_id
        and _says_exactly(form, snapshot, context[1])
    )


SNAPSHOT_FORMS: KnownForms[Snapshot, tuple[int, str, str]] = KnownForms(
    _snapshot_form, _parses_back, SNAPSHOT_VALUE_TYPES
)


def _says_exactly(item: dict[str, Any], snapshot: Snapshot, table_location: str) -> bool:
    """Whether parsing ``item`` (a v2+ snapshot object) gives ``snapshot``: every member it reads,
    of the type it takes without converting, is equal."""
    if "manifests" in item or snapshot.manifests is not None:
        return False
    get = item.get
    root = get("root-manifest")
    if root is not None and table_location:
        if type(root) is not str:
            return False
        root = resolve_location(root, table_location)
    summary = get("summary")
    return (
        type(get("timestamp-ms")) is int
        and get("timestamp-ms") == snapshot.timestamp_ms
        and type(get("sequence-number")) is int
        and get("sequence-number") == snapshot.sequence_number
        and _same_int(get("parent-snapshot-id"), snapshot.parent_snapshot_id)
        and _same_int(get("schema-id"), snapshot.schema_id)
        and _same_int(get("first-row-id"), snapshot.first_row_id)
        and _same_int(get("added-rows"), snapshot.added_rows)
        and _same_text(get("manifest-list"), snapshot.manifest_list)
        and _same_text(root, snapshot.root_manifest)
        and _same_text(get("key-id"), snapshot.key_id)
        and type(summary) is dict
        and summary == snapshot.summary  # the held values are strings: equal ones are strings too
    )


def _same_int(value: Any, held: int | None) -> bool:
    return value is None if held is None else type(value) is int and value == held


def _same_text(value: Any, held: str | None) -> bool:
    return value is None if held is None else type(value) is str and value == held


def ref_to_dict(ref: SnapshotRef) -> dict[str, Any]:
    """JSON object of a branch or tag."""
    out: dict[str, Any] = {"snapshot-id": ref.snapshot_id, "type": ref.ref_type.value}
    if ref.min_snapshots_to_keep is not None:
        out["min-snapshots-to-keep"] = ref.min_snapshots_to_keep
    if ref.max_snapshot_age_ms is not None:
        out["max-snapshot-age-ms"] = ref.max_snapshot_age_ms
    if ref.max_ref_age_ms is not None:
        out["max-ref-age-ms"] = ref.max_ref_age_ms
    return out


def ref_from_dict(data: Any) -> SnapshotRef:
    """Parse a ref object."""
    what = "snapshot ref"
    try:
        ref_type = RefType(str(required(data, "type", what)).lower())
    except ValueError as exc:
        raise CorruptMetadata(f"bad ref type in {data!r}") from exc
    return SnapshotRef(
        snapshot_id=required_int(data, "snapshot-id", what),
        ref_type=ref_type,
        min_snapshots_to_keep=optional_int(data, "min-snapshots-to-keep", what),
        max_snapshot_age_ms=optional_int(data, "max-snapshot-age-ms", what),
        max_ref_age_ms=optional_int(data, "max-ref-age-ms", what),
    )
