"""Taking parsed objects from metadata already held when a JSON list repeats them exactly.

A catalog answers a commit with the table's whole metadata: every snapshot and log entry the
client proposed, plus what the catalog added. Parsing it again costs as much as the table's
history; comparing it with what the client holds costs one C-level comparison of lists, if the
comparison is exact. Python's ``==`` is not exact for JSON: ``true == 1`` and ``1.0 == 1``. It is
exact among ``int``, ``str`` and ``dict`` (no value of one equals a value of another), so two lists
of JSON objects whose member values have only those types are equal exactly when a parser would
read the same values from both. ``exact_prefix`` checks equality and those types, both in C.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import chain
from operator import is_
from threading import get_ident
from typing import Any, Generic, TypeVar

_CONTEXTS_KEPT = 64
"""Tables (contexts), by thread, whose last list of forms is kept."""

LOG_VALUE_TYPES = frozenset({int, str})
"""Member types of a snapshot-log or metadata-log entry."""

SNAPSHOT_VALUE_TYPES = frozenset({int, str, dict})
"""Member types of a snapshot object (its summary is the one dict; its values are strings)."""

_values_of = dict.values

T = TypeVar("T")
C = TypeVar("C", bound=Hashable)


def exact_prefix(items: Sequence[Any], expected: list[dict[str, Any]], value_types: frozenset[type]) -> int:
    """``len(expected)`` when the first items of ``items`` are exactly ``expected``, else 0.

    Exactly: equal JSON objects (a nested object compared by ``==`` holds only strings, as a
    snapshot summary does) whose top-level member values have only ``value_types``, types no
    value of which equals a value of another. The values of ``expected`` must have those types
    already (``KnownForms`` keeps no other form); only the items' are checked here."""
    n = len(expected)
    if n == 0 or len(items) < n:
        return 0
    head = list(items[:n])
    if head != expected or set(map(type, head)) != {dict}:
        return 0
    if not set(map(type, chain.from_iterable(map(_values_of, head)))) <= value_types:
        return 0
    return n


def same_start(last: Sequence[Any], items: Sequence[Any]) -> int:
    """How many of ``items``, from the first, are ``last``'s very objects (compared in C)."""
    same = list(map(is_, last, items))
    return same.index(False) if False in same else len(same)


class KnownForms(Generic[T, C]):
    """The JSON object each held object parses back from, made once per object and context.

    ``encode(obj, context)`` writes the object; ``parses_back(form, obj, context)`` is the exact
    check the parser's own reuse rule applies. A form is kept only when its member values have
    ``value_types`` and it passes that check (otherwise ``None``: the object is always parsed
    again). Objects are remembered by identity
    and kept alive by the memo, so an id is never reused for another object while remembered.
    """

    def __init__(
        self,
        encode: Callable[[T, C], dict[str, Any]],
        parses_back: Callable[[dict[str, Any], T, C], bool],
        value_types: frozenset[type],
        limit: int = 4096,
    ) -> None:
        self._encode = encode
        self._parses_back = parses_back
        self.value_types = value_types
        self._limit = limit
        self._forms: dict[tuple[int, C], tuple[T, dict[str, Any] | None]] = {}
        self._last: dict[tuple[C, int], tuple[tuple[T, ...], list[dict[str, Any]]]] = {}

    def forms(self, held: Sequence[T], context: C) -> list[dict[str, Any]] | None:
        """The forms of ``held`` in order, or None when one has none.

        The last list each thread made in each context is kept with its objects: a table's next
        ``held`` usually starts with the same objects (the previous reply's, reused; all but the
        newest when the catalog rebased it), so only the forms of the objects after them are
        looked up."""
        kept = (context, get_ident())  # threads appending to one table each hold their own objects
        last = self._last.get(kept)
        n = 0 if last is None else same_start(last[0], held)
        if last is not None and n:
            more = self._forms_of(held[n:], context)
            out = None if more is None else last[1][:n] + more
        else:
            out = self._forms_of(held, context)
        if out is not None:
            if len(self._last) >= _CONTEXTS_KEPT:
                self._last.clear()
            self._last[kept] = (tuple(held), out)
        return out

    def _forms_of(self, held: Sequence[T], context: C) -> list[dict[str, Any]] | None:
        out: list[dict[str, Any]] = []
        for obj in held:
            form = self.form(obj, context)
            if form is None:
                return None
            out.append(form)
        return out

    def form(self, obj: T, context: C) -> dict[str, Any] | None:
        """The JSON object ``obj`` parses back from in ``context``, or None."""
        key = (id(obj), context)
        hit = self._forms.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        form: dict[str, Any] | None = self._encode(obj, context)
        if form is not None and not (
            set(map(type, form.values())) <= self.value_types and self._parses_back(form, obj, context)
        ):
            form = None
        if len(self._forms) >= self._limit:
            self._forms.clear()
        self._forms[key] = (obj, form)
        return form
