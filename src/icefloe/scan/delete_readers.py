"""Read delete files: deletion vectors, position delete files and equality delete files."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.errors import CorruptMetadata, NotFound, ValidationError
from icefloe.formats.data_files import read_data_file
from icefloe.formats.parquet.opening import open_parquet
from icefloe.formats.puffin.deletion_vector import decode_dv_blob
from icefloe.io.fileio import FileIO, normalize_location
from icefloe.spec.content import DataFile
from icefloe.spec.schema import Schema, prune_columns

_KEY_PREFIX = "__icefloe_eq_"


def read_dv_positions(io: FileIO, dv_file: DataFile, puffin: bytes | None = None) -> np.ndarray:
    """Positions deleted by a deletion-vector-v1 blob (validated: length, magic, CRC, cardinality).

    ``puffin``: the whole Puffin file already in memory (shared by a scan's tasks), sliced instead
    of reading the blob's range from storage.
    """
    if dv_file.content_offset is None or dv_file.content_size_in_bytes is None:
        raise CorruptMetadata(f"deletion vector entry for {dv_file.file_path} has no content offset/size")
    if puffin is not None:
        end = dv_file.content_offset + dv_file.content_size_in_bytes
        blob = puffin[dv_file.content_offset : end]
    else:
        blob = read_puffin_range(io, dv_file, dv_file.content_offset, dv_file.content_size_in_bytes)
    if len(blob) != dv_file.content_size_in_bytes:
        raise CorruptMetadata(
            f"deletion vector in {dv_file.file_path} is truncated: wanted {dv_file.content_size_in_bytes} "
            f"bytes at offset {dv_file.content_offset}, got {len(blob)}"
        )
    bitmap = decode_dv_blob(blob, source=dv_file.file_path, expected_cardinality=dv_file.record_count)
    return bitmap.to_numpy()


def read_puffin_range(io: FileIO, dv_file: DataFile, offset: int, size: int) -> bytes:
    """``size`` bytes from ``offset`` of the Puffin file holding ``dv_file`` (fewer at its end)."""
    try:
        with io.new_input(dv_file.file_path).open() as stream:
            stream.seek(offset)
            return stream.read(size)
    except NotFound:
        raise NotFound(
            f"deletion vector file {dv_file.file_path} (for data file {dv_file.referenced_data_file}) "
            "does not exist"
        ) from None


def read_position_delete_positions(io: FileIO, delete_file: DataFile, data_path: str) -> np.ndarray:
    """Positions a position delete file deletes from the data file at ``data_path`` (normalised)."""
    table, paths, normalized = _checked_position_deletes(io, delete_file)
    matching = [p for p, n in normalized.items() if p is not None and n == data_path]
    if not matching:
        return np.empty(0, dtype=np.int64)
    mask = pc.is_in(paths, value_set=pa.array(matching, paths.type))
    _, pos_col = _position_columns(table, delete_file.file_path)
    return np.asarray(table.column(pos_col).filter(mask).to_numpy(), dtype=np.int64)


def read_position_deletes_by_file(io: FileIO, delete_file: DataFile) -> dict[str, np.ndarray]:
    """Every data file a position delete file names (normalised) -> the positions it deletes there.

    The same checks and positions as :func:`read_position_delete_positions` for each data file,
    from one read: for a scan whose tasks share the delete file. Only positions are kept (8 bytes
    a row), not the file's path column.
    """
    table, paths, normalized = _checked_position_deletes(io, delete_file)
    if table.num_rows == 0:
        return {}
    _, pos_col = _position_columns(table, delete_file.file_path)
    named = {p: n for p, n in normalized.items() if p is not None and n is not None}
    spelled = list(named)
    targets = sorted(set(named.values()))
    index = {n: i for i, n in enumerate(targets)}
    # distinct spellings of one location share a group; a null path (code len(spelled)) has none
    group_of_code = np.array([index[named[p]] for p in spelled] + [-1], dtype=np.int32)
    codes = pc.index_in(paths, value_set=pa.array(spelled, paths.type)).fill_null(len(spelled))
    groups = group_of_code[codes.to_numpy()]
    positions = np.asarray(table.column(pos_col).to_numpy(), dtype=np.int64)
    order = np.argsort(groups, kind="stable")  # file order kept within each data file
    bounds = np.searchsorted(groups[order], np.arange(len(targets) + 1))
    return {name: positions[order[bounds[i] : bounds[i + 1]]].copy() for i, name in enumerate(targets)}


def _checked_position_deletes(
    io: FileIO, delete_file: DataFile
) -> tuple[pa.Table, pa.ChunkedArray, dict[str | None, str | None]]:
    """A position delete file checked against its manifest entry: its rows, its ``file_path``
    column, and each distinct path there -> that path normalised."""
    table = _read_position_delete_file(io, delete_file)
    if table.num_rows != delete_file.record_count:
        raise CorruptMetadata(
            f"position delete file {delete_file.file_path} holds {table.num_rows} rows, its manifest "
            f"says {delete_file.record_count}",
            location=delete_file.file_path,
        )
    if table.num_rows == 0:
        return table, pa.chunked_array([], pa.string()), {}
    file_col, _ = _position_columns(table, delete_file.file_path)
    paths = table.column(file_col)
    normalized = {p: _named_location(p, delete_file) for p in pc.unique(paths).to_pylist()}
    referenced = delete_file.referenced_data_file
    if referenced is not None and any(
        p is None or n != normalize_location(referenced) for p, n in normalized.items()
    ):
        raise CorruptMetadata(
            f"position delete file {delete_file.file_path} names other data files than its "
            f"referenced_data_file {referenced}",
            location=delete_file.file_path,
        )
    return table, paths, normalized


def _named_location(path: str | None, delete_file: DataFile) -> str | None:
    """A data file path a position delete file names, normalised; CorruptMetadata naming the delete
    file when it is no location at all (a corrupt file_path such as ``file://.tmp/x``)."""
    if path is None:
        return None
    try:
        return normalize_location(path)
    except ValidationError as exc:
        raise CorruptMetadata(
            f"position delete file {delete_file.file_path} names an invalid data file path: {exc}",
            location=delete_file.file_path,
        ) from None


def _read_position_delete_file(io: FileIO, delete_file: DataFile) -> pa.Table:
    """Every column of a position delete file (Parquet, Avro or ORC), field ids in the metadata."""
    fmt = delete_file.file_format.lower()
    if fmt in ("avro", "orc"):
        from icefloe.formats.avro.data_files import read_avro_file
        from icefloe.formats.orc.data_files import read_orc_file

        try:
            read = read_avro_file if fmt == "avro" else read_orc_file
            return read(io, delete_file.file_path)[0]
        except NotFound:
            raise NotFound(f"position delete file {delete_file.file_path} does not exist") from None
    try:
        with open_parquet(io, delete_file.file_path, delete_file.file_size_in_bytes) as pf:
            return pf.read(columns=None)
    except NotFound:
        raise NotFound(f"position delete file {delete_file.file_path} does not exist") from None


def _position_columns(table: pa.Table, source: str) -> tuple[str, str]:
    """Find ``file_path`` (2147483546) and ``pos`` (2147483545) by field id, else by name."""
    by_id: dict[int, str] = {}
    for field in table.schema:
        meta = field.metadata or {}
        raw = meta.get(b"PARQUET:field_id")
        if raw is not None:
            by_id[int(raw)] = field.name
    file_col = by_id.get(2147483546, "file_path")
    pos_col = by_id.get(2147483545, "pos")
    if file_col not in table.column_names or pos_col not in table.column_names:
        raise CorruptMetadata(f"position delete file {source} lacks file_path/pos columns")
    return file_col, pos_col


def apply_equality_deletes(io: FileIO, table: pa.Table, delete_file: DataFile, schema: Schema) -> pa.Table:
    """Drop rows of ``table`` whose equality columns equal a row of the delete file (null = null)."""
    return drop_equality_deleted(
        table, read_equality_delete_keys(io, delete_file, schema), delete_file, schema
    )


def read_equality_delete_keys(io: FileIO, delete_file: DataFile, schema: Schema) -> pa.Table:
    """The distinct keys of an equality delete file, as the null-safe key columns
    :func:`drop_equality_deleted` joins on: what a scan keeps of the file, whatever its other columns.

    The keys are the file's ``equality_ids`` columns read with ``schema`` (the scan's table schema).
    """
    ids = _equality_ids(delete_file)
    deletes = read_data_file(
        io,
        delete_file.file_path,
        prune_columns(schema, set(ids)),
        delete_file.file_format,
        file_size=delete_file.file_size_in_bytes,
    )
    names = _key_names(schema, ids)
    with_keys = _null_safe_keys(deletes, names)
    keys = with_keys.column_names[-2 * len(names) :]
    return with_keys.select(keys).group_by(keys).aggregate([])


def drop_equality_deleted(table: pa.Table, keys: pa.Table, delete_file: DataFile, schema: Schema) -> pa.Table:
    """Drop rows of ``table`` whose equality columns equal a row of ``keys`` (what
    :func:`read_equality_delete_keys` read of ``delete_file``), keeping the others in order."""
    if keys.num_rows == 0 or table.num_rows == 0:
        return table
    names = _key_names(schema, _equality_ids(delete_file))
    # Join the key columns and a row index only: Acero joins cannot carry struct/list/map columns.
    with_keys = _null_safe_keys(table, names)
    key_names = with_keys.column_names[-2 * len(names) :]
    left = with_keys.select(key_names)
    left = left.append_column(f"{_KEY_PREFIX}row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    # Acero builds its hash table on the right input: over the smaller side, so a task's rows are
    # probed against a large shared key set without hashing all of it again for every task.
    if keys.num_rows <= table.num_rows:
        kept = left.join(keys, keys=key_names, join_type="left anti")
    else:
        kept = keys.join(left, keys=key_names, join_type="right anti")
    rows = np.sort(np.asarray(kept.column(f"{_KEY_PREFIX}row").to_numpy(), dtype=np.int64))
    return table.take(pa.array(rows))


def _equality_ids(delete_file: DataFile) -> list[int]:
    ids = list(delete_file.equality_ids or ())
    if not ids:
        raise CorruptMetadata(f"equality delete file {delete_file.file_path} has no equality ids")
    return ids


def _key_names(schema: Schema, ids: list[int]) -> list[str]:
    return [schema.find_column_name(i) or str(i) for i in ids]


def _null_safe_keys(table: pa.Table, names: list[str]) -> pa.Table:
    """Append (is_null, filled value) columns per key so nulls join as equal values."""
    out = table
    for i, name in enumerate(names):
        col = _column_by_path(table, name)
        is_null = pc.is_null(col)
        filled = pc.fill_null(col, _zero_of(col.type)) if col.null_count else col
        out = out.append_column(f"{_KEY_PREFIX}n{i}", is_null).append_column(f"{_KEY_PREFIX}v{i}", filled)
    return out


def _column_by_path(table: pa.Table, dotted: str) -> pa.ChunkedArray:
    parts = dotted.split(".")
    col = table.column(parts[0])
    for part in parts[1:]:
        col = pc.struct_field(col, part)
    return col


def _zero_of(dtype: pa.DataType) -> pa.Scalar:
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return pa.scalar("", dtype)
    if pa.types.is_fixed_size_binary(dtype):
        return pa.scalar(b"\0" * dtype.byte_width, dtype)
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return pa.scalar(b"", dtype)
    if pa.types.is_boolean(dtype):
        return pa.scalar(False, dtype)
    if pa.types.is_decimal(dtype):
        return pa.scalar(Decimal(0), dtype)
    if pa.types.is_date32(dtype):
        return pa.scalar(0, pa.int32()).cast(dtype)
    return pa.scalar(0).cast(dtype)
