"""The Catalog interface and the metadata-file bookkeeping every metastore-style catalog shares.

A catalog maps table identifiers to the location of each table's current metadata file. Concrete
catalogs (``SqlCatalog``) implement namespaces and a handful of row-level primitives; this class
builds table creation, loading, dropping (with purge), renaming, registration and the commit
primitive on top of them.

Commit protocol (``commit_table``): write the new metadata file under a fresh name, then
compare-and-swap the catalog's pointer from the base location to the new one.

- pointer swapped: the commit happened; the new location is returned;
- lost race (pointer no longer at the base) or table gone: the new file is deleted and
  ``CommitConflict`` / ``NoSuchTable`` is raised; nothing changed (both are ``CleanableFailure``s);
- outcome unknown (connection lost while committing): ``CommitStateUnknown`` is raised and no file
  is deleted, because the new file may be the table's current metadata;
- anything else during the swap (KeyboardInterrupt, a signal, a timeout, an unexpected error):
  raised as is and no file is deleted, for the same reason (``errors.nothing_committed``).
"""

from __future__ import annotations

import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import ClassVar

import pyarrow as pa

from icefloe.catalog.identifiers import (
    Namespace,
    TableIdentifier,
    identifier_to_string,
    parse_namespace,
    parse_table_identifier,
)
from icefloe.catalog.login import without_login
from icefloe.errors import (
    AlreadyExists,
    IcefloeError,
    NoSuchNamespace,
    NoSuchTable,
    NotFound,
    ValidationError,
    nothing_committed,
)
from icefloe.formats.arrow_schema import schema_from_arrow
from icefloe.formats.metadata.files import (
    DELETE_AFTER_COMMIT,
    new_metadata_with_log,
    read_table_metadata,
    removed_metadata_files,
    write_table_metadata,
)
from icefloe.io.durability import durability_barrier, sync_pending
from icefloe.io.fileio import FileIO, load_file_io
from icefloe.lru import LruCache
from icefloe.spec.names import check_column_names
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.properties import gc_enabled
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import new_table_metadata
from icefloe.table.table import Table
from icefloe.tree import read_seam
from icefloe.tree.location_rules import (
    WRITE_PATH_PROPERTIES,
    OtherTable,
    check_confined,
    check_no_overlap,
    check_not_owned,
    checked_location,
    table_roots,
    under_any,
)
from icefloe.tree.reachable import content_locations
from icefloe.txn.partition_evolution import check_redundant_fields

logger = logging.getLogger(__name__)

WAREHOUSE = "warehouse"
NAMESPACE_LOCATION = "location"
_FILE_IOS_KEPT = 16
"""FileIOs a catalog keeps, one per distinct property set (tables with their own ``s3.*`` settings)."""


@dataclass(frozen=True)
class PropertiesUpdateSummary:
    """What ``update_namespace_properties`` did: keys removed, keys set, removal keys not found."""

    removed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def warehouse_location(value: str) -> str:
    """A warehouse root as a URI without trailing slash; plain local paths become ``file:///abs``.

    Metadata written by other engines always carries URIs, and some readers (iceberg-rust)
    cannot resolve a location without a scheme, so icefloe never writes bare paths.
    """
    value = value.strip()
    if value.startswith("file:") and not value.startswith("file://"):
        value = "file://" + value[len("file:") :]  # file:/x -> file:///x
    if "://" not in value:
        value = "file://" + os.path.abspath(os.path.expanduser(value))
    stripped = value.rstrip("/")
    return stripped if not stripped.endswith(":/") and not stripped.endswith(":") else value


