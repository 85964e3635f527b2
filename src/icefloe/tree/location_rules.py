"""Where a catalog lets tables live: inside the warehouse, never inside each other.

A table's *roots* are its location and the directories its ``write.data.path``,
``write.metadata.path`` (and the older ``write.folder-storage.path``) properties send new files
to. The catalog enforces, on ``create_table``, ``register_table``, commits that change a root, and
a namespace's ``location`` property:

- a location is an absolute URI or path, spelled plainly: no surrounding whitespace, no relative
  path, no ``~`` (home directory) and no ``.`` / ``..`` segment, no control character;
- it lies strictly inside the catalog's warehouse, unless the catalog property
  ``allow-external-locations`` is ``true`` (then any absolute location is allowed; registering
  tables written elsewhere, e.g. by Iceberg Java, needs it);
- no root of one table lies inside (or equals) a root of another table of the catalog, so one
  table's orphan-file removal or purge can never reach another table's files (a table of a nested
  namespace whose default location falls inside a table's directory is refused too);
- a metadata file another table of the catalog owns (its current file or one in its metadata
  log) cannot be registered again under a second name.

Views count as owners too, because their metadata files are files a table's purge or orphan-file
removal could otherwise reach. A view owns the directory its current metadata file lies in and
that file (and the previous one the catalog row names); both are known from the catalog's rows
alone, so no view file is read to protect it. A view being created, registered or moved gets its
location and ``write.metadata.path`` checked against every other table's roots and view's
directory, and a view metadata file another view or table owns cannot be registered again.

Locations are compared in canonical form (``io.normalize_location``: ``file:/x``, ``file:///x``
and ``/x`` are equal; trailing slashes do not count; ``s3a://`` is ``s3://``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from icefloe.errors import ValidationError
from icefloe.io.fileio import normalize_location, split_scheme
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.view_metadata import ViewMetadata
from icefloe.tree.locations import WRITE_DATA_PATH, WRITE_FOLDER_STORAGE_PATH, WRITE_METADATA_PATH

ALLOW_EXTERNAL_LOCATIONS = "allow-external-locations"
WRITE_PATH_PROPERTIES = (WRITE_DATA_PATH, WRITE_METADATA_PATH, WRITE_FOLDER_STORAGE_PATH)


def location_problem(value: object) -> str | None:
    """Why ``value`` is not a plainly spelled absolute location, or None when it is."""
    if not isinstance(value, str) or not value.strip():
        return "a location must be a non-empty string"
    if value != value.strip():
        return "it has leading or trailing whitespace"
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf"):
            return f"it contains the control or invisible character U+{ord(ch):04X}"
    if value.startswith("~"):
        return "'~' (a home directory) is not expanded in table locations"
    scheme, rest = split_scheme(value)
    if not scheme and not value.startswith("/"):
        return "a relative path is ambiguous: use an absolute path or a URI"
    path = rest
    if scheme and rest.startswith("//"):
        path = rest[2:].partition("/")[2]  # drop the authority (bucket, host)
    for segment in path.split("/"):
        if segment in (".", ".."):
            return f"it contains a {segment!r} segment"
        if segment.startswith("~"):
            return "'~' (a home directory) is not expanded in table locations"
    return None


def checked_location(value: object, what: str) -> str:
    """``value`` if it is a plainly spelled absolute location; ValidationError naming ``what``."""
    problem = location_problem(value)
    if problem is not None:
        raise ValidationError(f"invalid {what} {value!r}: {problem}")
    assert isinstance(value, str)
    return value


def is_within(child: str, parent: str) -> bool:
    """Whether location ``child`` equals ``parent`` or lies below it (canonical comparison)."""
    c, p = normalize_location(child), normalize_location(parent)
    return c == p or c.startswith(p.rstrip("/") + "/")


def overlaps(a: str, b: str) -> bool:
    """Whether one of two locations contains the other."""
    return is_within(a, b) or is_within(b, a)


def table_roots(md: TableMetadata) -> tuple[str, ...]:
    """The table location and the write-path directories its properties name."""
    roots = [md.location]
    roots += [md.properties[key] for key in WRITE_PATH_PROPERTIES if md.properties.get(key)]
    return tuple(dict.fromkeys(roots))


def view_roots(md: ViewMetadata) -> tuple[str, ...]:
    """The view location and the ``write.metadata.path`` its metadata files go to, if set."""
    roots = [md.location]
    if md.properties.get(WRITE_METADATA_PATH):
        roots.append(md.properties[WRITE_METADATA_PATH])
    return tuple(dict.fromkeys(roots))


@dataclass(frozen=True)
class OtherTable:
    """Another table (or view: ``kind``) of the catalog, as far as location rules care."""

    name: str
    roots: tuple[str, ...]
    metadata_files: frozenset[str]  # canonical: the current file and the metadata log
    kind: str = "table"

    @classmethod
    def of(cls, name: str, metadata_location: str, md: TableMetadata | None) -> OtherTable:
        """From a table's metadata; unreadable metadata counts with the folder above ``metadata/``."""
        if md is None:
            root = metadata_location.rsplit("/", 1)[0]
            root = root[: -len("/metadata")] if root.endswith("/metadata") else root
            return cls(name, (root,), frozenset({normalize_location(metadata_location)}))
        owned = {metadata_location, *(entry.metadata_file for entry in md.metadata_log)}
        return cls(name, table_roots(md), frozenset(map(normalize_location, owned)))

    @classmethod
    def of_view(cls, name: str, metadata_location: str, previous_location: str | None) -> OtherTable:
        """A view, from its catalog row: it owns its metadata file's directory and the files named.

        The directory, not the view location, is protected: it holds the view's older metadata
        files too (a view's metadata keeps no log of them), and a view another engine wrote into a
        table's ``metadata/`` folder keeps its files while the table's data can still be purged.
        """
        owned = [metadata_location] + ([previous_location] if previous_location else [])
        roots = tuple(dict.fromkeys(location.rsplit("/", 1)[0] for location in owned))
        return cls(name, roots, frozenset(map(normalize_location, owned)), kind="view")


