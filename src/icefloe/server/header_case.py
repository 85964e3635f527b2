"""Response header names in the spelling clients look them up by.

HTTP header names are case-insensitive, but Iceberg Java's ``HTTPClient`` (1.11 on) copies a
response's headers into a case-sensitive map and reads the table's ``ETag`` under exactly that
name: sent as ``etag``, the tag is never found, the loaded table never cached, and no
``If-None-Match`` ever sent (freshness-aware loading silently off). Starlette lowercases every name
its responses carry; ``app`` restores the names in ``CANONICAL_HEADER_NAMES``, which uvicorn's h11
implementation then sends as given. Its httptools implementation (the default when installed)
lowercases them again as it writes the header block, so ``http_protocol`` gives it a transport
that spells those names back in that block, and in nothing else.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

CANONICAL_HEADER_NAMES = {b"etag": b"ETag"}
"""Lower-case header name -> the spelling sent."""

_STATUS_LINE_START = b"HTTP/1.1 "
_END_OF_HEADERS = b"\r\n\r\n"
_REWRITES = tuple(
    (b"\r\n" + low + b": ", b"\r\n" + name + b": ") for low, name in CANONICAL_HEADER_NAMES.items()
)


def canonical_header_block(data: bytes) -> bytes:
    """``data`` with the canonical names in its header block, when it is one (a status line, the
    header lines, the blank line): the response's first write. Other writes are returned as is."""
    if not data.startswith(_STATUS_LINE_START):
        return data
    head, end, rest = data.partition(_END_OF_HEADERS)
    if not end:
        return data
    for low, name in _REWRITES:
        head = head.replace(low, name)
    return head + end + rest


class _CanonicalHeaderTransport:
    """An asyncio transport writing header blocks with canonical names; everything else is the
    wrapped transport's."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._transport.write(canonical_header_block(bytes(data)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def http_protocol(http: str) -> Any:
    """What to give ``uvicorn.Config(http=...)`` for the implementation named ``http``
    (``auto``, ``h11``, ``httptools``): httptools' protocol with the canonical-name transport when
    it would be used, else the name itself."""
    if http == "h11":
        return http
    found = _canonical_httptools_protocol()
    return found if found is not None else http  # without httptools, uvicorn's "auto" is h11


@functools.cache
def _canonical_httptools_protocol() -> type | None:
    """uvicorn's httptools protocol writing through ``_CanonicalHeaderTransport`` (one class, made
    on first use), or None when httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class CanonicalHeadersHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol, its header names spelled as ``CANONICAL_HEADER_NAMES``."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(_CanonicalHeaderTransport(transport))  # type: ignore[arg-type]

    return CanonicalHeadersHttpToolsProtocol
