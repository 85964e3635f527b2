"""Where a file of a copied table goes: one source prefix replaced by a target prefix.

``rewrite_table_path`` moves every absolute path of a table from under ``source_prefix`` to under
``target_prefix`` and stages the files whose bytes hold paths under ``staging_location``, at the
same relative path. A path is under a prefix when it is the prefix or continues it after a ``/``
(``s3://b/t`` does not own ``s3://b/t2/x``; Java compares plain strings). Both sides are compared
in :func:`~icefloe.io.fileio.normalize_location`'s spelling, so ``/x``, ``file:/x`` and
``file:///x`` are one prefix; the target keeps the caller's spelling.

A path outside the source prefix cannot be copied with the table: it is refused with
:class:`PathOutsidePrefix` naming it, never kept as it is (the copy would read the source).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from icefloe.errors import ValidationError
from icefloe.io.fileio import normalize_location


class PathOutsidePrefix(ValidationError):
    """A path the table references does not lie under the source prefix."""


@dataclass(frozen=True)
class PrefixMap:
    """Maps a table's paths from ``source_prefix`` to ``target_prefix`` and to ``staging_location``."""

    source_prefix: str
    target_prefix: str
    staging_location: str
    _prefix: str = field(init=False, repr=False, compare=False)
    """The source prefix in ``normalize_location``'s spelling."""
    _head: str = field(init=False, repr=False, compare=False)
    """What every path under the source prefix starts with, in that spelling."""

    def __post_init__(self) -> None:
        if not self.source_prefix or not self.target_prefix:
            raise ValidationError("source_prefix and target_prefix must not be empty")
        prefix = normalize_location(self.source_prefix)
        if prefix == normalize_location(self.target_prefix):
            raise ValidationError(f"source_prefix and target_prefix are the same: {self.source_prefix}")
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_head", prefix if prefix.endswith("/") else prefix + "/")

    def relative(self, path: str) -> str:
        """``path`` relative to the source prefix ("" for the prefix itself); PathOutsidePrefix
        when it is not under it."""
        head = self._head
        if path.startswith(head) and not _UNTIDY.search(path, len(head) - 1):
            return path[len(head) :]  # already in the canonical spelling: most paths, and cheap
        normal = normalize_location(path)
        if normal == self._prefix:
            return ""
        if not normal.startswith(head):
            raise PathOutsidePrefix(
                f"path {path} does not start with the source prefix {self.source_prefix}: "
                "it cannot be copied with the table"
            )
        return normal[len(head) :]

    def contains(self, path: str) -> bool:
        """Whether ``path`` lies under the source prefix."""
        try:
            self.relative(path)
        except PathOutsidePrefix:
            return False
        return True

    def target(self, path: str) -> str:
        """Where ``path`` lives in the copy."""
        return _join(self.target_prefix, self.relative(path))

    def staged(self, path: str) -> str:
        """Where the rewritten bytes of ``path`` are written before the user copies them."""
        return _join(self.staging_location, self.relative(path))


_UNTIDY = re.compile(r"//|/\.\.?(/|$)|/$")
"""What normalisation would change after the prefix: doubled slashes, ``.`` / ``..`` segments,
a trailing slash."""


def _join(base: str, relative: str) -> str:
    if not relative:
        return base
    return base.rstrip("/") + "/" + relative
