"""Errors as the REST spec's ``IcebergErrorResponse``: ``{"error": {"message", "type", "code"}}``.

Every icefloe error maps to one status code and exception type name (the names Iceberg Java's
``ErrorHandlers`` and PyIceberg recognise); anything unexpected becomes a 500 without details.
"""

from __future__ import annotations

import logging

from starlette.responses import JSONResponse

from icefloe.errors import (
    AlreadyExists,
    CommitConflict,
    CommitStateUnknown,
    CorruptMetadata,
    IcefloeError,
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NotFound,
    Unsupported,
    ValidationError,
)

logger = logging.getLogger(__name__)


class HttpError(Exception):
    """An error with its own status and type (authentication, authorisation, size limits)."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


def not_authorized(message: str = "a valid bearer token is required") -> HttpError:
    """401: missing or invalid credentials."""
    return HttpError(401, "NotAuthorizedException", message)


def forbidden(message: str) -> HttpError:
    """403: the token may not do this."""
    return HttpError(403, "ForbiddenException", message)


def bad_request(message: str) -> HttpError:
    """400: malformed request."""
    return HttpError(400, "BadRequestException", message)


def not_found(message: str, error_type: str = "NotFoundException") -> HttpError:
    """404 with a chosen exception type."""
    return HttpError(404, error_type, message)


_MAPPING: tuple[tuple[type[IcefloeError], int, str], ...] = (
    (NoSuchTable, 404, "NoSuchTableException"),
    (NoSuchNamespace, 404, "NoSuchNamespaceException"),
    (NoSuchView, 404, "NoSuchViewException"),
    (NotFound, 404, "NotFoundException"),
    (NamespaceNotEmpty, 409, "NamespaceNotEmptyException"),
    (AlreadyExists, 409, "AlreadyExistsException"),
    (CommitConflict, 409, "CommitFailedException"),
    (CommitStateUnknown, 500, "CommitStateUnknownException"),
    (ValidationError, 400, "BadRequestException"),
    (CorruptMetadata, 400, "BadRequestException"),
    (Unsupported, 406, "UnsupportedOperationException"),
)


def status_and_type(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and spec exception type of an error."""
    if isinstance(exc, HttpError):
        return exc.status, exc.error_type
    for cls, status, name in _MAPPING:
        if isinstance(exc, cls):
            return status, name
    return 500, "ServerErrorException"


def error_body(status: int, error_type: str, message: str) -> dict[str, object]:
    """The spec's ``IcebergErrorResponse`` body."""
    return {"error": {"message": message, "type": error_type, "code": status}}


def error_response(exc: BaseException) -> JSONResponse:
    """A JSON error response for an exception (unexpected ones are logged, not echoed)."""
    status, error_type = status_and_type(exc)
    if status == 500 and not isinstance(exc, (CommitStateUnknown, HttpError)):
        logger.exception("unexpected error while serving a REST request", exc_info=exc)
        message = f"internal server error ({type(exc).__name__})"
    else:
        message = str(exc) or error_type
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(status, error_type, message), status_code=status, headers=headers)
