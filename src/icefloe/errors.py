"""One error hierarchy for icefloe: a base class with one subclass per kind of failure."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class IcefloeError(Exception):
    """Base class of every error icefloe raises on purpose."""

    retryable: bool = False


class NotFound(IcefloeError):
    """A namespace, table, snapshot, ref or file does not exist (``location``: the missing file, if known)."""

    location: str | None = None


class NoSuchNamespace(NotFound):
    """The namespace does not exist."""


class NoSuchTable(NotFound):
    """The table does not exist."""


class AlreadyExists(IcefloeError):
    """The namespace or table being created exists already."""


class NamespaceNotEmpty(IcefloeError):
    """A namespace cannot be dropped while it still holds tables."""


class CommitConflict(IcefloeError):
    """Another writer committed first.

    Retryable conflicts (the base moved) are retried on fresh metadata; a conflict found by
    validation (a concurrent commit touched the same files) is raised with ``retryable=False``.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class CommitStateUnknown(IcefloeError):
    """The commit may or may not have happened: never clean up files after this."""


class ValidationError(IcefloeError):
    """Bad user input: wrong schema, bad filter, invalid argument. Nothing was changed."""


class CorruptMetadata(IcefloeError):
    """A metadata or data file could not be parsed, or contradicts its parent; the message names the file.

    ``location`` is the file at fault when known (for a bad manifest DV in a v4 root: the root,
    not the leaf), ``snapshot_id`` the snapshot being read when known.
    """

    def __init__(self, message: str, *, location: str | None = None, snapshot_id: int | None = None) -> None:
        super().__init__(message)
        self.location = location
        self.snapshot_id = snapshot_id


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
        if getattr(exc, "location", None) is None:
            exc.location = location
        raise
    except FileNotFoundError as exc:
        missing = NotFound(f"{location}: file does not exist ({exc})")
        missing.location = location
        raise missing from exc
    except CorruptMetadata as exc:
        if exc.location is None:  # raised by a helper that only knew part of the story
            exc.location = location
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
