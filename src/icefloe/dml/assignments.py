"""Column assignments of UPDATE / MERGE: ``{"column": literal | pyarrow.compute.Expression}``.

Literals are converted to the column's type once (an int fits any integer, floating or decimal
column if its value does; anything else must already have the column's type). Expressions are
evaluated over the rows being changed (``pc.field("x")`` is the row's current value; in MERGE,
``pc.field("source.x")`` is the matching source row's value) and must produce the column's type
or a numeric type that converts to it without loss. Mistakes raise ``ValidationError`` naming
the column, before any file is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from icefloe.errors import ValidationError
from icefloe.formats.arrow_schema import conform_array, field_to_arrow
from icefloe.spec.schema import Schema
from icefloe.spec.types import NestedField


@dataclass(frozen=True)
class Assignment:
    """One ``column = value`` of an UPDATE or MERGE clause."""

    field: NestedField
    arrow_type: pa.DataType
    value: Any  # a Python literal or a pyarrow.compute.Expression

    @property
    def name(self) -> str:
        """The column's name in the table schema."""
        return self.field.name


def resolve_assignments(
    schema: Schema, assignments: Mapping[str, Any], case_sensitive: bool = True
) -> list[Assignment]:
    """Check the assigned columns exist (top-level) and literals fit their types."""
    if not assignments:
        raise ValidationError("an update needs at least one column to set")
    by_name = {f.name if case_sensitive else f.name.lower(): f for f in schema.fields}
    out: list[Assignment] = []
    seen: set[int] = set()
    for name, value in assignments.items():
        f = by_name.get(name if case_sensitive else name.lower())
        if f is None:
            nested = " (only top-level columns can be set)" if "." in name else ""
            raise ValidationError(f"cannot set column {name!r}: it is not in the table schema{nested}")
        if f.field_id in seen:
            raise ValidationError(f"column {f.name!r} is set more than once")
        seen.add(f.field_id)
        assignment = Assignment(f, field_to_arrow(f).type, value)
        if not isinstance(value, pc.Expression):
            literal_array(assignment, 0)  # validate now
        out.append(assignment)
    return out


def literal_array(a: Assignment, length: int) -> pa.Array:
    """``length`` copies of a literal, in the column's Arrow type."""
    value = a.value
    if value is None:
        if a.field.required:
            raise ValidationError(f"cannot set required column {a.name!r} to null")
        return pa.nulls(length, a.arrow_type)
    if isinstance(value, uuid.UUID):
        value = value.bytes
    try:
        natural = pa.array([value])
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise ValidationError(
            f"cannot set column {a.name!r} ({a.field.field_type}) to {value!r}: {exc}"
        ) from None
    proto = _fit(natural, a, f"{value!r}", lambda t: pa.array([value], type=t))
    return proto.take(pa.array(np.zeros(length, dtype=np.int64)))


def _numeric_widening(src: pa.DataType, target: pa.DataType) -> bool:
    t = pa.types
    if t.is_integer(src):
        return t.is_integer(target) or t.is_floating(target) or t.is_decimal(target)
    if t.is_floating(src):
        return t.is_floating(target)
    return t.is_decimal(src) and t.is_decimal(target)


def _fit(arr: pa.Array, a: Assignment, shown: str, convert: Any) -> pa.Array:
    """``arr`` in the column's type: numeric values converted without loss, others conformed."""
    if _numeric_widening(arr.type, a.arrow_type):
        try:
            return convert(a.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError) as exc:
            raise ValidationError(
                f"cannot set column {a.name!r} ({a.field.field_type}) to {shown}: {exc}"
            ) from None
    try:
        return conform_array(arr, a.field.field_type, a.arrow_type, a.name)
    except ValidationError as exc:
        raise ValidationError(
            f"cannot set column {a.name!r} ({a.field.field_type}) to {shown}: {exc}"
        ) from None


def evaluate(rows: pa.Table, expressions: Mapping[str, pc.Expression], what: str) -> dict[str, pa.Array]:
    """Evaluate named expressions over ``rows`` (one array per name)."""
    if not expressions:
        return {}
    try:
        out = ds.dataset(rows).to_table(columns=dict(expressions))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        raise ValidationError(f"cannot evaluate {what}: {exc}") from None
    return {name: out.column(name).combine_chunks() for name in expressions}


def assigned_columns(rows: pa.Table, assignments: list[Assignment]) -> dict[str, pa.Array]:
    """The new value of every assigned column for each row of ``rows`` (old values as input)."""
    expressions = {a.name: a.value for a in assignments if isinstance(a.value, pc.Expression)}
    computed = evaluate(rows, expressions, "the values to set") if expressions else {}
    out: dict[str, pa.Array] = {}
    for a in assignments:
        if a.name in computed:
            arr = computed[a.name]
            out[a.name] = _fit(arr, a, f"an expression of type {arr.type}", lambda t, arr=arr: arr.cast(t))
        else:
            out[a.name] = literal_array(a, rows.num_rows)
    return out


def apply_assignments(rows: pa.Table, assignments: list[Assignment]) -> pa.Table:
    """``rows`` with the assigned columns replaced by their new values."""
    values = assigned_columns(rows, assignments)
    out = rows
    for name, arr in values.items():
        index = out.column_names.index(name)
        out = out.set_column(index, pa.field(name, arr.type), arr)
    return out
