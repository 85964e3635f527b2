"""Schema evolution: the ``UpdateSchema`` builder, an Action that adds a schema and makes it current.

Changes are recorded against the schema the builder was created from (validated as each call is
made) and re-applied to the table's current schema on every commit attempt:

- new field ids are always taken from the table's ``last-column-id`` + 1 at commit time, so an id is
  never reused, not even the id of a dropped column;
- when the schema moved since the builder was created, every column the update touches must still
  exist with the same name, type and nullability; otherwise the commit fails with a non-retryable
  ``CommitConflict`` naming the column.

Rules follow the spec's "Schema Evolution" section: type promotions int -> long, float -> double,
decimal precision widening, and from format version 3 date -> timestamp(_ns) and unknown -> any;
default values (``initial-default`` / ``write-default``) need format version 3; a new required column
needs an initial default (or ``allow_incompatible_changes``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Self

from icefloe.errors import CommitConflict, ValidationError
from icefloe.spec.conversions import parse_literal
from icefloe.spec.names import check_column_names, confusable_problem
from icefloe.spec.schema import Schema, assign_fresh_ids, check_format_version
from icefloe.spec.schema_changes import (
    TABLE_ROOT,
    Move,
    SchemaChanges,
    SchemaRebuilder,
    check_column_sources,
    check_identifier_field,
    nested_ids,
    same_shape,
)
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.types import (
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
    UnknownType,
    primitive_from_string,
    promotion_allowed,
)
from icefloe.spec.updates import LAST_ADDED, AddSchema, SetCurrentSchema, TableUpdate
from icefloe.txn.transaction import AttemptContext, replayed_on_fresh_metadata

MAX_FIELD_ID = 2147483447  # ids above are reserved for metadata columns
_UNSET: Any = object()

ColumnPath = str | tuple[str, ...]
"""A column: ``"a.b"`` (dots separate nesting levels) or a tuple of names (names may hold dots)."""


class PendingAction:
    """A builder that can commit itself through a callback: ``commit()`` or a ``with`` block."""

    _on_commit: Callable[[Any], None] | None = None
    _done: bool = False

    def commit(self) -> None:
        """Commit the recorded changes through the table this builder is bound to (once)."""
        if self._done:
            return
        if self._on_commit is None:
            raise ValidationError(
                f"{type(self).__name__} is not bound to a table: add it to a transaction with "
                "tx.add_action(...)"
            )
        self._on_commit(self)
        self._done = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()

    def committed_files(self) -> list[str]:
        """Metadata-only changes own no files."""
        return []


@dataclass(frozen=True)
class _Found:
    """A column found by path: the field, the id of its parent struct (or list/map), the parent kind."""

    field: NestedField
    parent_id: int
    parent_kind: str  # "struct" | "list" | "map"
    name: str


class UpdateSchema(PendingAction):
    """Record schema changes; as an Action it returns AddSchema + SetCurrentSchema."""

    def __init__(
        self,
        metadata: TableMetadata,
        *,
        allow_incompatible_changes: bool = False,
        case_sensitive: bool = True,
        on_commit: Callable[[Any], None] | None = None,
    ) -> None:
        self._md = metadata
        self._base = metadata.schema()
        self._base_last = metadata.last_column_id
        self._allow_incompatible = allow_incompatible_changes
        self._case_sensitive = case_sensitive
        self._on_commit = on_commit
        self._s = SchemaChanges(set(), {}, {}, {}, None, metadata.last_column_id)

    # ---- recording ------------------------------------------------------------------------
    def add_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str,
        doc: str | None = None,
        required: bool = False,
        initial_default: Any = None,
        write_default: Any = None,
    ) -> Self:
        """Add a column (``"a.b"`` adds ``b`` to struct ``a``; lists and maps add to their element/value)."""
        parts = _parts(path)
        name = ".".join(parts)
        with self._recording():
            ftype = _as_type(field_type, name)
            parent_id, siblings = self._parent_struct(parts, name)
            for sibling in siblings:
                live = self._s.updates.get(sibling.field_id, sibling)
                if sibling.field_id not in self._s.deletes and self._same_name(live.name, parts[-1]):
                    raise ValidationError(f"cannot add column {name!r}: a column with that name exists")
            init, write = self._check_defaults(name, ftype, required, initial_default, write_default)
            template = NestedField(0, parts[-1], ftype, required, doc, init, write)
            check_column_names([template], ".".join(parts[:-1]) + "." if len(parts) > 1 else "")
            fresh, _ = assign_fresh_ids(Schema(template), first_id=self._s.last_id + 1)
            self._s.last_id = fresh.highest_field_id
            self._s.adds.setdefault(parent_id, []).append(fresh.fields[0])
        return self

    def delete_column(self, path: ColumnPath) -> Self:
        """Drop a column (and everything nested in it)."""
        with self._recording():
            found = self._existing(path, "delete")
            if found.parent_kind != "struct":
                raise ValidationError(
                    f"cannot delete {found.name!r}: list elements and map keys/values "
                    "can only be dropped with their list or map"
                )
            fid = found.field.field_id
            nested = nested_ids(found.field.field_type)
            if any(pid in nested or pid == fid for pid in self._s.adds):
                raise ValidationError(f"cannot delete column {found.name!r}: this update adds fields to it")
            if fid in self._s.updates or nested & set(self._s.updates):
                raise ValidationError(f"cannot delete column {found.name!r}: this update also changes it")
            self._s.deletes.add(fid)
        return self

    def rename_column(self, path: ColumnPath, new_name: str) -> Self:
        """Rename a column (its field id, and so its data, stays the same)."""
        with self._recording():
            found = self._existing(path, "rename")
            if found.parent_kind != "struct":
                raise ValidationError(f"cannot rename {found.name!r}: list and map parts have fixed names")
            if not new_name:
                raise ValidationError(f"cannot rename column {found.name!r} to an empty name")
            problem = confusable_problem(new_name)
            if problem is not None:
                raise ValidationError(f"cannot rename column {found.name!r}: {problem}")
            self._update(found, name=new_name)
        return self

    def update_column(
        self,
        path: ColumnPath,
        field_type: IcebergType | str | None = None,
        required: bool | None = None,
        doc: str | None = None,
        write_default: Any = _UNSET,
    ) -> Self:
        """Promote a column's type, change its nullability, doc or write default."""
        with self._recording():
            found = self._existing(path, "update")
            f = self._s.updates.get(found.field.field_id, found.field)
            changes: dict[str, Any] = {}
            if field_type is not None:
                new_type = _as_type(field_type, found.name)
                if found.parent_kind == "map" and found.field.name == "key" and new_type != f.field_type:
                    raise ValidationError(f"cannot change the type of map key {found.name!r}")
                self._check_promotion(found.name, f.field_type, new_type)
                changes["field_type"] = new_type
            if required is not None and required != f.required:
                if required and not self._allow_incompatible:
                    raise ValidationError(
                        f"cannot make column {found.name!r} required: existing rows may hold nulls "
                        "(use allow_incompatible_changes=True to force it)"
                    )
                if found.parent_kind == "map" and found.field.name == "key":
                    raise ValidationError(f"map key {found.name!r} is always required")
                changes["required"] = required
            if doc is not None:
                changes["doc"] = doc
            if write_default is not _UNSET:
                if found.parent_kind != "struct":
                    raise ValidationError(f"{found.name!r} is a list or map part: it has no default value")
                the_type = changes.get("field_type", f.field_type)
                changes["write_default"] = self._check_default(found.name, the_type, write_default, "write")
            if changes:
                self._update(found, **changes)
        return self

    def make_column_optional(self, path: ColumnPath) -> Self:
        """Allow nulls in a required column."""
        return self.update_column(path, required=False)

    def require_column(self, path: ColumnPath) -> Self:
        """Forbid nulls in an optional column (incompatible: needs allow_incompatible_changes)."""
        return self.update_column(path, required=True)

    def update_column_doc(self, path: ColumnPath, doc: str) -> Self:
        """Change a column's documentation string."""
        return self.update_column(path, doc=doc)

    def move_first(self, path: ColumnPath) -> Self:
        """Move a column to the start of its struct."""
        with self._recording():
            found = self._movable(path)
            self._s.moves.setdefault(found.parent_id, []).append(Move("first", found.field.field_id))
        return self

    def move_before(self, path: ColumnPath, before: ColumnPath) -> Self:
        """Move a column just before another column of the same struct."""
        return self._move_relative(path, before, "before")

    def move_after(self, path: ColumnPath, after: ColumnPath) -> Self:
        """Move a column just after another column of the same struct."""
        return self._move_relative(path, after, "after")

    def set_identifier_fields(self, *names: ColumnPath) -> Self:
        """Replace the schema's identifier fields (resolved against the evolved schema)."""
        with self._recording():
            self._s.identifier_names = tuple(".".join(_parts(n)) for n in names)
        return self

    def union_by_name(self, other: Schema) -> Self:
        """Add the columns of ``other`` that are missing (as optional), widen types and nullability."""
        with self._recording():
            self._union_fields(other.fields, ())
        return self

    # ---- results --------------------------------------------------------------------------
    def preview(self) -> Schema:
        """The schema this update produces on the metadata it was created from."""
        result = self._evolve(self._md)
        return result[0] if result else self._base

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Re-apply the recorded changes to the current schema; AddSchema + SetCurrentSchema."""
        moved = current.schema() != self._base or current.last_column_id != self._base_last
        with replayed_on_fresh_metadata(
            moved, "cannot apply the schema update: the table schema changed concurrently"
        ):
            if moved:
                self._check_untouched(current.schema())
            result = self._evolve(current)
        if result is None:
            return []
        schema, last_column_id = result
        return [AddSchema(schema, last_column_id=last_column_id), SetCurrentSchema(LAST_ADDED)]

    # ---- recording helpers ----------------------------------------------------------------
    @contextmanager
    def _recording(self) -> Iterator[None]:
        """Record one change: validate the whole update at once, undo the change if it is invalid."""
        saved = copy.deepcopy(self._s)
        try:
            yield
            self._evolve(self._md)
        except BaseException:
            self._s = saved
            raise

    def _same_name(self, a: str, b: str) -> bool:
        return a == b if self._case_sensitive else a.lower() == b.lower()

    def _children(self, parent_id: int, t: IcebergType) -> list[tuple[NestedField, str]]:
        if isinstance(t, StructType):
            return [(f, "struct") for f in (*t.fields, *self._s.adds.get(parent_id, []))]
        if isinstance(t, ListType):
            return [(t.element_field, "list")]
        if isinstance(t, MapType):
            return [(t.key_field, "map"), (t.value_field, "map")]
        return []

    def _lookup(self, parts: tuple[str, ...]) -> _Found | None:
        """Find a column among the base schema's and the added columns (new names first, then old)."""
        parent_id: int = TABLE_ROOT
        parent_type: IcebergType = self._base.as_struct
        found: _Found | None = None
        for i, part in enumerate(parts):
            if found is not None:
                parent_id, parent_type = found.field.field_id, found.field.field_type
            children = self._children(parent_id, parent_type)
            matches = [
                (f, kind)
                for f, kind in children
                if self._same_name(self._s.updates.get(f.field_id, f).name, part)
            ]
            matches = matches or [(f, kind) for f, kind in children if self._same_name(f.name, part)]
            if not matches:
                return None
            live = [m for m in matches if m[0].field_id not in self._s.deletes]
            f, kind = (live or matches)[-1]
            found = _Found(f, parent_id, kind, ".".join(parts[: i + 1]))
        return found

    def _find(self, path: ColumnPath) -> _Found | None:
        found = self._lookup(_parts(path))
        if found is None and isinstance(path, str) and "." in path:
            found = self._lookup((path,))  # a top-level name that itself contains dots
        return found

    def _existing(self, path: ColumnPath, verb: str) -> _Found:
        found = self._find(path)
        name = path if isinstance(path, str) else ".".join(path)
        if found is None:
            raise ValidationError(
                f"cannot {verb} column {name!r}: no such column in schema {self._base.schema_id}"
            )
        if found.field.field_id > self._base_last:
            raise ValidationError(
                f"cannot {verb} column {name!r}: it is added by this update "
                "(give its final form in add_column)"
            )
        if found.field.field_id in self._s.deletes:
            raise ValidationError(f"cannot {verb} column {name!r}: it is deleted by this update")
        return found

    def _parent_struct(self, parts: tuple[str, ...], name: str) -> tuple[int, list[NestedField]]:
        if len(parts) == 1:
            return TABLE_ROOT, [f for f, _ in self._children(TABLE_ROOT, self._base.as_struct)]
        parent = self._lookup(parts[:-1])
        if parent is None:
            raise ValidationError(f"cannot add column {name!r}: parent {'.'.join(parts[:-1])!r} not found")
        if parent.field.field_id in self._s.deletes:
            raise ValidationError(f"cannot add column {name!r}: its parent is deleted by this update")
        owner_id, t = parent.field.field_id, parent.field.field_type
        if isinstance(t, ListType):
            owner_id, t = t.element_id, t.element_type
        elif isinstance(t, MapType):
            owner_id, t = t.value_id, t.value_type
        if not isinstance(t, StructType):
            raise ValidationError(f"cannot add column {name!r}: parent {parent.name!r} is {t}, not a struct")
        return owner_id, [f for f, _ in self._children(owner_id, t)]

    def _update(self, found: _Found, **changes: Any) -> None:
        fid = found.field.field_id
        self._s.updates[fid] = replace(self._s.updates.get(fid, found.field), **changes)

    def _movable(self, path: ColumnPath) -> _Found:
        found = self._find(path)
        name = path if isinstance(path, str) else ".".join(path)
        if found is None:
            raise ValidationError(f"cannot move column {name!r}: no such column")
        if found.field.field_id in self._s.deletes:
            raise ValidationError(f"cannot move column {name!r}: it is deleted by this update")
        if found.parent_kind != "struct":
            raise ValidationError(f"cannot move {name!r}: only struct fields can be reordered")
        return found

    def _move_relative(self, path: ColumnPath, ref: ColumnPath, kind: str) -> Self:
        with self._recording():
            found, other = self._movable(path), self._movable(ref)
            if found.field.field_id == other.field.field_id:
                raise ValidationError(f"cannot move column {found.name!r} {kind} itself")
            if found.parent_id != other.parent_id:
                raise ValidationError(
                    f"cannot move column {found.name!r} {kind} {other.name!r}: they are in different structs"
                )
            move = Move(kind, found.field.field_id, other.field.field_id)
            self._s.moves.setdefault(found.parent_id, []).append(move)
        return self

    def _check_promotion(self, name: str, old: IcebergType, new: IcebergType) -> None:
        if not isinstance(new, PrimitiveType) or not isinstance(old, PrimitiveType):
            if old != new:
                raise ValidationError(
                    f"cannot change column {name!r} from {old} to {new}: only primitive types can be promoted"
                )
            return
        if not promotion_allowed(old, new, self._md.format_version):
            raise ValidationError(
                f"cannot change column {name!r} from {old} to {new}: not an allowed type promotion in "
                f"format version {self._md.format_version}"
            )

    def _check_defaults(
        self, name: str, t: IcebergType, required: bool, initial: Any, write: Any
    ) -> tuple[Any, Any]:
        initial = self._check_default(name, t, initial, "initial")
        write = initial if write is None else self._check_default(name, t, write, "write")
        if required and initial is None and not self._allow_incompatible:
            if self._md.format_version < 3:
                raise ValidationError(
                    f"cannot add required column {name!r}: existing rows have no value for it and format "
                    f"version {self._md.format_version} has no default values (add it as optional, or use "
                    "allow_incompatible_changes=True)"
                )
            raise ValidationError(
                f"cannot add required column {name!r} without an initial_default: existing rows need a "
                "value (or use allow_incompatible_changes=True)"
            )
        return initial, write

    def _check_default(self, name: str, t: IcebergType, value: Any, which: str) -> Any:
        if value is None:
            return None
        if self._md.format_version < 3:
            raise ValidationError(
                f"column {name!r}: default values need format version 3 (table is format version "
                f"{self._md.format_version})"
            )
        if isinstance(t, UnknownType | ListType | MapType):
            raise ValidationError(f"column {name!r} of type {t} can only default to null")
        if isinstance(t, StructType):
            if value != {}:
                raise ValidationError(
                    f"column {name!r}: a struct default must be null or {{}} (field defaults live on the "
                    "struct's fields)"
                )
            return {}
        try:
            return parse_literal(t, value)
        except ValidationError as exc:
            raise ValidationError(f"bad {which}_default for column {name!r}: {exc}") from None

    def _union_fields(self, fields: tuple[NestedField, ...], prefix: tuple[str, ...]) -> None:
        for f in fields:
            path = (*prefix, f.name)
            found = self._lookup(path)
            if found is None or found.field.field_id in self._s.deletes:
                self.add_column(path, f.field_type, doc=f.doc)
                continue
            self._union_field(found, f, path)

    def _union_field(self, found: _Found, new: NestedField, path: tuple[str, ...]) -> None:
        old = self._s.updates.get(found.field.field_id, found.field)
        name = ".".join(path)
        ot, nt = old.field_type, new.field_type
        if isinstance(ot, PrimitiveType) and isinstance(nt, PrimitiveType):
            if ot != nt and not promotion_allowed(nt, ot, self._md.format_version):
                if not promotion_allowed(ot, nt, self._md.format_version):
                    raise ValidationError(f"cannot merge column {name!r}: {ot} and {nt} are incompatible")
                self.update_column(path, field_type=nt)
        elif isinstance(ot, StructType) and isinstance(nt, StructType):
            self._union_fields(nt.fields, path)
        elif isinstance(ot, ListType) and isinstance(nt, ListType):
            self._union_part(path, "element", nt.element_field)
        elif isinstance(ot, MapType) and isinstance(nt, MapType):
            self._union_part(path, "key", nt.key_field)
            self._union_part(path, "value", nt.value_field)
        elif ot != nt:
            raise ValidationError(f"cannot merge column {name!r}: {ot} and {nt} are incompatible")
        if found.parent_kind == "map" and found.field.name == "key":
            return
        if new.optional and old.required:
            self.update_column(path, required=False)
        if new.doc is not None and new.doc != old.doc and found.parent_kind == "struct":
            self.update_column(path, doc=new.doc)

    def _union_part(self, path: tuple[str, ...], part: str, new: NestedField) -> None:
        found = self._lookup((*path, part))
        if found is None:  # pragma: no cover - lists and maps always have their parts
            raise ValidationError(f"column {'.'.join(path)!r} has no {part}")
        self._union_field(found, new, (*path, part))

    # ---- evolving -------------------------------------------------------------------------
    def _check_untouched(self, schema: Schema) -> None:
        """Every column this update touches must be as it was when the update was recorded."""
        s = self._s
        touched = set(s.deletes) | set(s.updates)
        touched |= {pid for pid in s.adds if 0 < pid <= self._base_last}
        for moves in s.moves.values():
            touched |= {i for m in moves for i in (m.field_id, m.ref_id) if i is not None}
        for fid in sorted(i for i in touched if 0 < i <= self._base_last):
            name = self._base.find_column_name(fid)
            was = self._base.find_field(fid)
            now_name = schema.find_column_name(fid)
            if now_name is None:
                raise CommitConflict(f"column {name!r} was deleted by a concurrent commit", retryable=False)
            now = schema.find_field(fid)
            if now_name != name:
                raise CommitConflict(
                    f"column {name!r} was renamed to {now_name!r} by a concurrent commit", retryable=False
                )
            if now.required != was.required or not same_shape(now.field_type, was.field_type):
                raise CommitConflict(
                    f"column {name!r} was changed by a concurrent commit (now {now}, was {was})",
                    retryable=False,
                )

    def _evolve(self, md: TableMetadata) -> tuple[Schema, int] | None:
        """The new schema and last column id on ``md``, or None when nothing changes."""
        current = md.schema()
        offset = md.last_column_id - self._base_last
        builder = SchemaRebuilder(self._s, self._base_last, offset)
        fields = builder.struct(current.fields, TABLE_ROOT)
        last_id = max(md.last_column_id, self._s.last_id + offset)
        if last_id > MAX_FIELD_ID:
            raise ValidationError(f"cannot assign field id {last_id}: ids above {MAX_FIELD_ID} are reserved")
        draft = Schema(*fields, schema_id=current.schema_id)
        identifiers = self._identifiers(current, draft)
        schema = Schema(*fields, schema_id=current.schema_id, identifier_field_ids=identifiers)
        check_format_version(schema, md.format_version)
        check_column_sources(md, current, schema, builder.promoted)
        if schema == current:
            return None
        return schema, last_id

    def _identifiers(self, current: Schema, schema: Schema) -> tuple[int, ...]:
        names = self._s.identifier_names
        if names is None:
            for fid in current.identifier_field_ids:
                if fid not in schema.field_ids():
                    raise ValidationError(
                        f"cannot delete identifier field {current.find_column_name(fid)!r}: call "
                        "set_identifier_fields(...) to change the identifier fields first"
                    )
            ids = list(current.identifier_field_ids)
        else:
            ids = []
            for name in names:
                try:
                    ids.append(schema.find_field(name, self._case_sensitive).field_id)
                except ValidationError:
                    raise ValidationError(
                        f"cannot use {name!r} as an identifier field: no such column in the new schema"
                    ) from None
        for fid in ids:
            check_identifier_field(schema, fid)
        return tuple(dict.fromkeys(ids))


def _parts(path: ColumnPath) -> tuple[str, ...]:
    parts = tuple(path.split(".")) if isinstance(path, str) else tuple(path)
    if not parts or any(not p for p in parts):
        raise ValidationError(f"invalid column path {path!r}")
    return parts


def _as_type(t: IcebergType | str, name: str) -> IcebergType:
    if isinstance(t, str):
        return primitive_from_string(t)
    if not isinstance(t, IcebergType):
        raise ValidationError(f"column {name!r}: {t!r} is not an Iceberg type")
    return t
