"""The clauses of a MERGE, as one engine-neutral object shared by Python, Spark and SQL.

A MERGE joins a source to the table on key columns and, for every row, applies the FIRST clause of
its kind whose condition holds (SQL semantics; clauses are kept in the order given):

- ``WhenMatched``: a target row with a matching source row is updated (``set``: column -> value;
  ``None`` = every source column, SQL's ``UPDATE SET *``) or deleted;
- ``WhenNotMatched``: a source row matching no target row is inserted (``values``: column -> value;
  ``None`` = every source column, SQL's ``INSERT *``);
- ``WhenNotMatchedBySource``: a target row no source row matches is updated or deleted.

Rows no clause applies to stay as they are. Conditions and values are engine expressions: for
the Python engine ``pyarrow.compute`` expressions (the target row's ``x`` is ``pc.field("x")``, the
source row's ``pc.field("source.x")``), for Spark SQL text or Columns (``target.x``, ``source.x``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Self

from icefloe.errors import ValidationError

UPDATE: Final = "update"
DELETE: Final = "delete"


@dataclass(frozen=True)
class WhenMatched:
    """``WHEN MATCHED [AND condition] THEN UPDATE SET ... | DELETE``."""

    action: Literal["update", "delete"]
    condition: Any = None
    set: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class WhenNotMatched:
    """``WHEN NOT MATCHED [BY TARGET] [AND condition] THEN INSERT ...``."""

    condition: Any = None
    values: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class WhenNotMatchedBySource:
    """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ... | DELETE``."""

    action: Literal["update", "delete"]
    condition: Any = None
    set: Mapping[str, Any] | None = None


MergeClause = WhenMatched | WhenNotMatched | WhenNotMatchedBySource


@dataclass(frozen=True)
class MergeSpec:
    """The key columns and the ordered clauses of one MERGE.

    ``condition`` (an engine expression over the target and source rows, like a clause condition)
    is a further part of the match condition, AND-ed with the key equalities: SQL's ``ON t.id = s.id
    AND t.day > s.day`` or ``ON t.id BETWEEN s.lo AND s.hi`` (then ``on`` may be empty). The Spark
    engine evaluates it; the Python engine matches on key columns only and refuses it.
    """

    on: tuple[str, ...]
    matched: tuple[WhenMatched, ...] = ()
    not_matched: tuple[WhenNotMatched, ...] = ()
    not_matched_by_source: tuple[WhenNotMatchedBySource, ...] = ()
    condition: Any = None

    def __post_init__(self) -> None:
        if not self.on and self.condition is None:
            raise ValidationError("MERGE needs at least one key column in 'on' (or a match condition)")
        updates_or_deletes: tuple[tuple[WhenMatched | WhenNotMatchedBySource, ...], ...] = (
            self.matched,
            self.not_matched_by_source,
        )
        for group in updates_or_deletes:
            for i, clause in enumerate(group[:-1]):
                if clause.condition is None:
                    raise ValidationError(
                        f"MERGE: an unconditional {type(clause).__name__} ({clause.action}) must be the "
                        f"last of its kind; clause {i + 2} could never apply"
                    )
        for i, insert in enumerate(self.not_matched[:-1]):
            if insert.condition is None:
                raise ValidationError(
                    f"MERGE: an unconditional WhenNotMatched clause must be the last; clause {i + 2} "
                    "could never apply"
                )
        for group in updates_or_deletes:
            for clause in group:
                if clause.action not in (UPDATE, DELETE):
                    raise ValidationError(
                        f"MERGE clause action must be 'update' or 'delete', not {clause.action!r}"
                    )
                if clause.action == DELETE and clause.set is not None:
                    raise ValidationError("MERGE: a DELETE clause takes no 'set'")
        for clause in self.not_matched_by_source:
            if clause.action == UPDATE and clause.set is None:
                raise ValidationError(
                    "MERGE: WHEN NOT MATCHED BY SOURCE THEN UPDATE needs explicit 'set' values"
                )

    @property
    def has_matched(self) -> bool:
        """Whether any WHEN MATCHED clause is set (then a target row may match one source row only)."""
        return bool(self.matched)

    @property
    def reads_whole_table(self) -> bool:
        """NOT MATCHED BY SOURCE clauses look at every target row."""
        return bool(self.not_matched_by_source)


class MergeSpecBuilder:
    """Collects clauses in order; engines subclass it to add ``execute()``."""

    def __init__(self, on: str | Sequence[str]) -> None:
        self.on: tuple[str, ...] = (on,) if isinstance(on, str) else tuple(on)
        self._matched: list[WhenMatched] = []
        self._not_matched: list[WhenNotMatched] = []
        self._by_source: list[WhenNotMatchedBySource] = []

    def when_matched_update(self, set: Mapping[str, Any] | None = None, condition: Any = None) -> Self:
        """Update matched target rows (``set=None``: every source column, ``UPDATE SET *``)."""
        self._matched.append(WhenMatched(UPDATE, condition, set))
        return self

    def when_matched_delete(self, condition: Any = None) -> Self:
        """Delete matched target rows."""
        self._matched.append(WhenMatched(DELETE, condition))
        return self

    def when_not_matched_insert(self, values: Mapping[str, Any] | None = None, condition: Any = None) -> Self:
        """Insert source rows without a match (``values=None``: every source column, ``INSERT *``)."""
        self._not_matched.append(WhenNotMatched(condition, values))
        return self

    def when_not_matched_by_source_update(self, set: Mapping[str, Any], condition: Any = None) -> Self:
        """Update target rows that no source row matches."""
        self._by_source.append(WhenNotMatchedBySource(UPDATE, condition, set))
        return self

    def when_not_matched_by_source_delete(self, condition: Any = None) -> Self:
        """Delete target rows that no source row matches."""
        self._by_source.append(WhenNotMatchedBySource(DELETE, condition))
        return self

    def spec(self) -> MergeSpec:
        """The clauses collected so far, validated."""
        return MergeSpec(self.on, tuple(self._matched), tuple(self._not_matched), tuple(self._by_source))


def spec_from_flags(
    on: str | Sequence[str],
    matched_update: Any = True,
    matched_delete: Any = False,
    not_matched_insert: Any = True,
    not_matched_by_source_delete: Any = False,
) -> MergeSpec:
    """The clauses of the keyword form of earlier releases (``when_matched_update=True`` ...).

    Matched rows are deleted where ``matched_delete`` holds and updated otherwise; a mapping for
    ``not_matched_insert`` gives the inserted values.
    """
    if matched_delete is True and matched_update:
        raise ValidationError(
            "MERGE: matched rows cannot be both updated and deleted; give matched_delete a condition "
            "or set matched_update=False"
        )
    matched: list[WhenMatched] = []
    if _is_set(matched_delete):
        matched.append(WhenMatched(DELETE, None if matched_delete is True else matched_delete))
    if matched_update:
        matched.append(WhenMatched(UPDATE, None, None if matched_update is True else matched_update))
    inserts: list[WhenNotMatched] = []
    if not_matched_insert:
        inserts.append(WhenNotMatched(None, None if not_matched_insert is True else not_matched_insert))
    by_source: list[WhenNotMatchedBySource] = []
    if _is_set(not_matched_by_source_delete):
        cond = None if not_matched_by_source_delete is True else not_matched_by_source_delete
        by_source.append(WhenNotMatchedBySource(DELETE, cond))
    keys = (on,) if isinstance(on, str) else tuple(on)
    return MergeSpec(keys, tuple(matched), tuple(inserts), tuple(by_source))


def _is_set(clause: Any) -> bool:
    return clause is not None and not (isinstance(clause, bool) and not clause)
