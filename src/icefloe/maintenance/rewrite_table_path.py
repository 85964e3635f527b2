"""Copying a table to another location: ``rewrite_table_path`` (Iceberg's ``RewriteTablePath``).

A table's metadata holds absolute paths (its location, metadata files, manifest lists or roots,
manifests, data and delete files, and the data files that position deletes and deletion vectors
name), so copying its directory elsewhere gives a table that still reads the source. This
rewrites every such path from ``source_prefix`` to ``target_prefix`` and writes the files that
hold paths (metadata JSON files, manifest lists, manifests, v4 roots and leaves, position delete
files, deletion-vector Puffin files) to a staging location; the others (data files, equality
deletes, statistics) need no change. It then writes a *file list*, a CSV of (source, target) pairs
(the staged file or the original, and where it goes); the user copies them with their own tool and
registers the target's ``latest_version`` metadata file in a catalog, which makes the copy live.
The list puts content files first and metadata files last, so a copy done in its order never
exposes metadata naming a file that is not there yet.

``start_version`` / ``end_version`` name metadata files of the table (file name or full
location): the copy covers the versions after ``start_version`` (the last one already copied) up
to ``end_version`` (default: the current one), the snapshots ``end_version`` has that
``start_version`` has not, and the files those snapshots added. Like Iceberg Java, snapshots
expired before ``end_version`` are not copied, so older metadata files may name manifest lists
the copy lacks (time travel through them fails there).

The source table is never changed; the staging location defaults to
``<metadata dir>/copy-table-staging-<uuid>`` as in Java (a later orphan-file removal may delete
it). Every file is rewritten in memory before anything is written: a path outside the source
prefix fails the call (:class:`~icefloe.maintenance.table_path_prefix.PathOutsidePrefix`, naming
the path) with nothing written.
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import uuid
from dataclasses import dataclass
from typing import Any

from icefloe.errors import Unsupported, ValidationError
from icefloe.formats.metadata.files import decode_metadata_document, metadata_directory
from icefloe.formats.v4.content_entry_schema import has_scheme, resolve_location
from icefloe.io.durability import durability_barrier
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.maintenance.table_path_prefix import PathOutsidePrefix, PrefixMap
from icefloe.maintenance.table_path_tree import TreeRewriter
from icefloe.tree.locations import WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH, WRITE_METADATA_PATH
from icefloe.txn.handle import TableHandle

FILE_LIST_NAME = "file-list"
PATH_PROPERTIES = (
    WRITE_DATA_PATH,
    WRITE_METADATA_PATH,
    WRITE_FOLDER_STORAGE_PATH,
    "write.object-storage.path",
)
"""Table properties that hold a location of the table's files: moved with the table."""


@dataclass(frozen=True)
class RewriteTablePathResult:
    """What a copy staged: Java's two result columns, and where and how much."""

    latest_version: str
    """File name of the newest metadata file copied: register ``<target>/.../<this>`` to go live."""
    file_list_location: str
    """The CSV of (source, target) pairs to copy."""
    staging_location: str
    rewritten_files: int
    """Files staged with their paths rewritten (metadata, manifests, delete files)."""
    copied_files: int
    """Files on the list as they are (data files, equality deletes, statistics)."""


def rewrite_table_path(
    table: TableHandle,
    source_prefix: str,
    target_prefix: str,
    *,
    start_version: str | None = None,
    end_version: str | None = None,
    staging_location: str | None = None,
) -> RewriteTablePathResult:
    """Stage a copy of ``table`` with every path moved from ``source_prefix`` to ``target_prefix``."""
    fio = table.io
    current = _read_document(fio, table.metadata_location)
    span = _version_span(fio, table.metadata_location, current, start_version, end_version)
    end_location, end = span.end_location, span.end
    staging = staging_location or (
        f"{metadata_directory(current['location'], current.get('properties') or {})}"
        f"/copy-table-staging-{uuid.uuid4()}"
    )
    prefixes = PrefixMap(source_prefix, target_prefix, staging.rstrip("/"))
    copied = _snapshot_ids(end) - span.start_snapshot_ids

    documents = {v: (end if v == end_location else _read_document(fio, v)) for v in span.versions}
    staged_metadata = {v: _moved_document(doc, prefixes, v) for v, doc in documents.items()}

    tree = TreeRewriter(fio, prefixes, end["location"], copied)
    for snapshot in end.get("snapshots") or []:
        if snapshot["snapshot-id"] not in copied:
            continue
        if "manifest-list" in snapshot:
            tree.manifest_list(snapshot["manifest-list"])
        elif "root-manifest" in snapshot:
            tree.root(snapshot["root-manifest"], snapshot["snapshot-id"])
        else:
            raise Unsupported(
                f"snapshot {snapshot['snapshot-id']} lists its manifests without a manifest list (v1): "
                "rewrite_table_path needs a manifest list"
            )
    for key in ("statistics", "partition-statistics"):
        for stats in end.get(key) or []:
            if stats.get("snapshot-id") in copied:
                tree.copy_as_is(stats["statistics-path"])

    plan = tree.copy_plan()
    plan += [(prefixes.staged(version), prefixes.target(version)) for version in staged_metadata]
    file_list = f"{prefixes.staging_location}/{FILE_LIST_NAME}"
    staged = {**tree.staged, **{prefixes.staged(v): data for v, data in staged_metadata.items()}}
    staged[file_list] = _csv(plan)
    # one durability barrier: the files are fsynced (or uploaded) together, not one by one
    with durability_barrier():
        for location, data in staged.items():
            fio.new_output(location, fresh_name=True).write_bytes(data, overwrite=True)
    return RewriteTablePathResult(
        latest_version=end_location.rstrip("/").rsplit("/", 1)[-1],
        file_list_location=file_list,
        staging_location=prefixes.staging_location,
        rewritten_files=len(tree.staged) + len(staged_metadata),
        copied_files=len(plan) - len(tree.staged) - len(staged_metadata),
    )


