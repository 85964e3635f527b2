"""A ``MergeSpec`` in Spark terms: which clause applies to each joined row, its action, its values.

``merge_into`` joins the target rows (alias ``target``) with the source rows (alias ``source``);
this module turns the engine-neutral clauses into Columns over that joined frame, the same way for
the ``merge()`` builder, ``merge_into``'s keywords and SQL's ``MERGE INTO``:

- ``chooser``: per joined row, the index of the FIRST clause of the row's kind (matched,
  source-only, target-only) whose condition holds (a null condition does not hold); ``KEEP_INDEX``
  for a target row no clause applies to; null for a source row no insert applies to;
- ``stage_columns``: the chooser as ``CLAUSE_COLUMN`` and every clause's raw values, selected
  together with the target's columns into one stage frame;
- on that stage: ``action()`` (``update`` / ``delete`` / ``insert`` / ``keep`` / null) and
  ``values(...)``: per assigned column, the value of the clause that applied, conformed to the
  column's type; a column the applying clause does not assign keeps its old value (update) or gets
  its write default (insert).

Conditions and values are Spark SQL text or Columns over ``target.*`` and ``source.*`` (values may
also be Python literals); ``set=None`` / ``values=None`` assign every table column the source has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.dml.merge_clauses import DELETE as SPEC_DELETE
from icefloe.dml.merge_clauses import MergeClause, MergeSpec, WhenNotMatched
from icefloe.errors import ValidationError
from icefloe.spark.row_frames import assignment_exprs, conform_assignments, quote
from icefloe.spark.row_writer import DELETE, INSERT, KEEP, UPDATE
from icefloe.spec.schema import Schema
from icefloe.spec.types import NestedField

if TYPE_CHECKING:
    from pyspark.sql import Column

CLAUSE_COLUMN = "__icefloe_clause"
KEEP_INDEX = -1  # a target row no clause applies to
TARGET_ALIAS, SOURCE_ALIAS = "target", "source"  # merge_into's aliases of the joined pair
SOURCE_MARKER = "__icefloe_source_row"  # a column merge_into adds to the source: true on its rows


@dataclass(frozen=True)
class PlannedClause:
    """One clause: its position, the row state it applies to, its action and its raw values."""

    index: int
    applies: Column  # row state and condition over the joined frame
    action: str  # UPDATE, DELETE or INSERT (row_writer's names)
    fields: tuple[NestedField, ...]  # the assigned columns, in order
    raw: tuple[Column, ...]  # their values over the joined frame, aliased ``prefix + i``

    @property
    def prefix(self) -> str:
        """The alias prefix of its raw values in the stage frame."""
        return _value_prefix(self.index)


@dataclass(frozen=True)
class SparkMergePlan:
    """The clauses of one MERGE as Columns (see the module docstring)."""

    clauses: tuple[PlannedClause, ...]

    @property
    def chooser(self) -> Column:
        """Over the joined frame: the index of the clause that applies, ``KEEP_INDEX`` or null."""
        from pyspark.sql import functions as F

        has_target, _ = merge_row_state()
        chain: Any = None
        for c in self.clauses:
            index = F.lit(c.index)
            chain = F.when(c.applies, index) if chain is None else chain.when(c.applies, index)
        keep = F.lit(KEEP_INDEX)
        chain = F.when(has_target, keep) if chain is None else chain.when(has_target, keep)
        return chain.otherwise(F.lit(None).cast("int"))

    def stage_columns(self) -> list[Column]:
        """The chooser (``CLAUSE_COLUMN``) and every clause's raw values, for the stage frame."""
        return [self.chooser.alias(CLAUSE_COLUMN), *[v for c in self.clauses for v in c.raw]]

    def action(self) -> Column:
        """Over the stage frame: what happens to the row, null for a source row nothing inserts."""
        from pyspark.sql import functions as F

        index = F.col(CLAUSE_COLUMN)
        chain = F.when(index == F.lit(KEEP_INDEX), F.lit(KEEP))
        for name in (UPDATE, DELETE, INSERT):
            chosen = [c.index for c in self.clauses if c.action == name]
            if chosen:
                chain = chain.when(index.isin(chosen), F.lit(name))
        return chain.otherwise(F.lit(None).cast("string"))

    def updated_fields(self) -> tuple[NestedField, ...]:
        """The columns some UPDATE clause assigns (v4 column updates write just those)."""
        seen: dict[int, NestedField] = {}
        for c in self.clauses:
            if c.action == UPDATE:
                for f in c.fields:
                    seen.setdefault(f.field_id, f)
        return tuple(seen.values())

    def has_inserts(self) -> bool:
        """Whether a WHEN NOT MATCHED clause exists (then source rows must survive the join)."""
        return any(c.action == INSERT for c in self.clauses)

    def values(
        self, stage_schema: Any, action: str, otherwise: Callable[[NestedField], Column]
    ) -> dict[str, Column]:
        """Over the stage frame: per column the UPDATE (or INSERT) clauses assign, its new value.

        ``otherwise`` gives the value of a column the applying clause does not assign (only asked
        for a column some clause of that action leaves unassigned). Values are conformed to the
        column's type; a lossy one is a ValidationError naming the column.
        """
        from pyspark.sql import functions as F

        clauses = [c for c in self.clauses if c.action == action]
        what = f"merge {action}"
        conformed = [conform_assignments(stage_schema, list(c.fields), what, c.prefix) for c in clauses]
        columns: dict[str, NestedField] = {}
        for c in clauses:
            for f in c.fields:
                columns.setdefault(f.name, f)
        index = F.col(CLAUSE_COLUMN)
        out: dict[str, Column] = {}
        for name, f in columns.items():
            assigning = [(c, v[name]) for c, v in zip(clauses, conformed, strict=True) if name in v]
            last = assigning.pop()[1] if len(assigning) == len(clauses) else otherwise(f)
            chain: Any = None
            for c, value in assigning:
                hit = index == F.lit(c.index)
                chain = F.when(hit, value) if chain is None else chain.when(hit, value)
            out[name] = last if chain is None else chain.otherwise(last)
        return out


