"""Commits applied by the server: check the requirements, apply the updates, write, swap.

``commit_table`` handles one table (``POST .../tables/{table}``), ``commit_transaction`` several
at once (``POST /transactions/commit``, all-or-nothing through one database transaction of the SQL
catalog). Both re-read the table's current metadata under a per-table lock, so concurrent requests
to one table in this server queue up and are each validated against the newest metadata; a
compare-and-swap lost to another server process is retried on fresh metadata, while a failed
requirement is the client's conflict (409).

A commit whose requirements include ``assert-create`` creates the table (a staged create): its
metadata is built from the updates alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace

from icefloe.catalog.base import Catalog, warehouse_location
from icefloe.catalog.identifiers import Namespace
from icefloe.errors import CommitConflict, NoSuchTable, Unsupported, ValidationError
from icefloe.formats.metadata.files import new_metadata_with_log, read_table_metadata, write_table_metadata
from icefloe.io.durability import durability_barrier
from icefloe.io.fileio import FileIO
from icefloe.server.checks import check_inside, check_location_properties
from icefloe.server.vending import is_s3_location, table_write_locations
from icefloe.server.vending_policy import packed_session_policy
from icefloe.spec.requirements import AssertCreate, TableRequirement, validate_requirements
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import (
    AddSchema,
    AssignUUID,
    SetCurrentSchema,
    SetLocation,
    TableUpdate,
    UpgradeFormatVersion,
    apply_updates,
)

TableKey = tuple[Namespace, str]


class TableLocks:
    """One lock per table, so this process applies one commit to a table at a time."""

    def __init__(self) -> None:
        self._locks: dict[TableKey, threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, key: TableKey) -> threading.Lock:
        """The lock of one table."""
        with self._guard:
            found = self._locks.get(key)
            if found is None:
                found = self._locks[key] = threading.Lock()
            return found

    @contextmanager
    def holding(self, keys: list[TableKey]) -> Iterator[None]:
        """Hold the locks of several tables (taken in sorted order: no deadlock)."""
        with ExitStack() as stack:
            for key in sorted(set(keys)):
                stack.enter_context(self.lock(key))
            yield


@dataclass(frozen=True)
class TableChange:
    """One table's part of a commit request."""

    namespace: Namespace
    name: str
    requirements: list[TableRequirement]
    updates: list[TableUpdate]

    @property
    def key(self) -> TableKey:
        """The table's (namespace, name)."""
        return (self.namespace, self.name)


@dataclass(frozen=True)
class PreparedChange:
    """A change applied in memory: what the catalog points at now and the metadata to write."""

    change: TableChange
    base_location: str | None
    base: TableMetadata | None
    new: TableMetadata


def current_state(catalog: Catalog, namespace: Namespace, name: str) -> tuple[str, TableMetadata] | None:
    """The table's metadata location and metadata, or None when the table does not exist."""
    try:
        location = catalog._table_metadata_location(namespace, name)
    except NoSuchTable:
        return None
    return location, read_table_metadata(catalog._file_io(None, location), location)


def metadata_for_create(updates: list[TableUpdate]) -> TableMetadata:
    """The metadata of a table created by updates alone (``assert-create``)."""
    uuid = next((u.uuid for u in updates if isinstance(u, AssignUUID)), None)
    location = next((u.location for u in updates if isinstance(u, SetLocation)), None)
    version = next((u.format_version for u in updates if isinstance(u, UpgradeFormatVersion)), 2)
    if uuid is None or location is None:
        raise ValidationError("creating a table by commit needs assign-uuid and set-location updates")
    empty = TableMetadata(
        format_version=version,
        table_uuid=uuid,
        location=location.rstrip("/"),
        last_updated_ms=0,
        last_column_id=0,
        schemas=(),
        current_schema_id=-1,
        partition_specs=(),
        default_spec_id=-1,
        last_partition_id=999,
        sort_orders=(),
        default_sort_order_id=-1,
        next_row_id=0 if version >= 3 else None,
    )
    # Specs and sort orders are checked against the current schema, and some clients (DuckDB)
    # send set-current-schema last: apply the schema updates first, the rest in their order.
    rest = [u for u in updates if not isinstance(u, UpgradeFormatVersion)]
    schema_first: list[TableUpdate] = [u for u in rest if isinstance(u, (AddSchema, SetCurrentSchema))]
    md = apply_updates(empty, schema_first + [u for u in rest if u not in schema_first])
    if not md.schemas or md.current_schema_id < 0:
        raise ValidationError("creating a table by commit needs add-schema and set-current-schema")
    if not md.partition_specs:
        from icefloe.spec.partitioning import UNPARTITIONED

        md = replace(md, partition_specs=(UNPARTITIONED,), default_spec_id=UNPARTITIONED.spec_id)
    if not md.sort_orders:
        from icefloe.spec.sort_order import UNSORTED

        md = replace(md, sort_orders=(UNSORTED,), default_sort_order_id=UNSORTED.order_id)
    try:
        md.schema(), md.spec(), md.sort_order()
    except Exception as exc:
        raise ValidationError(f"the updates do not describe a complete table: {exc}") from None
    return md