class Catalog(ABC):
    """A catalog of Iceberg tables grouped in namespaces (PyIceberg-like surface)."""

    swap_checks_location: ClassVar[bool] = False
    """True when ``commit_table`` moves the pointer only while it still names the base location
    (a compare-and-swap on the location) and a metadata location names one file content forever.
    Then a commit may start from metadata seen earlier instead of reading the pointer first: a
    stale base loses the swap (``CommitConflict``) and nothing changes. False by default (e.g. the
    Hadoop catalog, whose ``vN`` names are reused)."""

    swap_syncs_pending: ClassVar[bool] = False
    """True when ``_swap_metadata_location`` makes the files pending in the durability barrier
    durable itself before the pointer moves (the SQL catalog overlaps those fsyncs with its
    transaction's statements, ``catalog.background_sync``); else ``commit_table`` syncs them first."""

    def __init__(self, name: str, **properties: str) -> None:
        self.name = name
        self.properties: dict[str, str] = dict(properties)
        warehouse = self.properties.get(WAREHOUSE)
        self.warehouse: str | None = warehouse_location(warehouse) if warehouse else None
        if self.warehouse is not None:
            self.properties[WAREHOUSE] = self.warehouse
        self._file_ios: LruCache[tuple[tuple[str, str], ...], FileIO] = LruCache(_FILE_IOS_KEPT)
        self._file_ios_lock = threading.Lock()  # also keeps two threads from making one FileIO twice

    # ------------------------------------------------------------------ namespaces (subclasses)

    @abstractmethod
    def create_namespace(
        self, namespace: str | Iterable[str], properties: dict[str, str] | None = None
    ) -> None:
        """Create a namespace; AlreadyExists if it exists."""

    @abstractmethod
    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """The namespaces directly below ``parent`` (top level for ``()``), as tuples."""

    @abstractmethod
    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """A namespace's properties; NoSuchNamespace if it does not exist."""

    @abstractmethod
    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: dict[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one step."""

    @abstractmethod
    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace; NamespaceNotEmpty while it holds tables or child namespaces."""

    @abstractmethod
    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists."""

    # ------------------------------------------------------------------ table rows (subclasses)

    @abstractmethod
    def _insert_table_row(self, namespace: Namespace, name: str, metadata_location: str) -> None:
        """Record a new table; AlreadyExists if the name is taken. May raise CommitStateUnknown."""

    @abstractmethod
    def _table_metadata_location(self, namespace: Namespace, name: str) -> str:
        """The current metadata location of a table; NoSuchTable if there is none."""

    @abstractmethod
    def _delete_table_row(self, namespace: Namespace, name: str) -> None:
        """Forget a table; NoSuchTable if there is none."""

    @abstractmethod
    def _rename_table_row(self, src: tuple[Namespace, str], dst: tuple[Namespace, str]) -> None:
        """Rename a table row; NoSuchTable / AlreadyExists."""

    @abstractmethod
    def _list_table_names(self, namespace: Namespace) -> list[str]:
        """Names of the tables directly in ``namespace``."""

    @abstractmethod
    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        """Atomically move the table's pointer from ``expected`` to ``new``.

        Raise CommitConflict when the pointer is no longer ``expected``, NoSuchTable when the table
        is gone (both: nothing changed), CommitStateUnknown when the outcome cannot be known.
        """

    # ------------------------------------------------------------------ helpers

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release connections held by the catalog."""

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _io_properties(self) -> dict[str, str]:
        """The catalog properties its FileIOs get: all but the catalog's login (``catalog.login``),
        since FileIO properties travel to Spark executors (a SQL catalog's URI with a password)."""
        return without_login(self.properties)

    def _file_io(self, table_properties: dict[str, str] | None, location: str | None) -> FileIO:
        """The FileIO for a table's (or the catalog's own) properties, one kept per distinct set.

        A new FileIO per call would build a new S3 client per commit: milliseconds each, and pyarrow
        makes a new client wait until every request in flight on any client has ended, which would
        hold the metadata file back until the commit's background uploads (``io.uploads``) are done.
        """
        properties = {**self._io_properties(), **(table_properties or {})}
        key = tuple(sorted(properties.items()))
        with self._file_ios_lock:
            io = self._file_ios.get(key)
            if io is None:
                io = load_file_io(properties, location)
                self._file_ios.put(key, io)
            return io

    def default_table_location(self, namespace: Namespace, name: str) -> str:
        """``<namespace location>/<table>``, else ``<warehouse>/<ns levels...>/<table>``."""
        ns_location = self.load_namespace_properties(namespace).get(NAMESPACE_LOCATION)
        if ns_location:
            self._check_confined(ns_location, f"location of namespace {identifier_to_string(namespace)}")
            return f"{warehouse_location(ns_location)}/{name}"
        if self.warehouse is None:
            raise ValidationError(
                f"cannot choose a location for table {identifier_to_string((*namespace, name))}: "
                "the catalog has no 'warehouse' property; pass location= or configure a warehouse"
            )
        return "/".join((self.warehouse.rstrip("/"), *namespace, name))

    # ------------------------------------------------------------------ location rules

    def _check_confined(self, location: str, what: str) -> None:
        check_confined(location, what, self.warehouse, self.properties)

    def _check_namespace_properties(self, namespace: Namespace, properties: dict[str, str]) -> None:
        """A namespace ``location`` property obeys the table location rules (``location_rules``)."""
        if NAMESPACE_LOCATION in properties:
            what = f"location of namespace {identifier_to_string(namespace)}"
            self._check_confined(properties[NAMESPACE_LOCATION], what)

    def _all_table_rows(self) -> list[tuple[Namespace, str, str]]:
        """(namespace, name, metadata location) of every table of the catalog (subclasses may speed up)."""
        rows: list[tuple[Namespace, str, str]] = []
        pending = list(self.list_namespaces())
        while pending:
            ns = pending.pop()
            pending.extend(self.list_namespaces(ns))
            for name in self._list_table_names(ns):
                try:
                    rows.append((ns, name, self._table_metadata_location(ns, name)))
                except NoSuchTable:  # dropped meanwhile
                    continue
        return rows

    def _all_view_rows(self) -> list[tuple[Namespace, str, str, str | None]]:
        """(namespace, name, metadata location, previous metadata location) of every view of the
        catalog; none unless the catalog keeps views (``SqlCatalog``)."""
        return []

    def other_tables(self, exclude: Iterable[str] | None = None) -> list[OtherTable]:
        """Every table and view of the catalog but ``exclude``, with its roots and owned metadata files.

        A table whose metadata cannot be read counts with the directory above its metadata file's
        ``metadata/`` folder, so that its files stay protected anyway. Views are taken from their
        rows alone (``OtherTable.of_view``): no view metadata file is read.
        """
        skip = tuple(exclude) if exclude is not None else None
        out = []
        for namespace, name, metadata_location in self._all_table_rows():
            if skip is not None and (*namespace, name) == skip:
                continue
            shown = identifier_to_string((*namespace, name))
            try:
                md = read_table_metadata(self._file_io(None, metadata_location), metadata_location)
            except IcefloeError as exc:
                logger.warning("location rules: cannot read %s of %s: %s", metadata_location, shown, exc)
                md = None
            out.append(OtherTable.of(shown, metadata_location, md))
        for namespace, name, metadata_location, previous in self._all_view_rows():
            if skip is None or (*namespace, name) != skip:
                shown = identifier_to_string((*namespace, name))
                out.append(OtherTable.of_view(shown, metadata_location, previous))
        return out

    def other_table_roots(self, identifier: str | Iterable[str]) -> tuple[str, ...]:
        """The roots of every other table and view of the catalog: files under them are not this table's."""
        namespace, name = parse_table_identifier(identifier)
        return tuple(root for other in self.other_tables((*namespace, name)) for root in other.roots)

    def _check_table_roots(
        self, namespace: Namespace, name: str, md: TableMetadata, *, confine: bool = True
    ) -> list[OtherTable]:
        """Refuse roots of ``md`` outside the warehouse or overlapping another table's; the others."""
        shown = identifier_to_string((*namespace, name))
        if confine:
            self._check_confined(md.location, f"location of table {shown}")
            for key in WRITE_PATH_PROPERTIES:
                if md.properties.get(key):
                    self._check_confined(md.properties[key], f"{key} of table {shown}")
        others = self.other_tables((*namespace, name))
        check_no_overlap(shown, table_roots(md), others)
        return others

    def _require_namespace(self, namespace: Namespace) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespace(f"namespace {identifier_to_string(namespace)!r} does not exist")

    def _table(self, namespace: Namespace, name: str, metadata_location: str, md: TableMetadata) -> Table:
        io = self._file_io(md.properties, md.location)
        identifier = (*namespace, name)
        target = CatalogCommitTarget(self, identifier, io, (md, metadata_location))
        return Table(identifier, md, metadata_location, io, target)

    # ------------------------------------------------------------------ tables

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Table:
        """Create a table and write its first metadata file (``format-version`` property: 1-4, default 2).

        ``schema``: an icefloe ``Schema``, or a ``pyarrow.Schema`` (fresh field ids are assigned in
        field order; a partition spec or sort order must then refer to those ids).
        """
        if isinstance(schema, pa.Schema):
            schema = schema_from_arrow(schema)
        namespace, name = parse_table_identifier(identifier)
        self._require_namespace(namespace)
        if self.table_exists((*namespace, name)):
            raise AlreadyExists(f"table {identifier_to_string((*namespace, name))!r} already exists")
        props = {str(k): str(v) for k, v in (properties or {}).items()}
        if location is not None:
            self._check_confined(location, f"location of table {identifier_to_string((*namespace, name))}")
        table_location = (
            warehouse_location(location) if location else self.default_table_location(namespace, name)
        )
        md = new_table_metadata(schema, partition_spec, sort_order, table_location, props)
        check_redundant_fields(md.spec(), md.schema())  # the rule update_spec applies
        check_column_names(md.schema().fields)  # the rule schema evolution applies
        self._check_table_roots(namespace, name, md)
        metadata_location = self._write_first_metadata(namespace, name, md)
        return self._table(namespace, name, metadata_location, md)

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """Load a table's current metadata; NoSuchTable if the catalog does not know it."""
        namespace, name = parse_table_identifier(identifier)
        metadata_location = self._table_metadata_location(namespace, name)
        io = self._file_io(None, metadata_location)
        md = read_table_metadata(io, metadata_location)
        return self._table(namespace, name, metadata_location, md)

    def table_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the catalog has a table with this identifier."""
        namespace, name = parse_table_identifier(identifier)
        try:
            self._table_metadata_location(namespace, name)
        except NoSuchTable:
            return False
        return True

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        """Identifiers of the tables directly in a namespace, sorted."""
        ns = parse_namespace(namespace)
        self._require_namespace(ns)
        return [(*ns, name) for name in sorted(self._list_table_names(ns))]

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Remove a table from the catalog; with ``purge`` also delete its data and metadata files."""
        namespace, name = parse_table_identifier(identifier)
        metadata_location = self._table_metadata_location(namespace, name)
        md: TableMetadata | None = None
        protected = self.other_table_roots((*namespace, name)) if purge else ()
        if purge:
            try:
                md = read_table_metadata(self._file_io(None, metadata_location), metadata_location)
            except IcefloeError as exc:
                logger.warning(
                    "cannot read %s to purge table files; dropping without purge: %s", metadata_location, exc
                )
        self._delete_table_row(namespace, name)
        if md is not None:
            purge_table_files(self._file_io(md.properties, md.location), md, metadata_location, protected)

    def rename_table(self, from_identifier: str | Iterable[str], to_identifier: str | Iterable[str]) -> Table:
        """Rename (or move to another namespace) a table; its files stay where they are."""
        src = parse_table_identifier(from_identifier)
        dst = parse_table_identifier(to_identifier)
        if src != dst:
            self._table_metadata_location(*src)
            self._require_namespace(dst[0])
            if self.table_exists((*dst[0], dst[1])):
                raise AlreadyExists(f"table {identifier_to_string((*dst[0], dst[1]))!r} already exists")
            self._rename_table_row(src, dst)
        return self.load_table((*dst[0], dst[1]))

    def register_table(
        self, identifier: str | Iterable[str], metadata_location: str, overwrite: bool = False
    ) -> Table:
        """Add an existing table to the catalog by the location of its metadata file; with
        ``overwrite`` an existing table of that name is pointed at it instead (AlreadyExists without)."""
        namespace, name = parse_table_identifier(identifier)
        self._require_namespace(namespace)
        current = (
            self._table_metadata_location(namespace, name) if self.table_exists((*namespace, name)) else None
        )
        if current is not None and not overwrite:
            raise AlreadyExists(f"table {identifier_to_string((*namespace, name))!r} already exists")
        checked_location(metadata_location, "metadata location")
        # the file must exist now, not only have been cached: a registered pointer to nothing
        # would fail every later load in every other process
        md = read_table_metadata(
            self._file_io(None, metadata_location), metadata_location, confirm_exists=True
        )
        check_not_owned(metadata_location, self.other_tables((*namespace, name)))
        self._check_table_roots(namespace, name, md)
        if current is None:
            self._insert_table_row(namespace, name, metadata_location)
        elif current != metadata_location:
            self._swap_metadata_location(namespace, name, current, metadata_location)
        return self._table(namespace, name, metadata_location, md)

    def _write_first_metadata(self, namespace: Namespace, name: str, md: TableMetadata) -> str:
        """Write a new table's first metadata file and insert its row (the file is deleted if that fails)."""
        io = self._file_io(md.properties, md.location)
        location = write_table_metadata(io, md.location, md)
        try:
            self._insert_table_row(namespace, name, location)
        except (AlreadyExists, NotFound):
            _delete_quietly(io, location)
            raise
        return location

    def commit_table(
        self,
        identifier: str | Iterable[str],
        base_metadata_location: str | None,
        new_metadata: TableMetadata,
        *,
        base_metadata: TableMetadata | None = None,
    ) -> str:
        """Write ``new_metadata`` and swap the table's pointer from ``base_metadata_location`` to it.

        ``base_metadata_location=None`` creates the table. The base file is recorded in the new
        metadata-log if the caller has not done so (``formats.metadata_file.new_metadata_with_log``);
        pass ``base_metadata`` to spare reading it. Returns the new metadata location. Raises
        CommitConflict (retry on fresh metadata), NoSuchTable, or CommitStateUnknown (see module doc).
        """
        namespace, name = parse_table_identifier(identifier)
        io = self._file_io(new_metadata.properties, new_metadata.location)
        if base_metadata_location is None:
            self._require_namespace(namespace)
            return self._write_first_metadata(namespace, name, new_metadata)

        if base_metadata is None:
            base_metadata = read_table_metadata(io, base_metadata_location)
        if table_roots(new_metadata) != table_roots(base_metadata):  # a new location or write path
            self._check_table_roots(namespace, name, new_metadata)
        md = new_metadata
        log = md.metadata_log
        if not log or log[-1].metadata_file != base_metadata_location:
            if base_metadata is None:
                base_metadata = read_table_metadata(io, base_metadata_location)
            md = new_metadata_with_log(md, base_metadata_location, base_metadata)
        else:
            md = new_metadata_with_log(md, None, None)  # trims to previous-versions-max only
        with durability_barrier():  # the metadata file is synced with the commit's other files
            location = write_table_metadata(io, md.location, md, previous_location=base_metadata_location)
            try:
                if not self.swap_syncs_pending:
                    sync_pending()  # a failure here is before the swap: nothing committed
                self._swap_metadata_location(namespace, name, base_metadata_location, location)
            except BaseException as exc:
                # Only a failure known to leave the pointer unchanged (a lost compare-and-swap, a
                # table dropped meanwhile) frees the new file; after an interrupt, a timeout or an
                # unknown error the pointer may already name it.
                if nothing_committed(exc):
                    _delete_quietly(io, location)
                raise
        if md.properties.get(DELETE_AFTER_COMMIT, "false").strip().lower() == "true":
            self._delete_old_metadata_files(io, base_metadata_location, base_metadata, md)
        return location

    def ensure_writable(self, identifier: tuple[str, ...]) -> None:  # noqa: B027 - optional hook
        """Raise when the table may not be changed (a read-only catalog); nothing to check by default."""

    def load_for_commit(
        self, identifier: tuple[str, ...], known: tuple[TableMetadata, str] | None
    ) -> tuple[TableMetadata, str | None]:
        """The metadata a commit attempt starts from: the catalog's current one (``known`` is what the
        table last loaded or committed, which a catalog may trust instead of reloading; the
        compare-and-swap guards the commit whatever the base). By default ``load_current``."""
        return self.load_current(identifier, known)

    def load_current(
        self, identifier: tuple[str, ...], known: tuple[TableMetadata, str] | None
    ) -> tuple[TableMetadata, str | None]:
        """The table's current metadata and its location, as the catalog names them now (what
        ``Table.refresh`` shows; never a remembered state the catalog has not just confirmed).

        The catalog's pointer is always read. When it still names ``known``'s file, that file is not
        read again: a metadata file never changes once written (fresh UUID name, created once), so
        the table's own last load or commit is current with no request to the file store."""
        if known is None:
            fresh = self.load_table(identifier)
            return fresh.metadata, fresh.metadata_location
        namespace, name = parse_table_identifier(identifier)
        location = self._table_metadata_location(namespace, name)
        if location == known[1]:
            return known
        return read_table_metadata(self._file_io(None, location), location), location

    def committed_metadata(self, location: str, proposed: TableMetadata) -> TableMetadata:
        """The metadata a commit stored at ``location``: what this client wrote, unless the catalog
        service wrote its own (REST)."""
        del location
        return proposed

    def _delete_old_metadata_files(
        self, io: FileIO, base_location: str, base_md: TableMetadata | None, new_md: TableMetadata
    ) -> None:
        try:
            if base_md is None:
                base_md = read_table_metadata(io, base_location)
            for path in removed_metadata_files(base_md, new_md):
                _delete_quietly(io, path)
        except IcefloeError as exc:  # best effort: the commit has happened
            logger.warning("could not delete old metadata files after commit: %s", exc)


def _delete_quietly(io: FileIO, path: str) -> None:
    try:
        io.delete(path)
    except (FileNotFoundError, NotFound):
        pass
    except Exception as exc:  # cleanup must not hide the real outcome
        logger.warning("could not delete %s: %s", path, exc)


def _table_files(io: FileIO, md: TableMetadata, metadata_location: str) -> Iterator[str]:
    """Every file the metadata references: metadata, manifests, data and delete files, statistics."""
    yield metadata_location
    for log_entry in md.metadata_log:
        yield log_entry.metadata_file
    yield from md.statistics_paths()
    gc = gc_enabled(md.properties)
    for snapshot in md.snapshots:
        for path in (snapshot.manifest_list, snapshot.root_manifest, *(snapshot.manifests or ())):
            if path:
                yield path
    if not md.snapshots:
        return
    seen_manifests: set[str] = set()
    for snapshot in md.snapshots:
        try:
            refs = read_seam.manifest_refs(io, md, snapshot)
        except IcefloeError as exc:
            logger.warning("purge: cannot read manifests of snapshot %s: %s", snapshot.snapshot_id, exc)
            continue
        for ref in refs:
            if ref.manifest_path in seen_manifests:
                continue
            seen_manifests.add(ref.manifest_path)
            yield ref.manifest_path
            if not gc:
                continue
            try:
                entries = read_seam.read_entries(io, md, ref)
            except IcefloeError as exc:
                logger.warning("purge: cannot read manifest %s: %s", ref.manifest_path, exc)
                continue
            for entry in entries:
                yield from content_locations(entry.data_file)


def purge_table_files(
    io: FileIO, md: TableMetadata, metadata_location: str, protected: Sequence[str] = ()
) -> int:
    """Delete the files a table's metadata references (data files only when ``gc.enabled``).

    Files under ``protected`` (the roots of the catalog's other tables) are never deleted: a table
    that references them (a registered twin, a table whose files were copied by reference) does
    not own them.
    """
    paths = []
    for path in dict.fromkeys(_table_files(io, md, metadata_location)):
        if under_any(path, protected):
            logger.warning("purge: keeping %s, it lies under another table's location", path)
            continue
        paths.append(path)
    io.delete_many(paths)
    return len(paths)


__all__ = ["Catalog", "PropertiesUpdateSummary", "purge_table_files", "warehouse_location"]


@dataclass
class CatalogCommitTarget:
    """Where a catalog's table commits: the catalog's compare-and-swap of its metadata pointer.

    ``known`` is the (metadata, location) the table last loaded or committed; a catalog may start a
    commit from it instead of reloading (``Catalog.load_for_commit``).
    """

    catalog: Catalog
    identifier: tuple[str, ...]
    io: FileIO
    known: tuple[TableMetadata, str] | None = None

    def load_for_commit(self) -> tuple[TableMetadata, str | None]:
        """The metadata a commit attempt starts from (the catalog decides; by default reloaded)."""
        return self._keep(self.catalog.load_for_commit(self.identifier, self.known))

    def load_current(self) -> tuple[TableMetadata, str | None]:
        """The table's current metadata, always confirmed by the catalog (``Table.refresh``)."""
        return self._keep(self.catalog.load_current(self.identifier, self.known))

    def _keep(self, loaded: tuple[TableMetadata, str | None]) -> tuple[TableMetadata, str | None]:
        metadata, location = loaded
        if location is not None:
            self.known = (metadata, location)
        return metadata, location

    def ensure_writable(self) -> None:
        """The catalog's check (a read-only catalog refuses)."""
        self.catalog.ensure_writable(self.identifier)

    def committed_metadata(self, location: str, proposed: TableMetadata) -> TableMetadata:
        """What the catalog stored at ``location``."""
        stored = self.catalog.committed_metadata(location, proposed)
        self.known = (stored, location)
        return stored

    def other_table_roots(self) -> tuple[str, ...]:
        """The roots of the catalog's other tables: files under them are never this table's."""
        return self.catalog.other_table_roots(self.identifier)

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Write ``new_metadata`` and swap the catalog's pointer to it (see ``Catalog.commit_table``)."""
        return self.catalog.commit_table(
            self.identifier, base_location, new_metadata, base_metadata=base_metadata
        )
