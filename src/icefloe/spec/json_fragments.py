"""Memoised JSON of table metadata: the text of snapshots, schemas, specs, sort orders, the
snapshot-log and the metadata-log is kept per table and reused by the table's next write (see
``Fragments``).

The text is kept as UTF-8 bytes, the form a metadata file and a REST reply take: a commit to a
table with a long history then makes its file's bytes with one copy of the kept arrays, not a
join into a string and an encoding of it.

Used by ``json_codec.table_metadata_json_chunks``; nothing here changes the text written.
"""

from __future__ import annotations

import json
import threading
from array import array
from collections.abc import Callable, Hashable
from typing import Any

from icefloe.lru import LruCache
from icefloe.spec.json_known import same_start
from icefloe.spec.snapshots import MetadataLogEntry, Snapshot
from icefloe.spec.table_metadata import TableMetadata

COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_FRAGMENT_TABLES = 32
_FRAGMENT_BYTES = 64 * 1024 * 1024  # beyond this much kept text, the least recent tables are dropped


class RawArray:
    """An already-encoded JSON array: ``body`` is its UTF-8 text without the closing ``]``, and
    ``head`` how long the text of all but its last item is (0 when it holds fewer than two)."""

    __slots__ = ("body", "head")

    def __init__(self, body: bytes, head: int = 0) -> None:
        self.body = body
        self.head = head


class _EncodedList:
    """One JSON array as last written: its items, its text, where each item's text ends in it, and
    each item's text by key (UTF-8)."""

    __slots__ = ("body", "by_key", "ends", "items")

    def __init__(
        self,
        items: tuple[Any, ...],
        body: bytes,
        ends: array[int],
        by_key: dict[Hashable, tuple[Any, bytes]],
    ) -> None:
        self.items = items
        self.body = body  # the array's text without its closing "]"
        self.ends = ends  # ends[i]: len(body) had the array ended after items[i]
        self.by_key = by_key

    def first(self, n: int, key: Callable[[Any], Hashable] | None) -> _EncodedList:
        """The array of the first ``n`` items (0 < n <= len(items)), its text sliced from this one."""
        if n == len(self.items):
            return self
        by_key = self.by_key
        if key is not None and by_key:
            by_key = dict(by_key)
            for item in self.items[n:]:
                k = key(item)
                if by_key.get(k, (None,))[0] is item:
                    del by_key[k]
        return _EncodedList(self.items[:n], self.body[: self.ends[n - 1]], self.ends[:n], by_key)


_EMPTY_LIST = _EncodedList((), b"[", array("q"), {})


