"""One error hierarchy for icefloe: a base class with one subclass per kind of failure.

Every error may carry structured context besides its message: ``location`` (the file it is
about), ``snapshot_id`` and ``table``. The code that raises sets what it knows; a caller that
knows more adds it on the way up with :meth:`IcefloeError.with_context` (which never overwrites).
Internal control-flow signals are not errors of this hierarchy: they stay private to the module
that raises and catches them.
"""

from __future__ import annotations

from typing import Self


class IcefloeError(Exception):
    """Base class of every error icefloe raises on purpose."""

    retryable: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        location: str | None = None,
        snapshot_id: int | None = None,
        table: str | None = None,
    ) -> None:
        super().__init__(message)
        self.location = location
        self.snapshot_id = snapshot_id
        self.table = table

    def with_context(
        self, *, location: str | None = None, snapshot_id: int | None = None, table: str | None = None
    ) -> Self:
        """This error with the context attributes it lacks filled in (set ones are kept); returns self."""
        if self.location is None:
            self.location = location
        if self.snapshot_id is None:
            self.snapshot_id = snapshot_id
        if self.table is None:
            self.table = table
        return self

    @property
    def context(self) -> dict[str, str | int]:
        """The context attributes that are set, by name."""
        found = {"location": self.location, "snapshot_id": self.snapshot_id, "table": self.table}
        return {k: v for k, v in found.items() if v is not None}


class CleanableFailure:
    """Marker of failures that guarantee nothing was committed (Iceberg Java's ``CleanableFailure``).

    Only such a failure lets a writer delete the files it wrote for the commit. Anything else that
    interrupts a commit once the catalog swap has started (KeyboardInterrupt, a signal, a timeout,
    an unexpected exception) may have happened after the catalog changed, so the files stay: an
    orphan file is harmless, a deleted committed file is not.
    """


_NOTHING_COMMITTED = "icefloe_nothing_committed"


def mark_nothing_committed(exc: BaseException) -> None:
    """Record on ``exc`` that the commit it interrupted certainly did not happen (e.g. before the swap)."""
    setattr(exc, _NOTHING_COMMITTED, True)


def nothing_committed(exc: BaseException) -> bool:
    """Whether ``exc`` is known to leave the catalog unchanged: cleaning up after it is safe."""
    return isinstance(exc, CleanableFailure) or getattr(exc, _NOTHING_COMMITTED, False) is True


class NotFound(IcefloeError):
    """A namespace, table, snapshot, ref or file does not exist."""


class NoSuchNamespace(NotFound):
    """The namespace does not exist."""


class NoSuchTable(NotFound):
    """The table does not exist."""


class TableGoneDuringCommit(CleanableFailure, NoSuchTable):
    """The compare-and-swap found no table row (dropped concurrently): nothing was committed."""


class AlreadyExists(IcefloeError):
    """The namespace or table being created exists already."""


class NamespaceNotEmpty(IcefloeError):
    """A namespace cannot be dropped while it still holds tables."""


class CommitConflict(CleanableFailure, IcefloeError):
    """Another writer committed first (the compare-and-swap failed, or validation refused the change).

    Retryable conflicts (the base moved) are retried on fresh metadata; a conflict found by
    validation (a concurrent commit touched the same files) is raised with ``retryable=False``.
    Either way nothing was committed (``CleanableFailure``).
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = True,
        location: str | None = None,
        snapshot_id: int | None = None,
        table: str | None = None,
    ) -> None:
        super().__init__(message, location=location, snapshot_id=snapshot_id, table=table)
        self.retryable = retryable


class CommitStateUnknown(IcefloeError):
    """The commit may or may not have happened: never clean up files after this."""


class ValidationError(CleanableFailure, IcefloeError):
    """Bad user input: wrong schema, bad filter, invalid argument. Nothing was changed."""


class CorruptMetadata(IcefloeError):
    """A metadata or data file could not be parsed; the message names the file and why."""


class Unsupported(IcefloeError):
    """A valid feature that icefloe does not implement (yet)."""
