"""The idempotency cache keeps the final replies of the last keys first stored."""

from __future__ import annotations

from icefloe.server.context import IdempotencyCache, Reply


def test_the_first_stored_key_goes_first_whether_asked_again_or_answered_again() -> None:
    cache = IdempotencyCache(2)
    a, b, c = (("alice", key) for key in "abc")
    first = Reply(payload={"n": 1})
    cache.put(a, first)
    cache.put(b, Reply(payload={"n": 2}))
    assert cache.get(a) is first  # a retry is answered ...
    replaced = Reply(payload={"n": 3})
    cache.put(a, replaced)  # ... and a racing request's reply replaces it in place
    assert cache.get(a) is replaced
    cache.put(c, Reply(payload={"n": 4}))
    assert cache.get(a) is None
    assert cache.get(b) == Reply(payload={"n": 2}) and cache.get(c) == Reply(payload={"n": 4})
    assert cache.get(("bob", "b")) is None
