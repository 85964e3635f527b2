"""Completed scan plans kept for a while, so ``GET .../plan/{plan-id}`` can fetch one again and
``DELETE`` can release it.

Planning here completes within the ``POST .../plan`` request, but the spec's answer to it carries a
``plan-id`` (``CompletedPlanningWithIDResult``) and clients may use it: Iceberg Java's scan cancels
the plan by id once it has read the tasks, and any client may fetch a plan's result by id. So each
answer gets a fresh id and its tasks are kept, least recently used first out, within a bound on
the files they name across all kept plans: a server must not hold every plan it ever answered.
A plan larger than the whole bound is answered but not kept; fetching or cancelling a plan no
longer kept is a 404 (``NoSuchPlanIdException``), as for an id never issued.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from icefloe.lru import LockedLruCache

TableKey = tuple[tuple[str, ...], str]
"""A table by namespace and name: a plan id is looked up under the table it was planned for."""

KEPT_PLAN_FILES = 100_000
"""Scan tasks plus delete files of all kept plans together (a task's JSON is ~1 KB)."""

KEPT_PLANS = 1_000
"""Plans kept at most, however small."""


def _files_in(result: Mapping[str, Any]) -> int:
    return 1 + len(result["file-scan-tasks"]) + len(result["delete-files"])


class CompletedPlans:
    """The results of recently completed plans, by table and plan id."""

    def __init__(self, max_files: int = KEPT_PLAN_FILES, max_plans: int = KEPT_PLANS) -> None:
        self._max_files = max_files
        self._kept: LockedLruCache[tuple[TableKey, str], Mapping[str, Any]] = LockedLruCache(
            max_plans, max_weight=max_files, weigh=_files_in
        )

    def keep(self, table: TableKey, result: Mapping[str, Any]) -> str:
        """A new plan id for ``result`` (a completed ``FetchPlanningResult``), kept when it fits."""
        plan_id = uuid.uuid4().hex
        if _files_in(result) <= self._max_files:
            self._kept.put((table, plan_id), result)
        return plan_id

    def fetch(self, table: TableKey, plan_id: str) -> Mapping[str, Any] | None:
        """The kept result of ``plan_id`` planned for ``table``, or None."""
        return self._kept.get((table, plan_id))

    def release(self, table: TableKey, plan_id: str) -> bool:
        """Forget ``plan_id``'s result; whether it was kept."""
        return self._kept.pop((table, plan_id)) is not None

    def __len__(self) -> int:
        return len(self._kept)


__all__ = ["KEPT_PLAN_FILES", "CompletedPlans", "TableKey"]
