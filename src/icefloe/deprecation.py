"""Old keyword names that still work for one release, with a ``DeprecationWarning``.

The warning points at the first caller outside icefloe, however many icefloe frames lie between
(``Table.delete`` forwards to ``TableTransaction.delete``, Spark wrappers forward to ``dml``), so
the user sees the line to change.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from icefloe.errors import ValidationError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_deprecated(message: str) -> None:
    """Issue a ``DeprecationWarning`` attributed to the nearest caller outside the icefloe package."""
    frame = sys._getframe(1)
    stacklevel = 2  # the caller of this function
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        stacklevel += 1
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def renamed(new: Any, old: Any, new_name: str, old_name: str, default: Any = None) -> Any:
    """The value of a renamed keyword: ``new``, else the deprecated ``old`` (warning), else ``default``.

    ``None`` means "not given" for both names.
    """
    if old is None:
        return default if new is None else new
    if new is not None:
        raise ValidationError(f"give {new_name}= only ({old_name}= is its deprecated name)")
    warn_deprecated(f"{old_name}= is deprecated: use {new_name}=")
    return old
