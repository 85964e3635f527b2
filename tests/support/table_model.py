"""A plain Python model of an Iceberg table's rows, schema and filters, for model-based tests.

The model holds what a read must return, nothing about files: rows keyed by ``id``, each row a
map from field id to value, and the ordered columns of the current schema. Schema changes act on
the model the way the spec says a read sees them ("Schema Evolution" in format/spec.md): a
dropped column vanishes, a renamed one keeps its values, an added one reads its initial default
(or null), a widened one reads the same numbers. Filters are small trees that render as icefloe's
filter text and evaluate in Python with SQL's three-valued logic (a comparison with null is
unknown, and a row is kept only when the whole filter is true).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import pyarrow as pa

KINDS: dict[str, pa.DataType] = {
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "decimal(9,2)": pa.decimal128(9, 2),
    "decimal(12,2)": pa.decimal128(12, 2),
    "string": pa.string(),
}
"""The Iceberg types the model uses, by their Iceberg name, and their Arrow type."""

WIDER = {"int": "long", "float": "double", "decimal(9,2)": "decimal(12,2)"}
"""The type promotions of format/spec.md that the model exercises."""

STRINGS = ("a", "ab", "b", "c", "")


@dataclass(frozen=True)
class Column:
    field_id: int
    name: str
    kind: str  # a key of KINDS
    required: bool = False
    default: Any = None  # the initial default: what rows written before the column read


@dataclass
class TableModel:
    """What a read of the table must return: the current columns and the rows by ``id``."""

    columns: list[Column]
    rows: dict[int, dict[int, Any]] = field(default_factory=dict)
    next_id: int = 0

    def column(self, field_id: int) -> Column | None:
        return next((c for c in self.columns if c.field_id == field_id), None)

    def named(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, KINDS[c.kind], nullable=not c.required) for c in self.columns])

    def arrow_rows(self, rows: dict[int, dict[int, Any]]) -> pa.Table:
        """``rows`` (id -> field id -> value) as Arrow with the current column names and types."""
        data = {c.name: [row.get(c.field_id) for row in rows.values()] for c in self.columns}
        return pa.table(data, schema=self.arrow_schema())

    def visible(self, rows: dict[int, dict[int, Any]] | None = None) -> list[dict[str, Any]]:
        """The rows as a read returns them (current names, dropped columns gone), ordered by id."""
        chosen = self.rows if rows is None else rows
        return [{c.name: chosen[i].get(c.field_id) for c in self.columns} for i in sorted(chosen)]

    # ---- schema evolution, as a read sees it -------------------------------------------------
    def add_column(self, column: Column) -> None:
        self.columns.append(column)
        for row in self.rows.values():
            row[column.field_id] = column.default

    def drop_column(self, name: str) -> None:
        dropped = self.named(name)
        self.columns.remove(dropped)
        for row in self.rows.values():
            row.pop(dropped.field_id, None)

    def rename_column(self, name: str, new_name: str) -> None:
        self._replace(name, name=new_name)

    def widen_column(self, name: str) -> None:
        self._replace(name, kind=WIDER[self.named(name).kind])

    def _replace(self, current_name: str, **changes: Any) -> None:
        index = self.columns.index(self.named(current_name))
        self.columns[index] = replace(self.columns[index], **changes)


# ---- filters ----------------------------------------------------------------------------------


def literal_text(value: Any) -> str:
    """A literal in icefloe's filter syntax (numbers with a fraction parse as exact decimals)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return str(Decimal(value))
    return str(value)


@dataclass(frozen=True)
class Compare:
    name: str
    op: str  # = != < <= > >=
    value: Any

    def text(self) -> str:
        return f"{self.name} {self.op} {literal_text(self.value)}"

    def holds(self, row: dict[str, Any]) -> bool | None:
        actual = row[self.name]
        if actual is None:
            return None
        return {
            "=": actual == self.value,
            "!=": actual != self.value,
            "<": actual < self.value,
            "<=": actual <= self.value,
            ">": actual > self.value,
            ">=": actual >= self.value,
        }[self.op]


@dataclass(frozen=True)
class InList:
    name: str
    values: tuple[Any, ...]

    def text(self) -> str:
        return f"{self.name} in ({', '.join(literal_text(v) for v in self.values)})"

    def holds(self, row: dict[str, Any]) -> bool | None:
        actual = row[self.name]
        return None if actual is None else actual in self.values


@dataclass(frozen=True)
class IsNull:
    name: str

    def text(self) -> str:
        return f"{self.name} is null"

    def holds(self, row: dict[str, Any]) -> bool | None:
        return row[self.name] is None


@dataclass(frozen=True)
class Not:
    child: Filter

    def text(self) -> str:
        return f"not ({self.child.text()})"

    def holds(self, row: dict[str, Any]) -> bool | None:
        inner = self.child.holds(row)
        return None if inner is None else not inner


@dataclass(frozen=True)
class Both:
    """``left and right`` (``any_of=False``) or ``left or right`` (``any_of=True``)."""

    left: Filter
    right: Filter
    any_of: bool

    def text(self) -> str:
        return f"({self.left.text()}) {'or' if self.any_of else 'and'} ({self.right.text()})"

    def holds(self, row: dict[str, Any]) -> bool | None:
        a, b = self.left.holds(row), self.right.holds(row)
        if self.any_of:
            return True if a is True or b is True else (None if a is None or b is None else False)
        return False if a is False or b is False else (None if a is None or b is None else True)


Filter = Compare | InList | IsNull | Not | Both


def kept(rows: list[dict[str, Any]], predicate: Filter) -> list[dict[str, Any]]:
    """The rows a read with ``predicate`` returns: those for which it is true (not unknown)."""
    return [row for row in rows if predicate.holds(row) is True]
