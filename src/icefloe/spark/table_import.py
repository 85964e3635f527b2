"""Import a plain Parquet table into icefloe without copying its files (``snapshot`` / ``migrate``).

The source is a Parquet table of Spark's session catalog (``db.t`` / ``spark_catalog.db.t``) or a
directory (``parquet.`/path```). Its files are listed by Spark, their DataFile entries are built
from their footers (metrics included, no data read) and committed as one append to a new icefloe
table whose schema is the source's. The files have no Parquet field ids, so the table gets a name
mapping (``schema.name-mapping.default``) and is read by column name.

- ``snapshot_table``: the new table references the source's files and sets ``gc.enabled=false``,
  so icefloe's maintenance (expiry, orphan removal, ``DROP ... PURGE``) never deletes them; the
  source stays as it is.
- ``table_migrate.migrate_table``: the same, then the source table is replaced by the icefloe
  table (kept as a backup table over the same files unless ``drop_backup``).

Hive-style partitioned sources (``.../k=v/...``) become tables partitioned by identity on the same
columns; each file's partition tuple comes from its directory names, and readers fill the columns
the files lack from it (``scan.reader.ReadRequest.specs``). Partition columns of type int, long,
string, date, boolean, double, float and decimal are supported.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from icefloe.errors import Unsupported, ValidationError
from icefloe.spark.footer import data_files_from_footers
from icefloe.spark.schema import to_iceberg_schema
from icefloe.spec.partitioning import PartitionField, PartitionSpec
from icefloe.spec.schema import Schema
from icefloe.spec.transforms import IdentityTransform
from icefloe.spec.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from icefloe.txn.producers import AppendFiles

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.catalog.base import Catalog
    from icefloe.table.table import Table

NAME_MAPPING = "schema.name-mapping.default"
SESSION_CATALOG = "spark_catalog"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
FILE_FORMATS = ("parquet", "orc", "avro")  # ``format.`path``` sources Iceberg's procedures accept


@dataclass(frozen=True)
class ParquetSource:
    """A Parquet table of the session catalog (``table`` set) or a directory of Parquet files."""

    frame: DataFrame
    table: str | None
    external: bool
    partition_columns: tuple[str, ...] = field(default=())
    location: str | None = None  # a session-catalog table's location


def resolve_source(spark: SparkSession, text: str) -> ParquetSource:
    """``parquet.`/path```, a path, or a (``spark_catalog.``) session-catalog Parquet table."""
    text = text.strip()
    head, dot, rest = text.partition(".")
    if dot and head.strip("`").lower() in FILE_FORMATS:
        if head.strip("`").lower() != "parquet":
            raise Unsupported(f"importing {text}: only Parquet files can be imported")
        return _directory(spark.read.parquet(rest.strip().strip("`")))
    if text.startswith("/") or "://" in text:
        return _directory(spark.read.parquet(text))
    parts = [p.strip("`") for p in text.split(".")]
    if parts[0].lower() == SESSION_CATALOG:
        parts = parts[1:]
    name = ".".join(f"`{p}`" for p in parts)
    info = {r[0].strip(): str(r[1]).strip() for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    provider = info.get("Provider", "").lower()
    if provider != "parquet":
        raise Unsupported(f"importing {text}: only Parquet tables can be imported, not {provider or 'this'}")
    partitions = tuple(c.name for c in spark.catalog.listColumns(".".join(parts)) if c.isPartition)
    external = info.get("Type", "").upper() == "EXTERNAL"
    location = info.get("Location")
    return ParquetSource(spark.table(name), ".".join(parts), external, partitions, location)


def _directory(frame: DataFrame) -> ParquetSource:
    """A directory source; its partition columns are those named by ``name=`` directories."""
    files = frame.inputFiles()
    segments = {s.split("=", 1)[0].lower() for s in files[0].split("/")[:-1] if "=" in s} if files else set()
    return ParquetSource(frame, None, True, tuple(c for c in frame.columns if c.lower() in segments))


def _partition_value(text: str | None, t: IcebergType, path: str) -> Any:
    """The internal value of one Hive-style directory value (``None``: a null partition)."""
    if text is None or text == HIVE_NULL:
        return None
    value = unquote(text)
    if isinstance(t, IntegerType | LongType):
        return int(value)
    if isinstance(t, StringType):
        return value
    if isinstance(t, DateType):
        return (datetime.date.fromisoformat(value) - datetime.date(1970, 1, 1)).days
    if isinstance(t, BooleanType):
        return value.lower() == "true"
    if isinstance(t, DoubleType | FloatType):
        return float(value)
    if isinstance(t, DecimalType):
        return Decimal(value)
    raise Unsupported(f"importing {path}: partition values of type {t} are not supported")


def directory_values(path: str) -> dict[str, str]:
    """The Hive-style ``key=value`` directory names of a file's path (keys lower-cased, values raw)."""
    found: dict[str, str] = {}
    for segment in path.split("/")[:-1]:
        if "=" in segment:
            key, value = segment.split("=", 1)
            found[unquote(key).lower()] = value
    return found


def partition_of(path: str, schema: Schema, columns: tuple[str, ...]) -> tuple[Any, ...]:
    """The partition tuple of a file, one value per column, from its directory names."""
    found = directory_values(path)
    out = []
    for name in columns:
        if name.lower() not in found:
            raise ValidationError(f"importing {path}: no directory names partition column {name!r}")
        out.append(_partition_value(found[name.lower()], schema.find_field(name).field_type, path))
    return tuple(out)


def name_mapping(schema: Schema) -> str:
    def node(f: NestedField) -> dict[str, Any]:
        out: dict[str, Any] = {"field-id": f.field_id, "names": [f.name]}
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            out["fields"] = [node(c) for c in t.fields]
        return out

    return json.dumps([node(f) for f in schema.fields])


def source_files(source: ParquetSource) -> list[str]:
    return sorted(source.frame.inputFiles())


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
    files = source_files(source)
    schema = to_iceberg_schema(source.frame.schema)
    spec = PartitionSpec(
        *(
            PartitionField(schema.find_field(name).field_id, 1000 + i, IdentityTransform(), name)
            for i, name in enumerate(source.partition_columns)
        )
    )
    table = catalog.create_table(identifier, schema, spec, location=location, properties=properties)
    try:
        schema = table.schema()
        cols = source.partition_columns
        located = [(f, partition_of(f, schema, cols)) for f in files]
        data = data_files_from_footers(table.io, located, schema, table.spec().spec_id, table.properties)
        with table.transaction() as tx:
            tx.set_properties({NAME_MAPPING: name_mapping(schema)})
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
