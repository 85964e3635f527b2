"""The state each table was last seen in by this server: where a coalesced batch starts.

A batch needs the table's current metadata. Reading it costs a pointer ``SELECT`` (a database
transaction) and a look at the metadata file, on every batch, although in the common case, one
server in front of the catalog, the pointer still names the file this server wrote last. So the
coalescer starts a batch from the (metadata location, metadata) it last wrote or read and lets
the compare-and-swap decide: the swap moves the pointer only if it still names that location,
and a location names one file content forever (``Catalog.swap_checks_location``), so a swap that
succeeds proves the base was the table's current state at that instant. A swap lost to another
process (or a catalog client writing straight to the database) forgets the entry and the batch
starts again from freshly read state.

Only a successful swap confirms a base taken from here: an attempt that swaps nothing (every
commit refused, or nothing to change) is run again on freshly read state, so a refusal always
rests on state known to be current.
"""

from __future__ import annotations

from icefloe.lru import LockedLruCache
from icefloe.spec.table_metadata import TableMetadata

TableKey = tuple[tuple[str, ...], str]

KNOWN_TABLES = 256
"""How many tables' last-seen states a server keeps (least recently used first out)."""


class KnownStates:
    """(metadata location, metadata) by table, as this server last wrote or read it."""

    def __init__(self, size: int = KNOWN_TABLES) -> None:
        self._states: LockedLruCache[TableKey, tuple[str, TableMetadata]] = LockedLruCache(size)

    def get(self, key: TableKey) -> tuple[str, TableMetadata] | None:
        """The table's last seen state, or None."""
        return self._states.get(key)

    def put(self, key: TableKey, location: str, md: TableMetadata) -> None:
        """Remember that the table's pointer names ``location``, whose content is ``md``."""
        self._states.put(key, (location, md))

    def forget(self, key: TableKey) -> None:
        """Drop the table's entry (its pointer moved elsewhere, or the table is gone)."""
        self._states.pop(key)

    def __len__(self) -> int:
        return len(self._states)


__all__ = ["KNOWN_TABLES", "KnownStates"]