@dataclass(frozen=True)
class LocationRules:
    """Where a table may write, checked on the metadata of every commit before it is written.

    Its location and write paths stay inside the ``warehouse``. When the server vends credentials
    scoped by an IAM session policy (``scoped_credentials``), a table on S3 must also write to
    locations one policy can name: a commit that pushed the policy past IAM's bound would be
    accepted, and every credential-vending load of the table refused afterwards.
    """

    warehouse: str | None
    scoped_credentials: bool = False

    def check(self, md: TableMetadata) -> None:
        """Refuse (``ValidationError``) metadata that breaks a rule."""
        self.check_locations(md.location, md.properties)

    def check_locations(self, location: str, properties: Mapping[str, str]) -> None:
        """Refuse a table at ``location`` with ``properties`` that breaks a rule."""
        check_inside(location, self.warehouse)
        check_location_properties(properties, self.warehouse)
        if self.scoped_credentials and is_s3_location(location):
            # a WRITE grant's policy is the larger one: if it fits, the READ one does
            packed_session_policy(table_write_locations(location, properties), write=True)


def prepare(catalog: Catalog, change: TableChange, rules: LocationRules) -> PreparedChange:
    """Validate the requirements against the current metadata and apply the updates in memory."""
    state = current_state(catalog, change.namespace, change.name)
    creating = any(isinstance(r, AssertCreate) for r in change.requirements)
    if state is None and not creating:
        raise NoSuchTable(f"table {'.'.join((*change.namespace, change.name))!r} does not exist")
    base_location, base = state if state is not None else (None, None)
    validate_requirements(base, change.requirements)
    if base is None:
        new = metadata_for_create(change.updates)
    else:
        new = apply_updates(base, change.updates)
    rules.check(new)
    return PreparedChange(change, base_location, base, new)


def _with_log(prepared: PreparedChange) -> TableMetadata:
    if prepared.base_location is None:
        return prepared.new
    return new_metadata_with_log(prepared.new, prepared.base_location, prepared.base)


def commit_table(
    catalog: Catalog, locks: TableLocks, change: TableChange, retries: int, rules: LocationRules
) -> tuple[str, TableMetadata]:
    """Apply one table's change and swap it in; returns the new metadata location and metadata."""
    with locks.holding([change.key]):
        attempt = 0
        while True:
            prepared = prepare(catalog, change, rules)
            if prepared.base is not None and prepared.new is prepared.base:
                assert prepared.base_location is not None
                return prepared.base_location, prepared.base  # nothing changed
            if prepared.base_location is None:
                catalog._require_namespace(change.namespace)
            md = _with_log(prepared)
            try:
                location = catalog.commit_table(
                    (*change.namespace, change.name), prepared.base_location, md, base_metadata=prepared.base
                )
            except CommitConflict:
                attempt += 1
                if attempt > retries:
                    raise
                continue  # another server process won the swap: re-apply on its metadata
            return location, md


def commit_transaction(
    catalog: Catalog, locks: TableLocks, changes: list[TableChange], rules: LocationRules
) -> None:
    """Apply several tables' changes atomically (SQL catalog only for more than one table)."""
    if len({c.key for c in changes}) != len(changes):
        raise ValidationError("a transaction may change each table only once")
    if len(changes) == 1:
        commit_table(catalog, locks, changes[0], retries=0, rules=rules)
        return
    from icefloe.catalog.sql import SqlCatalog
    from icefloe.catalog.sql_multi_commit import PointerSwap, swap_pointers

    if not isinstance(catalog, SqlCatalog):
        raise Unsupported("multi-table transactions need the SQL catalog")
    with locks.holding([c.key for c in changes]):
        prepared = [prepare(catalog, change, rules) for change in changes]
        for p in prepared:
            if p.base_location is None:
                catalog._require_namespace(p.change.namespace)
        written: list[tuple[FileIO, str]] = []
        swaps: list[PointerSwap] = []
        try:
            with durability_barrier():  # every table's metadata file synced at once, before the swaps
                for p in prepared:
                    md = _with_log(p)
                    io = catalog._file_io(md.properties, md.location)
                    location = write_table_metadata(io, md.location, md, previous_location=p.base_location)
                    written.append((io, location))
                    swaps.append(PointerSwap(p.change.namespace, p.change.name, p.base_location, location))
                swap_pointers(catalog, swaps)  # its transaction waits for the fsyncs before COMMIT
        except BaseException as exc:
            from icefloe.errors import CommitStateUnknown

            if not isinstance(exc, CommitStateUnknown):
                for io, location in written:
                    io.delete(location, missing_ok=True)
            raise


def warehouse_of(catalog: Catalog) -> str | None:
    """The catalog's warehouse as a location URI."""
    return warehouse_location(catalog.warehouse) if catalog.warehouse else None