def plan_merge(
    spec: MergeSpec, schema: Schema, source_columns: Sequence[str], case_sensitive: bool = True
) -> SparkMergePlan:
    """The Spark form of ``spec`` for a table of ``schema`` and a source with ``source_columns``."""
    from pyspark.sql import functions as F

    if not (spec.matched or spec.not_matched or spec.not_matched_by_source):
        raise ValidationError("MERGE needs at least one clause (when_matched_update(), ...)")
    has_target, has_source = merge_row_state()
    ordered: list[tuple[Column, MergeClause]] = [
        *[(has_target & has_source, c) for c in spec.matched],
        *[(~has_target & has_source, c) for c in spec.not_matched],
        *[(has_target & ~has_source, c) for c in spec.not_matched_by_source],
    ]
    planned = []
    for index, (state, clause) in enumerate(ordered):
        applies = state
        if clause.condition is not None:
            applies = state & F.coalesce(merge_condition(clause.condition), F.lit(False))
        if isinstance(clause, WhenNotMatched):
            action, assigned = INSERT, clause.values
        elif clause.action == SPEC_DELETE:
            action, assigned = DELETE, {}
        else:
            action, assigned = UPDATE, clause.set
        if assigned is None:
            assigned = _every_source_column(schema, source_columns, case_sensitive)
        what, prefix = f"merge {action}", _value_prefix(index)
        fields, raw = assignment_exprs(schema, assigned, case_sensitive, what, prefix)
        planned.append(PlannedClause(index, applies, action, tuple(fields), tuple(raw)))
    return SparkMergePlan(tuple(planned))


def _value_prefix(index: int) -> str:
    return f"__icefloe_c{index}_"


def merge_row_state() -> tuple[Column, Column]:
    """(has a target row, has a source row) over merge_into's joined frame."""
    from pyspark.sql import functions as F

    return (
        F.col(f"{TARGET_ALIAS}.`_file`").isNotNull(),
        F.col(f"{SOURCE_ALIAS}.{quote(SOURCE_MARKER)}").isNotNull(),
    )


def merge_condition(value: Any, what: str = "condition") -> Column:
    """A Spark SQL text or Column condition over ``target.*`` / ``source.*`` as a Column."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        try:
            return F.expr(value)
        except Exception as exc:
            raise ValidationError(f"merge: cannot parse the {what} {value!r}: {exc}") from None
    raise ValidationError(
        f"merge: a Spark MERGE {what} is Spark SQL text or a Column, not {type(value).__name__}"
    )


def _every_source_column(
    schema: Schema, source_columns: Sequence[str], case_sensitive: bool
) -> Mapping[str, str]:
    """``UPDATE SET *`` / ``INSERT *``: every table column the source has, from the source."""
    out: dict[str, str] = {}
    for f in schema.fields:
        for c in source_columns:
            if c == f.name or (not case_sensitive and c.lower() == f.name.lower()):
                out[f.name] = f"{SOURCE_ALIAS}.{quote(c)}"
                break
    return out
