"""What ``icefloe.lru`` costs per call against the OrderedDict code each cache used to repeat.

Four operations, each as a batch of calls timed in turns (hand-written, ``LruCache``, ...):

- ``get, hit``: look a present key up and make it the most recent (``get`` + ``move_to_end``);
- ``put, evicting``: put a new key into a full cache, dropping the oldest (the loop over
  ``popitem(last=False)``);
- both again with a lock taken per call (``threading.Lock`` around the OrderedDict code vs
  ``LockedLruCache``).

Nanoseconds per call are the batch's median divided by its calls.
"""

from __future__ import annotations

import argparse
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from bench._common import command_line, print_environment, print_table, time_interleaved
from icefloe.lru import LockedLruCache, LruCache

SIZE = 64


def _hand_get(calls: int, locked: bool) -> Callable[[], None]:
    entries: OrderedDict[int, int] = OrderedDict((i, i) for i in range(SIZE))
    lock = threading.Lock()

    def plain() -> None:
        for i in range(calls):
            key = i % SIZE
            found = entries.get(key)
            if found is not None:
                entries.move_to_end(key)

    def with_lock() -> None:
        for i in range(calls):
            key = i % SIZE
            with lock:
                found = entries.get(key)
                if found is not None:
                    entries.move_to_end(key)

    return with_lock if locked else plain


def _hand_put(calls: int, locked: bool) -> Callable[[], None]:
    entries: OrderedDict[int, int] = OrderedDict((i, i) for i in range(SIZE))
    lock = threading.Lock()
    counter = [SIZE]

    def plain() -> None:
        start = counter[0]
        for key in range(start, start + calls):
            entries[key] = key
            entries.move_to_end(key)
            while len(entries) > SIZE:
                entries.popitem(last=False)
        counter[0] = start + calls

    def with_lock() -> None:
        start = counter[0]
        for key in range(start, start + calls):
            with lock:
                entries[key] = key
                entries.move_to_end(key)
                while len(entries) > SIZE:
                    entries.popitem(last=False)
        counter[0] = start + calls

    return with_lock if locked else plain


def _cache(locked: bool) -> LruCache[int, int]:
    cache: LruCache[int, int] = LockedLruCache(SIZE) if locked else LruCache(SIZE)
    for i in range(SIZE):
        cache.put(i, i)
    return cache


def _lru_get(calls: int, locked: bool) -> Callable[[], None]:
    cache = _cache(locked)

    def run() -> None:
        get = cache.get
        for i in range(calls):
            get(i % SIZE)

    return run


def _lru_put(calls: int, locked: bool) -> Callable[[], None]:
    cache = _cache(locked)
    counter = [SIZE]

    def run() -> None:
        put = cache.put
        start = counter[0]
        for key in range(start, start + calls):
            put(key, key)
        counter[0] = start + calls

    return run


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per timed batch")
    parser.add_argument("--runs", type=int, default=15, help="timed batches per operation")
    args = parser.parse_args(argv)
    print_environment(
        "icefloe.lru vs hand-written OrderedDict caches",
        command_line("bench.bench_lru", argv),
        {"calls": args.calls, "runs": args.runs, "size": SIZE},
    )
    rows = []
    for name, hand, lru in [("get, hit", _hand_get, _lru_get), ("put, evicting", _hand_put, _lru_put)]:
        for locked in (False, True):
            old, new = time_interleaved([hand(args.calls, locked), lru(args.calls, locked)], args.runs)
            old_ns, new_ns = (t.median / args.calls * 1e9 for t in (old, new))
            label = f"{name}{', locked' if locked else ''}"
            rows.append((label, f"{old_ns:.0f} ns", f"{new_ns:.0f} ns", f"{new_ns / old_ns:.2f}x"))
    headers = ["operation", "OrderedDict by hand", "icefloe.lru", "lru / hand"]
    print_table("ns per call (median)", headers, rows)


if __name__ == "__main__":
    main()
