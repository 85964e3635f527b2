"""ORC data files (and ORC delete files) as Arrow, columns tagged with field ids.

Iceberg writers store the field id of every ORC type in the type attribute ``iceberg.id`` (spec,
Appendix A; ``iceberg.required`` marks required fields). pyarrow's ORC reader hands type
attributes over as Arrow field metadata; ``read_orc_file`` renames ``iceberg.id`` to the
``PARQUET:field_id`` key at every level so the Parquet reader's projection by field id
(``parquet_data.project_by_field_id``) applies unchanged.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc

from icefloe.errors import CorruptMetadata, NotFound, ValidationError
from icefloe.formats.arrow_schema import FIELD_ID_KEY, field_id_of
from icefloe.io.fileio import FileIO

ORC_ID_KEY = b"iceberg.id"


def read_orc_file(io: FileIO, path: str, wanted_ids: set[int] | None = None) -> tuple[pa.Table, int]:
    """The file's columns (only top-level fields in ``wanted_ids`` when given) and its row count."""
    fs, fs_path = io.filesystem_and_path(path)
    try:
        source = fs.open_input_file(fs_path)
    except FileNotFoundError:
        raise NotFound(f"data file does not exist: {path}") from None
    with source:
        try:
            f = orc.ORCFile(source)
            schema = pa.schema([_with_field_ids(field) for field in f.schema])
            names = [
                field.name
                for field in schema
                if wanted_ids is None or _field_id(field) is None or _field_id(field) in wanted_ids
            ]
            data = f.read(columns=names) if names else None
            if data is not None:
                data.validate(full=True)  # ORC checks no UTF-8: a corrupt string must not get out
            num_rows = int(f.nrows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError, ValidationError) as exc:
            # ValidationError: a malformed iceberg.id attribute (_with_field_ids), the file's fault
            raise CorruptMetadata(f"cannot read ORC file {path}: {exc}") from exc
    if data is None:
        return pa.schema([]).empty_table(), num_rows
    out_schema = pa.schema([schema.field(n) for n in names])
    # same data, the schema with field ids (pa.Table.cast would keep the old field metadata)
    return pa.Table.from_arrays(data.columns, schema=out_schema), num_rows


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(FIELD_ID_KEY)
    return int(raw) if raw is not None else None


def _with_field_ids(field: pa.Field) -> pa.Field:
    """``field`` with ``iceberg.id`` attributes copied to ``PARQUET:field_id``, recursively."""
    meta = dict(field.metadata or {})
    if ORC_ID_KEY in meta:
        meta[FIELD_ID_KEY] = meta[ORC_ID_KEY]
    t = field.type
    if pa.types.is_struct(t):
        t = pa.struct([_with_field_ids(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_map(t):
        t = pa.map_(_with_field_ids(t.key_field), _with_field_ids(t.item_field))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        t = pa.list_(_with_field_ids(t.value_field))
    out = pa.field(field.name, t, field.nullable, meta or None)
    field_id_of(out)  # a malformed id fails here, where the file is known, not at projection
    return out
