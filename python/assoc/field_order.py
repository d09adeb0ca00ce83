"""A field's values in display order, with their states: what a list object shows (QIX list
objects and `Session.list_page` alike)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np

from assoc import _core

T = TypeVar("T")

# State codes, in the order a sort by state ranks them.
SELECTED, OPTION, ALTERNATIVE, SELECTED_EXCLUDED, EXCLUDED = range(5)
STATE_NAMES = ("S", "O", "A", "XS", "X")
# The sort orders a field's values keep, the latest asked (a list asks for the same one on
# every layout; a field is seldom shown in more than one or two).
KEPT_ORDERS = 4


def value_text(value: Any) -> str:
    """A value's text as a list shows it: a dual's text, a number in its shortest form (None,
    a value section access hides: empty)."""
    if value is None:
        return ""
    kind = type(value)
    if kind is float:  # the common cases first, without the isinstance chain
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g")
    if kind is int:
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, _core.Dual):
        return value.text
    if isinstance(value, bool | int):
        return str(int(value))
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return format(number, ".15g")


def value_number(value: Any) -> float:
    """A value's numeric part, NaN for a text (and for None)."""
    if value is None or isinstance(value, str):
        return float("nan")
    if isinstance(value, _core.Dual):
        return float(value.number)
    return float(value)


class SymbolTexts(NamedTuple):
    """A field's symbols as lists read them, made by the engine (`symbol_texts` of a model
    or a cube): each one's text as value_text writes it, and its number (NaN for a text)."""

    texts: list[str]
    numbers: np.ndarray[Any, np.dtype[np.float64]]


class FieldOrder:
    """A field's symbols as sorting needs them: texts, numbers and ranks."""

    def __init__(self, symbols: list[Any] | SymbolTexts) -> None:
        self.texts: list[str]
        self.numbers: np.ndarray[Any, np.dtype[np.float64]]
        if isinstance(symbols, SymbolTexts):  # the engine's: a field of a million in 0.1 s
            self.texts, self.numbers = symbols
        else:
            # Plain texts and numbers take the short way: fields may hold millions of values.
            self.texts = [v if type(v) is str else value_text(v) for v in symbols]
            nan = float("nan")
            # fromiter, not array(list): its loop runs Python code that lets other threads
            # have the GIL in turn (one array() call of a long list would hold it throughout).
            self.numbers = np.fromiter(
                (
                    nan if type(v) is str else v if type(v) is float else value_number(v)
                    for v in symbols
                ),
                dtype=np.float64,
                count=len(symbols),
            )
        self.is_numeric = ~np.isnan(self.numbers)
        self._text_rank: np.ndarray[Any, np.dtype[np.int64]] | None = None
        self._orders: dict[tuple[int, int, int], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def text_rank(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Each symbol's rank in text order, case-insensitive first (made on first use: a
        field of millions of values takes seconds to sort, and few layouts sort by text)."""
        rank = self._text_rank
        if rank is None:
            texts = self.texts
            # By folded text, then text, then position: the engine's sort (a million texts,
            # folded and ranked: 0.4 s, where sorted() with a key took 2.9 s).
            order = _core.text_order(list(map(str.casefold, texts)), texts)
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order), dtype=np.int64)
            self._text_rank = rank
        return rank

    def sort_order(self, numeric_ascii: tuple[int, int], load: int) -> np.ndarray:
        """Symbol indexes sorted by number (numbers before texts), then text, then load order,
        each direction 1, -1 or 0 (not a key); read-only. The last KEPT_ORDERS asked are
        kept: sorting a field of a million values takes a tenth of a second."""
        key = (*numeric_ascii, load)
        order = self._orders.get(key)
        if order is not None:
            return order
        numeric, ascii_ = numeric_ascii
        keys: list[np.ndarray] = []  # most significant first
        if numeric:
            keys.append(~self.is_numeric)
            keys.append(np.nan_to_num(self.numbers, nan=0.0) * numeric)
        if ascii_:
            keys.append(self.text_rank * ascii_)
        keys.append(np.arange(len(self), dtype=np.int64) * load)
        order = np.lexsort(tuple(reversed(keys)))
        order.flags.writeable = False
        kept = list(self._orders)  # one step under the GIL: other threads may sort too
        for old in kept[: max(0, len(kept) - KEPT_ORDERS + 1)]:
            self._orders.pop(old, None)
        self._orders[key] = order
        return order


class StateSource(Protocol):
    """What value_states reads: a session (or a session in one of its states)."""

    def state_codes(self, field: str, show_alternatives: bool) -> np.ndarray: ...


def value_states(session: StateSource, field: str, show_alternatives: bool) -> np.ndarray:
    """The state code of each of a field's values in a session, in symbol order (one engine
    call: Session.state_codes)."""
    return session.state_codes(field, show_alternatives)


def state_counts(states: np.ndarray) -> list[int]:
    """How many of a field's values are in each state, in STATE_NAMES' order. A count per
    state over a long array: bincount converts every code to a machine word first (5 ms a
    million values, against 0.5 ms)."""
    if len(states) <= 65_536:
        return [int(c) for c in np.bincount(states, minlength=len(STATE_NAMES))]
    return [int(np.count_nonzero(states == code)) for code in range(len(STATE_NAMES))]


def display_order(
    values: FieldOrder, states: np.ndarray, by_state: int, numeric: int, ascii_: int, load: int
) -> np.ndarray:
    """Symbol indexes in display order: state, numeric (numbers before texts), ascii, load
    (each 1 ascending, -1 descending, 0 not a key). The order without the states is the
    field's own (kept with its values); the states then reorder it, stably."""
    order = values.sort_order((numeric, ascii_), load or 1)
    if not by_state:
        return order
    return order[np.argsort(states[order] * np.int8(by_state), kind="stable")]


class MadeOnce(Generic[T]):
    """Values by name, each made on first use by `make` and kept (thread-safe: callers asking
    for one name at the same time wait for the first to make it)."""

    def __init__(self, make: Callable[[str], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._made: dict[str, T] = {}
        self._making: dict[str, threading.Lock] = {}

    def __contains__(self, name: str) -> bool:
        with self._lock:
            return name in self._made

    def __call__(self, name: str) -> T:
        with self._lock:
            if name in self._made:
                return self._made[name]
            making = self._making.setdefault(name, threading.Lock())
        with making:
            with self._lock:
                if name in self._made:
                    return self._made[name]
            found = self._make(name)
            with self._lock:
                self._made[name] = found
                self._making.pop(name, None)
            return found


SORT_KEYS = ("state", "numeric", "ascii", "load")


def sort_keys(sort: Mapping[str, int] | None) -> tuple[int, int, int, int]:
    """`Session.list_page`'s sort: directions by key (state, numeric, ascii, load; 1
    ascending, -1 descending; a key not named is not used), ascii alone by default."""
    if sort is None:
        return (0, 0, 1, 0)
    if not isinstance(sort, Mapping):
        raise _core.Error("sort must map state, numeric, ascii or load to 1 or -1")
    for key, direction in sort.items():
        if key not in SORT_KEYS:
            raise _core.Error(f"unknown sort key {key!r}: use {', '.join(SORT_KEYS)}")
        if isinstance(direction, bool) or direction not in (-1, 0, 1):
            raise _core.Error(f"sort direction of {key!r} must be 1, -1 or 0")
    state, numeric, ascii_, load = (int(sort.get(k, 0)) for k in SORT_KEYS)
    return state, numeric, ascii_, load
