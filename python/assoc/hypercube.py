"""Hypercubes: the combinations of dimension values under a session's selections, with measures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from assoc import _core
from assoc.arrow import ArrowExport, Duals, check_duals
from assoc.field_order import FieldOrder, SymbolTexts

SORT_DIRECTIONS = ("asc", "desc", "load")

SortSpec = Sequence[tuple[str, str]]


def sort_pairs(sort: SortSpec | None) -> list[tuple[str, str]]:
    """Checks `sort` ([(column, "asc"|"desc"|"load"), …]) and returns it as a list of pairs."""
    if sort is None:
        return []
    if isinstance(sort, str | bytes) or not isinstance(sort, Sequence):
        raise _core.Error('sort must be a list of (column, "asc"|"desc"|"load") pairs')
    pairs = []
    for item in sort:
        if (
            not isinstance(item, tuple | list)
            or len(item) != 2
            or not all(isinstance(x, str) for x in item)
        ):
            raise _core.Error(f'sort entry {item!r} is not a (column, "asc"|"desc"|"load") pair')
        if item[1].lower() not in SORT_DIRECTIONS:
            raise _core.Error(f"sort direction {item[1]!r} for {item[0]!r}: use asc, desc or load")
        pairs.append((item[0], item[1].lower()))
    return pairs


def names(value: Sequence[str], what: str) -> list[str]:
    """Checks a list of dimension names or measure expressions."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise _core.Error(f"{what} must be a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise _core.Error(f"{what} must be a list of strings")
    return list(value)


class Hypercube:
    """Dimension tuples associated under a selection state, each with its measures' values."""

    def __init__(
        self,
        impl: _core.Hypercube,
        dimensions: list[str] | None = None,
        measures: list[str] | None = None,
        kept: Callable[[str, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self._impl = impl
        self._kept = kept  # section access: the symbol indexes of a field the session sees
        # The columns' names as the caller gave them (before `$(…)` expansion).
        self.dimensions: list[str] = impl.dimensions if dimensions is None else dimensions
        self.measures: list[str] = impl.measures if measures is None else measures
        self._rows: list[tuple[Any, ...]] | None = None

    @property
    def columns(self) -> list[str]:
        """The dimension names, then the measure expressions as given."""
        return self.dimensions + self.measures

    def __len__(self) -> int:
        return len(self._impl)

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        """Every row: dimension values (None for None), then measure values (None for NULL)."""
        if self._rows is None:
            self._rows = self._impl.rows(0, len(self._impl))
        return self._rows

    @property
    def totals(self) -> list[Any]:
        """Each measure over every possible record once (None for NULL)."""
        return self._impl.totals()

    def page(self, top: int, height: int) -> list[tuple[Any, ...]]:
        """Rows [top, top+height)."""
        if not isinstance(top, int) or not isinstance(height, int) or top < 0 or height < 0:
            raise _core.Error("page needs a non-negative top and height")
        return self._impl.rows(top, height)

    def _column(self, column: str | int, among: list[str], what: str) -> int:
        if isinstance(column, bool):
            raise _core.Error(f"no {what} {column!r}")
        if isinstance(column, int):
            if not 0 <= column < len(among):
                raise _core.Error(f"no {what} at position {column} (there are {len(among)})")
            return column
        if isinstance(column, str) and column in among:
            return among.index(column)
        raise _core.Error(f"no {what} {column!r}")

    def array(self, column: str | int) -> np.ndarray:
        """A column as float64: a measure (NaN for NULL) or a dimension's numbers (NaN for none)."""
        return self._impl.array(self._column(column, self.columns, "column"))

    def codes(self, dimension: str | int) -> np.ndarray:
        """Each row's symbol index of a dimension, -1 for None: into App.symbols of its field,
        or for a calculated dimension (`=expr`) into symbols(dimension)."""
        return self._impl.codes(self._column(dimension, self.dimensions, "dimension"))

    def symbols(self, dimension: str | int) -> list[Any]:
        """The values codes() indexes: the field's symbols, or a calculated dimension's results.
        Under section access a field's values the session does not see are None."""
        column = self._column(dimension, self.dimensions, "dimension")
        found: list[Any] = self._impl.dimension_symbols(column)
        if self._kept is None:
            return found
        field = self._impl.dimensions[column]
        if field.startswith("="):  # a calculated dimension: the values of the cube's rows
            used = set(self._impl.codes(column).tolist())
            return [v if i in used else None for i, v in enumerate(found)]
        if field.startswith("[") and field.endswith("]"):
            field = field[1:-1]
        kept = set(self._kept(field, np.arange(len(found))).tolist())
        return [v if i in kept else None for i, v in enumerate(found)]

    def symbol_texts(self, dimension: str | int) -> SymbolTexts:
        """symbols(dimension) as lists read them: each value's text and number (the
        engine's, without a Python object per value first)."""
        column = self._column(dimension, self.dimensions, "dimension")
        if self._kept is not None:
            order = FieldOrder(self.symbols(column))
            return SymbolTexts(order.texts, order.numbers)
        return SymbolTexts(*self._impl.dimension_symbol_texts(column))

    def symbols_key(self, dimension: str | int) -> tuple[int, int] | None:
        """A key two cubes share when their symbols(dimension) are the same values (those of
        one field of one model), for keeping what is made of them; None when the values
        depend on the session (section access)."""
        column = self._column(dimension, self.dimensions, "dimension")
        if self._kept is not None:
            return None
        serial, field = self._impl.dimension_symbols_key(column)
        return int(serial), int(field)

    def calculated_source(self, dimension: str | int) -> tuple[str, np.ndarray] | None:
        """For a calculated dimension that reads one field (an Aggr: its one dimension): that
        field and, per symbol of it, the code of its result (-1 for NULL); else None."""
        found = self._impl.calculated_source(self._column(dimension, self.dimensions, "dimension"))
        if found is None:
            return None
        field, results = found
        return str(field), np.asarray(results)

    def to_arrow(self, duals: Duals = "number") -> ArrowExport:
        """The rows for Arrow consumers: dimensions as dictionary arrays of their field's
        symbols (or numbers), measures as float64; duals as in Table.to_arrow."""
        return self._impl.arrow(check_duals(duals))

    def __arrow_c_schema__(self) -> object:
        """The Arrow schema of to_arrow() as a PyCapsule."""
        return self.to_arrow().__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The rows of to_arrow() as an Arrow stream PyCapsule."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"<assoc.Hypercube {len(self)} rows x {self.columns}>"
