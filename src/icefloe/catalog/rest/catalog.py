"""RestCatalog: icefloe's client of the Iceberg REST catalog protocol.

Reads and writes files itself (data files, manifests, v4 root manifests) and lets the service
own the metadata: a commit sends ``requirements + updates`` computed from the transaction's
base and new metadata (``spec.metadata_diff``); the server writes the metadata file and swaps.

Commit outcomes: 409 ``CommitFailedException`` -> ``CommitConflict`` (the transaction reloads and
retries); 5xx, a timeout or a lost connection -> the client reloads the table and looks for the
snapshots it added: found means committed, otherwise ``CommitStateUnknown``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import unquote

from icefloe.catalog.base import Catalog, CatalogCommitTarget, PropertiesUpdateSummary
from icefloe.catalog.identifiers import (
    Namespace,
    TableIdentifier,
    identifier_to_string,
    parse_namespace,
    parse_table_identifier,
)
from icefloe.catalog.rest.auth import auth_from_properties
from icefloe.catalog.rest.executor_renewal import renewal_properties
from icefloe.catalog.rest.http import RestSession, RetryPolicy, ServiceError
from icefloe.catalog.rest.routes import Routes
from icefloe.catalog.rest.transport import tls_from_properties
from icefloe.catalog.rest.vended import EXPIRES_AT_MS, Refresh, Shipped, VendedFileIO, best_credential
from icefloe.errors import CommitStateUnknown, NotFound, Unsupported, ValidationError
from icefloe.io.fileio import FileIO
from icefloe.spec.commit_json import requirement_to_dict, update_to_dict
from icefloe.spec.json_codec import table_metadata_from_json
from icefloe.spec.json_reply import load_reply
from icefloe.spec.json_structures import schema_to_dict, sort_order_to_dict, spec_to_dict
from icefloe.spec.metadata_diff import MetadataChanges, creation_changes, metadata_changes
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.table.table import Table

logger = logging.getLogger(__name__)

URI = "uri"
PREFIX = "prefix"
NAMESPACE_SEPARATOR = "namespace-separator"
ACCESS_DELEGATION = "header.X-Iceberg-Access-Delegation"
DEFAULT_ACCESS_DELEGATION = "vended-credentials"
UPDATE_TABLE = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"
COMMIT_TRANSACTION = "POST /v1/{prefix}/transactions/commit"
LOAD_CREDENTIALS = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"


class RestCatalog(Catalog):
    """A catalog served over the Iceberg REST protocol (``load_catalog(type="rest", uri=...)``).

    Besides ``token`` / ``credential`` (``auth``): ``rest.retry.attempts``,
    ``rest.request-timeout-s``, and TLS checks ``ssl.cabundle`` (a CA file or directory),
    ``ssl.verify`` (``false`` turns them off), ``ssl.client.cert`` / ``ssl.client.key``."""

    def __init__(self, name: str = "rest", uri: str | None = None, **properties: str) -> None:
        uri = uri or properties.get(URI)
        if not uri:
            raise ValidationError("RestCatalog needs the service 'uri', e.g. 'http://127.0.0.1:8181'")
        client_props = {**properties, URI: uri}
        self.uri = uri.rstrip("/")
        try:
            tls = tls_from_properties(client_props)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        self._auth = auth_from_properties(self.uri, client_props, tls)
        retry = RetryPolicy(
            attempts=int(client_props.get("rest.retry.attempts", 5)),
            timeout_s=float(client_props.get("rest.request-timeout-s", 60)),
        )
        self.http = RestSession(self.uri, self._auth, retry, tls)
        # metadata the service returned for recent commits, by location (see committed_metadata):
        # its JSON object, the proposed metadata, and the members that begin with a marker for
        # that many of that one's items (json_reply.load_reply)
        self._committed: dict[str, tuple[Any, TableMetadata | None, dict[str, int]]] = {}
        # (identifier, metadata location) -> when this client last saw that state (load_for_commit)
        self._seen: dict[tuple[TableIdentifier, str], float] = {}
        self.trust_seen_metadata_s = float(client_props.get("rest.commit.trust-loaded-metadata-s", "5"))
        config = self.http.request("GET", "/v1/config", params=_warehouse_param(client_props)).json()
        merged = {**dict(config.get("defaults") or {}), **client_props, **dict(config.get("overrides") or {})}
        super().__init__(name, **merged)
        self.endpoints = set(config.get("endpoints") or ())
        self.http.idempotent_retries = bool(config.get("idempotency-key-lifetime"))
        separator = merged.get(NAMESPACE_SEPARATOR, "%1F")
        self.routes = Routes(merged.get(PREFIX), unquote(separator))
        self._table_headers = {
            "X-Iceberg-Access-Delegation": merged.get(ACCESS_DELEGATION, DEFAULT_ACCESS_DELEGATION)
        }

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()

    def __repr__(self) -> str:
        return f"RestCatalog({self.name!r}, uri={self.uri!r})"

    # ------------------------------------------------------------------ namespaces

    def create_namespace(
        self, namespace: str | Iterable[str], properties: dict[str, str] | None = None
    ) -> None:
        """Create a namespace; AlreadyExists if it exists."""
        ns = parse_namespace(namespace)
        body = {"namespace": list(ns), "properties": {str(k): str(v) for k, v in (properties or {}).items()}}
        self.http.request("POST", self.routes.namespaces(), body=body, mutation=True)

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """Namespaces directly below ``parent``, following page tokens."""
        ns = parse_namespace(parent, allow_empty=True)
        params = {"parent": self.routes.namespace_param(ns)} if ns else {}
        found = self._paged(self.routes.namespaces(), params, "namespaces")
        return sorted(tuple(item) for item in found)

    def _paged(self, path: str, params: dict[str, str], key: str) -> list[Any]:
        items: list[Any] = []
        token: str | None = None
        while True:
            query = dict(params)
            if token:
                query["pageToken"] = token
            body = self.http.request("GET", path, params=query).json()
            items.extend(body.get(key) or [])
            token = body.get("next-page-token")
            if not token:
                return items

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """A namespace's properties."""
        ns = parse_namespace(namespace)
        body = self.http.request("GET", self.routes.namespace(ns)).json()
        return dict(body.get("properties") or {})

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: dict[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one request."""
        ns = parse_namespace(namespace)
        body = {"removals": sorted(set(removals or ())), "updates": dict(updates or {})}
        path = self.routes.namespace_properties(ns)
        reply = self.http.request("POST", path, body=body, mutation=True).json()
        return PropertiesUpdateSummary(
            removed=list(reply.get("removed") or []),
            updated=list(reply.get("updated") or []),
            missing=list(reply.get("missing") or []),
        )

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace."""
        self.http.request("DELETE", self.routes.namespace(parse_namespace(namespace)), mutation=True)

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists (HEAD)."""
        try:
            self.http.request("HEAD", self.routes.namespace(parse_namespace(namespace)))
        except NotFound:
            return False
        return True

    # ------------------------------------------------------------------ table rows (not used)

    def _insert_table_row(self, namespace: Namespace, name: str, metadata_location: str) -> None:
        raise Unsupported("a REST catalog creates tables through the service")

    def _table_metadata_location(self, namespace: Namespace, name: str) -> str:
        location = self._load((*namespace, name))[0]
        if location is None:
            raise NotFound(f"table {identifier_to_string((*namespace, name))!r} has no metadata location")
        return location

    def _delete_table_row(self, namespace: Namespace, name: str) -> None:
        self.drop_table((*namespace, name))

    def _rename_table_row(self, src: tuple[Namespace, str], dst: tuple[Namespace, str]) -> None:
        self.rename_table((*src[0], src[1]), (*dst[0], dst[1]))

    def _list_table_names(self, namespace: Namespace) -> list[str]:
        return [ident[-1] for ident in self.list_tables(namespace)]

    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        raise Unsupported("a REST catalog commits changes, not metadata locations")

    # ------------------------------------------------------------------ tables

    def _table_from_result(self, identifier: TableIdentifier, result: dict[str, Any]) -> Table:
        md = table_metadata_from_json(result["metadata"])
        if result.get("metadata-location"):
            self._remember(tuple(identifier), str(result["metadata-location"]))
        config: dict[str, str] = {str(k): str(v) for k, v in (result.get("config") or {}).items()}
        credential = best_credential(result.get("storage-credentials"), md.location)
        properties = {**md.properties, **config, **credential}
        ident = tuple(identifier)
        if EXPIRES_AT_MS in credential:
            refresh = self._credentials_refresh(ident, md.location)
            shipped = (
                self._executor_renewal(ident, md.location) if LOAD_CREDENTIALS in self.endpoints else None
            )
            io: FileIO = self._vended_io(properties, md.location, refresh, shipped)
        else:
            io = self._file_io(properties, md.location)
        location = result.get("metadata-location") or ""
        return Table(ident, md, location, io, CatalogCommitTarget(self, ident, io, (md, location)))

    def shipping_token(self) -> str | None:
        """The bearer token to hand a Spark task that must load a table itself (never the client
        secret): the session's current one, with at least half its lifetime left."""
        authorization = self._auth.shipping_headers().get("Authorization", "")
        return authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else None

    def _vended_io(
        self,
        table_properties: dict[str, str],
        location: str,
        refresh: Refresh | None,
        shipped: Shipped | None = None,
    ) -> FileIO:
        """A renewing FileIO on expiring vended credentials, one kept per distinct set and table
        location, which its renewal is for (the service answers loads from its credential cache,
        so loads share one S3 client)."""
        properties = {**self._io_properties(), **table_properties}
        key = (*sorted(properties.items()), ("__renews-for", location))
        with self._file_ios_lock:
            io = self._file_ios.get(key)
            if io is None:
                io = VendedFileIO(properties, refresh, shipped=shipped)
                self._file_ios.put(key, io)
            return io

    def _credentials_refresh(self, identifier: TableIdentifier, location: str) -> Refresh:
        """How a table's FileIO renews its credentials: ``GET .../credentials`` when the service
        advertises it, else a load of the table, whose result carries fresh ones too (a FileIO
        that could not renew would go on with expired keys)."""
        if LOAD_CREDENTIALS in self.endpoints:
            return lambda: best_credential(self.load_credentials(identifier), location)
        return lambda: best_credential(self._load(identifier)[1].get("storage-credentials"), location)

    def _executor_renewal(self, identifier: TableIdentifier, location: str) -> Shipped:
        """What Spark executors need to renew a table's credentials themselves, with the token
        the session sends at the time (``executor_renewal``)."""
        namespace, name = parse_table_identifier(identifier)
        uri = self.http.base_uri + self.routes.table(namespace, name) + "/credentials"
        return lambda: renewal_properties(uri, location, self._auth.shipping_headers(), self.properties)

    def load_credentials(self, identifier: str | Iterable[str]) -> list[dict[str, Any]]:
        """The table's current ``storage-credentials`` (``GET .../credentials``)."""
        namespace, name = parse_table_identifier(identifier)
        path = self.routes.table(namespace, name) + "/credentials"
        return list(self.http.request("GET", path).json().get("storage-credentials") or [])

    def _load(self, identifier: TableIdentifier) -> tuple[str | None, dict[str, Any]]:
        namespace, name = parse_table_identifier(identifier)
        result = self.http.request(
            "GET", self.routes.table(namespace, name), extra_headers=self._table_headers
        ).json()
        return result.get("metadata-location"), result

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """Load a table (with vended storage credentials, when the service sends them)."""
        namespace, name = parse_table_identifier(identifier)
        return self._table_from_result((*namespace, name), self._load((*namespace, name))[1])

    def table_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the table exists (HEAD)."""
        namespace, name = parse_table_identifier(identifier)
        try:
            self.http.request("HEAD", self.routes.table(namespace, name))
        except NotFound:
            return False
        return True

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        """Tables directly in a namespace, sorted, following page tokens."""
        ns = parse_namespace(namespace)
        found = self._paged(self.routes.tables(ns), {}, "identifiers")
        return sorted((*item["namespace"], item["name"]) for item in found)

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Table:
        """Create a table through the service."""
        namespace, name = parse_table_identifier(identifier)
        body: dict[str, Any] = {
            "name": name,
            "schema": schema_to_dict(schema),
            "properties": {str(k): str(v) for k, v in (properties or {}).items()},
        }
        if partition_spec is not None:
            body["partition-spec"] = spec_to_dict(partition_spec)
        if sort_order is not None:
            body["write-order"] = sort_order_to_dict(sort_order)
        if location:
            body["location"] = location
        result = self.http.request(
            "POST", self.routes.tables(namespace), body=body, mutation=True, extra_headers=self._table_headers
        ).json()
        return self._table_from_result((*namespace, name), result)

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Drop a table; with ``purge`` the service deletes its files."""
        namespace, name = parse_table_identifier(identifier)
        params = {"purgeRequested": "true"} if purge else None
        self.http.request("DELETE", self.routes.table(namespace, name), params=params, mutation=True)

    def rename_table(self, from_identifier: str | Iterable[str], to_identifier: str | Iterable[str]) -> Table:
        """Rename or move a table."""
        src = parse_table_identifier(from_identifier)
        dst = parse_table_identifier(to_identifier)
        body = {
            "source": {"namespace": list(src[0]), "name": src[1]},
            "destination": {"namespace": list(dst[0]), "name": dst[1]},
        }
        self.http.request("POST", self.routes.rename(), body=body, mutation=True)
        return self.load_table((*dst[0], dst[1]))

    def register_table(
        self, identifier: str | Iterable[str], metadata_location: str, overwrite: bool = False
    ) -> Table:
        """Register an existing metadata file under a name (``overwrite``: replace the table's)."""
        namespace, name = parse_table_identifier(identifier)
        body: dict[str, Any] = {"name": name, "metadata-location": metadata_location}
        if overwrite:
            body["overwrite"] = True
        result = self.http.request("POST", self.routes.register(namespace), body=body, mutation=True).json()
        return self._table_from_result((*namespace, name), result)

    # ------------------------------------------------------------------ commits

    def commit_table(
        self,
        identifier: str | Iterable[str],
        base_metadata_location: str | None,
        new_metadata: TableMetadata,
        *,
        base_metadata: TableMetadata | None = None,
    ) -> str:
        """Send the changes from ``base_metadata`` to ``new_metadata``; returns the new location."""
        namespace, name = parse_table_identifier(identifier)
        if base_metadata_location is None or base_metadata is None:
            if base_metadata_location is not None:
                base_metadata = self.load_table((*namespace, name)).metadata
                changes = metadata_changes(base_metadata, new_metadata)
            else:
                changes = creation_changes(new_metadata)
        else:
            changes = metadata_changes(base_metadata, new_metadata)
        return self._commit((*namespace, name), changes, new_metadata)

    @staticmethod
    def commit_request_body(identifier: TableIdentifier, changes: MetadataChanges) -> dict[str, Any]:
        """The ``CommitTableRequest`` of one table's changes."""
        namespace, name = identifier[:-1], identifier[-1]
        return {
            "identifier": {"namespace": list(namespace), "name": name},
            "requirements": [requirement_to_dict(r) for r in changes.requirements],
            "updates": [update_to_dict(u) for u in changes.updates],
        }

    def _commit(
        self, identifier: TableIdentifier, changes: MetadataChanges, proposed: TableMetadata | None = None
    ) -> str:
        namespace, name = identifier[:-1], identifier[-1]
        body = self.commit_request_body(identifier, changes)
        try:
            result = self.http.request("POST", self.routes.table(namespace, name), body=body, mutation=True)
        except (ServiceError, CommitStateUnknown) as exc:
            return self._reconcile(identifier, changes, exc)
        # the reply repeats the table's history, which the client proposed: not parsed again
        reply, verbatim = load_reply(result.body, "metadata", proposed)
        if len(self._committed) > 64:
            self._committed.clear()
        self._committed[str(reply["metadata-location"])] = (reply["metadata"], proposed, verbatim)
        self._remember(identifier, str(reply["metadata-location"]))
        return str(reply["metadata-location"])

    def commit_tables(
        self, changes: Sequence[tuple[str | Iterable[str], TableMetadata, TableMetadata]]
    ) -> None:
        """Commit several tables atomically (``/transactions/commit``): each item is (identifier,
        base metadata, new metadata); all land or none (CommitConflict when a base moved)."""
        if COMMIT_TRANSACTION not in self.endpoints:
            raise Unsupported("this REST catalog does not advertise multi-table transactions")
        table_changes = []
        for identifier, base, new in changes:
            namespace, name = parse_table_identifier(identifier)
            diff = metadata_changes(base, new)
            table_changes.append(
                {
                    "identifier": {"namespace": list(namespace), "name": name},
                    "requirements": [requirement_to_dict(r) for r in diff.requirements],
                    "updates": [update_to_dict(u) for u in diff.updates],
                }
            )
        self.http.request(
            "POST", self.routes.transactions(), body={"table-changes": table_changes}, mutation=True
        )

    def _reconcile(self, identifier: TableIdentifier, changes: MetadataChanges, cause: Exception) -> str:
        """After a 5xx or timeout: committed if the table now has every snapshot we added."""
        wanted = changes.added_snapshot_ids()
        try:
            location, result = self._load(identifier)
        except Exception as exc:
            raise CommitStateUnknown(
                f"commit to {identifier_to_string(identifier)} failed ({cause}); "
                f"reloading to check also failed: {exc}"
            ) from cause
        have = {s.get("snapshot-id") for s in (result["metadata"].get("snapshots") or [])}
        if wanted and all(w in have for w in wanted) and location:
            logger.info("commit to %s succeeded despite %s", identifier_to_string(identifier), cause)
            self._committed[location] = (result["metadata"], None, {})
            return location
        raise CommitStateUnknown(
            f"commit to {identifier_to_string(identifier)} failed ({cause}); the table does not show its "
            "snapshots, but the service may still apply it"
        ) from cause

    def _remember(self, identifier: TableIdentifier, location: str) -> None:
        if len(self._seen) > 1024:
            self._seen.clear()
        self._seen[(identifier, location)] = time.monotonic()

    def load_for_commit(
        self, identifier: tuple[str, ...], known: tuple[TableMetadata, str] | None
    ) -> tuple[TableMetadata, str | None]:
        """Start a commit from the table's own metadata when this client loaded or committed it a
        moment ago (once: a retry after a conflict reloads). The service checks the commit's
        requirements against its current metadata, so a stale base costs a 409, never a lost write."""
        if known is not None:
            seen = self._seen.pop((tuple(identifier), known[1]), None)
            if seen is not None and time.monotonic() - seen <= self.trust_seen_metadata_s:
                return known
        return self.load_current(identifier, None)

    def load_current(
        self, identifier: tuple[str, ...], known: tuple[TableMetadata, str] | None
    ) -> tuple[TableMetadata, str | None]:
        """The service's answer, not the file (it may vend the credentials the file needs), and
        never the state this client saw a moment ago: another client may have committed since."""
        return super().load_current(identifier, None)

    def committed_metadata(self, location: str, proposed: TableMetadata) -> TableMetadata:
        """The metadata the service committed at ``location`` (its own last-updated, metadata-log).

        Its snapshots that ``proposed`` holds unchanged (all of them, or all but the newest when
        the service rebased the commit) are taken from ``proposed`` instead of parsed again."""
        found = self._committed.pop(location, None)
        if found is None:
            return proposed
        data, cut_for, verbatim = found  # members' markers stand for cut_for's items
        return table_metadata_from_json(data, known=cut_for if verbatim else proposed, verbatim=verbatim)


def _warehouse_param(properties: dict[str, str]) -> dict[str, str]:
    warehouse = properties.get("warehouse")
    return {"warehouse": warehouse} if warehouse else {}