@dataclass(frozen=True)
class _VersionSpan:
    """The metadata files a copy covers and the snapshots already copied before them."""

    end_location: str
    end: dict[str, Any]
    versions: list[str]
    """The metadata files to copy, oldest first: after ``start_version``, up to ``end_version``."""
    start_snapshot_ids: set[int]


def _version_span(
    fio: FileIO, current_location: str, current: dict[str, Any], start: str | None, end: str | None
) -> _VersionSpan:
    end_location = _find_version(end, current_location, current) if end else current_location
    end_doc = current if end_location == current_location else _read_document(fio, end_location)
    versions = _versions(end_location, end_doc)
    if start is None:
        return _VersionSpan(end_location, end_doc, versions, set())
    start_location = _find_version(start, end_location, end_doc)
    if start_location == end_location:
        raise ValidationError(f"start_version {start} is end_version: nothing to copy")
    start_ids = _snapshot_ids(_read_document(fio, start_location))
    return _VersionSpan(end_location, end_doc, versions[versions.index(start_location) + 1 :], start_ids)


def _read_document(fio: FileIO, location: str) -> dict[str, Any]:
    """A metadata file as its JSON object (kept whole: every field is carried into the copy)."""
    document = decode_metadata_document(fio.new_input(location).read(), location)
    if "location" not in document:
        raise ValidationError(f"{location} is not a table metadata file")
    return document


def _versions(location: str, document: dict[str, Any]) -> list[str]:
    """Every metadata file of ``document``'s log, oldest first, then ``location`` itself."""
    table_location = document["location"]
    logged = [
        resolve_location(e["metadata-file"], table_location) for e in document.get("metadata-log") or []
    ]
    return [*logged, location]


def _find_version(version: str, location: str, document: dict[str, Any]) -> str:
    """The metadata file of ``document``'s history that ``version`` names (file name or location)."""
    for candidate in _versions(location, document):
        name = candidate.rstrip("/").rsplit("/", 1)[-1]
        if version == name or normalize_location(version) == normalize_location(candidate):
            return candidate
    raise ValidationError(f"version {version} is not a metadata file of the table's history")


def _snapshot_ids(document: dict[str, Any]) -> set[int]:
    return {s["snapshot-id"] for s in document.get("snapshots") or []}


def _moved_document(document: dict[str, Any], prefixes: PrefixMap, location: str) -> bytes:
    """The bytes of a metadata file with every path moved to the target prefix."""
    doc = copy.deepcopy(document)
    produced: set[str] = set()

    def moved(path: str) -> str:
        out = path if not has_scheme(path) else prefixes.target(path)  # v4: relative to the location
        produced.add(out)
        return out

    doc["location"] = moved(doc["location"])
    for entry in doc.get("metadata-log") or []:
        entry["metadata-file"] = moved(entry["metadata-file"])
    for snapshot in doc.get("snapshots") or []:
        for key in ("manifest-list", "root-manifest"):
            if key in snapshot:
                snapshot[key] = moved(snapshot[key])
        if "manifests" in snapshot:
            snapshot["manifests"] = [moved(m) for m in snapshot["manifests"]]
    for key in ("statistics", "partition-statistics"):
        for stats in doc.get(key) or []:
            stats["statistics-path"] = moved(stats["statistics-path"])
    properties = doc.get("properties") or {}
    for key in PATH_PROPERTIES:
        if key in properties:
            properties[key] = moved(properties[key])
    _refuse_unmoved(doc, prefixes, produced, location)
    data = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return gzip.compress(data, mtime=0) if location.endswith(".gz.metadata.json") else data


def _refuse_unmoved(
    node: Any, prefixes: PrefixMap, produced: set[str], location: str, where: str = ""
) -> None:
    """Refuse a path under the source prefix in a field this module does not know to move: the
    copy would keep reading (or writing) the source there."""
    if isinstance(node, dict):
        for key, value in node.items():
            _refuse_unmoved(value, prefixes, produced, location, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refuse_unmoved(value, prefixes, produced, location, f"{where}/{i}")
    elif (
        isinstance(node, str)
        and node not in produced
        and (has_scheme(node) or node.startswith("/"))
        and prefixes.contains(node)
    ):
        raise PathOutsidePrefix(
            f"metadata file {location} holds the path {node} at {where}, which rewrite_table_path "
            "does not know how to move"
        )


def _csv(plan: list[tuple[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows(plan)
    return out.getvalue().encode("utf-8")
