"""Partition specs: how a table derives partition values from its columns.

CONTRACT: JSON parse/serialise lives in ``icefloe.spec.json_codec`` (spec helper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

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


UNPARTITIONED = PartitionSpec(spec_id=0)
