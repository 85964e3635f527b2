"""``table.merge(source, on=...)``: ordered MERGE clauses, then ``execute()``.

::

    result = (
        table.merge(changes, on="id")
        .when_matched_delete(condition=pc.field("source.deleted"))
        .when_matched_update(set={"qty": pc.field("source.qty")})
        .when_not_matched_insert()
        .when_not_matched_by_source_delete(condition=pc.field("day") < 10)
        .execute()
    )

The clause objects (``dml.merge_clauses.MergeSpec``) are the same for the Spark engine and the SQL
front-end. A builder that is dropped without ``execute()`` warns: nothing was merged.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

from icefloe.dml.change_builder import RowLevelResult
from icefloe.dml.merge_clauses import MergeSpec, MergeSpecBuilder
from icefloe.errors import ValidationError


class MergeBuilder(MergeSpecBuilder):
    """Collects clauses in order; ``execute()`` runs (or, in a transaction, queues) the MERGE."""

    def __init__(self, on: str | Sequence[str], run: Callable[[MergeSpec], RowLevelResult]) -> None:
        super().__init__(on)
        self._run = run
        self._executed = False

    def execute(self) -> RowLevelResult:
        """Run the MERGE with the clauses given so far (one snapshot; none when nothing changes)."""
        if self._executed:
            raise ValidationError("this MERGE was already executed; build a new one with table.merge(...)")
        spec = self.spec()
        if not (spec.matched or spec.not_matched or spec.not_matched_by_source):
            raise ValidationError("MERGE needs at least one clause (when_matched_update(), ...)")
        self._executed = True
        return self._run(spec)

    def __del__(self) -> None:
        if not getattr(self, "_executed", True):
            warnings.warn(
                "a table.merge(...) builder was dropped without execute(): nothing was merged",
                ResourceWarning,
                stacklevel=2,
            )
