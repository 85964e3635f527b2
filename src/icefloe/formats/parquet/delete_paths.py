"""Rewriting the ``file_path`` column of a Parquet position delete file.

A position delete file names the data files it deletes from, so a table copied to another location
needs its delete files rewritten, not copied: the rows, their order, the other columns (``pos`` and
an optional ``row``), field ids and the file's key/value metadata are kept; only the paths change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.spec.schema import DELETE_FILE_PATH_ID


def with_deleted_file_paths(data: bytes, source: str, change: Callable[[str], str]) -> bytes:
    """The position delete file ``data`` with every ``file_path`` value replaced by ``change(value)``."""
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        table = pf.read()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadata(
            f"{source}: not a readable Parquet delete file: {exc}", location=source
        ) from exc
    index = next((i for i, f in enumerate(table.schema) if field_id_of(f) == DELETE_FILE_PATH_ID), None)
    if index is None:
        raise CorruptMetadata(f"{source}: position delete file without a file_path column", location=source)
    field = table.schema.field(index)
    paths = [change(p) for p in table.column(index).to_pylist()]
    table = table.set_column(index, field, pa.array(paths, field.type))
    meta = pf.metadata
    codec = str(meta.row_group(0).column(0).compression).lower() if meta.num_row_groups else "zstd"
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, compression=codec)
    return cast(bytes, buf.getvalue().to_pybytes())
