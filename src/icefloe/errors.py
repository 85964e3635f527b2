"""One error hierarchy for icefloe: a base class with one subclass per kind of failure."""

from __future__ import annotations


class IcefloeError(Exception):
    """Base class of every error icefloe raises on purpose."""

    retryable: bool = False


class NotFound(IcefloeError):
    """A namespace, table, snapshot, ref or file does not exist."""


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


class AccessDenied(IcefloeError):
    """A catalog service refused the credentials, or they do not grant the operation."""


class ValidationError(IcefloeError):
    """Bad user input: wrong schema, bad filter, invalid argument. Nothing was changed."""


class CorruptMetadata(IcefloeError):
    """A metadata or data file could not be parsed; the message names the file and why."""


class Unsupported(IcefloeError):
    """A valid feature that icefloe does not implement (yet)."""
