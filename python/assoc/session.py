"""Sessions: one user's selections in an app, and the states they give every field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

import numpy as np

from assoc import _core
from assoc.arrow import ArrowExport, Duals, check_duals
from assoc.hypercube import Hypercube, SortSpec, names, sort_pairs

STATES = ("selected", "possible", "alternative", "excluded", "selected_excluded")


class Session:
    """An independent selection state in an app; close it (or use `with`) when done."""

    def __init__(self, model: _core.AssociativeModel, user: str = "") -> None:
        if not isinstance(user, str):
            raise _core.Error("a session's user must be a string")
        self._impl = _core.Session(model, user)

    @property
    def user(self) -> str:
        """The user the session was opened for ("" for anonymous)."""
        return self._impl.user

    @property
    def closed(self) -> bool:
        """True once the session is closed."""
        return self._impl.closed

    def close(self) -> None:
        """Ends the session; later calls on it raise assoc.Error."""
        self._impl.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def add_state(self, name: str) -> None:
        """Adds an alternate selection state `name` (no selection yet); set expressions name it
        as an identifier ({name}) and the `state=` argument of the calls below picks it."""
        self._impl.add_state(_state(name))

    def remove_state(self, name: str) -> None:
        """Removes an alternate state (the default state "$" stays)."""
        self._impl.remove_state(_state(name))

    @property
    def states(self) -> list[str]:
        """The default state "$", then the alternate states by name."""
        return self._impl.state_names()

    def select(self, field: str, values: Iterable[Any], state: str = "$") -> None:
        """Selects `values` in `field`, replacing its selection; values it lacks are ignored."""
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise _core.Error("values must be a list of values (int, float, str or assoc.Dual)")
        self._impl.select(field, values, _state(state))

    def select_indices(self, field: str, indices: Iterable[int], state: str = "$") -> None:
        """Replaces a field's selection by symbol indexes; indexes out of range are ignored."""
        self._impl.select_indices(field, [int(i) for i in indices], _state(state))

    def clear(self, state: str = "$") -> None:
        """Clears every selection of a state."""
        self._impl.clear(_state(state))

    def clear_field(self, field: str, state: str = "$") -> None:
        """Clears one field's selection."""
        self._impl.clear_field(field, _state(state))

    def selections(self, state: str = "$") -> dict[str, list[Any]]:
        """The selected values of each field that has a selection, in symbol order."""
        return self._impl.selections(_state(state))

    def state(self, field: str, state: str = "$") -> dict[str, list[Any]]:
        """A field's values by state: selected, possible, alternative, excluded (symbol order)."""
        return self._impl.state(field, _state(state))

    def counts(self, field: str, state: str = "$") -> dict[str, int]:
        """How many of a field's values are selected, possible, alternative and excluded."""
        return self._impl.counts(field, _state(state))

    def indices(self, field: str, state: str = "possible", in_state: str = "$") -> np.ndarray:
        """Symbol indexes of a field's values in one state (selected_excluded: S but excluded),
        in the selection state `in_state`."""
        if state not in STATES:
            raise _core.Error(f"unknown state {state!r}: use one of {', '.join(STATES)}")
        return self._impl.indices(field, state, _state(in_state))

    def possible_rows(self, table: str, state: str = "$") -> int:
        """How many rows of a table are possible."""
        return self._impl.possible_rows(table, _state(state))

    def table(self, name: str, duals: Duals = "number") -> ArrowExport:
        """A table's possible rows under the selections now, for Arrow consumers
        (pyarrow.table, polars.DataFrame, DuckDB); `duals` as in Table.to_arrow."""
        return self._impl.arrow_table(name, check_duals(duals))

    def hypercube(
        self,
        dimensions: Sequence[str] = (),
        measures: Sequence[str] = (),
        sort: SortSpec | None = None,
        suppress_zero: bool = False,
        suppress_missing: bool = False,
        state: str = "$",
    ) -> Hypercube:
        """Dimension tuples associated under the selections, with measures (DESIGN.md §2b);
        `state` is the object's selection state (aggregations without a set identifier)."""
        impl = self._impl.hypercube(
            names(dimensions, "dimensions"),
            names(measures, "measures"),
            sort_pairs(sort),
            bool(suppress_zero),
            bool(suppress_missing),
            _state(state),
        )
        return Hypercube(impl)

    def __repr__(self) -> str:
        status = "closed" if self.closed else f"{len(self.selections())} fields selected"
        return f"<assoc.Session user={self.user!r}: {status}>"


def _state(name: object) -> str:
    if not isinstance(name, str):
        raise _core.Error("a state's name must be a string")
    return name
