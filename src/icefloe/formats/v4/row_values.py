"""Content-entry struct values (dicts by field id) to Arrow, a few rows in one pyarrow conversion.

``internal_to_arrow`` converts values column by column down the type tree: for a content entry
that is some forty ``pa.array`` calls and struct assemblies whatever the number of rows, most of
encoding the one new root row of a small append. When every leaf of the entry schema is a type
pyarrow builds from the internal value as it is (numbers, strings, bytes; dates, times and
timestamps as integers) and no struct repeats a member name, a few rows are renamed to pyarrow's
struct dicts (by member name) and converted at once, members under a null struct then set null
(pyarrow's conversion fills them with empty values). The result is the array ``internal_to_arrow``
builds (``tests/formats/v4/test_row_values.py`` compares the two); other schemas (decimals,
uuids, fixed, nanosecond timestamps, ...) and larger batches take ``internal_to_arrow``.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import pyarrow as pa

from icefloe.formats.arrow_schema import internal_to_arrow
from icefloe.formats.v4.content_entry_schema import ContentEntrySchema
from icefloe.formats.v4.type_memo import TypeMemo
from icefloe.spec.types import (
    BinaryType,
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
)

__all__ = ["MAX_ROWS_BY_NAME", "converts_by_name", "entry_values_to_arrow", "values_by_name_to_arrow"]

MAX_ROWS_BY_NAME = 16
"""Batches up to this many rows are converted by name (renaming costs per row, ``internal_to_arrow``
per column: for a leaf's thousands of rows the columns are cheaper)."""

_AS_IS = (
    BooleanType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    StringType,
    BinaryType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
)


def _by_name_ok(t: IcebergType) -> bool:
    if isinstance(t, StructType):
        names = [f.name for f in t.fields]
        return len(set(names)) == len(names) and all(_by_name_ok(f.field_type) for f in t.fields)
    if isinstance(t, ListType):
        return _by_name_ok(t.element_type)
    return isinstance(t, _AS_IS)


@functools.lru_cache(maxsize=64)
def converts_by_name(schema: ContentEntrySchema) -> bool:
    """Whether rows of ``schema`` convert by name to what ``internal_to_arrow`` builds (decided
    once per entry schema)."""
    return _by_name_ok(schema.write_type)


def _named(t: StructType, value: dict[int, Any]) -> dict[str, Any]:
    out = {}
    for f in t.fields:
        v = value.get(f.field_id)
        if v is not None:
            ft = f.field_type
            if isinstance(ft, StructType):
                v = _named(ft, v)
            elif isinstance(ft, ListType) and isinstance(ft.element_type, StructType):
                element = ft.element_type
                v = [None if e is None else _named(element, e) for e in v]
        out[f.name] = v
    return out


def values_by_name_to_arrow(t: StructType, values: list[Any], target: pa.DataType) -> pa.Array:
    """Struct values of ``t`` (dicts by field id, or None) as one Arrow array of ``target``, in one
    pyarrow conversion (only for types :func:`converts_by_name` accepts)."""
    arr = pa.array([None if v is None else _named(t, v) for v in values], type=target)
    return _null_below_null(arr, _null_plans(target))


class _NullPlan:
    """A struct type's fields and its struct-typed members' plans (the only members that can hold
    a null struct), worked out once per type."""

    __slots__ = ("fields", "structs")

    def __init__(self, t: pa.StructType) -> None:
        self.fields = list(t)
        self.structs = tuple(
            (i, _null_plans(f.type)) for i, f in enumerate(self.fields) if pa.types.is_struct(f.type)
        )


_null_plans: TypeMemo[_NullPlan] = TypeMemo(_NullPlan)


def _null_below_null(struct: pa.StructArray, plan: _NullPlan) -> pa.StructArray:
    """``struct`` with every member null where its struct is, as ``internal_to_arrow`` builds it
    (pyarrow's conversion puts empty values there, which pruning would take for values).

    A struct null in every row is replaced whole by nulls (members null at every depth), and one
    null in no row is rebuilt only when a struct member below it changed: a content entry's
    absent statistics and bitmaps are whole null structs, its leaf members need no visit.
    """
    n = len(struct)
    if struct.null_count == n and n:
        return cast(pa.StructArray, pa.nulls(n, struct.type))
    if struct.null_count:
        children = struct.flatten()
        for i, member in plan.structs:
            children[i] = _null_below_null(children[i], member)
        return pa.StructArray.from_arrays(children, fields=plan.fields, mask=struct.is_null())
    changed = {}
    for i, member in plan.structs:
        child = struct.field(i)
        fixed = _null_below_null(child, member)
        if fixed is not child:
            changed[i] = fixed
    if not changed:
        return struct
    children = [changed[i] if i in changed else struct.field(i) for i in range(len(plan.fields))]
    return pa.StructArray.from_arrays(children, fields=plan.fields)


def entry_values_to_arrow(schema: ContentEntrySchema, values: list[Any], target: pa.DataType) -> pa.Array:
    """Content-entry struct values of ``schema`` as an Arrow array of ``target`` (``internal_to_arrow``,
    or for a few rows of a schema that allows it, one conversion by name)."""
    if len(values) <= MAX_ROWS_BY_NAME and converts_by_name(schema):
        return values_by_name_to_arrow(schema.write_type, values, target)
    return internal_to_arrow(schema.write_type, values, target)
