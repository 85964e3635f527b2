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
import threading
from collections.abc import Callable
from typing import cast

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.errors import CorruptMetadata
from icefloe.formats.arrow_schema import field_id_of
from icefloe.formats.v4.content_entry_schema import fill_required_members, single_array


def read_stored_table(
    data: bytes, target: pa.Schema, *, source: str
) -> tuple[pa.Table, dict[str, str]] | None:
    """The rows of a content-entry file in the ``target`` write schema, and its footer.

    None when the file's columns cannot be widened to ``target`` exactly (types, nullability and
    field ids). Raises CorruptMetadata naming ``source`` when the bytes are not readable Parquet.
    """
    raw, footer = read_stored_file(data, source=source)
    table = widen_table(raw, target)
    return None if table is None else (table, footer)


def read_stored_file(data: bytes, *, source: str) -> tuple[pa.Table, dict[str, str]]:
    """The rows of a content-entry file as stored (columns the compact writer left out absent),
    and its footer; :func:`widen_table` turns them into the encoder's rows.

    Raises CorruptMetadata naming ``source`` when the bytes are not readable Parquet.
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
    return raw, footer


def widen_table(table: pa.Table, target: pa.Schema) -> pa.Table | None:
    """``table`` with the fields of ``target`` it lacks added as nulls (None if it cannot be)."""
    widening = _PLANS.widening(table.schema, target)
    if widening is None:
        return None
    columns = widening.columns(lambda i: single_array(table.column(i)), table.num_rows)
    return pa.Table.from_arrays(columns, schema=target)


_Plan = tuple[tuple[int | None, "_Plan | None"], ...]
"""Per field of the wanted type: its index in the stored type (None: absent, filled with nulls)
and how to widen it (None: taken as it is)."""


class _Widening:
    """A plan with what applying it needs, built once: the wanted fields and the nulls of the
    absent ones (listing a struct type's fields or finding a type's nulls costs tens of
    microseconds, per column of every table widened)."""

    __slots__ = ("fields", "steps")

    def __init__(self, plan: _Plan, fields: list[pa.Field]) -> None:
        self.fields = fields
        self.steps = [
            (
                i,
                None if members is None else _Widening(members, list(f.type)),
                _null_block(f.type) if i is None else None,
            )
            for f, (i, members) in zip(fields, plan, strict=True)
        ]

    def columns(self, stored: Callable[[int], pa.Array], n: int) -> list[pa.Array]:
        """The wanted columns of ``n`` rows from the stored ones (``stored(i)``: the i-th)."""
        out = []
        for f, (i, members, nulls) in zip(self.fields, self.steps, strict=True):
            if i is None:  # left out by the compact writer: nulls, required members filled
                out.append(
                    nulls.slice(0, n) if nulls is not None and n <= _NULLS_BUILT else _null_values(f.type, n)
                )
                continue
            arr = stored(i)
            # Parquet reads a required member under a null parent as a zero
            out.append(arr if members is None else members.struct(arr))
        return out

    def struct(self, arr: pa.Array) -> pa.Array:
        """A stored struct array with the wanted members."""
        struct = cast(pa.StructArray, arr)
        children = self.columns(struct.field, len(struct))
        mask = struct.is_null() if struct.null_count else None
        return pa.StructArray.from_arrays(children, fields=self.fields, mask=mask)


class _Plans:
    """Widening plans of recent (stored, wanted) schema pairs, compared with their field ids
    (``pa.Schema.__eq__`` ignores field metadata, where the ids are) but not with the schema's own
    metadata: a file read with pyarrow carries its footer there (every root its own snapshot id),
    which says nothing about how its columns widen."""

    def __init__(self, size: int = 32) -> None:
        self._recent: list[tuple[pa.Schema, pa.Schema, _Plan | None, _Widening | None]] = []
        self._size = size
        self._lock = threading.Lock()
        self.made = 0  # plans worked out (not found among the recent ones)

    def get(self, have: pa.Schema, target: pa.Schema) -> _Plan | None:
        return self._find(have, target)[0]

    def widening(self, have: pa.Schema, target: pa.Schema) -> _Widening | None:
        return self._find(have, target)[1]

    def _find(self, have: pa.Schema, target: pa.Schema) -> tuple[_Plan | None, _Widening | None]:
        if have.metadata:
            have = have.remove_metadata()
        if target.metadata:
            target = target.remove_metadata()
        with self._lock:
            recent = list(self._recent)
        for h, t, plan, widening in reversed(recent):
            if (h is have or h.equals(have, check_metadata=True)) and (
                t is target or t.equals(target, check_metadata=True)
            ):
                return plan, widening
        fields = list(target)
        plan = _fields_plan(list(have), fields)
        widening = None if plan is None else _Widening(plan, fields)
        with self._lock:
            self.made += 1
            self._recent = [*self._recent[-(self._size - 1) :], (have, target, plan, widening)]
        return plan, widening


_PLANS = _Plans()


def widening_plan(have: pa.Schema, target: pa.Schema) -> _Plan | None:
    """How stored columns of schema ``have`` widen to ``target`` (None: they cannot; see the
    module doc). Decided once per pair of schemas."""
    return _PLANS.get(have, target)


def _fields_plan(have: list[pa.Field], want: list[pa.Field]) -> _Plan | None:
    by_id = {field_id_of(f): i for i, f in enumerate(have)}
    if len(by_id) != len(have):
        return None  # a repeated or missing field id: not a file this encoder wrote
    steps: list[tuple[int | None, _Plan | None]] = []
    for w in want:
        i = by_id.pop(field_id_of(w), None)
        if i is None:
            steps.append((None, None))
            continue
        h = have[i]
        if h.nullable != w.nullable:
            return None
        if h.type.equals(w.type, check_metadata=True):
            steps.append((i, None))
            continue
        if not (pa.types.is_struct(h.type) and pa.types.is_struct(w.type)):
            return None
        members = _fields_plan(list(h.type), list(w.type))
        if members is None:
            return None
        steps.append((i, members))
    if by_id:
        return None  # a column the encoder does not write
    return tuple(steps)


_NULLS_BUILT = 4096


@functools.lru_cache(maxsize=256)
def _null_block(t: pa.DataType) -> pa.Array:
    """:data:`_NULLS_BUILT` nulls of type ``t``, required members filled (built once per type)."""
    return fill_required_members(pa.nulls(_NULLS_BUILT, t), t, str(t))


def _null_values(t: pa.DataType, n: int) -> pa.Array:
    if n <= _NULLS_BUILT:
        return _null_block(t).slice(0, n)
    return fill_required_members(pa.nulls(n, t), t, str(t))
