"""Transactions: a list of actions re-applied to fresh metadata until the commit wins.

The commit is a small state machine:

    LOAD base ──> APPLY actions (each validates against the base, writes files, returns updates)
      ▲                │
      │                ▼
      └─ CONFLICT <── SWAP (catalog compare-and-swap of the metadata location)
                       │
                       ├─ ok       -> COMMITTED: delete files of abandoned attempts
                       ├─ conflict -> back off, reload, re-apply (up to commit.retry.num-retries)
                       ├─ unknown  -> raise CommitStateUnknown and delete nothing
                       └─ other    -> delete this attempt's files only if the failure is known to
                                      be clean (before the swap, or a ``CleanableFailure``); an
                                      interrupt or unknown error during the swap deletes nothing

A failure after which cleaning up was safe is marked (``errors.mark_nothing_committed``) so that
callers holding staged files of their own (Spark jobs) apply the same rule
(``errors.nothing_committed``).

Actions never mutate shared state between attempts; every attempt starts from the metadata the
catalog returned, so concurrent writers only see each other through the compare-and-swap.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from icefloe.errors import (
    CommitConflict,
    CommitStateUnknown,
    ValidationError,
    mark_nothing_committed,
    nothing_committed,
)
from icefloe.io.durability import durability_barrier
from icefloe.io.fileio import FileIO
from icefloe.spec.properties import checked_int_property
from icefloe.spec.table_metadata import TableMetadata
from icefloe.spec.updates import TableUpdate, apply_updates


@contextlib.contextmanager
def replayed_on_fresh_metadata(moved: bool, conflict: str) -> Iterator[None]:
    """Re-applying a recorded change on fresh metadata: its ValidationError is the caller's own
    mistake when the table has not ``moved`` since the change was recorded, and otherwise a
    non-retryable ``CommitConflict`` (``conflict``, then the error) caused by a concurrent commit."""
    try:
        yield
    except ValidationError as exc:
        if not moved:
            raise
        raise CommitConflict(f"{conflict} ({exc})", retryable=False) from exc


@dataclass
class AttemptContext:
    """What one commit attempt may use, and the files it wrote (for cleanup)."""

    io: FileIO
    base: TableMetadata
    now_ms: int
    written_files: list[str] = field(default_factory=list)
    # Files an attempt produced that stay valid for later attempts (e.g. appended data files).
    reusable_files: list[str] = field(default_factory=list)


class Action(Protocol):
    """One step of a transaction: turns the current metadata into table updates."""

    def apply(self, ctx: AttemptContext, current: TableMetadata) -> list[TableUpdate]:
        """Validate against ``current``, write any files, and return the updates to apply."""
        ...

    def committed_files(self) -> list[str]:
        """Files the action was given that become part of the table once committed."""
        ...


class CommitTarget(Protocol):
    """Where a transaction commits (``table.Table`` implements this by delegating to its own)."""

    @property
    def io(self) -> FileIO:
        """Where the transaction writes its files."""
        ...

    def load_for_commit(self) -> tuple[TableMetadata, str | None]:
        """Fresh metadata and its location (None for a table being created)."""
        ...

    def swap_metadata(
        self, base_location: str | None, base_metadata: TableMetadata, new_metadata: TableMetadata
    ) -> str:
        """Compare-and-swap the table's metadata; CommitConflict when the base moved."""
        ...


@dataclass(frozen=True)
class RetryPolicy:
    """``commit.retry.*`` table properties."""

    num_retries: int = 4
    min_wait_ms: int = 100
    max_wait_ms: int = 60_000
    total_timeout_ms: int = 1_800_000

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> RetryPolicy:
        """Read the policy from table properties, with Iceberg's defaults."""
        return cls(
            num_retries=checked_int_property(props, "commit.retry.num-retries", 4),
            min_wait_ms=checked_int_property(props, "commit.retry.min-wait-ms", 100),
            max_wait_ms=checked_int_property(props, "commit.retry.max-wait-ms", 60_000),
            total_timeout_ms=checked_int_property(props, "commit.retry.total-timeout-ms", 1_800_000),
        )

    def backoff_seconds(self, attempt: int) -> float:
        """Exponential backoff with full jitter, bounded by max_wait_ms."""
        ceiling = min(self.max_wait_ms, self.min_wait_ms * (2 ** min(attempt, 20)))
        return random.uniform(self.min_wait_ms, max(self.min_wait_ms, ceiling)) / 1000.0


class Transaction:
    """A batch of actions committed atomically as one metadata swap."""

    def __init__(self, target: CommitTarget, now: Callable[[], float] = time.time) -> None:
        self._target = target
        self._actions: list[Action] = []
        self._now = now
        self.committed_metadata: TableMetadata | None = None
        self.committed_location: str | None = None

    def add(self, action: Action) -> Transaction:
        """Queue an action; nothing is written until commit()."""
        self._actions.append(action)
        return self

    @property
    def actions(self) -> tuple[Action, ...]:
        """Queued actions, in order."""
        return tuple(self._actions)

    def commit(self) -> TableMetadata:
        """Apply all actions to fresh metadata and swap it in, retrying on conflicts.

        The files the attempts write are made durable together, right before the catalog swap
        (``io.durability``: the catalog syncs the barrier before it moves the pointer)."""
        with durability_barrier():
            return self._commit()

    def _commit(self) -> TableMetadata:
        if not self._actions:
            base, location = self._target.load_for_commit()
            self.committed_metadata, self.committed_location = base, location
            return base
        base, location = self._target.load_for_commit()
        policy = RetryPolicy.from_properties(base.properties)
        started = self._now()
        abandoned: list[str] = []
        attempt = 0
        while True:
            ctx = AttemptContext(self._target.io, base, _now_ms(self._now))
            swapping = False
            try:
                new_md = base
                for action in self._actions:
                    updates = action.apply(ctx, new_md)
                    new_md = apply_updates(new_md, updates, ctx.now_ms)
                swapping = True
                new_location = self._target.swap_metadata(location, base, new_md)
            except CommitStateUnknown:
                raise  # the swap may have happened: never delete anything
            except CommitConflict as exc:
                abandoned.extend(ctx.written_files)
                attempt += 1
                if not exc.retryable:
                    self._cleanup(abandoned + self._given_files())
                    raise
                elapsed_ms = (self._now() - started) * 1000
                if attempt > policy.num_retries or elapsed_ms > policy.total_timeout_ms:
                    self._cleanup(abandoned + self._given_files())
                    raise
                time.sleep(policy.backoff_seconds(attempt))
                base, location = self._target.load_for_commit()
                continue
            except BaseException as exc:
                # Iceberg Java's rule: clean up only when the failure is known to be clean. Before
                # the swap started nothing can have been committed; once it started, only a
                # CleanableFailure says so (an interrupt, a timeout or an unknown error may have
                # struck after the catalog moved to the new metadata).
                if swapping and not nothing_committed(exc):
                    raise
                self._cleanup(abandoned + ctx.written_files + self._given_files())
                mark_nothing_committed(exc)
                raise
            self._cleanup(abandoned)
            self.committed_metadata, self.committed_location = new_md, new_location
            return new_md

    def _given_files(self) -> list[str]:
        return [path for action in self._actions for path in action.committed_files()]

    def _cleanup(self, paths: list[str]) -> None:
        for path in dict.fromkeys(paths):
            with contextlib.suppress(Exception):  # best effort; an orphan file is harmless
                self._target.io.delete(path)


def _now_ms(now: Callable[[], float]) -> int:
    return int(now() * 1000)
