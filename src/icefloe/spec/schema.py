"""Table schemas: a struct of id-carrying fields plus a schema id and identifier fields."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property

from icefloe.errors import ValidationError
from icefloe.spec.types import IcebergType, ListType, MapType, NestedField, PrimitiveType, StructType

# Reserved metadata column ids (format/spec.md "Reserved Field IDs").
FILE_PATH_COLUMN_ID = 2147483646  # _file
POS_COLUMN_ID = 2147483645  # _pos
DELETED_COLUMN_ID = 2147483644  # _deleted
SPEC_ID_COLUMN_ID = 2147483643  # _spec_id
PARTITION_COLUMN_ID = 2147483642  # _partition
DELETE_FILE_PATH_ID = 2147483546  # file_path in position delete files
DELETE_FILE_POS_ID = 2147483545  # pos in position delete files
ROW_ID_COLUMN_ID = 2147483540  # _row_id
LAST_UPDATED_SEQ_COLUMN_ID = 2147483539  # _last_updated_sequence_number


@dataclass(frozen=True)
class Schema:
    """An Iceberg schema. Columns are identified by field id everywhere; names are for people."""

    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = field(default_factory=tuple)

    def __init__(
        self,
        *fields: NestedField,
        schema_id: int = 0,
        identifier_field_ids: tuple[int, ...] | list[int] = (),
    ) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "schema_id", schema_id)
        object.__setattr__(self, "identifier_field_ids", tuple(identifier_field_ids))

    @cached_property
    def as_struct(self) -> StructType:
        """The schema's columns as a struct type."""
        return StructType(*self.fields)

    @cached_property
    def _by_id(self) -> dict[int, NestedField]:
        return {f.field_id: f for f, _ in _walk(self.fields, ())}

    @cached_property
    def _name_by_id(self) -> dict[int, str]:
        return {f.field_id: ".".join(path) for f, path in _walk(self.fields, ())}

    @cached_property
    def _id_by_name(self) -> dict[str, int]:
        return {name: fid for fid, name in self._name_by_id.items()}

    @cached_property
    def _id_by_lower_name(self) -> dict[str, int]:
        return {name.lower(): fid for fid, name in self._name_by_id.items()}

    def find_field(self, name_or_id: str | int, case_sensitive: bool = True) -> NestedField:
        """Field by id or by dotted name (``"a.b"``); list elements are ``a.element``, map parts ``m.key``."""
        if isinstance(name_or_id, int):
            try:
                return self._by_id[name_or_id]
            except KeyError:
                raise ValidationError(f"no field with id {name_or_id} in schema {self.schema_id}") from None
        index = self._id_by_name if case_sensitive else self._id_by_lower_name
        key = name_or_id if case_sensitive else name_or_id.lower()
        if key not in index:
            raise ValidationError(f"no column named {name_or_id!r} in schema {self.schema_id}")
        return self._by_id[index[key]]

    def find_type(self, name_or_id: str | int, case_sensitive: bool = True) -> IcebergType:
        """Type of a field found by id or dotted name."""
        return self.find_field(name_or_id, case_sensitive).field_type

    def find_column_name(self, field_id: int) -> str | None:
        """Dotted full name of a field id, or None."""
        return self._name_by_id.get(field_id)

    def field_ids(self) -> set[int]:
        """Every field id in the schema, nested ones included."""
        return set(self._by_id)

    @cached_property
    def highest_field_id(self) -> int:
        """The largest field id used anywhere in the schema (0 when empty)."""
        return max(self._by_id, default=0)

    def column_names(self) -> list[str]:
        """Top-level column names in order."""
        return [f.name for f in self.fields]

    def select(self, names: list[str] | tuple[str, ...], case_sensitive: bool = True) -> Schema:
        """A schema with only the named columns (dotted names select nested fields), in schema order."""
        wanted = {self.find_field(n, case_sensitive).field_id for n in names}
        return prune_columns(self, wanted)

    def __str__(self) -> str:
        return "table {\n" + "\n".join(f"  {f}" for f in self.fields) + "\n}"


def _walk(
    fields: tuple[NestedField, ...], path: tuple[str, ...]
) -> Iterator[tuple[NestedField, tuple[str, ...]]]:
    for f in fields:
        here = (*path, f.name)
        yield f, here
        t = f.field_type
        if isinstance(t, StructType | ListType | MapType):
            yield from _walk(t.fields, here)


