"""Read a data or delete file in whatever format its manifest entry names: Parquet, Avro or ORC.

Every format is read into Arrow with field ids on its columns and projected by field id the same
way (``parquet_data.project_by_field_id``): renamed columns found by id, promotions, defaults,
constants for columns a file lacks. The manifest's ``file_format`` decides; the bytes are never
sniffed (a Parquet reader given an Avro file would report "Parquet magic bytes not found").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import Unsupported
from icefloe.formats.parquet.data_files import project_by_field_id, read_parquet_data_file, resolve_field_ids
from icefloe.io.fileio import FileIO
from icefloe.spec.schema import Schema

FORMATS = ("parquet", "avro", "orc")


def read_data_file(
    io: FileIO,
    path: str,
    projected_schema: Schema,
    file_format: str = "parquet",
    *,
    file_schema_hint: Schema | None = None,
    row_filter_arrow: pc.Expression | None = None,
    name_mapping: str | list[dict[str, Any]] | None = None,
    constants: Mapping[int, Any] | None = None,
    row_groups: Sequence[int] | None = None,
    row_limits: Sequence[int] | None = None,
    file_size: int | None = None,
) -> pa.Table:
    """Read the file at ``path`` as ``schema_to_arrow(projected_schema)``, columns resolved by field id.

    ``row_groups`` / ``row_limits`` (Parquet only) read just those row groups, or their leading rows.
    ``file_size`` (the manifest's ``file_size_in_bytes``) lets a Parquet file on an object store be
    opened without asking for its size (``parquet.opening``).
    """
    fmt = (file_format or "parquet").lower()
    if fmt == "parquet":
        return read_parquet_data_file(
            io,
            path,
            projected_schema,
            file_schema_hint,
            row_filter_arrow,
            name_mapping=name_mapping,
            constants=constants,
            row_groups=row_groups,
            row_limits=row_limits,
            file_size=file_size,
        )
    if row_groups is not None:
        raise Unsupported(f"reading selected row groups of {file_format!r} file {path}")
    if fmt not in FORMATS:
        raise Unsupported(f"cannot read {file_format!r} file {path}: supported formats are {FORMATS}")
    wanted = {f.field_id for f in projected_schema.fields}
    if fmt == "avro":
        from icefloe.formats.avro.data_files import read_avro_file

        data, num_rows = read_avro_file(io, path, wanted)
    else:
        from icefloe.formats.orc.data_files import read_orc_file

        data, num_rows = read_orc_file(io, path, wanted)
    file_schema = resolve_field_ids(data.schema, projected_schema, file_schema_hint, name_mapping)
    if file_schema is not data.schema:
        data = pa.Table.from_arrays(data.columns, schema=file_schema) if data.num_columns else data
    table = project_by_field_id(
        data if data.num_columns else None, file_schema, num_rows, projected_schema, path, constants
    )
    if row_filter_arrow is not None:
        table = table.filter(row_filter_arrow)
    return table