def check_confined(location: str, what: str, warehouse: str | None, properties: Mapping[str, str]) -> None:
    """Refuse a badly spelled location, and one outside the warehouse unless the catalog allows it."""
    checked_location(location, what)
    allow = properties.get(ALLOW_EXTERNAL_LOCATIONS, "false").strip().lower() == "true"
    if allow or warehouse is None:
        return
    if normalize_location(location) == normalize_location(warehouse) or not is_within(location, warehouse):
        raise ValidationError(
            f"{what} {location!r} is not inside the warehouse {warehouse!r}; set the catalog property "
            f"{ALLOW_EXTERNAL_LOCATIONS}=true to allow locations outside it"
        )


def check_no_overlap(
    name: str, roots: Iterable[str], others: Iterable[OtherTable], *, kind: str = "table"
) -> None:
    """Refuse roots (of the ``kind`` named ``name``) that contain, equal or lie inside a root of
    another table or view."""
    roots = tuple(roots)
    for other in others:
        for root in roots:
            for other_root in other.roots:
                if overlaps(root, other_root):
                    raise ValidationError(
                        f"{kind} {name}: location {root!r} overlaps {other_root!r} of {other.kind} "
                        f"{other.name}; tables and views may not live inside each other's directories"
                    )


def check_not_owned(metadata_location: str, others: Iterable[OtherTable]) -> None:
    """Refuse registering a metadata file another table or view of the catalog already owns."""
    canonical = normalize_location(metadata_location)
    for other in others:
        if canonical in other.metadata_files:
            raise ValidationError(
                f"metadata file {metadata_location!r} belongs to {other.kind} {other.name}: registering "
                "it again would let two owners change and delete the same files"
            )


def under_any(location: str, roots: Iterable[str]) -> bool:
    """Whether ``location`` lies inside one of ``roots``."""
    return any(is_within(location, root) for root in roots)