def nested_field_ids(schema: Schema, top_level_ids: Iterable[int]) -> set[int]:
    """The ids of these top-level columns and of every field nested in them."""
    wanted = set(top_level_ids)
    return {f.field_id for top in schema.fields if top.field_id in wanted for f, _ in _walk((top,), ())}


def field_path(schema: Schema, field_id: int) -> list[NestedField] | None:
    """The fields from the top-level column down to ``field_id`` (list elements / map parts included)."""

    def find(fields: tuple[NestedField, ...]) -> list[NestedField] | None:
        for f in fields:
            if f.field_id == field_id:
                return [f]
            t = f.field_type
            if isinstance(t, StructType | ListType | MapType):
                sub = find(t.fields)
                if sub is not None:
                    return [f, *sub]
        return None

    return find(schema.fields)


def prune_columns(schema: Schema, selected_ids: set[int]) -> Schema:
    """Keep the fields whose id is selected (a selected struct keeps all its children)."""

    def prune_type(t: IcebergType, keep_all: bool) -> IcebergType | None:
        if isinstance(t, StructType):
            kept = [nf for f in t.fields if (nf := prune_field(f, keep_all)) is not None]
            return StructType(*kept) if kept or keep_all else None
        if isinstance(t, ListType):
            elem = prune_type(t.element_type, keep_all or t.element_id in selected_ids)
            if elem is None:
                return None
            return ListType(t.element_id, elem, t.element_required)
        if isinstance(t, MapType):
            value = prune_type(t.value_type, keep_all or t.value_id in selected_ids)
            key_selected = t.key_id in selected_ids
            if value is None and not key_selected:
                return None
            return MapType(t.key_id, t.key_type, t.value_id, value or t.value_type, t.value_required)
        return t if keep_all else None

    def prune_field(f: NestedField, keep_all: bool) -> NestedField | None:
        selected = keep_all or f.field_id in selected_ids
        if not f.field_type.is_nested:
            return f if selected else None
        sub = prune_type(f.field_type, selected)
        if sub is None:
            return None
        return NestedField(f.field_id, f.name, sub, f.required, f.doc, f.initial_default, f.write_default)

    kept = [nf for f in schema.fields if (nf := prune_field(f, False)) is not None]
    return Schema(*kept, schema_id=schema.schema_id, identifier_field_ids=schema.identifier_field_ids)


def assign_fresh_ids(schema: Schema, first_id: int = 1) -> tuple[Schema, dict[int, int]]:
    """Renumber every field from ``first_id`` (siblings first, then their children, as Iceberg Java).

    Returns the new schema (schema id 0, identifier fields remapped) and the old-to-new id map.
    """
    next_id = first_id
    mapping: dict[int, int] = {}

    def take(old: int) -> int:
        nonlocal next_id
        mapping[old] = next_id
        next_id += 1
        return mapping[old]

    def fresh_fields(fields: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
        ids = [take(f.field_id) for f in fields]
        return tuple(
            replace(f, field_id=new_id, field_type=fresh_type(f.field_type))
            for f, new_id in zip(fields, ids, strict=True)
        )

    def fresh_type(t: IcebergType) -> IcebergType:
        if isinstance(t, StructType):
            return StructType(*fresh_fields(t.fields))
        if isinstance(t, ListType):
            element_id = take(t.element_id)
            return ListType(element_id, fresh_type(t.element_type), t.element_required)
        if isinstance(t, MapType):
            key_id, value_id = take(t.key_id), take(t.value_id)
            return MapType(
                key_id, fresh_type(t.key_type), value_id, fresh_type(t.value_type), t.value_required
            )
        return t

    fields = fresh_fields(schema.fields)
    missing = [i for i in schema.identifier_field_ids if i not in mapping]
    if missing:
        raise ValidationError(f"identifier field ids {missing} are not columns of the schema")
    identifiers = [mapping[i] for i in schema.identifier_field_ids]
    return Schema(*fields, schema_id=0, identifier_field_ids=identifiers), mapping


def check_format_version(schema: Schema, format_version: int) -> None:
    """Raise ValidationError when the schema uses types or defaults newer than the format version."""
    for f, path in _walk(schema.fields, ()):
        t = f.field_type
        name = ".".join(path)
        if isinstance(t, PrimitiveType) and t.min_format_version > format_version:
            raise ValidationError(
                f"column {name!r} has type {t}, which needs format-version {t.min_format_version} "
                f"(table is format-version {format_version})"
            )
        if format_version < 3 and (f.initial_default is not None or f.write_default is not None):
            raise ValidationError(
                f"column {name!r} has a default value, which needs format-version 3 "
                f"(table is format-version {format_version})"
            )
