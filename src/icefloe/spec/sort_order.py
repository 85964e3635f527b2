"""Sort orders: how writers should order rows within data files."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from icefloe.errors import ValidationError

if TYPE_CHECKING:
    from icefloe.spec.schema import Schema
    from icefloe.spec.transforms import Transform


class SortDirection(Enum):
    """Ascending or descending."""

    ASC = "asc"
    DESC = "desc"


class NullOrder(Enum):
    """Where nulls go."""

    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"


@dataclass(frozen=True, slots=True)
class SortField:
    """One sort key: a transform of a source column, a direction and a null order."""

    source_id: int
    transform: Transform
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder = NullOrder.NULLS_FIRST
    source_ids: tuple[int, ...] | None = None


@dataclass(frozen=True)
class SortOrder:
    """An ordered list of sort fields with an order id; order id 0 is 'unsorted'."""

    fields: tuple[SortField, ...] = field(default_factory=tuple)
    order_id: int = 0

    def __init__(self, *fields: SortField, order_id: int = 0) -> None:
        object.__setattr__(self, "fields", tuple(fields))
        object.__setattr__(self, "order_id", order_id)

    @property
    def is_unsorted(self) -> bool:
        """True for the unsorted order (no fields)."""
        return not self.fields

    def check_against(self, schema: Schema) -> None:
        """Raise ValidationError unless every field's source column exists and suits its transform."""
        from icefloe.spec.transforms import check_transform_source

        for f in self.fields:
            for source_id in f.source_ids or (f.source_id,):
                check_transform_source(schema, source_id, f.transform, "sort field")

    def with_source_ids(self, id_map: dict[int, int], order_id: int) -> SortOrder:
        """A copy with source ids mapped through ``id_map``."""

        def mapped(source_id: int) -> int:
            if source_id not in id_map:
                raise ValidationError(
                    f"sort field references column id {source_id}, which is not in the schema"
                )
            return id_map[source_id]

        fields = [
            SortField(
                mapped(f.source_id),
                f.transform,
                f.direction,
                f.null_order,
                None if f.source_ids is None else tuple(mapped(s) for s in f.source_ids),
            )
            for f in self.fields
        ]
        return SortOrder(*fields, order_id=order_id)


UNSORTED = SortOrder(order_id=0)
