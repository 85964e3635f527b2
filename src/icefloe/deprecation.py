"""Old keyword names that still work for one release, with a ``DeprecationWarning``.

A warning names the line that used the old name: ``stacklevel`` counts frames as for
``warnings.warn``, and frames of wrappers that only pass their caller's keywords on (marked with
:func:`forwards_keywords`, e.g. ``Table.delete`` forwarding to ``TableTransaction.delete``) are
looked past. icefloe's own use of an old name is still attributed to icefloe.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

from icefloe.errors import ValidationError

F = TypeVar("F", bound=Callable[..., Any])

_FORWARDERS: set[CodeType] = set()


def forwards_keywords(wrapper: F) -> F:
    """Mark a wrapper that passes its caller's arguments on unchanged (warnings look past it)."""
    _FORWARDERS.add(wrapper.__code__)
    return wrapper


def warn_deprecated(message: str, stacklevel: int = 2) -> None:
    """``warnings.warn(message, DeprecationWarning, stacklevel)`` as if called by our caller,
    attributed past any keyword-forwarding wrapper frames."""
    frame = sys._getframe(stacklevel)
    while frame.f_code in _FORWARDERS and frame.f_back is not None:
        frame = frame.f_back
        stacklevel += 1
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


def renamed(
    new: Any, old: Any, new_name: str, old_name: str, default: Any = None, stacklevel: int = 3
) -> Any:
    """The value of a renamed keyword: ``new``, else the deprecated ``old`` (warning), else ``default``.

    ``None`` means "not given" for both names. The warning points ``stacklevel`` frames up from
    here (default: the caller of the function that calls ``renamed``).
    """
    if old is None:
        return default if new is None else new
    if new is not None:
        raise ValidationError(f"give {new_name}= only ({old_name}= is its deprecated name)")
    warn_deprecated(f"{old_name}= is deprecated: use {new_name}=", stacklevel)
    return old
