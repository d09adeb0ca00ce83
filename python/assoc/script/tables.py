"""Tables while a script runs: kept in the engine's form until a statement needs their
values, then as per-field symbols and per-row codes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assoc import _core
from assoc.script.values import Values, concatenate


@dataclass(frozen=True)
class Column:
    """A column: its values (which may repeat) and each row's position in them (-1: NULL)."""

    symbols: Values
    codes: np.ndarray

    def take(self, rows: np.ndarray) -> Column:
        """The column's rows at `rows`."""
        return Column(self.symbols, self.codes[rows])


def _values_of(native: _core.ScriptTable, i: int) -> Values:
    nums, texts = native.symbols(i)
    if texts is None:
        return Values(nums)
    arr = np.empty(len(texts), dtype=object)
    arr[:] = texts
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
    def is_native(self) -> bool:
        """True while the table is still only in the engine's form."""
        return self._native is not None

    def symbols(self, name: str) -> Values:
        """One column's symbols (without decoding its rows)."""
        col = self._columns.get(name)
        if col is not None:
            return col.symbols
        if self._native is None or name not in self._fields:
            raise KeyError(name)
        return _values_of(self._native, self._fields.index(name))

    def column(self, name: str) -> Column:
        """One column's symbols and codes (decoded from the engine on first use)."""
        col = self._columns.get(name)
        if col is None:
            if self._native is None or name not in self._fields:
                raise KeyError(name)
            i = self._fields.index(name)
            col = Column(_values_of(self._native, i), self._native.codes(i))
            self._columns[name] = col
        return col

    def with_fields(self, picks: list[tuple[str, str]]) -> Frame:
        """A frame of some fields (old name → new name), sharing the data."""
        if self._native is not None:
            native = self._native.select([(self._fields.index(old), new) for old, new in picks])
            out = Frame(self.name, self.rows, native=native)
            out._columns = {new: self._columns[old] for old, new in picks if old in self._columns}
            return out
        return Frame(self.name, self.rows, {new: self._columns[old] for old, new in picks})

    def to_native(self) -> _core.ScriptTable:
        """The table in the engine's form, named as the frame."""
        if self._native is not None:
            native = self._native.select([(i, f) for i, f in enumerate(self._fields)])
        else:
            specs = []
            for f in self._fields:
                col = self._columns[f]
                texts = None if col.symbols.texts is None else col.symbols.texts.tolist()
                codes = col.codes.astype(np.int32, copy=False)
                null = col.symbols.is_null()
                if null.any():
                    # Rows on a value that is NULL are NULL rows (the engine has no NULL symbol).
                    codes = np.where(np.append(null, True)[codes], -1, codes).astype(np.int32)
                specs.append((f, col.symbols.nums, texts, codes))
            native = _core.ScriptTable.from_columns(self.name, self.rows, specs)
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
