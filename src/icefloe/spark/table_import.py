"""Import a plain Parquet table into icefloe without copying its files (``snapshot`` / ``migrate``).

The source is a Parquet table of Spark's session catalog (``db.t`` / ``spark_catalog.db.t``) or a
directory (``parquet.`/path```). Its files are listed by Spark, their DataFile entries are built
from their footers (metrics included, no data read) and committed as one append to a new icefloe
table whose schema is the source's. The files have no Parquet field ids, so the table gets a name
mapping (``schema.name-mapping.default``) and is read by column name.

- ``snapshot_table``: the new table references the source's files and sets ``gc.enabled=false``,
  so icefloe's maintenance (expiry, orphan removal, ``DROP ... PURGE``) never deletes them; the
  source stays as it is.
- ``migrate_table``: the same, then the source is dropped from the session catalog; the icefloe
  table owns the files from then on. Only external source tables: dropping a managed table would
  delete the files it now references.

Partitioned sources are not supported (their files do not hold the partition columns, which would
have to be filled from the directory names on every read).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.errors import Unsupported, ValidationError
from icefloe.spark.footer import data_files_from_footers
from icefloe.spark.schema import to_iceberg_schema
from icefloe.spec.schema import Schema
from icefloe.spec.types import ListType, MapType, NestedField, StructType
from icefloe.txn.producers import AppendFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

NAME_MAPPING = "schema.name-mapping.default"
SESSION_CATALOG = "spark_catalog"


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet table of the session catalog (``table`` set) or a directory of Parquet files."""

    frame: DataFrame
    table: str | None
    external: bool


def resolve_source(spark: SparkSession, text: str) -> ParquetSource:
    """``parquet.`/path```, a path, or a (``spark_catalog.``) session-catalog Parquet table."""
    text = text.strip()
    if text.lower().startswith("parquet."):
        return ParquetSource(spark.read.parquet(text[len("parquet.") :].strip("`")), None, True)
    if text.startswith("/") or "://" in text:
        return ParquetSource(spark.read.parquet(text), None, True)
    parts = [p.strip("`") for p in text.split(".")]
    if parts[0].lower() == SESSION_CATALOG:
        parts = parts[1:]
    name = ".".join(f"`{p}`" for p in parts)
    info = {r[0].strip(): str(r[1]).strip() for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    provider = info.get("Provider", "").lower()
    if provider != "parquet":
        raise Unsupported(f"importing {text}: only Parquet tables can be imported, not {provider or 'this'}")
    if any(c.isPartition for c in spark.catalog.listColumns(".".join(parts))):
        raise Unsupported(f"importing {text}: partitioned source tables are not supported")
    return ParquetSource(spark.table(name), ".".join(parts), info.get("Type", "").upper() == "EXTERNAL")


def _name_mapping(schema: Schema) -> str:
    def node(f: NestedField) -> dict[str, Any]:
        out: dict[str, Any] = {"field-id": f.field_id, "names": [f.name]}
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            out["fields"] = [node(c) for c in t.fields]
        return out

    return json.dumps([node(f) for f in schema.fields])


def _files(source: ParquetSource) -> list[str]:
    files = sorted(source.frame.inputFiles())
    roots = {f.rsplit("/", 1)[0] for f in files}
    if source.table is None and any("=" in r.rsplit("/", 1)[-1] for r in roots):
        raise Unsupported("importing a partitioned Parquet directory is not supported")
    return files


def import_parquet(
    catalog: Catalog,
    source: ParquetSource,
    identifier: tuple[str, ...],
    properties: dict[str, str],
    location: str | None = None,
) -> tuple[Table, int]:
    """Create ``identifier`` over the source's files (one append); returns the table and file count."""
    if catalog.table_exists(identifier):
        raise ValidationError(f"table {'.'.join(identifier)!r} already exists")
    files = _files(source)
    table = catalog.create_table(
        identifier, to_iceberg_schema(source.frame.schema), None, location=location, properties=properties
    )
    try:
        schema = table.schema()
        data = data_files_from_footers(table.io, [(f, ()) for f in files], schema, 0, table.properties)
        with table.transaction() as tx:
            tx.set_properties({NAME_MAPPING: _name_mapping(schema)})
            tx.add_action(AppendFiles(files=data))
    except BaseException:
        catalog.drop_table(identifier)  # never purge: the files are the source's
        raise
    return table.refresh(), len(files)


def snapshot_table(
    spark: SparkSession,
    catalog: Catalog,
    source: str,
    identifier: tuple[str, ...],
    properties: dict[str, str] | None = None,
    location: str | None = None,
) -> int:
    """A new table referencing the source's Parquet files (never deleting them); returns the file count."""
    props = {**(properties or {}), "gc.enabled": "false"}
    _, count = import_parquet(catalog, resolve_source(spark, source), identifier, props, location)
    return count


def migrate_table(
    spark: SparkSession,
    catalog: Catalog,
    source: str,
    identifier: tuple[str, ...],
    properties: dict[str, str] | None = None,
) -> int:
    """Import an external session-catalog Parquet table, then drop it from the session catalog."""
    resolved = resolve_source(spark, source)
    if resolved.table is None:
        raise Unsupported("migrate needs a table of the session catalog (snapshot a path instead)")
    if not resolved.external:
        raise Unsupported(
            f"migrating the managed table {resolved.table}: dropping it would delete its files; use snapshot"
        )
    _, count = import_parquet(catalog, resolved, identifier, dict(properties or {}))
    name = ".".join(f"`{p}`" for p in resolved.table.split("."))
    spark.sql(f"DROP TABLE {SESSION_CATALOG}.{name}")
    return count
