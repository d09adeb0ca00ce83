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
        if "*" in text or "?" in text:
            matches = Wildcard(text).matches
            return np.fromiter((matches(t) for t in values.texts), dtype=bool, count=len(values))
        # A word starts where no letter or digit comes before it; literal pieces only, so
        # each look-up is a linear scan.
        words = [re.compile(r"(?<!\w)" + re.escape(w)) for w in fold(text).split()]
        return np.fromiter(
            (all(w.search(folded) for w in words) for folded in map(fold, values.texts)),
            dtype=bool,
            count=len(values),
        )
