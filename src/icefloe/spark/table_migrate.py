"""``migrate``: replace a Parquet table of Spark's session catalog with an icefloe table over the
same files, keeping the original as a backup table as Iceberg does, and never deleting a file.

The icefloe table (same name, in icefloe's catalog) references the source's files where they are
(``table_import.import_parquet``). The session-catalog table then gives way:

- an **external** table is renamed to the backup name (``<name>_BACKUP_``, or
  ``backup_table_name``), which moves no file; with ``drop_backup`` it is dropped instead
  (dropping an external table deletes no file);
- a **managed** table owns its directory: Spark deletes it on ``DROP`` and moves it on
  ``RENAME``, either of which would break the files the icefloe table now references. So its
  directory is moved aside while the table is dropped from the session catalog (Spark then finds
  nothing to delete) and moved back; the backup, unless ``drop_backup``, is re-created as an
  *external* table over that directory, so dropping the backup later deletes nothing either.
  Every file of the table must lie under its directory (no partition with its own location).

When the icefloe table cannot be built, nothing has changed; when the source could not be dropped,
the icefloe table is removed again (its files are the source's: never purged).
"""

from __future__ import annotations

import posixpath
import uuid
from typing import TYPE_CHECKING

from icefloe.errors import Unsupported, ValidationError
from icefloe.spark.table_import import (
    SESSION_CATALOG,
    ParquetSource,
    import_parquet,
    resolve_source,
    source_files,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.catalog.base import Catalog
    from icefloe.io.fileio import FileIO

BACKUP_SUFFIX = "_BACKUP_"


def migrate_table(
    spark: SparkSession,
    catalog: Catalog,
    source: str,
    identifier: tuple[str, ...],
    properties: dict[str, str] | None = None,
    drop_backup: bool = False,
    backup_table_name: str | None = None,
) -> int:
    """Replace the session-catalog Parquet table ``source`` with the icefloe table ``identifier``;
    returns the number of files migrated."""
    resolved = resolve_source(spark, source)
    if resolved.table is None:
        raise Unsupported("migrate needs a table of the session catalog (snapshot a path instead)")
    *namespace, name = resolved.table.split(".")
    backup = _quoted([*namespace, backup_table_name or f"{name}{BACKUP_SUFFIX}"])
    if not drop_backup and spark.catalog.tableExists(backup.replace("`", "")):
        raise ValidationError(f"migrate: cannot back {resolved.table} up as {backup}: that table exists")
    if not resolved.external:
        _refuse_files_outside(resolved)
    table, count = import_parquet(catalog, resolved, identifier, dict(properties or {}))
    original = _quoted(resolved.table.split("."))
    try:
        if resolved.external:
            renamed = backup.removeprefix(f"{SESSION_CATALOG}.")  # RENAME TO names no catalog
            spark.sql(
                f"DROP TABLE {original}" if drop_backup else f"ALTER TABLE {original} RENAME TO {renamed}"
            )
        else:
            assert resolved.location is not None
            _drop_keeping_files(spark, table.io, original, resolved.location)
    except BaseException:
        if spark.catalog.tableExists(original.replace("`", "")):  # the source is still there: undo
            catalog.drop_table(identifier)  # never purge: the files are the source's
        raise
    if not resolved.external and not drop_backup:
        assert resolved.location is not None
        _external_backup(spark, backup, resolved)
    return count


def _quoted(parts: list[str]) -> str:
    return f"{SESSION_CATALOG}." + ".".join(f"`{p}`" for p in parts)


def _refuse_files_outside(source: ParquetSource) -> None:
    """A managed table is migrated by moving its directory aside: every file must be inside it."""
    location = (source.location or "").rstrip("/")
    if not location:
        raise Unsupported(f"migrating the managed table {source.table}: its location is unknown")
    prefix = _path(location) + "/"
    outside = [f for f in source_files(source) if not _path(f).startswith(prefix)]
    if outside:
        raise Unsupported(
            f"migrating the managed table {source.table}: {len(outside)} file(s) lie outside its "
            f"location {location} (e.g. {outside[0]}); only a table whose files are under its location"
        )


def _path(location: str) -> str:
    """The path part of a location (``file:/x``, ``file:///x`` and ``/x`` alike)."""
    from icefloe.io.fileio import local_path

    return local_path(location) or location


def _drop_keeping_files(spark: SparkSession, io: FileIO, name: str, location: str) -> None:
    """Drop a managed table from the session catalog with its directory moved out of Spark's reach."""
    fs, path = io.filesystem_and_path(location)
    aside = posixpath.join(posixpath.dirname(path.rstrip("/")), f".icefloe-migrating-{uuid.uuid4().hex}")
    fs.move(path, aside)
    try:
        spark.sql(f"DROP TABLE {name}")
    finally:
        fs.move(aside, path)


def _external_backup(spark: SparkSession, backup: str, source: ParquetSource) -> None:
    """An external session-catalog table over the migrated directory, with the source's columns."""
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in source.frame.schema.fields)
    partitioned = (
        " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in source.partition_columns) + ")"
        if source.partition_columns
        else ""
    )
    location = str(source.location).replace("'", "\\'")
    spark.sql(f"CREATE TABLE {backup} ({columns}) USING parquet{partitioned} LOCATION '{location}'")
    if source.partition_columns:
        spark.sql(f"ALTER TABLE {backup} RECOVER PARTITIONS")
