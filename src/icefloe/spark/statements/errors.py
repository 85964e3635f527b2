"""Errors of the SQL front-end: syntax errors that name their position, constructs icefloe cannot run."""

from __future__ import annotations

from icefloe.errors import IcefloeError, Unsupported, ValidationError


class SqlSyntaxError(ValidationError):
    """The statement does not parse; the message names the line and column."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"syntax error at line {line}, column {column}: {message}")
        self.line = line
        self.column = column


class UnsupportedStatement(Unsupported):
    """A statement or clause on an icefloe table that icefloe's SQL front-end does not run."""

    def __init__(self, construct: str, detail: str = "") -> None:
        text = f"icefloe SQL does not support {construct}"
        super().__init__(text + (f": {detail}" if detail else ""))
        self.construct = construct


class CascadeIncomplete(IcefloeError):
    """``DROP NAMESPACE ... CASCADE`` failed midway; ``dropped`` lists what it had dropped already
    (``table a.b.t``, ``view a.v``, ``namespace a.b``, in order): catalogs cannot undo those."""

    def __init__(self, message: str, dropped: list[str]) -> None:
        super().__init__(message)
        self.dropped = list(dropped)
