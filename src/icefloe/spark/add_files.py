"""``add_files``: register existing Parquet files with an existing icefloe table, without rewriting.

The source is what ``snapshot`` / ``migrate`` accept (``table_import.resolve_source``): a Parquet
table of Spark's session catalog or a directory ``parquet.`/path```. Its files become DataFile
entries built from their footers (metrics, no data read) and are committed as one append. As in
Iceberg:

- the table's partition spec must be identity partitioning on exactly the source's (Hive-style,
  ``k=v`` directory) partition columns, in any order; each file's partition tuple comes from its
  directory names;
- ``partition_filter`` (a map of partition column to value) keeps the files of matching
  partitions only;
- files written by other tools carry no Parquet field ids, so a table without a name mapping gets
  one (``schema.name-mapping.default``, from its current schema) in the same commit;
- ``check_duplicate_files`` (default true) refuses files the table already references.

Nothing is committed when any check fails, and the source's files are never moved or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from icefloe.errors import ValidationError
from icefloe.spark.footer import data_files_from_footers
from icefloe.spark.table_import import (
    NAME_MAPPING,
    ParquetSource,
    directory_values,
    name_mapping,
    partition_of,
    resolve_source,
    source_files,
)
from icefloe.spec.transforms import IdentityTransform
from icefloe.tree.summary import ADDED_DATA_FILES, CHANGED_PARTITION_COUNT
from icefloe.txn.producers import AppendFiles

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.table.table import Table


@dataclass(frozen=True)
class AddFilesResult:
    """The procedure's result row: files added and partitions the new snapshot changed."""

    added_files_count: int
    changed_partition_count: int


def add_files(
    spark: SparkSession,
    table: Table,
    source: str,
    partition_filter: dict[str, str] | None = None,
    check_duplicate_files: bool = True,
) -> AddFilesResult:
    """Append the Parquet files of ``source`` to ``table`` as they are (one snapshot)."""
    resolved = resolve_source(spark, source)
    columns = _partition_columns(table, resolved)
    files = _selected_files(resolved, columns, partition_filter or {})
    if not files:
        raise ValidationError(f"add_files: no file of {source} matches partition_filter {partition_filter}")
    if check_duplicate_files:
        _refuse_duplicates(table, files)
    schema = table.schema()
    located = [(path, partition_of(path, schema, columns)) for path in files]
    data = data_files_from_footers(table.io, located, schema, table.spec().spec_id, table.properties)
    with table.transaction() as tx:
        if NAME_MAPPING not in table.properties:
            tx.set_properties({NAME_MAPPING: name_mapping(schema)})
        tx.add_action(AppendFiles(files=data))
    snapshot = table.refresh().current_snapshot()
    assert snapshot is not None
    summary = snapshot.summary
    return AddFilesResult(
        int(summary.get(ADDED_DATA_FILES, "0")), int(summary.get(CHANGED_PARTITION_COUNT, "0"))
    )


def _partition_columns(table: Table, source: ParquetSource) -> tuple[str, ...]:
    """The table's partition source columns in spec order, checked against the source's."""
    schema = table.schema()
    names: list[str] = []
    for pf in table.spec().fields:
        column = schema.find_column_name(pf.source_id)
        if not isinstance(pf.transform, IdentityTransform) or column is None:
            raise ValidationError(
                f"add_files: table {table.name} is partitioned by {pf.transform}({column}); "
                "files can be added only to identity-partitioned or unpartitioned tables"
            )
        names.append(column)
    if {n.lower() for n in names} != {c.lower() for c in source.partition_columns}:
        raise ValidationError(
            f"add_files: the table's partition columns {names} differ from the source's "
            f"{list(source.partition_columns)}"
        )
    return tuple(names)


def _selected_files(source: ParquetSource, columns: tuple[str, ...], wanted: dict[str, str]) -> list[str]:
    """The source's files, only those whose directories match ``partition_filter`` when given."""
    known = {c.lower() for c in columns}
    unknown = sorted(k for k in wanted if k.lower() not in known)
    if unknown:
        raise ValidationError(
            f"add_files: partition_filter names {unknown}, not partition columns {list(columns)}"
        )
    want = {k.lower(): str(v) for k, v in wanted.items()}
    return [path for path in source_files(source) if _matches(path, want)]


def _matches(path: str, wanted: dict[str, str]) -> bool:
    found = directory_values(path)
    return all(k in found and unquote(found[k]) == v for k, v in wanted.items())


def _refuse_duplicates(table: Table, files: list[str]) -> None:
    if table.current_snapshot() is None:
        return
    existing = set(table.inspect.files().column("file_path").to_pylist())
    again = sorted(f for f in files if f in existing)
    if again:
        raise ValidationError(
            "add_files: cannot complete the import because files to be imported already exist in "
            f"table {table.name} ({len(again)}: {', '.join(again[:3])}); "
            "pass check_duplicate_files => false to add them anyway"
        )
