"""List object searches as Qlik runs them: words, wildcards and numeric comparisons.

- `=…` is an expression search: error 20 (the engine evaluates expressions per record
  aggregation, not a condition per field value).
- `>`, `<`, `>=`, `<=` followed by numbers (`>10<=20`, all must hold): numeric values only.
- a text with `*` or `?`: the whole value matches the wildcard pattern (wildcard.py, linear).
- any other text: every word of it (any case) starts a word of the value.
- an empty text matches every value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from assoc.server.qix.facts import FieldValues
from assoc.server.qix.rpc import INVALID_PARAMETERS, NOT_IMPLEMENTED, RpcError
from assoc.server.qix.wildcard import Wildcard, fold

MAX_SEARCH_CHARS = 1000
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
        """Checks a search text: errors 8 (too long, a bad numeric search) and 20 (`=`)."""
        if len(text) > MAX_SEARCH_CHARS:
            raise RpcError(INVALID_PARAMETERS, "qMatch", f"at most {MAX_SEARCH_CHARS} characters")
        stripped = text.strip()
        if stripped.startswith("="):
            raise RpcError(
                NOT_IMPLEMENTED,
                "qMatch",
                "expression searches (=…) are not implemented: "
                "use words, wildcards or >, < comparisons",
            )
        if stripped[:1] in ("<", ">"):
            _comparisons(stripped)
        return cls(stripped)

    def mask(self, values: FieldValues) -> np.ndarray:
        """True for each value (symbol index) the search matches."""
        text = self.text
        if not text:
            return np.ones(len(values), dtype=bool)
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
