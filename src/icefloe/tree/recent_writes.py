"""The bytes of the last few small tree files this process wrote, handed back once when read.

A commit starts from its parent snapshot and reads that snapshot's manifest list (v1–v3) or root
(v4). When the parent is the same process's previous commit, the file was written a moment ago:
reading it back costs an object store a HEAD and a GET per commit. Those files are immutable
(fresh UUID names, never rewritten), so the bytes written are the bytes any reader would get; the
reader decodes them instead of fetching, and caches the decoded result as it would a fetched one.
Local files are not kept: reading one back costs no request.
"""

from __future__ import annotations

from icefloe.io.fileio import local_path
from icefloe.lru import LockedLruCache


class RecentWrites:
    """Bytes by remote location, bounded by count and by size per file; ``take`` hands each out once."""

    def __init__(self, max_files: int = 4, max_file_bytes: int = 4 << 20) -> None:
        self.max_file_bytes = max_file_bytes
        self._files: LockedLruCache[str, bytes] = LockedLruCache(max_files)

    @property
    def max_files(self) -> int:
        """How many files are kept (the most recently written)."""
        return self._files.max_entries or 0

    def remember(self, location: str, data: bytes, *, local: bool = False) -> None:
        """Keep ``data`` as the content of the file just written at ``location`` (a remote, small one;
        ``local``: a local one too, when its bytes are the only decoded-ready form this process has)."""
        if len(data) > self.max_file_bytes or (not local and local_path(location) is not None):
            return
        self._files.put(location, data)

    def take(self, location: str) -> bytes | None:
        """The bytes written at ``location`` (then forgotten), or None when not kept."""
        return self._files.pop(location)

    def clear(self) -> None:
        """Forget everything (tests that rewrite files in place need this)."""
        self._files.clear()
