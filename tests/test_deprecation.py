"""Deprecation warnings name the line that used the old keyword, looking past forwarding wrappers only."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from icefloe.deprecation import forwards_keywords, renamed


def _api(**kwargs: Any) -> Any:
    return renamed(kwargs.get("new"), kwargs.get("old"), "new", "old")


@forwards_keywords
def _forwarding(**kwargs: Any) -> Any:
    return _api(**kwargs)


def _internal_caller() -> tuple[Any, int]:
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    return _api(old=2), line


def test_a_forwarding_wrapper_is_looked_past() -> None:
    with pytest.warns(DeprecationWarning, match="old= is deprecated") as caught:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        assert _forwarding(old=1) == 1
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_a_caller_that_is_not_a_forwarder_is_the_one_named() -> None:
    """An old name used by library code is that code's to fix: the warning names it, not its caller."""
    with pytest.warns(DeprecationWarning) as caught:
        value, line = _internal_caller()
    assert value == 2
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]
