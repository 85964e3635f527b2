"""Iceberg views in a ``SqlCatalog``, stored as Iceberg Java's JDBC catalog stores them.

A view is a row of ``iceberg_tables`` with ``iceberg_type = 'VIEW'`` (the "V1" layout; a database
without the column has no room for views and the operations say so) whose ``metadata_location``
names a view metadata file (``spec.view_metadata``) under ``<view location>/metadata/`` (or
``write.metadata.path``; gzip JSON when ``write.metadata.compression-codec=gzip``, and the gzip
files Iceberg Java writes by default are read too). Tables and views share the name space: the
primary key keeps a view from taking a table's name. Each change writes a new metadata file and
moves the pointer with a compare-and-swap, as table commits do. A replacement is first rebuilt on
the metadata it replaces as Iceberg Java's ``ViewMetadata.Builder`` builds it
(``spec.view_changes.rebuild_view``), so what the SQL catalog commits is what the REST server
commits for the same change.

A view owns its metadata files as a table does (``tree.location_rules``): creating or registering
a view, or moving its location, is refused (ValidationError) when its location overlaps another
table's roots or view's metadata directory, and registering a metadata file another table or view
owns is refused, so no name can reach (or hand a principal without grants) another owner's files.
A replacement that keeps the location and ``write.metadata.path`` checks nothing and reads no table.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from icefloe.catalog.identifiers import (
    identifier_to_string,
    namespace_to_string,
    parse_namespace,
    parse_table_identifier,
)
from icefloe.catalog.sql_engine import VIEW_TYPE
from icefloe.errors import AlreadyExists, CommitConflict, NoSuchView, Unsupported
from icefloe.formats.metadata.files import new_metadata_location, parse_metadata_version
from icefloe.spec.view_changes import check_new_view, rebuild_view
from icefloe.spec.view_metadata import ViewMetadata, view_metadata_from_dict, view_metadata_to_dict
from icefloe.tree.location_rules import check_no_overlap, check_not_owned, view_roots

if TYPE_CHECKING:
    from icefloe.catalog.sql import SqlCatalog

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_SUFFIX = ".gz.metadata.json"
__all__ = ["VIEW_TYPE", "NoSuchView", "SqlViews"]


class SqlViews:
    """The views of one ``SqlCatalog`` (``SqlViews(catalog)``; Unsupported on a V0 database)."""

    def __init__(self, catalog: SqlCatalog) -> None:
        if not catalog._has_type:
            raise Unsupported(
                f"catalog {catalog.name!r} uses the JDBC layout without iceberg_type (schema V0), "
                "which cannot hold views; Iceberg Java's jdbc.schema-version=V1 adds the column"
            )
        self._catalog = catalog
        self._t = catalog._t

    # ------------------------------------------------------------------ reading

    def exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether a view of that name exists."""
        return self._location(identifier) is not None

    def load(self, identifier: str | Iterable[str]) -> tuple[ViewMetadata, str]:
        """The view's metadata and the location of its metadata file."""
        location = self._location(identifier)
        if location is None:
            ns, name = _split(identifier)
            raise NoSuchView(f"view {identifier_to_string((*ns, name))!r} does not exist")
        return self.read(location), location

    def names(self, namespace: str | Iterable[str]) -> list[tuple[str, ...]]:
        """The views of a namespace, by name."""
        ns = parse_namespace(namespace)
        query = select(self._t.c.table_name).where(
            self._t.c.catalog_name == self._catalog.name,
            self._t.c.table_namespace == namespace_to_string(ns),
            self._t.c.iceberg_type == VIEW_TYPE,
        )
        names = self._catalog._run(lambda conn: [r[0] for r in conn.execute(query)], write=False)
        return sorted((*ns, str(n)) for n in names)

    # ------------------------------------------------------------------ writing

    def create(self, identifier: str | Iterable[str], metadata: ViewMetadata) -> str:
        """Write the view's first metadata file and add its row; AlreadyExists when the name is taken."""
        ns, name = _split(identifier)
        check_new_view(metadata)
        self._catalog._require_namespace(ns)
        self._check_owners(ns, name, metadata)
        location = self._write(metadata, None)
        self._insert_row(ns, name, location)
        return location

    def register(
        self, identifier: str | Iterable[str], location: str, metadata: ViewMetadata | None = None
    ) -> None:
        """Add a row pointing at the existing view metadata file ``location`` (no file is written;
        ``metadata`` is that file's content when the caller has read it already); AlreadyExists when
        the name is taken, ValidationError when another table or view owns the file or the view's
        location overlaps another's."""
        ns, name = _split(identifier)
        self._catalog._require_namespace(ns)
        self._check_owners(ns, name, self.read(location) if metadata is None else metadata, location)
        self._insert_row(ns, name, location)

    def _insert_row(self, ns: tuple[str, ...], name: str, location: str) -> None:
        """The view's catalog row, pointing at ``location``; AlreadyExists when the name is taken."""
        values = {
            "catalog_name": self._catalog.name,
            "table_namespace": namespace_to_string(ns),
            "table_name": name,
            "metadata_location": location,
            "previous_metadata_location": None,
            "iceberg_type": VIEW_TYPE,
        }
        try:
            self._catalog._run(lambda conn: conn.execute(insert(self._t).values(**values)), write=True)
        except IntegrityError:
            raise AlreadyExists(
                f"table or view {identifier_to_string((*ns, name))!r} already exists"
            ) from None

    def replace(self, identifier: str | Iterable[str], expected_location: str, metadata: ViewMetadata) -> str:
        """Commit ``metadata`` as Java's builder builds it on the metadata at ``expected_location``
        (``rebuild_view``; ValidationError when it refuses) and move the view's pointer to it; no new
        file when nothing changes. CommitConflict when the view moved on."""
        base = self.read(expected_location)
        rebuilt = rebuild_view(base, metadata)
        if rebuilt != base:
            return self.swap(identifier, expected_location, rebuilt, base=base)
        if self._location(identifier) != expected_location:
            raise _moved_on(identifier)
        return expected_location

    def swap(
        self,
        identifier: str | Iterable[str],
        expected_location: str,
        metadata: ViewMetadata,
        *,
        base: ViewMetadata | None = None,
    ) -> str:
        """Write ``metadata`` as it is and move the view's pointer from ``expected_location`` to it
        (CommitConflict when the view moved on); for callers that built it on that file themselves.
        ``base``, the metadata at ``expected_location``, spares the location check when the view
        stays where it is (without it the check always runs)."""
        ns, name = _split(identifier)
        if base is None or view_roots(base) != view_roots(metadata):
            self._check_owners(ns, name, metadata)
        location = self._write(metadata, expected_location)
        stmt = (
            update(self._t)
            .where(*self._row(ns, name), self._t.c.metadata_location == expected_location)
            .values(metadata_location=location, previous_metadata_location=expected_location)
        )

        def work(conn: Connection) -> None:
            if conn.execute(stmt).rowcount != 1:
                raise _moved_on(identifier)

        self._catalog._run(work, write=True)
        return location

    def drop(self, identifier: str | Iterable[str]) -> None:
        """Remove the view's row (its metadata files stay, as Iceberg Java leaves them)."""
        ns, name = _split(identifier)
        stmt = delete(self._t).where(*self._row(ns, name))
        if self._catalog._run(lambda conn: conn.execute(stmt).rowcount, write=True) == 0:
            raise NoSuchView(f"view {identifier_to_string((*ns, name))!r} does not exist")

    def rename(self, source: str | Iterable[str], target: str | Iterable[str]) -> None:
        """Give the view another name (another namespace too); AlreadyExists when it is taken."""
        src_ns, src = _split(source)
        dst_ns, dst = _split(target)
        self._catalog._require_namespace(dst_ns)
        stmt = (
            update(self._t)
            .where(*self._row(src_ns, src))
            .values(table_namespace=namespace_to_string(dst_ns), table_name=dst)
        )
        try:
            count = self._catalog._run(lambda conn: conn.execute(stmt).rowcount, write=True)
        except IntegrityError:
            raise AlreadyExists(
                f"table or view {identifier_to_string((*dst_ns, dst))!r} already exists"
            ) from None
        if count == 0:
            raise NoSuchView(f"view {identifier_to_string((*src_ns, src))!r} does not exist")

    # ------------------------------------------------------------------ helpers

    def _check_owners(
        self, ns: tuple[str, ...], name: str, metadata: ViewMetadata, registered: str | None = None
    ) -> None:
        """Refuse a view whose roots overlap another table's or view's, or (``registered``) whose
        metadata file another table or view owns."""
        others = self._catalog.other_tables((*ns, name))
        if registered is not None:
            check_not_owned(registered, others)
        check_no_overlap(identifier_to_string((*ns, name)), view_roots(metadata), others, kind="view")

    def _row(self, ns: tuple[str, ...], name: str) -> list[ColumnElement[bool]]:
        return [*self._catalog._row_filter(ns, name), self._t.c.iceberg_type == VIEW_TYPE]

    def _location(self, identifier: str | Iterable[str]) -> str | None:
        ns, name = _split(identifier)
        query = select(self._t.c.metadata_location).where(*self._row(ns, name))
        row = self._catalog._run(lambda conn: conn.execute(query).first(), write=False)
        return None if row is None else str(row[0])

    def read(self, location: str) -> ViewMetadata:
        """The view metadata file at ``location``, plain or gzip JSON (Iceberg Java writes gzip)."""
        data = self._catalog._file_io(None, location).new_input(location).read()
        if data[:2] == _GZIP_MAGIC:
            data = gzip.decompress(data)
        return view_metadata_from_dict(json.loads(data))

    def _write(self, metadata: ViewMetadata, previous: str | None) -> str:
        """A new metadata file where Java's view operations put it: under ``write.metadata.path``
        or ``<location>/metadata``, gzip when ``write.metadata.compression-codec`` says so."""
        previous_version = parse_metadata_version(previous)
        version = 0 if previous_version is None else previous_version + 1
        location = new_metadata_location(metadata.location, metadata.properties, version)
        io = self._catalog._file_io(None, location)
        data = json.dumps(view_metadata_to_dict(metadata), indent=2).encode("utf-8")
        if location.endswith(_GZIP_SUFFIX):
            data = gzip.compress(data, mtime=0)
        io.new_output(location, fresh_name=True).write_bytes(data, overwrite=False)
        return location


def _split(identifier: str | Iterable[str]) -> tuple[tuple[str, ...], str]:
    ns, name = parse_table_identifier(identifier)
    return tuple(ns), name


def _moved_on(identifier: str | Iterable[str]) -> CommitConflict:
    ns, name = _split(identifier)
    return CommitConflict(f"view {identifier_to_string((*ns, name))!r} was changed or dropped meanwhile")
