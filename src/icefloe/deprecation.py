"""Old keyword names that still work for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from typing import Any

from icefloe.errors import ValidationError


def renamed(
    new: Any, old: Any, new_name: str, old_name: str, default: Any = None, stacklevel: int = 3
) -> Any:
    """The value of a renamed keyword: ``new``, else the deprecated ``old`` (warning), else ``default``.

    ``None`` means "not given" for both names.
    """
    if old is None:
        return default if new is None else new
    if new is not None:
        raise ValidationError(f"give {new_name}= only ({old_name}= is its deprecated name)")
    warnings.warn(f"{old_name}= is deprecated: use {new_name}=", DeprecationWarning, stacklevel=stacklevel)
    return old
