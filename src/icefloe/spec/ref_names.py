"""Valid branch and tag names (Git's ``check-ref-format`` rules, which Iceberg refs mirror).

Iceberg Java only refuses a null name, but branch and tag names end up in Spark SQL
(``VERSION AS OF 'audit'``, ``db.table.branch_audit``), in file listings and in logs, so icefloe
refuses the names Git refuses for a ref, plus invisible characters:

- empty or blank names, names longer than 255 characters;
- ASCII control characters, space and any other whitespace, and the characters ``~ ^ : ? * [ \\``;
- invisible Unicode format characters (zero-width spaces and joiners, bidi overrides, BOM);
- ``/`` at the start or the end, ``//``, a ``/``-separated component that starts with ``.`` or
  ends with ``.lock``, ``..`` anywhere, a trailing ``.``, ``@{``, or the name ``@``.
"""

from __future__ import annotations

import unicodedata

from icefloe.errors import ValidationError

MAX_REF_NAME_LENGTH = 255
_FORBIDDEN = set("~^:?*[\\")
_INVISIBLE_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp")


def ref_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a branch or tag, or None when it can."""
    if not isinstance(name, str):
        return f"{name!r} is not a string"
    if not name.strip():
        return "a branch or tag name cannot be empty or blank"
    if len(name) > MAX_REF_NAME_LENGTH:
        return f"longer than {MAX_REF_NAME_LENGTH} characters"
    for ch in name:
        if ch in _FORBIDDEN:
            return f"contains {ch!r}"
        if ch.isspace() or unicodedata.category(ch) in _INVISIBLE_CATEGORIES:
            return f"contains the invisible or whitespace character U+{ord(ch):04X}"
    if name == "@" or "@{" in name:
        return "is '@' or contains '@{'"
    if ".." in name:
        return "contains '..'"
    if name.endswith("."):
        return "ends with '.'"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "starts or ends with '/' or contains '//'"
    for component in name.split("/"):
        if component.startswith(".") or component.endswith(".lock"):
            return f"has a '/'-separated part {component!r} starting with '.' or ending with '.lock'"
    return None


def check_ref_name(name: object, what: str = "branch or tag") -> str:
    """``name`` if it is a valid branch or tag name; ValidationError naming the problem otherwise."""
    problem = ref_name_problem(name)
    if problem is not None:
        raise ValidationError(f"invalid {what} name {name!r}: {problem}")
    assert isinstance(name, str)
    return name
