"""Pure schema rebuilding for schema evolution: recorded changes in, new schema fields out.

``txn.schema_evolution.UpdateSchema`` records changes into a ``SchemaChanges``; ``SchemaRebuilder``
replays them on any schema (the one they were recorded on, or a newer one on commit retry) and the
check functions enforce the spec's rules on the result. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from icefloe.errors import ValidationError
from icefloe.spec.schema import Schema, field_path
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.transforms import BucketTransform, IdentityTransform
from icefloe.spec.types import (
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    NestedField,
    PrimitiveType,
    StructType,
)

TABLE_ROOT = -1
"""Parent id of top-level columns."""


@dataclass(frozen=True)
class Move:
    """Reorder one struct field: to the front, or before/after a sibling (``ref_id``)."""

    kind: str  # "first" | "before" | "after"
    field_id: int
    ref_id: int | None = None


@dataclass
class SchemaChanges:
    """Recorded changes, keyed by field id; ids above the recording base's last-column-id are new."""

    deletes: set[int]
    updates: dict[int, NestedField]
    adds: dict[int, list[NestedField]]
    moves: dict[int, list[Move]]
    identifier_names: tuple[str, ...] | None
    last_id: int


class SchemaRebuilder:
    """Rebuild a schema's fields with the recorded changes (added ids shifted by ``offset``)."""

    def __init__(self, state: SchemaChanges, base_last: int, offset: int) -> None:
        def shift(fid: int) -> int:
            return fid + offset if fid > base_last else fid

        self.shift = shift
        self.deletes = state.deletes
        self.updates = state.updates
        self.adds = {shift(p): [remap_field(f, shift) for f in fs] for p, fs in state.adds.items()}
        self.moves = {
            shift(p): [
                Move(m.kind, shift(m.field_id), None if m.ref_id is None else shift(m.ref_id)) for m in ms
            ]
            for p, ms in state.moves.items()
        }
        self.promoted: dict[int, tuple[IcebergType, IcebergType]] = {}

    def struct(self, fields: tuple[NestedField, ...], struct_id: int) -> tuple[NestedField, ...]:
        """The fields of struct ``struct_id`` after deletes, updates, adds and moves."""
        out = [self.field(f) for f in fields if f.field_id not in self.deletes]
        out.extend(self.field(f) for f in self.adds.get(struct_id, []))
        for move in self.moves.get(struct_id, []):
            out = apply_move(out, move)
        seen: set[str] = set()
        for f in out:
            if f.name in seen:
                raise ValidationError(f"the update leaves two columns named {f.name!r} in the same struct")
            seen.add(f.name)
        return tuple(out)

    def field(self, f: NestedField) -> NestedField:
        """One field with its recorded update applied (nested types rebuilt)."""
        header = self.updates.get(f.field_id, f)
        t = f.field_type
        if isinstance(t, PrimitiveType):
            if header.field_type != t:
                self.promoted[f.field_id] = (t, header.field_type)
            t = header.field_type
        else:
            t = self.nested(t, f.field_id)
        return NestedField(
            f.field_id, header.name, t, header.required, header.doc, f.initial_default, header.write_default
        )

    def nested(self, t: IcebergType, owner_id: int) -> IcebergType:
        """A nested type rebuilt; ``owner_id`` is the id of the field (or element/value) holding it."""
        if isinstance(t, StructType):
            return StructType(*self.struct(t.fields, owner_id))
        if isinstance(t, ListType):
            element = self.field(t.element_field)
            return ListType(t.element_id, element.field_type, element.required)
        if isinstance(t, MapType):
            value = self.field(t.value_field)
            return MapType(
                t.key_id, self.field(t.key_field).field_type, t.value_id, value.field_type, value.required
            )
        return t


def apply_move(fields: list[NestedField], move: Move) -> list[NestedField]:
    """The fields reordered by one move."""
    ids = [f.field_id for f in fields]
    if move.field_id not in ids or (move.ref_id is not None and move.ref_id not in ids):
        raise ValidationError("cannot reorder columns: a moved column is no longer in its struct")
    moving = fields[ids.index(move.field_id)]
    rest = [f for f in fields if f.field_id != move.field_id]
    if move.kind == "first":
        return [moving, *rest]
    at = [f.field_id for f in rest].index(move.ref_id or 0) + (1 if move.kind == "after" else 0)
    return [*rest[:at], moving, *rest[at:]]


