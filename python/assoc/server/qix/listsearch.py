"""List object searches as Qlik runs them: expressions, words, wildcards and numeric
comparisons.

- `=…` is an expression search: a hypercube with the field as its dimension and the
  expression as its measure, under the list's selections; the values whose result is true (a
  number other than 0) match. Excluded values have no row, so they never match, unless the
  expression's set reaches them (`=Sum({1} Sales) > 100`).
- `>`, `<`, `>=`, `<=` followed by numbers (`>10<=20`, all must hold): numeric values only.
- a text with `*` or `?`: the whole value matches the wildcard pattern (wildcard.py, linear).
- any other text: every word of it (any case) starts a word of the value.
- an empty text matches every value.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import assoc
from assoc.server.qix.facts import FieldValues
from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError
from assoc.server.qix.wildcard import Wildcard, fold

MAX_SEARCH_CHARS = 1000
CubeOf = Callable[[str], assoc.Hypercube]  # an expression -> its cube by the searched field
_COMPARISON = re.compile(r"\s*(>=|<=|>|<)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")


def _comparisons(text: str) -> list[tuple[str, float]]:
    """The (operator, number) pairs of a numeric search (error 8 when it is not one)."""
    out, pos = [], 0
    while pos < len(text.rstrip()):
        found = _COMPARISON.match(text, pos)
        if found is None:
            raise RpcError(
                INVALID_PARAMETERS,
                "qMatch",
                f"numeric search {text!r}: expected >, <, >= or <= and a number at {pos}",
            )
        out.append((found.group(1), float(found.group(2))))
        pos = found.end()
    return out


@dataclass(frozen=True)
class ListSearch:
    """One search text, checked; `mask(values)` marks the values it matches."""

    text: str

    @classmethod
    def parse(cls, text: str) -> ListSearch:
        """Checks a search text: error 8 when too long, a bad numeric search or an empty
        expression."""
        if len(text) > MAX_SEARCH_CHARS:
            raise RpcError(INVALID_PARAMETERS, "qMatch", f"at most {MAX_SEARCH_CHARS} characters")
        stripped = text.strip()
        if stripped.startswith("=") and not stripped[1:].strip():
            raise RpcError(INVALID_PARAMETERS, "qMatch", "an expression search needs an expression")
        if stripped[:1] in ("<", ">"):
            _comparisons(stripped)
        return cls(stripped)

    @property
    def expression(self) -> str | None:
        """The expression of an expression search (`=…`), None for the other kinds."""
        return self.text[1:] if self.text.startswith("=") else None

    def check(self, cube_of: CubeOf) -> None:
        """Computes an expression search once: a bad expression is error 8 with its message."""
        if self.expression is not None:
            self._evaluate(cube_of, 0)

    def _evaluate(self, cube_of: CubeOf, size: int) -> np.ndarray:
        expression = self.expression
        assert expression is not None
        try:
            cube = cube_of(expression)
            codes, results = cube.codes(0), cube.array(1)
        except assoc.Error as exc:
            raise RpcError(INVALID_PARAMETERS, "qMatch", f"expression search: {exc}") from None
        matched = np.zeros(size, dtype=bool)
        with np.errstate(invalid="ignore"):
            true = (codes >= 0) & (codes < size) & ~np.isnan(results) & (results != 0)
        matched[codes[true]] = True
        return matched

    def mask(self, values: FieldValues, cube_of: CubeOf) -> np.ndarray:
        """True for each value (symbol index) the search matches; `cube_of(expression)` is the
        cube of an expression search (the field as its one dimension, under the list's
        selections)."""
        text = self.text
        if not text:
            return np.ones(len(values), dtype=bool)
        if self.expression is not None:
            return self._evaluate(cube_of, len(values))
        if text[0] in "<>":
            numbers = values.numbers
            keep = values.is_numeric.copy()
            with np.errstate(invalid="ignore"):
                for op, bound in _comparisons(text):
                    if op == ">":
                        keep &= numbers > bound
                    elif op == ">=":
                        keep &= numbers >= bound
                    elif op == "<":
                        keep &= numbers < bound
                    else:
                        keep &= numbers <= bound
            return keep
        return _index_of(values).mask(text)


# The character each value follows in a field's joined texts (a literal search without it
# cannot match across two values).
_SEPARATOR = "\x00"
_KEPT_MASKS = 8  # the last text searches' masks each field keeps (layouts and pages reread)


class _SearchIndex:
    """A field's texts as text searches read them: folded to lower case and joined, each
    after a separator, so that a literal is found in every value by one scan in C; and the
    masks of the latest searches (each layout and page of a list being searched rereads its
    search's)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self._masks: dict[tuple[str, str], np.ndarray] = {}  # by kind and text
        self._lock = threading.Lock()
        self.joined: str | None = None  # None: a text holds the separator, matched one by one
        self.starts = np.zeros(0, dtype=np.int64)
        joined = _SEPARATOR + _SEPARATOR.join(texts) + _SEPARATOR
        if joined.count(_SEPARATOR) != len(texts) + 1:
            return
        # Lower case of the whole is each value's when no character changed its length (the
        # separator, neither cased nor case-ignorable, stands as a value's end would).
        lowered = joined.lower()
        if len(lowered) != len(joined):
            lowered = _SEPARATOR + _SEPARATOR.join(map(fold, texts)) + _SEPARATOR
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        self.starts = np.cumsum(lengths + 1) - lengths  # value i's first character
        self.joined = lowered

    def mask(self, text: str) -> np.ndarray:
        """The values a word or wildcard search matches (read-only)."""
        if "*" in text or "?" in text:
            return self.whole(text)
        return self._kept(("words", text), lambda: self._words(text))

    def whole(self, text: str) -> np.ndarray:
        """The values whose whole text matches `text`, any case, `*` and `?` wildcards
        (read-only)."""
        return self._kept(("whole", text), lambda: self._wildcard(text))

    def _kept(self, key: tuple[str, str], make: Callable[[], np.ndarray]) -> np.ndarray:
        with self._lock:
            found = self._masks.get(key)
        if found is not None:
            return found
        found = make()
        found.flags.writeable = False
        with self._lock:
            for old in list(self._masks)[: max(0, len(self._masks) - _KEPT_MASKS + 1)]:
                del self._masks[old]
            self._masks[key] = found
        return found

    def _values_at(self, pattern: re.Pattern[str]) -> np.ndarray:
        """The values holding a match of `pattern` (a literal, maybe with a look-behind)."""
        assert self.joined is not None
        at = np.fromiter((m.start() for m in pattern.finditer(self.joined)), dtype=np.int64)
        out = np.zeros(len(self.texts), dtype=bool)
        out[np.searchsorted(self.starts, at, side="right") - 1] = True
        return out

    def _words(self, text: str) -> np.ndarray:
        """Every word of `text` starts a word of the value (where no letter or digit comes
        before it); literal pieces only, so each look-up is a linear scan."""
        words = fold(text).split()
        if self.joined is None or any(_SEPARATOR in w for w in words):
            starts = [re.compile(r"(?<!\w)" + re.escape(w)) for w in words]
            return np.fromiter(
                (all(w.search(folded) for w in starts) for folded in map(fold, self.texts)),
                dtype=bool,
                count=len(self.texts),
            )
        out = np.ones(len(self.texts), dtype=bool)
        for word in words:
            # The word, then a look back past it: a literal first lets the scan skip ahead.
            literal = re.escape(word)
            out &= self._values_at(re.compile(literal + r"(?<!\w" + literal + ")"))
        return out

    def _wildcard(self, text: str) -> np.ndarray:
        """The whole value matches the pattern (wildcard.py; without `*` or `?`, the whole
        value is the text). Values are first narrowed to those holding its longest literal
        piece (at their start or end when it is the first or last), then each of them is
        matched."""
        matches = Wildcard(text).matches
        pieces = fold(text).split("*")
        if "*" in text and not any(pieces):  # `*`: every value
            return np.ones(len(self.texts), dtype=bool)
        if "?" in text:  # its literal parts, none anchored
            anchored = [part for piece in pieces for part in piece.split("?")]
        elif len(pieces) == 1:
            anchored = [_SEPARATOR + pieces[0] + _SEPARATOR]
        else:
            anchored = [_SEPARATOR + pieces[0], *pieces[1:-1], pieces[-1] + _SEPARATOR]
        # The longest part, anchored when it can be (one the separator alone would find
        # every value).
        literal = max(anchored, key=lambda piece: (len(piece.strip(_SEPARATOR)), len(piece)))
        if self.joined is None or _SEPARATOR in text or not literal:
            return np.fromiter((matches(t) for t in self.texts), dtype=bool, count=len(self.texts))
        # A match's position is that of its first character: past the separator it starts with.
        lead = 1 if literal.startswith(_SEPARATOR) else 0
        at = np.fromiter(
            (m.start() + lead for m in re.finditer(re.escape(literal), self.joined)),
            dtype=np.int64,
        )
        out = np.zeros(len(self.texts), dtype=bool)
        candidates = np.unique(np.searchsorted(self.starts, at, side="right") - 1)
        texts = self.texts
        out[candidates] = [matches(texts[i]) for i in candidates.tolist()]
        return out


_INDEXES: weakref.WeakKeyDictionary[FieldValues, _SearchIndex] = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def whole_values(values: FieldValues, text: str) -> np.ndarray:
    """The values whose whole text matches `text` (any case, `*` and `?`), as Field.Select
    matches them: a mask over the field's values (read-only)."""
    return _index_of(values).whole(text)


def _index_of(values: FieldValues) -> _SearchIndex:
    """The field's search index, made on its first text search and kept with its values."""
    with _INDEXES_LOCK:
        index = _INDEXES.get(values)
    if index is None:
        index = _SearchIndex(values.texts)
        with _INDEXES_LOCK:
            index = _INDEXES.setdefault(values, index)
    return index
