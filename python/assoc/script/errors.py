"""The error a load script stops with: what went wrong, and where."""

from __future__ import annotations

from assoc import _core


class ScriptError(_core.Error):
    """A script problem at a line and column (both from 1; 0 when the place is unknown)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line else ""
        super().__init__(where + message)
