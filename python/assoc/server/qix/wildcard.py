"""Qlik search strings: whole-value matches, any case, `*` any run of characters, `?` one.

Linear in the value's length: the pattern is cut at its `*`s (runs of them are one), the first
piece must start the value and the last end it, and the pieces between are found left to
right, each at its first place (a fixed-length piece found earliest leaves the most room for
the rest, so no other placement needs trying). No backtracking regular expression is run."""

from __future__ import annotations

import re
from collections.abc import Callable


def fold(text: str) -> str:
    """`text` in lower case, one character for one (so `?` still counts characters)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(low := c.lower()) != 1 else low for c in text)


class _Piece:
    """A piece of a pattern between `*`s: literal text, `?` standing for any one character."""

    def __init__(self, text: str) -> None:
        self.size = len(text)
        if "?" not in text:
            self.at: Callable[[str, int], bool] = lambda value, pos: value.startswith(text, pos)
            self.find: Callable[[str, int, int], int] = lambda value, pos, end: value.find(
                text, pos, end
            )
            return
        # Fixed length, no repetition: matching at one place is at most `size` steps.
        rx = re.compile("".join("." if c == "?" else re.escape(c) for c in text), re.DOTALL)
        self.at = lambda value, pos: rx.match(value, pos) is not None

        def find(value: str, pos: int, end: int) -> int:
            found = rx.search(value, pos, end)
            return -1 if found is None else found.start()

        self.find = find


class Wildcard:
    """One search string, compiled; `matches(text)` for each value."""

    def __init__(self, pattern: str) -> None:
        pieces = fold(pattern).split("*")
        self.exact = len(pieces) == 1
        self.first = _Piece(pieces[0])
        self.last = _Piece(pieces[-1])
        self.middle = [_Piece(p) for p in pieces[1:-1] if p]

    def matches(self, text: str) -> bool:
        """True when the whole of `text` matches (any case)."""
        value = fold(text)
        first, last = self.first, self.last
        if self.exact:
            return len(value) == first.size and first.at(value, 0)
        start, end = first.size, len(value) - last.size
        if end < start or not first.at(value, 0) or not last.at(value, end):
            return False
        for piece in self.middle:
            found = piece.find(value, start, end)
            if found < 0:
                return False
            start = found + piece.size
        return True