class Fragments:
    """Encoded JSON of one table's snapshots, schemas, specs, sort orders, snapshot-log and
    metadata-log.

    New metadata usually holds the very objects of the previous write plus a few at the end (the
    tuples only grow between commits): then the previous array text is extended, from where the
    objects stop being the same ones (a catalog that rebased a client's newest snapshot answers
    with the others' and its rebased one after the client's base). When none is the same, each
    item is looked up by its key (an id, a metadata-log entry's file), and its text reused when the
    same object (or, for snapshots and metadata-log entries, an equal one, for snapshots with the
    same summary order, e.g. after a reload) was written under that key: so the metadata-log,
    trimmed at its start once it holds ``previous-versions-max`` entries, costs a lookup per entry.
    Texts of items no longer present are dropped.
    """

    def __init__(self) -> None:
        self._lists: dict[str, _EncodedList] = {}
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """How many bytes of encoded text are kept."""
        with self._lock:
            return sum(len(kept.body) for kept in self._lists.values())

    def join(
        self,
        kind: str,
        items: tuple[Any, ...],
        key: Callable[[Any], Hashable] | None,
        to_json: Callable[[Any], str],
    ) -> RawArray:
        """The JSON array of ``items``, each encoded (``to_json``, then UTF-8) at most once while it
        stays in the metadata."""
        with self._lock:
            last = self._lists.get(kind, _EMPTY_LIST)
        items = tuple(items)
        same = same_start(last.items, items)
        if same:
            fresh = self._extended(last.first(same, key), items, key, to_json)
        else:
            fresh = self._rebuilt(last, items, key, to_json)
        with self._lock:
            self._lists[kind] = fresh
        return RawArray(fresh.body, fresh.ends[-2] if len(fresh.ends) > 1 else 0)

    @staticmethod
    def _extended(
        last: _EncodedList,
        items: tuple[Any, ...],
        key: Callable[[Any], Hashable] | None,
        to_json: Callable[[Any], str],
    ) -> _EncodedList:
        added = items[len(last.items) :]
        if not added:
            return last
        texts = [to_json(item).encode("utf-8") for item in added]
        by_key = dict(last.by_key)
        if key is not None:
            by_key.update((key(item), (item, text)) for item, text in zip(added, texts, strict=True))
        ends = array("q", last.ends)
        end = len(last.body)
        for text in texts:
            end += 1 + len(text)
            ends.append(end)
        texts.insert(0, last.body)  # one copy of the grown body (``a + b"," + b`` would make two)
        return _EncodedList(items, b",".join(texts), ends, by_key)

    @staticmethod
    def _rebuilt(
        last: _EncodedList,
        items: tuple[Any, ...],
        key: Callable[[Any], Hashable] | None,
        to_json: Callable[[Any], str],
    ) -> _EncodedList:
        texts: list[bytes] = []
        by_key: dict[Hashable, tuple[Any, bytes]] = {}
        for item in items:
            k = key(item) if key is not None else None
            hit = last.by_key.get(k) if k is not None else None
            if hit is not None and (hit[0] is item or _same_json(hit[0], item)):
                text = hit[1]
            else:
                text = to_json(item).encode("utf-8")
            if k is not None:
                by_key[k] = (item, text)
            texts.append(text)
        ends = array("q")
        end = 0
        for text in texts:
            end += 1 + len(text)  # "[" or "," before it
            ends.append(end)
        return _EncodedList(items, b"[" + b",".join(texts), ends, by_key)


def _same_json(a: Any, b: Any) -> bool:
    """Whether two equal-looking objects encode alike: snapshots (their summary order matters) and
    metadata-log entries."""
    if type(a) is Snapshot:
        return a == b and list(a.summary) == list(b.summary)
    return type(a) is MetadataLogEntry and a == b


_fragments: LruCache[str, Fragments] = LruCache(_FRAGMENT_TABLES)
_fragments_lock = threading.Lock()
_per_thread = threading.local()


def fragments_for(md: TableMetadata) -> Fragments:
    """The fragment memo of ``md``'s table (by uuid; the most recently written tables are kept, at
    most ``_FRAGMENT_TABLES`` of them and ``_FRAGMENT_BYTES`` of text)."""
    with _fragments_lock:
        return _kept(_fragments, md)


def thread_fragments_for(md: TableMetadata) -> Fragments:
    """A fragment memo of ``md``'s table kept for the calling thread alone, bounded alike.

    For text a thread makes again and again from its own objects: a REST client's held arrays
    (``json_reply``). Threads appending to one table each hold their own snapshot objects, so in
    one shared memo each would replace the others' lists and rebuild the text from theirs."""
    tables: LruCache[str, Fragments] | None = getattr(_per_thread, "tables", None)
    if tables is None:
        tables = _per_thread.tables = LruCache(_FRAGMENT_TABLES)
    return _kept(tables, md)


def _kept(tables: LruCache[str, Fragments], md: TableMetadata) -> Fragments:
    """``md``'s table's memo in ``tables`` (made when missing), the most recent now."""
    key = md.table_uuid or md.location
    found = tables.get(key)
    if found is None:
        found = Fragments()
        tables.put(key, found)
    # a memo grows after it is kept, so its text is weighed now, not when it was put
    while len(tables) > 1 and sum(f.size for f in tables.values()) > _FRAGMENT_BYTES:
        tables.pop_oldest()
    return found
