"""Leaving the all-null optional columns out of a compact content-entry file.

A compact file (a root, a leaf) stores no optional column or struct member that holds only nulls:
readers project by field id, so a column left out reads as null. Whether a column is left out
depends on its null count, so the work is per column and member (about fifty of them for a root
of a two-column table), not per row: a root of 100 rows pruned in about the time of a root of one.

Every commit of a table prunes a table of the same entry schema, so each input schema keeps its
tree of members with their Arrow fields (no field or type object looked up again), and each
outcome (which members are kept) its output fields and schema, built once. A commit then pays one
null count per member and rebuilds only the structs that lost members. Because the output schema
of an outcome is the same Arrow schema every time, what the writer derives from it (the
delta-coded integer columns, ``content_entry._integer_column_paths``) is found by an equality
that holds at once, not by hashing the schema (tens of microseconds for a root's).
"""

from __future__ import annotations

import threading
from typing import cast

import pyarrow as pa

from icefloe.formats.v4.content_entry_schema import single_array

__all__ = ["prune_null_columns"]

_OUTCOMES_KEPT = 64
"""Outcomes kept per struct or schema (each is a few Arrow fields; a table meets a handful)."""

_SCHEMAS_KEPT = 32
"""Input schemas whose member trees are kept (a process writes a few tables' roots at once)."""


class _Member:
    """A column or struct member of an input schema: its field and, for a struct, its members."""

    def __init__(self, field: pa.Field) -> None:
        self.field = field
        self.nullable = field.nullable
        t = field.type
        self.members = (
            tuple(_Member(t.field(i)) for i in range(t.num_fields)) if pa.types.is_struct(t) else None
        )
        # ids of the kept members' fields -> those fields (held: no other object takes their ids
        # while the entry lives) and this struct's field with them
        self._outcomes: dict[tuple[int, ...], tuple[tuple[pa.Field, ...], pa.Field]] = {}

    def prune(self, arr: pa.Array, n: int) -> tuple[pa.Array, pa.Field] | None:
        """``arr`` without its all-null optional members, with its field (None: it is all null).

        ``n``: the array's length (no member of an empty table is left out).
        """
        if self.nullable and n and arr.null_count == n:
            return None
        if self.members is None:
            return arr, self.field
        struct = cast(pa.StructArray, arr)
        arrays: list[pa.Array] = []
        fields: list[pa.Field] = []
        changed = False
        for i, member in enumerate(self.members):
            child = struct.field(i)
            kept = member.prune(child, n)
            if kept is None:
                changed = True
                continue
            changed = changed or kept[0] is not child
            arrays.append(kept[0])
            fields.append(kept[1])
        if not arrays:
            return None if self.nullable else (arr, self.field)
        if not changed:  # every member kept as it is: the struct needs no rebuilding
            return arr, self.field
        mask = struct.is_null() if struct.null_count else None
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask), self._field(fields)

    def _field(self, members: list[pa.Field]) -> pa.Field:
        """This struct's field with only ``members`` (the same object for the same members)."""
        key = tuple(map(id, members))
        found = self._outcomes.get(key)
        if found is None:
            f = self.field
            if len(self._outcomes) >= _OUTCOMES_KEPT:
                self._outcomes.clear()
            built = (tuple(members), pa.field(f.name, pa.struct(members), f.nullable, f.metadata))
            found = self._outcomes.setdefault(key, built)
        return found[1]


class _SchemaMembers:
    """The member trees of one input schema and the output schemas of its outcomes."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.columns = tuple(_Member(f) for f in schema)
        self._outcomes: dict[tuple[int, ...], tuple[tuple[pa.Field, ...], pa.Schema]] = {}  # as _Member's

    def prune(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        arrays: list[pa.Array] = []
        fields: list[pa.Field] = []
        for column, values in zip(self.columns, table.columns, strict=True):
            kept = column.prune(single_array(values), n)
            if kept is not None:
                arrays.append(kept[0])
                fields.append(kept[1])
        key = tuple(map(id, fields))
        found = self._outcomes.get(key)
        if found is None:
            if len(self._outcomes) >= _OUTCOMES_KEPT:
                self._outcomes.clear()
            built = (tuple(fields), pa.schema(fields, metadata=self.schema.metadata))
            found = self._outcomes.setdefault(key, built)
        return pa.Table.from_arrays(arrays, schema=found[1])


_recent: list[_SchemaMembers] = []
_recent_lock = threading.Lock()


def _members_of(schema: pa.Schema) -> _SchemaMembers:
    """The member trees of ``schema`` (compared with field and schema metadata: the output keeps
    the input's field ids)."""
    with _recent_lock:
        recent = list(_recent)
    for found in reversed(recent):
        if found.schema is schema or found.schema.equals(schema, check_metadata=True):
            return found
    made = _SchemaMembers(schema)
    with _recent_lock:
        _recent[:] = [*_recent[-(_SCHEMAS_KEPT - 1) :], made]
    return made


def prune_null_columns(table: pa.Table) -> pa.Table:
    """The table without optional columns (and struct members) that hold only nulls."""
    return _members_of(table.schema).prune(table)
