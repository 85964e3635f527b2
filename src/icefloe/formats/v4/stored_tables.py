"""A content-entry file's rows as the encoder built them: its write types, no pruned column missing.

The encoder (:func:`~icefloe.formats.v4.content_entry.content_entries_table`) builds a table with
every column of ``content_entry_schema(...).write_arrow`` and, for a compact file, leaves out the
optional columns and struct members that hold only nulls. Reading such a file back with pyarrow,
without projecting it onto the reader's schema or resolving its locations, gives the rows exactly
as they were written; putting the left-out members back as nulls (required members under null
parents filled as the encoder fills them) gives the table the encoder had. A v4 fast append
(:mod:`icefloe.tree.v4_fast_append`) carries a parent root's rows on from there, never converting
them to objects.

A file whose stored types are not the ones this process's encoder writes for the table (another
writer, another schema or partition specs, a column the table no longer has) gives None.
"""

from __future__ import annotations

import functools
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4.content_entry_schema import fill_required_members


def read_stored_table(
    data: bytes, target: pa.Schema, *, source: str
) -> tuple[pa.Table, dict[str, str]] | None:
    """The rows of a content-entry file in the ``target`` write schema, and its footer.

    None when the file's columns cannot be widened to ``target`` exactly (types, nullability and
    field ids). Raises CorruptMetadata naming ``source`` when the bytes are not readable Parquet.
    """
    try:
        pf = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
        raw = pf.read(use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptMetadata(
            f"{source}: not a readable Parquet content-entry file: {exc}", location=source
        ) from exc
    raw_footer = pf.metadata.metadata or {}
    footer = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in raw_footer.items()}
    table = widen_table(raw, target)
    return None if table is None else (table, footer)


def widen_table(table: pa.Table, target: pa.Schema) -> pa.Table | None:
    """``table`` with the fields of ``target`` it lacks added as nulls (None if it cannot be)."""
    by_id = {field_id_of(f): i for i, f in enumerate(table.schema)}
    if len(by_id) != table.num_columns:
        return None  # a repeated or missing field id: not a file this encoder wrote
    arrays = []
    for want in target:
        i = by_id.pop(field_id_of(want), None)
        if i is None:
            arrays.append(_nulls(want, table.num_rows))
            continue
        column = table.column(i)
        arr = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        widened = _widen(arr, table.schema.field(i), want)
        if widened is None:
            return None
        arrays.append(widened)  # Parquet reads a required member under a null parent as a zero
    if by_id:
        return None  # a column the encoder does not write
    return pa.Table.from_arrays(arrays, schema=target)


def _nulls(f: pa.Field, n: int) -> pa.Array:
    """A column the compact writer left out: nulls, required members filled as the encoder does."""
    return _null_values(f.type, n)


_NULLS_BUILT = 4096


@functools.lru_cache(maxsize=256)
def _null_block(t: pa.DataType) -> pa.Array:
    """:data:`_NULLS_BUILT` nulls of type ``t``, required members filled (built once per type)."""
    return fill_required_members(pa.nulls(_NULLS_BUILT, t), t, str(t))


def _null_values(t: pa.DataType, n: int) -> pa.Array:
    if n <= _NULLS_BUILT:
        return _null_block(t).slice(0, n)
    return fill_required_members(pa.nulls(n, t), t, str(t))


def _widen(arr: pa.Array, have: pa.Field, want: pa.Field) -> pa.Array | None:
    if have.nullable != want.nullable:
        return None
    if have.type.equals(want.type, check_metadata=True):
        return arr
    if not (pa.types.is_struct(have.type) and pa.types.is_struct(want.type)):
        return None
    struct = cast(pa.StructArray, arr)
    by_id = {field_id_of(have.type.field(i)): i for i in range(have.type.num_fields)}
    if len(by_id) != have.type.num_fields:
        return None
    children = []
    for j in range(want.type.num_fields):
        member = want.type.field(j)
        i = by_id.pop(field_id_of(member), None)
        if i is None:
            child = _null_values(member.type, len(struct))
        else:
            found = _widen(struct.field(i), have.type.field(i), member)
            if found is None:
                return None
            child = found
        children.append(child)
    if by_id:
        return None
    mask = struct.is_null() if struct.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(want.type), mask=mask)
