"""Table endpoints: list (paged), create (incl. staged), load, exists, commit, drop, register,
rename, and the multi-table ``/transactions/commit``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import urllib.parse
from typing import Any

from icefloe.catalog.base import warehouse_location
from icefloe.errors import AlreadyExists, NoSuchTable, ValidationError
from icefloe.formats.metadata.files import read_table_metadata, written_metadata_bytes
from icefloe.lru import LockedLruCache
from icefloe.server.auth import READ, WRITE, Principal
from icefloe.server.checks import (
    check_inside,
    namespace_from_path,
    rename_from_json,
    table_from_json,
    table_from_path,
)
from icefloe.server.commits import TableChange, commit_table, commit_transaction, current_state
from icefloe.server.context import Call, Reply, ServerState, VendingScope
from icefloe.server.errors import bad_request
from icefloe.server.paging import identifiers_page
from icefloe.server.vending import (
    credentials_etag,
    is_s3_location,
    storage_credentials,
    table_write_locations,
    wants_vended_credentials,
)
from icefloe.spec.commit_json import requirements_from_list, updates_from_list
from icefloe.spec.json_codec import table_metadata_json_bytes, table_metadata_to_json
from icefloe.spec.json_snapshots import is_relative_location
from icefloe.spec.json_structures import schema_from_dict, sort_order_from_dict, spec_from_dict
from icefloe.spec.requirements import AssertCreate
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import AddSnapshot, TableUpdate, new_table_metadata


def _body(call: Call) -> dict[str, Any]:
    if not isinstance(call.body, dict):
        raise bad_request("the request body must be a JSON object")
    return call.body


class _RecentResults:
    """The encoded answer of the last few table results, by metadata location and metadata object.

    Every commit of a coalesced batch is answered with the batch's metadata, and loads follow
    commits: the answer (which grows with the table's history) is built once, not once per reply,
    by whichever reply asks first while the others wait for it, and embeds the metadata file's
    bytes as this process wrote them (``written_metadata_bytes``) instead of encoding it again.
    """

    def __init__(self, size: int = 4) -> None:
        self._answers: LockedLruCache[str, tuple[TableMetadata, bytes]] = LockedLruCache(size)
        self._lock = threading.Lock()  # guards _building
        self._building: dict[str, threading.Lock] = {}  # by location: one builder, the others wait

    def answer(self, location: str, md: TableMetadata) -> bytes:
        found = self._find(location, md)
        if found is not None:
            return found
        with self._lock:
            building = self._building.setdefault(location, threading.Lock())
        with building:  # the batch's other replies wait here for the first one's answer
            found = self._find(location, md)
            if found is not None:
                return found
            answer = _result_bytes(location, md, written_metadata_bytes(location, md))
            with self._lock:
                self._answers.put(location, (md, answer))
                self._building.pop(location, None)
        return answer

    def _find(self, location: str, md: TableMetadata) -> bytes | None:
        """The answer kept for this very ``md`` at ``location`` (a hit does not refresh it)."""
        found = self._answers.peek(location)
        return found[1] if found is not None and found[0] is md else None


def _result_head(location: str | None) -> str:
    """A result's text up to its metadata."""
    return json.dumps({"metadata-location": location, "config": {}})[:-1] + ', "metadata": '


def _result_text(location: str | None, md: TableMetadata) -> str:
    return _result_head(location) + table_metadata_to_json(md) + "}"


def _result_bytes(location: str, md: TableMetadata, written: bytes | None) -> bytes:
    """``_result_text`` as UTF-8, around the metadata file's bytes when this process wrote them
    (one copy of the metadata, no text built), else around the metadata's encoded bytes."""
    if written is None:
        written = table_metadata_json_bytes(md)
    return b"".join((_result_head(location).encode("utf-8"), written, b"}"))


_RECENT = _RecentResults()


def table_etag(location: str, snapshots: str = "all") -> str:
    """The ETag of a table's answer: its metadata file and the snapshot mode (``all`` / ``refs``)."""
    return '"' + hashlib.sha256(f"{location},snapshots={snapshots}".encode()).hexdigest()[:32] + '"'


def table_result(
    location: str | None,
    md: TableMetadata,
    snapshots: str = "all",
    credentials: list[dict[str, Any]] | None = None,
    vending: VendingScope | None = None,
) -> Reply:
    """A ``LoadTableResult`` / ``CommitTableResponse`` (metadata JSON embedded as written), with
    its ``ETag`` once the table has a metadata file, and the vended ``credentials`` (for the
    ``vending`` scope) if any; ``Reply.sendable`` adds them to the text, which stays shared."""
    if location is None:  # a staged create: nothing to share
        return Reply(json_text=_result_text(None, md), credentials=credentials, vending=vending)
    text = _RECENT.answer(location, md) if snapshots == "all" else _result_text(location, md)
    headers = {"ETag": table_etag(location, snapshots)}
    return Reply(json_text=text, headers=headers, credentials=credentials, vending=vending)


def vending_scope(
    state: ServerState, table: tuple[tuple[str, ...], str], location: str, properties: dict[str, str]
) -> VendingScope:
    """What credentials for ``table`` (namespace, name) at ``location`` with ``properties`` must
    cover, and where they are renewed."""
    namespace, name = table
    segments = ["v1", *([_path_segment(state.config.prefix)] if state.config.prefix else [])]
    segments += ["namespaces", "%1F".join(map(_path_segment, namespace)), "tables", _path_segment(name)]
    endpoint = "/".join([*segments, "credentials"])
    return VendingScope(namespace, table_write_locations(location, properties), endpoint)


def _path_segment(text: str) -> str:
    """``text`` as one path segment, every reserved character percent-encoded."""
    return urllib.parse.quote(text, safe="")


def vended_credentials(
    state: ServerState, principal: Principal, headers: Any, scope: VendingScope
) -> list[dict[str, Any]] | None:
    """The ``storage-credentials`` for this caller on a table, or None: only when asked for
    (``X-Iceberg-Access-Delegation`` in ``headers``), configured, and the table is on S3. Write
    access for a WRITE grant on the namespace, read access otherwise."""
    if (
        state.vendor is None
        or not is_s3_location(scope.locations[0])
        or not wants_vended_credentials(headers)
    ):
        return None
    return storage_credentials(state.vendor, scope.locations, principal.holds(scope.namespace, WRITE))


def _vended(state: ServerState, call: Call, scope: VendingScope) -> list[dict[str, Any]] | None:
    return vended_credentials(state, call.principal, call.headers, scope)


def _table(call: Call, level: str) -> tuple[tuple[str, ...], str]:
    namespace = namespace_from_path(call.path["namespace"])
    namespace, name = table_from_path(namespace, call.path["table"])
    call.principal.require(namespace, level)
    return namespace, name


def list_tables(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/tables"""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, READ)
    return Reply(payload=identifiers_page(state.catalog.list_tables(namespace), call.query))


def load_table(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/tables/{table}?snapshots=all|refs

    The answer carries an ``ETag`` naming the metadata file and snapshot mode, and the vended
    credentials when it carries some (``credentials_etag``); a request whose ``If-None-Match``
    names the current one gets ``304 Not Modified`` and no body (Iceberg Java caches loaded tables
    by ETag and sends it back).
    """
    namespace, name = _table(call, READ)
    mode = call.query.get("snapshots", "all").lower()
    if mode not in ("all", "refs"):
        raise bad_request(f"snapshots must be 'all' or 'refs', not {call.query['snapshots']!r}")
    found = current_state(state.catalog, namespace, name)
    if found is None:
        raise NoSuchTable(f"table {'.'.join((*namespace, name))!r} does not exist")
    location, md = found
    scope = vending_scope(state, (namespace, name), md.location, md.properties)
    credentials = _vended(state, call, scope)  # first: a 304 must not outlive the client's credentials
    etag = table_etag(location, mode)
    if credentials:
        etag = credentials_etag(etag, credentials)
    if call.headers.get("if-none-match") == etag:  # Java's freshness-aware load: its copy is current
        return Reply(status=304, headers={"ETag": etag})
    shown = referenced_snapshots_only(md) if mode == "refs" else md
    return table_result(location, shown, mode, credentials, scope)


def referenced_snapshots_only(md: TableMetadata) -> TableMetadata:
    """The metadata with only the snapshots a branch or tag points at (``snapshots=refs``).

    Statistics of the left-out snapshots go too, as in Iceberg Java's own server; the snapshot
    log stays (a client loads the full list with ``snapshots=all`` when it needs history).
    """
    kept = {ref.snapshot_id for ref in md.refs.values()}
    if len(kept) == len(md.snapshots):
        return md
    return dataclasses.replace(
        md,
        snapshots=tuple(s for s in md.snapshots if s.snapshot_id in kept),
        statistics=tuple(f for f in md.statistics if f.get("snapshot-id") in kept),
        partition_statistics=tuple(f for f in md.partition_statistics if f.get("snapshot-id") in kept),
    )


def table_exists(state: ServerState, call: Call) -> Reply:
    """HEAD /namespaces/{namespace}/tables/{table}"""
    namespace, name = _table(call, READ)
    state.catalog._table_metadata_location(namespace, name)
    return Reply(status=204)


def _parsed(parse: Any, value: Any, what: str) -> Any:
    try:
        return parse(value)
    except ValidationError:
        raise
    except Exception as exc:
        raise bad_request(f"invalid {what}: {exc}") from None


def create_table(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/tables (``stage-create`` returns metadata without committing)."""
    namespace = namespace_from_path(call.path["namespace"])
    body = _body(call)
    name = body.get("name")
    if not isinstance(name, str):
        raise bad_request("create table needs a string 'name'")
    namespace, name = table_from_path(namespace, name)
    call.principal.require(namespace, WRITE)
    if not isinstance(body.get("schema"), dict):
        raise bad_request("create table needs a 'schema' object")
    schema = _parsed(schema_from_dict, body["schema"], "schema")
    spec = _parsed(spec_from_dict, body["partition-spec"], "spec") if body.get("partition-spec") else None
    order = _parsed(sort_order_from_dict, body["write-order"], "order") if body.get("write-order") else None
    properties = body.get("properties") or {}
    if not isinstance(properties, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
    ):
        raise bad_request("properties must be an object of strings")
    location = body.get("location")
    if location is not None and not isinstance(location, str):
        raise bad_request("location must be a string")
    catalog = state.catalog
    table_location = (
        warehouse_location(location) if location else catalog.default_table_location(namespace, name)
    )
    state.rules.check_locations(table_location, properties)
    scope = vending_scope(state, (namespace, name), table_location, properties)
    if body.get("stage-create"):
        catalog._require_namespace(namespace)
        if catalog.table_exists((*namespace, name)):  # as Iceberg Java's own server answers
            raise AlreadyExists(f"table {'.'.join((*namespace, name))!r} already exists")
        md = new_table_metadata(schema, spec, order, table_location, properties)
        return table_result(None, md, credentials=_vended(state, call, scope), vending=scope)
    vended = _vended(state, call, scope)  # first: an STS failure creates nothing
    table = catalog.create_table((*namespace, name), schema, spec, order, table_location, properties)
    return table_result(table.metadata_location, table.metadata, credentials=vended, vending=scope)


def commit(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/tables/{table}"""
    namespace, name = _table(call, WRITE)
    body = _body(call)
    if body.get("identifier") is not None and table_from_json(body["identifier"]) != (namespace, name):
        raise bad_request("the identifier in the body does not match the path")
    change = _change(state, namespace, name, body)
    if any(isinstance(r, AssertCreate) for r in change.requirements):
        retries = state.config.commit_retries
        location, md = commit_table(state.catalog, state.locks, change, retries, state.rules)
    else:
        location, md = state.coalescer.commit(change.key, change.requirements, change.updates)
    return table_result(location, md)


def _change(state: ServerState, namespace: tuple[str, ...], name: str, body: dict[str, Any]) -> TableChange:
    updates = updates_from_list(body.get("updates"))
    if any(_relative_root(u) for u in updates):  # only then is the table's location needed
        found = current_state(state.catalog, namespace, name)
        updates = updates_from_list(body.get("updates"), found[1].location if found else "")
    return TableChange(namespace, name, requirements_from_list(body.get("requirements")), updates)


def _relative_root(update: TableUpdate) -> bool:
    if not isinstance(update, AddSnapshot) or update.snapshot.root_manifest is None:
        return False
    return is_relative_location(update.snapshot.root_manifest)


def commit_many(state: ServerState, call: Call) -> Reply:
    """POST /transactions/commit"""
    body = _body(call)
    items = body.get("table-changes")
    if not isinstance(items, list) or not items:
        raise bad_request("'table-changes' must be a non-empty list")
    changes: list[TableChange] = []
    for item in items:
        if not isinstance(item, dict):
            raise bad_request("each table change must be an object")
        namespace, name = table_from_json(item.get("identifier"))
        call.principal.require(namespace, WRITE)
        changes.append(_change(state, namespace, name, item))
    commit_transaction(state.catalog, state.locks, changes, state.rules)
    return Reply(status=204)


def drop_table(state: ServerState, call: Call) -> Reply:
    """DELETE /namespaces/{namespace}/tables/{table}?purgeRequested="""
    namespace, name = _table(call, WRITE)
    purge = call.query.get("purgeRequested", "false").lower() == "true"
    state.catalog.drop_table((*namespace, name), purge=purge)
    return Reply(status=204)


def register_request(state: ServerState, call: Call, endpoint: str) -> tuple[tuple[str, ...], str, str]:
    """(namespace, name, metadata location) of a ``register`` or ``register-view`` request, which
    the caller may write; the location inside the warehouse."""
    namespace = namespace_from_path(call.path["namespace"])
    call.principal.require(namespace, WRITE)
    body = _body(call)
    name, location = body.get("name"), body.get("metadata-location")
    if not isinstance(name, str) or not isinstance(location, str):
        raise bad_request(f"{endpoint} needs 'name' and 'metadata-location' strings")
    namespace, name = table_from_path(namespace, name)
    check_inside(location, state.catalog.warehouse)
    return namespace, name, location


def register_table(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/register"""
    namespace, name, location = register_request(state, call, "register")
    body = _body(call)
    md = read_table_metadata(state.catalog._file_io(None, location), location, confirm_exists=True)
    state.rules.check(md)  # the rules a create or commit of this metadata would meet
    overwrite = body.get("overwrite", False)
    if not isinstance(overwrite, bool):
        raise bad_request("'overwrite' must be a boolean")
    scope = vending_scope(state, (namespace, name), md.location, md.properties)
    vended = _vended(state, call, scope)  # first: an STS failure registers nothing
    table = state.catalog.register_table((*namespace, name), location, overwrite=overwrite)
    return table_result(table.metadata_location, table.metadata, credentials=vended, vending=scope)


def rename_table(state: ServerState, call: Call) -> Reply:
    """POST /tables/rename"""
    source, destination = rename_from_json(call.body)
    call.principal.require(source[:-1], WRITE)
    call.principal.require(destination[:-1], WRITE)
    state.catalog.rename_table(source, destination)
    return Reply(status=204)


def report_metrics(state: ServerState, call: Call) -> Reply:
    """POST /namespaces/{namespace}/tables/{table}/metrics (accepted and dropped)."""
    _table(call, READ)
    return Reply(status=204)


def load_credentials(state: ServerState, call: Call) -> Reply:
    """GET /namespaces/{namespace}/tables/{table}/credentials: fresh credentials for a table a
    client already loaded (none for local storage, or when the server vends none). Asking is
    itself the request for them, so no ``X-Iceberg-Access-Delegation`` is needed."""
    namespace, name = _table(call, READ)
    found = current_state(state.catalog, namespace, name)
    if found is None:
        raise NoSuchTable(f"table {'.'.join((*namespace, name))!r} does not exist")
    scope = vending_scope(state, (namespace, name), found[1].location, found[1].properties)
    if state.vendor is None or not is_s3_location(scope.locations[0]):
        return Reply(payload={"storage-credentials": []})
    write = call.principal.holds(namespace, WRITE)
    return Reply(payload={"storage-credentials": storage_credentials(state.vendor, scope.locations, write)})
