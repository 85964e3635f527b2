"""Partition specs: how a table derives partition values from its columns.

CONTRACT: JSON parse/serialise lives in ``icefloe.spec.json_codec`` (spec helper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError
from icefloe.spec.types import NestedField, StructType

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema
    from icefloe.spec.transforms import Transform

PARTITION_FIELD_ID_START = 1000


@dataclass(frozen=True, slots=True)
class PartitionField:
    """One partition field: a transform of a source column, with its own field id and name."""

    source_id: int
    field_id: int
    transform: Transform
    name: str
    source_ids: tuple[int, ...] | None = None  # v3 multi-argument transforms


@dataclass(frozen=True)
class PartitionSpec:
    """An ordered list of partition fields with a spec id. No fields = unpartitioned."""

    fields: tuple[PartitionField, ...] = field(default_factory=tuple)
    spec_id: int = 0

    def __init__(self, *fields: PartitionField, spec_id: int = 0) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "spec_id", spec_id)

    @property
    def is_unpartitioned(self) -> bool:
        """True when the spec has no fields, or only void transforms."""
        return all(str(f.transform) == "void" for f in self.fields)

    @cached_property
    def last_assigned_field_id(self) -> int:
        """Highest partition field id in this spec (999 when there is none)."""
        return max((f.field_id for f in self.fields), default=PARTITION_FIELD_ID_START - 1)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct type of this spec's partition tuples (all fields optional)."""
        out = []
        for f in self.fields:
            source_type = schema.find_type(f.source_id)
            out.append(NestedField(f.field_id, f.name, f.transform.result_type(source_type), False))
        return StructType(*out)

    def compatible_with(self, other: PartitionSpec) -> bool:
        """Same fields (source, transform, name, field id), ignoring the spec id."""
        return self.fields == other.fields

    def check_against(self, schema: Schema) -> None:
        """Raise ValidationError unless every field's source column exists and suits its transform."""
        from icefloe.spec.transforms import check_transform_source

        names = [f.name for f in self.fields]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValidationError(f"partition field names must be unique, got duplicates {duplicates}")
        for f in self.fields:
            for source_id in f.source_ids or (f.source_id,):
                check_transform_source(schema, source_id, f.transform, f"partition field {f.name!r}")

    def with_source_ids(self, id_map: dict[int, int], spec_id: int, renumber: bool = False) -> PartitionSpec:
        """A copy with source ids mapped through ``id_map`` (field ids from 1000 when ``renumber``)."""
        fields = []
        for i, f in enumerate(self.fields):
            what = f"partition field {f.name!r}"
            source_ids = (
                None if f.source_ids is None else tuple(_mapped(id_map, s, what) for s in f.source_ids)
            )
            field_id = PARTITION_FIELD_ID_START + i if renumber else f.field_id
            fields.append(
                PartitionField(_mapped(id_map, f.source_id, what), field_id, f.transform, f.name, source_ids)
            )
        return PartitionSpec(*fields, spec_id=spec_id)


def _mapped(id_map: dict[int, int], source_id: int, what: str) -> int:
    if source_id not in id_map:
        raise ValidationError(f"{what} references column id {source_id}, which is not in the schema")
    return id_map[source_id]


UNPARTITIONED = PartitionSpec(spec_id=0)
