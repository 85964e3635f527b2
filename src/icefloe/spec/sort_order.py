"""Sort orders: how writers should order rows within data files."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


UNSORTED = SortOrder(order_id=0)
