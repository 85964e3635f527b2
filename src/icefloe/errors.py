"""One error hierarchy for icefloe: a base class with one subclass per kind of failure.

Every error may carry structured context besides its message: ``location`` (the file it is
about), ``snapshot_id`` and ``table``. The code that raises sets what it knows; a caller that
knows more adds it on the way up with :meth:`IcefloeError.with_context` (which never overwrites).
Internal control-flow signals are not errors of this hierarchy: they stay private to the module
that raises and catches them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


class NoSuchView(NotFound):
    """The catalog holds no view of that name."""


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


class AccessDenied(IcefloeError):
    """A catalog service refused the credentials, or they do not grant the operation."""


class ValidationError(CleanableFailure, IcefloeError):
    """Bad user input: wrong schema, bad filter, invalid argument. Nothing was changed."""


class UnsupportedLocation(ValidationError):
    """A location no FileIO of icefloe can open: a ``file:`` URL naming a remote host, a malformed
    ``s3://`` URL. Given by a user it is bad input; found in a metadata file, the scan adds which
    metadata file and snapshot led to it."""


class CorruptMetadata(IcefloeError):
    """A metadata or data file could not be parsed, or contradicts its parent; the message names the file.

    ``location`` is the file at fault when known (for a bad manifest DV in a v4 root: the root,
    not the leaf), ``snapshot_id`` the snapshot being read when known.
    """


class Unsupported(IcefloeError):
    """A valid feature that icefloe does not implement (yet)."""


_NEVER_WRAPPED = (KeyboardInterrupt, SystemExit, GeneratorExit, IcefloeError)


@contextmanager
def reading(location: str, what: str = "read", *, snapshot_id: int | None = None) -> Iterator[None]:
    """The boundary of one file reader: any failure that is not an IcefloeError becomes CorruptMetadata.

    Decoders (fastavro, DataFusion, pyarrow, zlib, json) fail on corrupt bytes with their own
    exception types, some deriving from BaseException (a Rust panic surfaces as one); callers of
    icefloe see one error that names the file. A missing file becomes NotFound. Interrupts pass.
    """
    try:
        yield
    except NotFound as exc:
        exc.with_context(location=location, snapshot_id=snapshot_id)
        raise
    except FileNotFoundError as exc:
        raise NotFound(f"{location}: file does not exist ({exc})", location=location) from exc
    except CorruptMetadata as exc:
        exc.with_context(location=location, snapshot_id=snapshot_id)  # a helper knew part of the story
        raise
    except _NEVER_WRAPPED:
        raise
    except BaseException as exc:
        detail = str(exc)
        if len(detail) > 300:
            detail = detail[:300] + "..."
        raise CorruptMetadata(
            f"{location}: cannot {what}: {type(exc).__name__}: {detail}",
            location=location,
            snapshot_id=snapshot_id,
        ) from exc
