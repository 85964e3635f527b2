"""Isolation levels of row-level operations (``write.<operation>.isolation-level``).

``serializable``: the commit fails when a concurrent commit added data matching the rows the
operation read (its conflict filter), or removed / re-deleted a data file it changes.
``snapshot``: only the second kind of conflict fails; concurrently added data is accepted.
"""

from __future__ import annotations

from enum import Enum

from icefloe.errors import ValidationError
from icefloe.spec.table_metadata import TableMetadata

ROW_LEVEL_OPERATIONS = ("delete", "update", "merge")


class IsolationLevel(Enum):
    """How strictly a row-level commit checks what concurrent commits did."""

    SERIALIZABLE = "serializable"
    SNAPSHOT = "snapshot"


def isolation_level(md: TableMetadata, operation: str) -> IsolationLevel:
    """The table's isolation level for ``delete`` / ``update`` / ``merge`` (default serializable)."""
    if operation not in ROW_LEVEL_OPERATIONS:
        raise ValidationError(
            f"unknown row-level operation {operation!r}; expected one of {ROW_LEVEL_OPERATIONS}"
        )
    key = f"write.{operation}.isolation-level"
    value = md.properties.get(key, IsolationLevel.SERIALIZABLE.value).strip().lower()
    try:
        return IsolationLevel(value)
    except ValueError:
        raise ValidationError(f"{key} must be 'serializable' or 'snapshot', not {value!r}") from None
