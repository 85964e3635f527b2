"""LruCache and its locked and identity-keyed forms: eviction order, refreshing, weight bounds,
threads (barrier-synchronised, exact final contents) and a fork while another thread holds the lock."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from icefloe.lru import IdentityLruCache, LockedLruCache, LruCache


def _filled(cache: LruCache[str, int], keys: str) -> LruCache[str, int]:
    for i, key in enumerate(keys):
        cache.put(key, i)
    return cache


def test_the_least_recently_put_goes_first() -> None:
    cache = _filled(LruCache(3), "abcde")
    assert cache.ordered_keys() == ["c", "d", "e"]
    assert (len(cache), "a" in cache, cache.get("a"), cache.get("c")) == (3, False, None, 2)


def test_get_refreshes_peek_does_not() -> None:
    cache = _filled(LruCache(3), "abc")
    assert cache.get("a") == 0
    assert cache.peek("b") == 1
    assert cache.ordered_keys() == ["b", "c", "a"]
    cache.put("d", 3)
    assert cache.ordered_keys() == ["c", "a", "d"]


def test_missing_keys_give_the_default_and_none_is_a_value() -> None:
    cache: LruCache[str, int | None] = LruCache(2)
    cache.put("none", None)
    assert cache.get("none", -1) is None and cache.peek("none", -1) is None
    assert cache.get("absent", -1) == -1 and cache.peek("absent") is None


def test_put_refreshes_unless_asked_to_keep_the_place() -> None:
    cache = _filled(LruCache(3), "abc")
    cache.put("a", 10)
    assert cache.ordered_keys() == ["b", "c", "a"]
    cache.put("b", 11, refresh=False)
    assert cache.ordered_keys() == ["b", "c", "a"] and cache.peek("b") == 11
    cache.put("d", 3, refresh=False)  # a new key is the newest either way
    assert cache.ordered_keys() == ["c", "a", "d"]


def test_pop_pop_oldest_and_clear() -> None:
    cache = _filled(LruCache(4), "abcd")
    assert cache.pop("b") == 1 and cache.pop("b") is None
    assert cache.pop_oldest() == ("a", 0)
    assert list(cache.values()) == [2, 3]
    cache.clear()
    assert len(cache) == 0 and cache.ordered_keys() == []
    with pytest.raises(KeyError):
        cache.pop_oldest()


def _weighted(max_weight: int, max_entries: int | None = None) -> LruCache[str, bytes]:
    return LruCache(max_entries, max_weight=max_weight, weigh=len)


def test_weight_bound_evicts_the_oldest_until_it_fits() -> None:
    cache = _weighted(10)
    for key, size in [("a", 4), ("b", 4), ("c", 2)]:
        cache.put(key, b"x" * size)
    assert (cache.ordered_keys(), cache.weight) == (["a", "b", "c"], 10)
    cache.get("a")
    cache.put("d", b"x" * 3)  # 13: b (the least recent) goes
    assert (cache.ordered_keys(), cache.weight) == (["c", "a", "d"], 9)
    cache.put("a", b"x")  # replacing re-weighs
    assert (cache.ordered_keys(), cache.weight) == (["c", "d", "a"], 6)
    assert cache.pop("d") == b"xxx" and cache.weight == 3
    assert cache.pop_oldest() == ("c", b"xx") and cache.weight == 1


def test_an_entry_heavier_than_the_bound_is_kept_alone() -> None:
    cache = _weighted(10)
    cache.put("a", b"x" * 3)
    cache.put("big", b"x" * 25)
    assert (cache.ordered_keys(), cache.weight) == (["big"], 25)
    cache.put("b", b"x")
    assert (cache.ordered_keys(), cache.weight) == (["b"], 1)


def test_count_and_weight_bounds_together_and_a_lowered_bound() -> None:
    cache = _weighted(100, max_entries=2)
    for key in "abc":
        cache.put(key, b"x" * 10)
    assert (cache.ordered_keys(), cache.weight) == (["b", "c"], 20)
    cache.max_weight = 14  # applies from the next put
    assert cache.ordered_keys() == ["b", "c"]
    cache.put("d", b"x" * 5)
    assert (cache.ordered_keys(), cache.weight) == (["d"], 5)
    cache.clear()
    assert cache.weight == 0


def test_weight_needs_a_weigher() -> None:
    with pytest.raises(ValueError):
        LruCache(max_weight=10)
    with pytest.raises(ValueError):
        LruCache(weigh=len)


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable)


def test_identity_keys_tell_equal_objects_apart_and_need_no_hash() -> None:
    cache: IdentityLruCache[_Unhashable, str] = IdentityLruCache(3)
    a, b, c, d = (_Unhashable() for _ in range(4))
    assert a == b
    cache.put_many([a, b], "first")
    assert cache.peek_many([a, b, c]) == ["first", "first", None]
    cache.put_many([c, d], "second")  # a, the oldest, goes
    assert cache.peek_many([a, b, c, d]) == [None, "first", "second", "second"]
    assert len(cache) == 3
    cache.clear()
    assert cache.peek_many([b]) == [None] and len(cache) == 0


def test_identity_cache_keeps_its_objects_so_an_id_is_never_reused_while_kept() -> None:
    cache: IdentityLruCache[object, int] = IdentityLruCache(2)
    kept = _Unhashable()
    kept_id = id(kept)
    cache.put_many([kept], 1)
    del kept  # the cache holds the only reference
    newcomers = [_Unhashable() for _ in range(1000)]
    assert kept_id not in {id(o) for o in newcomers}
    assert cache.peek_many(newcomers[:1]) == [None] and len(cache) == 1


def test_threads_share_a_locked_cache() -> None:
    """Eight threads start together, each putting and reading back its own keys: nothing is lost
    while everything fits, and with a bound the count and weight stay exact."""
    threads, per_thread = 8, 500
    roomy: LockedLruCache[tuple[int, int], int] = LockedLruCache(threads * per_thread)
    tight: LockedLruCache[tuple[int, int], bytes] = LockedLruCache(max_weight=1000, weigh=len)
    start = threading.Barrier(threads)
    misses: list[tuple[int, int]] = []

    def work(t: int) -> None:
        start.wait()
        for i in range(per_thread):
            roomy.put((t, i), t * per_thread + i)
            tight.put((t, i), b"x" * (1 + i % 7))
            if roomy.get((t, i)) != t * per_thread + i:
                misses.append((t, i))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert misses == []
    assert {k: roomy.peek(k) for k in roomy.ordered_keys()} == {
        (t, i): t * per_thread + i for t in range(threads) for i in range(per_thread)
    }
    kept = tight.ordered_keys()
    assert tight.weight == sum(len(tight.peek(k) or b"") for k in kept)
    assert tight.weight <= 1000 and tight.weight + 7 > 1000
    assert list(tight.values()) == [tight.peek(k) for k in kept]


# Forked from a small interpreter of its own, not from the test process and its many threads.
FORK_CHECK = """
import os, signal, threading
from icefloe.lru import LockedLruCache
idle = LockedLruCache(4)
idle.put("kept", 1)
busy = LockedLruCache(4)
busy.put("maybe half-changed", 2)
held, done = threading.Event(), threading.Event()
def hold():
    with busy._lock:  # another thread in the middle of a call when the process forks
        held.set()
        done.wait()
threading.Thread(target=hold).start()
held.wait()
child = os.fork()
if child == 0:
    signal.alarm(30)  # a lock inherited held would hang here forever
    ok = False
    try:
        busy.put("child", 3)
        ok = busy.ordered_keys() == ["child"] and idle.get("kept") == 1
    finally:
        os._exit(0 if ok else 3)
_, status = os.waitpid(child, 0)
done.set()
busy.put("parent", 4)
assert busy.ordered_keys() == ["maybe half-changed", "parent"]
print("child exit code", os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_gets_a_fresh_lock() -> None:
    """A child forked while another thread holds a cache's lock can use the cache (entries that
    thread may have been changing are dropped; other caches keep theirs)."""
    done = subprocess.run([sys.executable, "-c", FORK_CHECK], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "child exit code 0"
