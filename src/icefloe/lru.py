"""Bounded caches that drop the least recently used entry first.

icefloe keeps many small memos (decoded roots and manifest lists, parsed metadata files, written
bytes, encoded answers): each holds the last few values by key and forgets the oldest past a bound.
:class:`LruCache` is that policy once, so each memo states only its own rules:

- ``get`` refreshes an entry (it becomes the most recent), ``peek`` does not; memos whose hits must
  not reorder them use ``peek``;
- ``put`` replaces a value and makes it the most recent, or with ``refresh=False`` leaves a key
  already present where it was in the order (a memo bounded by first use);
- the bound is a number of entries, a total weight (``weigh(value)``, fixed while the value is
  kept), or both. The newest entry is never evicted for weight: an entry heavier than the whole
  bound is kept, alone, until the next ``put``.

``LruCache`` takes no lock: memos that do more under one lock (several caches, bookkeeping beside
the cache) hold their own. :class:`LockedLruCache` locks each call, and a forked child (Spark's
Python workers fork) gets a fresh lock, since one held by another thread at the fork would stay
held forever there. :class:`IdentityLruCache` keys values by an object's identity, for objects
that hash slowly or not at all.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
Obj = TypeVar("Obj")
D = TypeVar("D")

_MISSING: object = object()


class LruCache(Generic[K, V]):
    """Values by key within ``max_entries`` and/or ``max_weight`` (None: unbounded that way);
    least recently used first out. Not locked: callers that share it between threads hold a lock."""

    __slots__ = ("_entries", "_weigh", "_weight", "max_entries", "max_weight")

    def __init__(
        self,
        max_entries: int | None = None,
        *,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        if (max_weight is None) != (weigh is None):
            raise ValueError("max_weight and weigh go together")
        self.max_entries = max_entries
        self.max_weight = max_weight
        """Settable: a lower bound applies from the next ``put``."""
        self._weigh = weigh
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._weight = 0

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value under ``key`` (now the most recent entry), else ``default``."""
        value = self._entries.get(key, _MISSING)
        if value is _MISSING:
            return default
        self._entries.move_to_end(key)
        return value

    @overload
    def peek(self, key: K) -> V | None: ...
    @overload
    def peek(self, key: K, default: D) -> V | D: ...
    def peek(self, key: K, default: object = None) -> object:
        """The value under ``key`` without refreshing it, else ``default``."""
        return self._entries.get(key, default)

    def put(self, key: K, value: V, *, refresh: bool = True) -> None:
        """Keep ``value`` under ``key`` as the most recent entry (``refresh=False``: a key already
        present keeps its place), then evict the oldest entries past the bounds."""
        if self._weigh is not None:
            self._put_weighed(key, value, refresh)
            return
        entries = self._entries
        entries[key] = value
        if refresh:
            entries.move_to_end(key)
        limit = self.max_entries
        if limit is not None:
            while len(entries) > limit:
                entries.popitem(last=False)

    def _put_weighed(self, key: K, value: V, refresh: bool) -> None:
        assert self._weigh is not None
        entries = self._entries
        old = entries.get(key, _MISSING)
        if old is not _MISSING:
            self._weight -= self._weigh(old)  # type: ignore[arg-type]
        self._weight += self._weigh(value)
        entries[key] = value
        if refresh:
            entries.move_to_end(key)
        if self.max_entries is not None:
            while len(entries) > self.max_entries:
                self._drop_oldest()
        if self.max_weight is not None:
            while self._weight > self.max_weight and len(entries) > 1:
                self._drop_oldest()

    def pop(self, key: K) -> V | None:
        """Remove and return the value under ``key`` (None when absent)."""
        value = self._entries.pop(key, _MISSING)
        if value is _MISSING:
            return None
        if self._weigh is not None:
            self._weight -= self._weigh(value)  # type: ignore[arg-type]
        return value  # type: ignore[return-value]

    def pop_oldest(self) -> tuple[K, V]:
        """Remove and return the least recently used entry (KeyError when empty)."""
        return self._drop_oldest()

    def _drop_oldest(self) -> tuple[K, V]:
        key, value = self._entries.popitem(last=False)
        if self._weigh is not None:
            self._weight -= self._weigh(value)
        return key, value

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._weight = 0

    @property
    def weight(self) -> int:
        """The total weight kept (0 without ``weigh``)."""
        return self._weight

    def values(self) -> Iterator[V]:
        """The values, least recently used first (do not change the cache while iterating)."""
        return iter(self._entries.values())

    def ordered_keys(self) -> list[K]:
        """The keys, least recently used first (a copy)."""
        return list(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


_LOCKED: weakref.WeakSet[LockedLruCache[object, object]] = weakref.WeakSet()


class LockedLruCache(LruCache[K, V]):
    """:class:`LruCache` whose every call holds the cache's own lock; fork-safe."""

    __slots__ = ("__weakref__", "_lock")

    def __init__(
        self,
        max_entries: int | None = None,
        *,
        max_weight: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        super().__init__(max_entries, max_weight=max_weight, weigh=weigh)
        self._lock = threading.Lock()
        _LOCKED.add(self)  # type: ignore[arg-type]

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        with self._lock:
            return LruCache.get(self, key, default)

    @overload
    def peek(self, key: K) -> V | None: ...
    @overload
    def peek(self, key: K, default: D) -> V | D: ...
    def peek(self, key: K, default: object = None) -> object:
        with self._lock:
            return self._entries.get(key, default)

    def put(self, key: K, value: V, *, refresh: bool = True) -> None:
        with self._lock:
            LruCache.put(self, key, value, refresh=refresh)

    def pop(self, key: K) -> V | None:
        with self._lock:
            return super().pop(key)

    def pop_oldest(self) -> tuple[K, V]:
        with self._lock:
            return self._drop_oldest()

    def clear(self) -> None:
        with self._lock:
            super().clear()

    def values(self) -> Iterator[V]:
        with self._lock:
            return iter(list(self._entries.values()))

    def ordered_keys(self) -> list[K]:
        with self._lock:
            return list(self._entries)

    def _after_fork_in_child(self) -> None:
        """A fresh lock; entries another thread was changing at the fork are forgotten."""
        if self._lock.locked():
            LruCache.clear(self)
        self._lock = threading.Lock()


def _renew_locks_after_fork() -> None:
    for cache in list(_LOCKED):
        cache._after_fork_in_child()


os.register_at_fork(after_in_child=_renew_locks_after_fork)


class IdentityLruCache(Generic[Obj, V]):
    """Values by the identity of an object, least recently used first out; not locked.

    Each entry holds its object, so the object's ``id`` cannot be reused by another object while
    it is kept, and a look-up checks that the object found is the one asked about.
    """

    __slots__ = ("_cache",)

    def __init__(self, max_entries: int) -> None:
        self._cache: LruCache[int, tuple[Obj, V]] = LruCache(max_entries)

    def peek_many(self, objects: Sequence[Obj]) -> list[V | None]:
        """The value of each object (None when not kept), refreshing none of them."""
        peek = self._cache.peek
        hits = [peek(id(o)) for o in objects]
        return [
            hit[1] if hit is not None and hit[0] is o else None for o, hit in zip(objects, hits, strict=True)
        ]

    def put_many(self, objects: Sequence[Obj], value: V) -> None:
        """Keep ``value`` for each object, each the most recent entry in turn."""
        put = self._cache.put
        for o in objects:
            put(id(o), (o, value))

    def clear(self) -> None:
        """Forget every entry."""
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)


__all__ = ["IdentityLruCache", "LockedLruCache", "LruCache"]
