"""Paging of list endpoints: ``pageSize`` bounds a page, ``pageToken`` is the opaque offset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from icefloe.server.errors import bad_request

T = TypeVar("T")
MAX_PAGE_SIZE = 1000


def page(items: Sequence[T], query: Mapping[str, str]) -> tuple[list[T], str | None]:
    """The requested page of ``items`` and the token of the next page (None on the last one)."""
    size_text, token = query.get("pageSize"), query.get("pageToken")
    if size_text is None and not token:
        return list(items), None
    try:
        size = int(size_text) if size_text is not None else MAX_PAGE_SIZE
        start = int(token) if token else 0
    except ValueError:
        raise bad_request("pageSize and pageToken must be integers") from None
    if size < 1 or start < 0:
        raise bad_request("pageSize must be positive and pageToken not negative")
    size = min(size, MAX_PAGE_SIZE)
    end = start + size
    return list(items[start:end]), (str(end) if end < len(items) else None)


def identifiers_page(identifiers: Sequence[tuple[str, ...]], query: Mapping[str, str]) -> dict[str, Any]:
    """A ``ListTablesResponse`` (tables or views): one page of identifiers and the next token."""
    items, token = page(identifiers, query)
    payload: dict[str, Any] = {
        "identifiers": [{"namespace": list(ident[:-1]), "name": ident[-1]} for ident in items]
    }
    if token is not None:
        payload["next-page-token"] = token
    return payload