def check_column_sources(
    md: TableMetadata, current: Schema, schema: Schema, promoted: dict[int, tuple[IcebergType, IcebergType]]
) -> None:
    """Dropped columns may not feed the current spec or sort order; promotions must keep partition values."""
    gone = current.field_ids() - schema.field_ids()
    if gone:
        for pf in md.spec().fields:
            for source_id in pf.source_ids or (pf.source_id,):
                if source_id in gone:
                    raise ValidationError(
                        f"cannot delete column {current.find_column_name(source_id)!r}: it is the source of "
                        f"partition field {pf.name!r} of the current partition spec {md.spec().spec_id} "
                        "(remove the partition field first)"
                    )
        for sf in md.sort_order().fields:
            for source_id in sf.source_ids or (sf.source_id,):
                if source_id in gone:
                    raise ValidationError(
                        f"cannot delete column {current.find_column_name(source_id)!r}: it is a source of "
                        f"the table's sort order {md.sort_order().order_id} (change the sort order first)"
                    )
    for fid, (old, new) in promoted.items():
        if not isinstance(old, DateType):
            continue
        for spec in md.partition_specs:
            for pf in spec.fields:
                if fid in (pf.source_ids or (pf.source_id,)) and isinstance(
                    pf.transform, IdentityTransform | BucketTransform
                ):
                    raise ValidationError(
                        f"cannot change column {current.find_column_name(fid)!r} from {old} to {new}: "
                        f"partition field {pf.name!r} ({pf.transform}) of spec {spec.spec_id} would "
                        "produce different values"
                    )


def check_identifier_field(schema: Schema, fid: int) -> None:
    """Identifier fields: required primitives, not float/double, not in lists, maps or optional structs."""
    name = schema.find_column_name(fid)
    path = field_path(schema, fid)
    if path is None:  # pragma: no cover - ids come from the schema
        raise ValidationError(f"identifier field id {fid} is not in the schema")
    *parents, f = path
    for p in parents:
        if not isinstance(p.field_type, StructType):
            raise ValidationError(f"identifier field {name!r} cannot be nested in a list or map")
        if not p.required:
            raise ValidationError(f"identifier field {name!r} cannot be nested in optional struct {p.name!r}")
    if not isinstance(f.field_type, PrimitiveType):
        raise ValidationError(f"identifier field {name!r} must be a primitive column, not {f.field_type}")
    if isinstance(f.field_type, FloatType | DoubleType):
        raise ValidationError(f"identifier field {name!r} cannot be {f.field_type}")
    if not f.required:
        raise ValidationError(f"identifier field {name!r} must be required")


def nested_ids(t: IcebergType) -> set[int]:
    """Every field id nested inside a type."""
    out: set[int] = set()
    if isinstance(t, StructType | ListType | MapType):
        for f in t.fields:
            out.add(f.field_id)
            out |= nested_ids(f.field_type)
    return out


def same_shape(a: IcebergType, b: IcebergType) -> bool:
    """Equal primitives, or nested types of the same kind."""
    if isinstance(a, PrimitiveType) or isinstance(b, PrimitiveType):
        return a == b
    return type(a) is type(b)


def remap_field(f: NestedField, fn: Callable[[int], int]) -> NestedField:
    """A field with its id and all nested ids mapped through ``fn``."""
    return replace(f, field_id=fn(f.field_id), field_type=remap_type(f.field_type, fn))


def remap_type(t: IcebergType, fn: Callable[[int], int]) -> IcebergType:
    """A type with all nested ids mapped through ``fn``."""
    if isinstance(t, StructType):
        return StructType(*(remap_field(f, fn) for f in t.fields))
    if isinstance(t, ListType):
        return ListType(fn(t.element_id), remap_type(t.element_type, fn), t.element_required)
    if isinstance(t, MapType):
        return MapType(
            fn(t.key_id),
            remap_type(t.key_type, fn),
            fn(t.value_id),
            remap_type(t.value_type, fn),
            t.value_required,
        )
    return t
