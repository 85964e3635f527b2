"""Storage credentials a REST service vends with a table: which one applies, and renewing them.

A ``LoadTableResult`` may carry several ``storage-credentials``, each for a location ``prefix``;
the one for a table is the one with the longest prefix of the table's location (merging them all
would let a credential for ``s3://b/`` override the table's own). Vended credentials expire
(``s3.session-token-expires-at-ms``): ``VendedFileIO`` asks the service for fresh ones
(``GET .../credentials``, or a load of the table when the service lacks that endpoint) when they
are within ``RENEW_BEFORE_S`` of expiry, before its next storage operation, and rebuilds its S3
file system on them. It never relies on a table load to bring new ones: icefloe sends no
``If-None-Match``, and a service answering a load ``304 Not Modified`` would bring none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow.fs as pafs

from icefloe.io.fileio import FileIO, s3_options

EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
RENEW_BEFORE_S = 60.0
"""Below the server's own renewal margin (300 s by default), so the service answers a renewal
with new credentials, not the cached ones being replaced."""

RENEWAL_PREFIX = "rest.executor-renewal."
"""Properties a renewing FileIO ships so Spark executors renew credentials themselves
(``executor_renewal``; here because executors test for them without importing the HTTP client)."""
CREDENTIALS_URI = RENEWAL_PREFIX + "credentials-uri"

Refresh = Callable[[], Mapping[str, str]]
Shipped = Callable[[], Mapping[str, str]]
"""Properties shipped to Spark executors besides the credentials (``executor_renewal``)."""


def best_credential(credentials: Iterable[Any] | None, location: str) -> dict[str, str]:
    """The ``config`` of the credential whose ``prefix`` is the longest prefix of ``location``
    (a table location; a prefix with or without a trailing ``/`` matches it), else ``{}``.

    A prefix covers whole path segments: ``s3://b/wh/t`` is a prefix of ``s3://b/wh/t/x`` but
    not of ``s3://b/wh/t2`` (a server names every location a table writes to, and one table's
    ``write.data.path`` may begin like another location's name)."""
    target = location.rstrip("/") + "/"
    best: tuple[int, dict[str, str]] = (-1, {})
    for credential in credentials or ():
        if not isinstance(credential, dict):
            continue
        prefix = str(credential.get("prefix") or "")
        whole = prefix.endswith("/") or target[len(prefix) : len(prefix) + 1] == "/"
        if target.startswith(prefix) and whole and len(prefix) > best[0]:
            best = (len(prefix), {str(k): str(v) for k, v in (credential.get("config") or {}).items()})
    return best[1]


class VendedFileIO(FileIO):
    """A FileIO on vended, expiring credentials that renews them through ``refresh`` (None: it
    cannot; the credentials are then used until they expire).

    Reading ``properties`` renews too: Spark jobs ship ``table.io.properties`` to their executors,
    which then get credentials with at least ``RENEW_BEFORE_S`` left, not ones about to expire.
    ``shipped`` adds to them what executors need to renew the credentials themselves
    (``executor_renewal``), asked anew on each read since the driver's token changes.
    ``clock`` (epoch seconds) is the seam tests move time with.
    """

    def __init__(
        self,
        properties: Mapping[str, str],
        refresh: Refresh | None,
        clock: Callable[[], float] = time.time,
        shipped: Shipped | None = None,
    ) -> None:
        self._current: dict[str, str] = {}
        self.refresh = refresh
        self.clock = clock
        self.shipped = shipped
        self._renew_lock = threading.Lock()
        super().__init__(properties)

    @property
    def properties(self) -> dict[str, str]:
        """The current properties, renewed first when the credentials are about to expire."""
        self.renew_if_expiring()
        if self.shipped is None:
            return self._current
        return {**self._current, **self.shipped()}

    @properties.setter
    def properties(self, value: Mapping[str, str]) -> None:
        self._current = dict(value)

    def expiring(self) -> bool:
        """Whether the credentials are within ``RENEW_BEFORE_S`` of their expiry."""
        expires_at_ms = self._current.get(EXPIRES_AT_MS)
        if not expires_at_ms:
            return False
        return self.clock() >= int(expires_at_ms) / 1000 - RENEW_BEFORE_S

    def renew_if_expiring(self) -> None:
        """Fetch fresh credentials when the current ones are about to expire (once for all the
        threads that notice together) and drop the S3 file system built on the old ones."""
        if self.refresh is None or not self.expiring():
            return
        with self._renew_lock:
            if not self.expiring():
                return
            fresh = dict(self.refresh())
            if not fresh:
                return
            with self._lock:
                self._current = {**self._current, **fresh}
                self._filesystems.pop("s3", None)

    def _filesystem(self, scheme: str, location: str | None = None) -> pafs.FileSystem:
        if scheme == "s3":
            self.renew_if_expiring()
        return super()._filesystem(scheme, location)

    def _make_filesystem(self, scheme: str, location: str | None) -> pafs.FileSystem:
        # called under self._lock, which renewing takes: build on the properties as they are
        if scheme == "s3":
            return pafs.S3FileSystem(**s3_options(self._current))
        return super()._make_filesystem(scheme, location)
