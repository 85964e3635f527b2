"""What every FileIO writer shares: its bytes are published on ``close`` and nowhere else.

A local file appears under its name, or an object on the store, only when its writer closes. Left
by an exception inside ``with``, or collected without being closed, a writer aborts: what it wrote
is discarded, so a half-written file never becomes visible under its final name.
"""

from __future__ import annotations

import io
from types import TracebackType


class PublishingWriter(io.RawIOBase):
    """Base of the writers: subclasses publish in ``close`` and discard in ``abort``; both set
    ``_done`` and do nothing when it is already set."""

    _done: bool = True  # until the subclass has set itself up: nothing to abort

    def writable(self) -> bool:
        return True

    def abort(self) -> None:
        raise NotImplementedError

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self) -> None:
        # Never publish what was not closed explicitly (io.IOBase's own __del__ would close).
        if not self._done:
            self.abort()


__all__ = ["PublishingWriter"]
