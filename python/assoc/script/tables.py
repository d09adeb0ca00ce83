"""Tables while a script runs: kept in the engine's form until a statement needs their
values, then as per-field symbols and per-row codes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from assoc import _core
from assoc.script.values import Values, concatenate


class Column:
    """A column: its values (which may repeat) and each row's position in them (-1: NULL).

    A column computed from one engine column, value k from that column's symbol k, keeps
    that origin: its rows are the origin's rows, so they need not be decoded to be packed.
    """

    def __init__(
        self,
        symbols: Values,
        codes: np.ndarray | None = None,
        origin: tuple[_core.ScriptTable, int] | None = None,
    ) -> None:
        if codes is None and origin is None:
            raise ValueError("a column needs codes or an origin")
        self.symbols = symbols
        self._codes = codes
        self.origin = origin

    @property
    def codes(self) -> np.ndarray:
        """Each row's value position, -1 for NULL (decoded from the origin on first use)."""
        if self._codes is None:
            assert self.origin is not None
            table, i = self.origin
            self._codes = table.codes(i)
        return self._codes

    def take(self, rows: np.ndarray) -> Column:
        """The column's rows at `rows`."""
        return Column(self.symbols, self.codes[rows])

    def mapped(self, symbols: Values) -> Column:
        """A column whose value k is symbols[k] in place of this one's (same rows)."""
        if self.origin is not None and len(symbols) == len(self.symbols):
            return Column(symbols, self._codes, self.origin)
        return Column(symbols, self.codes)

    def add_to(
        self, table: _core.ScriptTable, name: str, cpu: _core.CpuAccount | None = None
    ) -> None:
        """Adds this column to a table being built."""
        texts = None if self.symbols.texts is None else self.symbols.texts.tolist()
        if self.origin is not None:
            table.add_mapped_column(name, self.symbols.nums, texts, *self.origin, cpu)
        else:
            codes = self.codes.astype(np.int32, copy=False)
            table.add_column(name, self.symbols.nums, texts, codes, cpu)


def _values_of(native: _core.ScriptTable, i: int) -> Values:
    nums, at, texts = native.symbols(i)
    if not len(at):
        return Values(nums)
    arr = np.full(len(nums), None, dtype=object)
    arr[at] = texts
    return Values(nums, arr)


class Frame:
    """A table a script holds: a native table, or decoded columns, with its name."""

    def __init__(
        self,
        name: str,
        rows: int,
        columns: dict[str, Column] | None = None,
        native: _core.ScriptTable | None = None,
    ) -> None:
        self.name = name
        self.rows = rows
        self._native = native
        self._columns: dict[str, Column] = dict(columns or {})
        self._fields: list[str] = native.fields if native is not None else list(self._columns)

    @staticmethod
    def of_native(native: _core.ScriptTable) -> Frame:
        """A frame over a table the engine read."""
        return Frame(native.name, native.rows, native=native)

    @property
    def fields(self) -> list[str]:
        """Field names in column order."""
        return list(self._fields)

    @property
    def native(self) -> _core.ScriptTable | None:
        """The engine's table while the frame is only in that form (else None)."""
        return self._native

    @property
    def is_native(self) -> bool:
        """True while the table is only in the engine's form."""
        return self._native is not None

    def column(self, name: str) -> Column:
        """One column (its symbols read from the engine on first use, its rows when needed)."""
        col = self._columns.get(name)
        if col is None:
            if self._native is None or name not in self._fields:
                raise KeyError(name)
            i = self._fields.index(name)
            col = Column(_values_of(self._native, i), origin=(self._native, i))
            self._columns[name] = col
        return col

    def interpret_texts(
        self,
        read: Callable[[str], float | None],
        characters: str,
        cpu: _core.CpuAccount | None = None,
    ) -> None:
        """Gives text symbols that `read` turns into a number that number (they become duals);
        only texts made of `characters` (and holding a digit) are tried."""
        if self._native is None:
            raise ValueError("only tables the engine read hold uninterpreted texts")
        for i, name in enumerate(self._fields):
            at, texts = self._native.number_candidates(i, characters, cpu)
            found = [
                (k, x)
                for k, t in zip(at.tolist(), texts, strict=True)
                if (x := read(t)) is not None
            ]
            if found:
                self._native.set_numbers(i, [k for k, _ in found], [x for _, x in found], cpu)
                self._columns.pop(name, None)

    def packed(self, cpu: _core.CpuAccount | None = None) -> Frame:
        """The same table held in the engine's form (its decoded columns let go)."""
        if self._native is not None:
            return self
        return Frame.of_native(self.to_native(cpu))

    def take_native(self, cpu: _core.CpuAccount | None = None) -> _core.ScriptTable:
        """The table in the engine's form, for the last use of this frame (no copy)."""
        if self._native is None:
            return self.to_native(cpu)
        self._native.name = self.name
        return self._native

    def with_fields(self, picks: list[tuple[str, str]]) -> Frame:
        """A frame of some fields (old name → new name), sharing the data."""
        if self._native is not None:
            native = self._native.select([(self._fields.index(old), new) for old, new in picks])
            return Frame(self.name, self.rows, native=native)
        return Frame(self.name, self.rows, {new: self._columns[old] for old, new in picks})

    def to_native(self, cpu: _core.CpuAccount | None = None) -> _core.ScriptTable:
        """The table in the engine's form, named as the frame."""
        if self._native is not None:
            native = self._native.select([(i, f) for i, f in enumerate(self._fields)])
        else:
            native = _core.ScriptTable(self.name, self.rows)
            for f in self._fields:
                self._columns[f].add_to(native, f, cpu)
        native.name = self.name
        return native


def concatenate_frames(first: Frame, second: Frame) -> Frame:
    """The rows of `second` after those of `first`; fields missing on one side are NULL there."""
    fields = first.fields + [f for f in second.fields if f not in first.fields]
    columns: dict[str, Column] = {}
    for f in fields:
        parts: list[Values] = []
        codes: list[np.ndarray] = []
        offset = 0
        for frame in (first, second):
            if f in frame.fields:
                col = frame.column(f)
                parts.append(col.symbols)
                codes.append(np.where(col.codes < 0, -1, col.codes + offset).astype(np.int32))
                offset += len(col.symbols)
            else:
                codes.append(np.full(frame.rows, -1, dtype=np.int32))
        columns[f] = Column(concatenate(parts), np.concatenate(codes))
    return Frame(first.name, first.rows + second.rows, columns)
