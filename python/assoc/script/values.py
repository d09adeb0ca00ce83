"""Vectors of field values as expressions compute them: a number part and a text part each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from assoc.script.numbers import plain_text

NAN = float("nan")


@dataclass
class Values:
    """n values: `nums` (NaN: no number) and `texts` (None: no text; all None when absent).
    A value with neither part is NULL."""

    nums: np.ndarray
    texts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.nums)

    @staticmethod
    def of_texts(texts: Sequence[str | None], nums: np.ndarray | None = None) -> Values:
        """Values from texts (None: no text), with numbers when given."""
        arr = np.empty(len(texts), dtype=object)
        arr[:] = list(texts)
        n = np.full(len(texts), NAN) if nums is None else np.asarray(nums, dtype=np.float64)
        return Values(n, arr)

    @staticmethod
    def constant(value: float | str | None) -> Values:
        """One value."""
        if value is None:
            return Values(np.array([NAN]))
        if isinstance(value, str):
            return Values.of_texts([value])
        return Values(np.array([float(value)]))

    @staticmethod
    def nulls(n: int) -> Values:
        """n NULLs."""
        return Values(np.full(n, NAN))

    def has_text(self) -> np.ndarray:
        """Which values have a text part."""
        if self.texts is None:
            return np.zeros(len(self), dtype=bool)
        return np.fromiter((t is not None for t in self.texts), dtype=bool, count=len(self))

    def is_null(self) -> np.ndarray:
        """Which values are NULL."""
        null: np.ndarray = np.isnan(self.nums) & ~self.has_text()
        return null

    def text_list(self) -> list[str | None]:
        """Each value's text: its text part, else its number written plainly; None for NULL."""
        nums = self.nums.tolist()
        if self.texts is None:
            return [None if x != x else plain_text(x) for x in nums]
        return [
            t if t is not None else (None if x != x else plain_text(x))
            for t, x in zip(self.texts, nums, strict=True)
        ]

    def take(self, index: np.ndarray) -> Values:
        """The values at positions `index`."""
        return Values(self.nums[index], None if self.texts is None else self.texts[index])

    def with_null(self) -> Values:
        """These values and one NULL after them (where code -1 lands when indexing)."""
        nums = np.append(self.nums, NAN)
        if self.texts is None:
            return Values(nums)
        texts = np.empty(len(nums), dtype=object)
        texts[:-1] = self.texts
        texts[-1] = None
        return Values(nums, texts)

    def broadcast(self, n: int) -> Values:
        """A single value repeated n times (other lengths are returned as they are)."""
        if len(self) == 1 and n != 1:
            return self.take(np.zeros(n, dtype=np.intp))
        return self

    def item(self, i: int) -> Any:
        """Value i as Python sees it: a number, a text, a (number, text) pair or None."""
        x = float(self.nums[i])
        t = None if self.texts is None else self.texts[i]
        if t is None:
            return None if x != x else x
        return t if x != x else (x, t)


def booleans(mask: np.ndarray) -> Values:
    """Qlik truth values: -1 for true, 0 for false."""
    return Values(np.where(mask, -1.0, 0.0))


def map_texts(fn: Callable[..., str | None], *args: Values) -> Values:
    """Values whose texts are fn(texts of args) per position; NULL where any arg is NULL."""
    n = max(len(a) for a in args)
    cols = [a.broadcast(n).text_list() for a in args]
    out = [None if None in row else fn(*row) for row in zip(*cols, strict=True)]
    return Values.of_texts(out)


def concatenate(parts: Sequence[Values]) -> Values:
    """Values one list after the other."""
    nums = np.concatenate([p.nums for p in parts]) if parts else np.empty(0)
    if all(p.texts is None for p in parts):
        return Values(nums)
    texts = np.empty(len(nums), dtype=object)
    at = 0
    for p in parts:
        if p.texts is not None:
            texts[at : at + len(p)] = p.texts
        at += len(p)
    return Values(nums, texts)
