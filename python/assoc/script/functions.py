"""The script's own functions over value vectors: those of the running script's tables,
maps and rows (Peek, Exists, ApplyMap, RecNo, …). Every other function is the
engine's (assoc._core.call_function): one implementation for scripts and charts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from assoc import _core
from assoc.script.numbers import Interpretation
from assoc.script.values import Values


@dataclass
class CallContext:
    """What a function may need beyond its arguments."""

    n: int  # values per vector
    interpretation: Interpretation
    recno: np.ndarray | None = None
    rowno: np.ndarray | None = None
    script: Any = None  # the running script (its tables, maps): ScriptRunner


def numbers_of(v: Values, interp: Interpretation) -> np.ndarray:
    """Each value's number: its number part, else its text read as a number; NaN otherwise."""
    nums = v.nums
    if v.texts is None:
        return nums
    missing = np.isnan(nums)
    if not missing.any():
        return nums
    out = nums.copy()
    for i in np.flatnonzero(missing):
        t = v.texts[i]
        if t is not None:
            r = interp.read(t)
            if r is not None:
                out[i] = r
    return out


def subfield_parts(text: str | None, sep: str | None) -> list[str]:
    """The parts of `text` between `sep`s; NULL text reads as empty (Qlik: one empty part)."""
    text = text or ""
    return text.split(sep) if sep else [text]


def _row_numbers(which: str) -> Callable[[list[Values], CallContext], Values]:
    def call(args: list[Values], ctx: CallContext) -> Values:
        arr = ctx.recno if which == "recno" else ctx.rowno
        if arr is None:
            raise ValueError(f"{which.capitalize()}() is only known while rows are loaded")
        return Values(arr.astype(np.float64))

    return call


def _rand(args: list[Values], ctx: CallContext) -> Values:
    return Values(np.random.default_rng().random(ctx.n))


def _script(method: str) -> Callable[[list[Values], CallContext], Values]:
    """A function of the script's tables and maps (the runner answers it)."""

    def call(args: list[Values], ctx: CallContext) -> Values:
        if ctx.script is None:
            raise ValueError("only known while a script runs")
        out: Values = getattr(ctx.script, method)(args, ctx)
        return out

    return call


# name → (function, fewest arguments, most arguments)
FUNCTIONS: dict[str, tuple[Callable[[list[Values], CallContext], Values], int, int]] = {
    "RECNO": (_row_numbers("recno"), 0, 0),
    "ROWNO": (_row_numbers("rowno"), 0, 0),
    "RAND": (_rand, 0, 0),
    "APPLYMAP": (_script("apply_map"), 2, 3),
    "EXISTS": (_script("exists"), 1, 2),
    "PEEK": (_script("peek"), 1, 3),
    "FIELDVALUE": (_script("field_value"), 2, 2),
    "FIELDVALUECOUNT": (_script("field_value_count"), 1, 1),
    "NOOFROWS": (_script("no_of_rows"), 1, 1),
    "NOOFFIELDS": (_script("no_of_fields"), 1, 1),
    "FIELDNAME": (_script("field_name"), 2, 2),
    "TABLENAME": (_script("table_name"), 1, 1),
    "NOOFTABLES": (_script("no_of_tables"), 0, 0),
    "AUTONUMBER": (_script("auto_number"), 1, 2),
}

# The engine's functions: upper-case name → (name, fewest arguments, most arguments).
ENGINE_FUNCTIONS: dict[str, tuple[str, int, int]] = {
    name.upper(): (name, least, 1000 if most == 255 else most)
    for name, least, most in _core.scalar_functions()
}


def call_engine(name: str, args: list[Values], ctx: CallContext) -> Values:
    """An engine function over the arguments' values (each of length 1 or n); the result has
    length 1 when every argument has."""
    n = max((len(a) for a in args), default=1)
    packed = [(a.nums, a.texts) for a in args]
    nums, texts = _core.call_function(name, packed, n, ctx.interpretation)
    return Values(nums) if texts is None else Values.of_texts(texts, nums)


# Functions whose value differs from row to row even for equal arguments (AutoNumber numbers
# values in the order of their rows).
ROW_FUNCTIONS = frozenset({"RECNO", "ROWNO", "RAND", "AUTONUMBER"})

__all__ = [
    "ENGINE_FUNCTIONS",
    "FUNCTIONS",
    "ROW_FUNCTIONS",
    "CallContext",
    "call_engine",
    "numbers_of",
    "subfield_parts",
]
