"""Copy-on-write row removal: find the files a filter touches and rewrite them without those rows.

Files whose partition proves every row matches are dropped without being read; files that may
hold matching rows are read (deletes applied) and either kept, dropped, or rewritten with the
surviving rows. On format v3+ the surviving rows keep their ``_row_id`` and
``_last_updated_sequence_number`` (written as columns of the new file), as row lineage requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from icefloe.expressions.arrow import to_arrow_expression
from icefloe.expressions.ast import AlwaysTrue, Expression
from icefloe.expressions.evaluators import PartitionEvaluator
from icefloe.expressions.projection import strict_projection
from icefloe.formats.arrow_schema import schema_to_arrow
from icefloe.formats.parquet_data import write_parquet_data_file
from icefloe.io.fileio import FileIO
from icefloe.scan.planner import plan_files
from icefloe.scan.reader import LAST_UPDATED_SEQ, ROW_ID, ReadRequest, read_task
from icefloe.spec.content import DataFile, ManifestEntry
from icefloe.spec.schema import Schema
from icefloe.spec.snapshots import Snapshot
from icefloe.spec.table_metadata import TableMetadata
from icefloe.tree.locations import LocationProvider


@dataclass
class RewritePlan:
    """Entries to remove, files that replace part of them, and how many rows went away."""

    removed: list[ManifestEntry] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)
    deleted_rows: int = 0

    @property
    def rewrites_files(self) -> bool:
        """True when some file was rewritten rather than dropped whole."""
        return bool(self.added)


def plan_copy_on_write(
    io: FileIO,
    md: TableMetadata,
    snapshot: Snapshot | None,
    delete_filter: Expression,
    case_sensitive: bool = True,
) -> RewritePlan:
    """Compute the files to drop and rewrite so no row matching ``delete_filter`` stays live."""
    plan = RewritePlan()
    if snapshot is None:
        return plan
    schema = md.schema()
    specs = md.specs_by_id()
    strict = {
        spec_id: PartitionEvaluator(
            spec,
            schema,
            strict_projection(schema, spec, case_sensitive)(delete_filter),
            case_sensitive,
            projected=True,
        )
        for spec_id, spec in specs.items()
    }
    lineage = md.format_version >= 3
    meta_cols = (ROW_ID.name, LAST_UPDATED_SEQ.name) if lineage else ()
    request = ReadRequest(schema, schema, meta_cols, case_sensitive=case_sensitive)
    match_expr = to_arrow_expression(delete_filter, schema)
    keep_expr = ~match_expr | match_expr.is_null()
    locations = LocationProvider(md)
    try:
        for task in plan_files(io, md, snapshot, delete_filter, case_sensitive=case_sensitive):
            f = task.data_file
            if not task.deletes and strict[f.spec_id].eval(f.partition):
                plan.removed.append(task.entry)
                plan.deleted_rows += f.record_count
                continue
            # Read every live row of the file: the residual would drop exactly the rows we keep.
            rows = read_task(io, replace(task, residual=AlwaysTrue()), request)
            kept = rows.filter(keep_expr)
            if kept.num_rows == rows.num_rows:
                continue  # nothing matched; leave the file and its deletes alone
            plan.removed.append(task.entry)
            plan.deleted_rows += rows.num_rows - kept.num_rows
            if kept.num_rows:
                plan.added.append(_write_survivors(io, md, schema, task.entry, kept, lineage, locations))
    except BaseException:
        for f in plan.added:
            io.delete(f.file_path)
        raise
    return plan


def _write_survivors(
    io: FileIO,
    md: TableMetadata,
    schema: Schema,
    entry: ManifestEntry,
    rows: pa.Table,
    lineage: bool,
    locations: LocationProvider,
) -> DataFile:
    """Write surviving rows of one file to a new file of the same spec and partition."""
    f = entry.data_file
    write_schema = (
        Schema(*schema.fields, ROW_ID, LAST_UPDATED_SEQ, schema_id=schema.schema_id) if lineage else schema
    )
    spec = md.spec_by_id(f.spec_id)
    path = locations.new_data_file_path(spec, schema, f.partition)
    table = pa.Table.from_arrays(
        [rows.column(field.name) for field in write_schema.fields], schema=schema_to_arrow(write_schema)
    )
    return write_parquet_data_file(io, path, table, write_schema, f.spec_id, f.partition, md.properties)
