"""Values worked out once per Arrow type, found again by the type object before its hash.

Hashing a ``pa.DataType`` formats the whole type: for a content entry's struct it costs about
25 microseconds, and every ``functools.lru_cache`` keyed by a type pays it on each call. A small
append's root row went through a dozen such look-ups (filling required members, nulling members
under null structs), more than the conversion itself. :class:`TypeMemo` looks a type up by
identity first (the encoder passes the same struct type object on every call) and only then by
equality with field metadata (field ids), so a type met again as the same object costs a
dictionary look-up.

The memo holds each type it was asked about, so an identity stays unique while it is remembered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pyarrow as pa

from icefloe.lru import LruCache

V = TypeVar("V")

_MISSING: Any = object()
_IDENTITIES_KEPT = 256
"""Type objects remembered by identity (callers building a fresh type per call fill it, then it
starts again; the equality cache behind it keeps their values)."""


class _Exactly:
    """A type as a dictionary key equal only to the same type with the same field metadata (field
    ids): ``pa.DataType.__eq__`` ignores metadata, so the statistics structs of two columns of one
    type would share a value built with the first one's fields."""

    __slots__ = ("hash", "type")

    def __init__(self, t: pa.DataType) -> None:
        self.type = t
        self.hash = hash(t)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Exactly) and self.type.equals(other.type, check_metadata=True)


class TypeMemo(Generic[V]):
    """``make(t)`` per Arrow type (field metadata included), remembered by identity, then by
    equality for the last ``maxsize`` types."""

    def __init__(self, make: Callable[[pa.DataType], V], maxsize: int = 256) -> None:
        self._make = make
        self._by_equality: LruCache[_Exactly, V] = LruCache(maxsize)
        self._by_identity: dict[int, tuple[pa.DataType, V]] = {}
        self._lock = threading.RLock()  # make(t) may ask this memo about t's members

    def __call__(self, t: pa.DataType) -> V:
        hit = self._by_identity.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        key = _Exactly(t)
        with self._lock:
            value: V = self._by_equality.get(key, _MISSING)
            if value is _MISSING:
                value = self._make(t)
                self._by_equality.put(key, value)
            if len(self._by_identity) >= _IDENTITIES_KEPT:
                self._by_identity.clear()
            self._by_identity[id(t)] = (t, value)
        return value


__all__ = ["TypeMemo"]
