"""HadoopCatalog: tables kept by the file system alone, in Iceberg Java's HadoopCatalog layout.

    <warehouse>/<namespace levels...>/<table>/metadata/v<N>.metadata.json
    <warehouse>/<namespace levels...>/<table>/metadata/version-hint.text   (the number N)

A namespace is a directory; a table is a directory whose ``metadata/`` holds version files. The
current version is the one ``version-hint.text`` names, advanced past any newer ``v<N+1>`` file a
writer created before updating the hint (as Java's ``HadoopTableOperations`` does). A commit
creates ``v<N+1>.metadata.json`` exclusively (a hard link of a complete temporary file: exactly one
of two racing writers gets the name, the other gets ``CommitConflict``) and then rewrites the hint.
Namespace properties, renames and registration are not part of this layout (``Unsupported``),
again as in Java. Local file systems only.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Iterable

from icefloe.catalog.base import Catalog, PropertiesUpdateSummary, purge_table_files
from icefloe.catalog.identifiers import (
    Namespace,
    identifier_to_string,
    parse_namespace,
    parse_table_identifier,
)
from icefloe.errors import (
    AlreadyExists,
    CommitConflict,
    IcefloeError,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    Unsupported,
    ValidationError,
)
from icefloe.formats.metadata.files import encode_table_metadata, new_metadata_with_log, read_table_metadata
from icefloe.io.durability import sync_pending
from icefloe.io.fileio import local_path
from icefloe.spec.partitioning import PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.sort_order import SortOrder
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import new_table_metadata
from icefloe.table.table import Table

logger = logging.getLogger(__name__)
VERSION_HINT = "version-hint.text"
_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


def version_of(path: str) -> int | None:
    """N of a ``v<N>.metadata.json`` path."""
    m = _VERSION_FILE.match(os.path.basename(path))
    return int(m.group(1)) if m else None


def _version_file(metadata_dir: str, version: int) -> str | None:
    for name in (f"v{version}.metadata.json", f"v{version}.gz.metadata.json"):
        if os.path.isfile(os.path.join(metadata_dir, name)):
            return os.path.join(metadata_dir, name)
    return None


def current_version_file(table_dir: str) -> str | None:
    """The current ``v<N>.metadata.json`` of a table directory (None when it is not a table)."""
    metadata_dir = os.path.join(table_dir, "metadata")
    if not os.path.isdir(metadata_dir):
        return None
    version: int | None = None
    try:
        with open(os.path.join(metadata_dir, VERSION_HINT), encoding="utf-8") as f:
            version = int(f.read().strip())
    except (OSError, ValueError):
        found = [version_of(n) for n in os.listdir(metadata_dir)]
        version = max((v for v in found if v is not None), default=None)
    if version is None or _version_file(metadata_dir, version) is None:
        found = [version_of(n) for n in os.listdir(metadata_dir)]
        version = max((v for v in found if v is not None), default=None)
        if version is None:
            return None
    while _version_file(metadata_dir, version + 1) is not None:  # a writer died before the hint
        version += 1
    return _version_file(metadata_dir, version)


class HadoopCatalog(Catalog):
    """File-system tables under ``warehouse`` (``load_catalog(type="hadoop", warehouse=...)``)."""

    def __init__(self, name: str = "hadoop", warehouse: str | None = None, **properties: str) -> None:
        if warehouse is not None:
            properties["warehouse"] = warehouse
        super().__init__(name, **properties)
        if self.warehouse is None:
            raise ValidationError("HadoopCatalog needs a 'warehouse' directory")
        root = local_path(self.warehouse)
        if root is None:
            raise Unsupported(f"HadoopCatalog supports local warehouses only, not {self.warehouse}")
        self.root = root

    def __repr__(self) -> str:
        return f"HadoopCatalog({self.name!r}, warehouse={self.warehouse!r})"

    def _dir(self, levels: Iterable[str]) -> str:
        return os.path.join(self.root, *levels)

    def _is_table_dir(self, path: str) -> bool:
        return current_version_file(path) is not None

    # ------------------------------------------------------------------ namespaces

    def create_namespace(
        self, namespace: str | Iterable[str], properties: dict[str, str] | None = None
    ) -> None:
        """Create the namespace directory (properties are not part of this layout)."""
        ns = parse_namespace(namespace)
        if properties:
            raise Unsupported("the Hadoop catalog layout has no namespace properties")
        path = self._dir(ns)
        if os.path.isdir(path):
            raise AlreadyExists(f"namespace {identifier_to_string(ns)!r} already exists")
        os.makedirs(path)

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """Directories below ``parent`` that are not tables."""
        ns = parse_namespace(parent, allow_empty=True)
        path = self._dir(ns)
        if ns and not os.path.isdir(path):
            raise NoSuchNamespace(f"namespace {identifier_to_string(ns)!r} does not exist")
        if not os.path.isdir(path):
            return []
        return sorted(
            (*ns, entry.name)
            for entry in os.scandir(path)
            if entry.is_dir() and not entry.name.startswith(".") and not self._is_table_dir(entry.path)
        )

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """Only ``location``, as Java reports it."""
        ns = parse_namespace(namespace)
        self._require_namespace(ns)
        return {"location": "file://" + self._dir(ns)}

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: dict[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Not part of this layout."""
        raise Unsupported("the Hadoop catalog layout has no namespace properties")

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Remove an empty namespace directory."""
        ns = parse_namespace(namespace)
        self._require_namespace(ns)
        path = self._dir(ns)
        if any(not e.name.startswith(".") for e in os.scandir(path)):
            raise NamespaceNotEmpty(f"namespace {identifier_to_string(ns)!r} is not empty")
        os.rmdir(path)

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the directory exists and is not a table."""
        path = self._dir(parse_namespace(namespace))
        return os.path.isdir(path) and not self._is_table_dir(path)

    # ------------------------------------------------------------------ table "rows" = directories

    def _insert_table_row(self, namespace: Namespace, name: str, metadata_location: str) -> None:
        raise Unsupported("the Hadoop catalog cannot register existing metadata files")

    def _table_metadata_location(self, namespace: Namespace, name: str) -> str:
        found = current_version_file(self._dir((*namespace, name)))
        if found is None:
            raise NoSuchTable(f"table {identifier_to_string((*namespace, name))!r} does not exist")
        return "file://" + found

    def _delete_table_row(self, namespace: Namespace, name: str) -> None:
        path = self._dir((*namespace, name))
        if not self._is_table_dir(path):
            raise NoSuchTable(f"table {identifier_to_string((*namespace, name))!r} does not exist")
        shutil.rmtree(path)

    def _rename_table_row(self, src: tuple[Namespace, str], dst: tuple[Namespace, str]) -> None:
        raise Unsupported("the Hadoop catalog layout cannot rename tables")

    def _list_table_names(self, namespace: Namespace) -> list[str]:
        path = self._dir(namespace)
        return [e.name for e in os.scandir(path) if e.is_dir() and self._is_table_dir(e.path)]

    def _swap_metadata_location(self, namespace: Namespace, name: str, expected: str, new: str) -> None:
        raise Unsupported("the Hadoop catalog commits by creating version files")

    def load_current(
        self, identifier: tuple[str, ...], known: tuple[TableMetadata, str] | None
    ) -> tuple[TableMetadata, str | None]:
        """Always the file itself: ``vN.metadata.json`` names are reused (a table dropped and created
        again starts at ``v1`` once more), so an unchanged name does not prove unchanged content."""
        return super().load_current(identifier, None)

    # ------------------------------------------------------------------ tables

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        location: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Table:
        """Create ``<warehouse>/<ns>/<table>/metadata/v1.metadata.json`` (no custom locations)."""
        namespace, name = parse_table_identifier(identifier)
        self._require_namespace(namespace)
        table_location = self.default_table_location(namespace, name)
        if location and location.rstrip("/") != table_location:
            raise Unsupported("Hadoop tables live in their directory under the warehouse; no custom location")
        md = new_table_metadata(schema, partition_spec, sort_order, table_location, properties)
        metadata_location = self.commit_table((*namespace, name), None, md)
        return self._table(namespace, name, metadata_location, md)

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Delete the table directory (with ``purge`` also files the metadata names elsewhere)."""
        namespace, name = parse_table_identifier(identifier)
        location = self._table_metadata_location(namespace, name)
        if purge:
            try:
                md = read_table_metadata(self._file_io(None, location), location)
                purge_table_files(self._file_io(md.properties, md.location), md, location)
            except IcefloeError as exc:  # the directory removal below still drops what is inside
                logger.warning("purge of %s: cannot read its metadata: %s", location, exc)
        self._delete_table_row(namespace, name)

    def register_table(
        self, identifier: str | Iterable[str], metadata_location: str, overwrite: bool = False
    ) -> Table:
        """Not part of this layout."""
        raise Unsupported("the Hadoop catalog cannot register existing metadata files")

    def commit_table(
        self,
        identifier: str | Iterable[str],
        base_metadata_location: str | None,
        new_metadata: TableMetadata,
        *,
        base_metadata: TableMetadata | None = None,
    ) -> str:
        """Create ``v<N+1>.metadata.json`` exclusively, then update the version hint."""
        namespace, name = parse_table_identifier(identifier)
        table_dir = self._dir((*namespace, name))
        metadata_dir = os.path.join(table_dir, "metadata")
        io = self._file_io(new_metadata.properties, new_metadata.location)
        if base_metadata_location is None:
            self._require_namespace(namespace)
            if self._is_table_dir(table_dir):
                raise AlreadyExists(f"table {identifier_to_string((*namespace, name))!r} already exists")
            version, md = 1, new_metadata
        else:
            current = self._table_metadata_location(namespace, name)
            if current != base_metadata_location:
                raise CommitConflict(
                    f"table {identifier_to_string((*namespace, name))!r} moved to {current} "
                    f"(expected {base_metadata_location})"
                )
            base_version = version_of(base_metadata_location)
            if base_version is None:
                raise CommitConflict(f"{base_metadata_location} is not a v<N>.metadata.json file")
            version = base_version + 1
            if base_metadata is None:
                base_metadata = read_table_metadata(io, base_metadata_location)
            md = new_metadata_with_log(new_metadata, base_metadata_location, base_metadata)
        suffix = (
            ".gz.metadata.json"
            if md.properties.get("write.metadata.compression-codec") == "gzip"
            else ".metadata.json"
        )
        path = os.path.join(metadata_dir, f"v{version}{suffix}")
        os.makedirs(metadata_dir, exist_ok=True)
        sync_pending()  # creating vN is the commit: what it names must be durable first
        try:
            io.new_output(path).write_bytes(encode_table_metadata(md), overwrite=False)
        except (AlreadyExists, FileExistsError):
            if base_metadata_location is None:
                raise AlreadyExists(
                    f"table {identifier_to_string((*namespace, name))!r} already exists"
                ) from None
            raise CommitConflict(f"another writer created {path} first") from None
        self._write_hint(metadata_dir, version)
        return "file://" + path

    def _write_hint(self, metadata_dir: str, version: int) -> None:
        hint = os.path.join(metadata_dir, VERSION_HINT)
        tmp = f"{hint}.{os.getpid()}.{version}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(str(version))
        os.replace(tmp, hint)
