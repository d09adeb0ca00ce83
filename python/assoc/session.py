"""Sessions: one user's selections in an app, and the states they give every field."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np

from assoc import _core
from assoc.arrow import ArrowExport, Duals, check_duals
from assoc.expansion import Expander
from assoc.field_order import (
    STATE_NAMES,
    FieldOrder,
    MadeOnce,
    display_order,
    sort_keys,
    value_states,
)
from assoc.hypercube import Hypercube, SortSpec, names, sort_pairs

STATES = ("selected", "possible", "alternative", "excluded", "selected_excluded")
HISTORY_STEPS = 100  # Back steps a session keeps (the oldest are dropped)
_SPARSE = 1 << 16  # a selection of more codes is kept as a bit mask


def _pack(codes: np.ndarray) -> bytes:
    """A field's selected symbol indexes (sorted, unique) in a compact, comparable form: the
    indexes as int32 when few, else a bit mask up to the largest (marked by its first byte)."""
    if codes.size <= _SPARSE:
        return b"s" + codes.astype(np.int32).tobytes()
    mask = np.zeros(int(codes[-1]) + 1, dtype=bool)
    mask[codes] = True
    return b"m" + np.packbits(mask).tobytes()


def _unpack(packed: bytes) -> list[int]:
    if packed[:1] == b"s":
        codes: list[int] = np.frombuffer(packed, dtype=np.int32, offset=1).tolist()
        return codes
    bits = np.unpackbits(np.frombuffer(packed, dtype=np.uint8, offset=1))
    found: list[int] = np.flatnonzero(bits).tolist()
    return found


@dataclass(frozen=True)
class SelectionState:
    """Every field's selection (packed symbol indexes) and the locked fields, as one value."""

    selected: dict[str, bytes]
    locked: frozenset[str]
    searches: dict[str, str] = dataclasses.field(default_factory=dict)  # made by a search


@dataclass(frozen=True)
class Reduction:
    """What section access leaves a user: each reduced data field's kept symbol indexes
    (sorted), the row mask they make (shared by the user's sessions; it also leaves out the
    system fields' values that name the access table), the fields omitted for them (OMIT,
    the access table's, the system fields that would count what they do not see), each
    table's fields (to refuse what names those) and the tables no user reads."""

    codes: dict[str, list[int]]
    mask: _core.RowMask | None = None
    omit: frozenset[str] = frozenset()
    tables: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    hidden: frozenset[str] = frozenset()  # tables no user may read (the access table)


@dataclass(frozen=True)
class Checkpoint:
    """A session's selections, locks and history at one moment (`Session.rollback`)."""

    state: SelectionState
    back: tuple[SelectionState, ...]
    forward: tuple[SelectionState, ...]


class Session:
    """An independent selection state in an app; close it (or use `with`) when done."""

    def __init__(
        self,
        model: _core.AssociativeModel,
        user: str = "",
        reduction: Reduction | None = None,
        orders: MadeOnce[FieldOrder] | None = None,
    ) -> None:
        if not isinstance(user, str):
            raise _core.Error("a session's user must be a string")
        # Section access: the engine applies the reduction's row mask under every selection,
        # set expression and state; the omitted fields are refused here.
        self._impl = _core.Session(model, user, reduction.mask if reduction else None)
        self._reduction = reduction
        self._orders = orders  # the app's fields in sort order (list pages)
        self._shown: dict[str, np.ndarray] = {}  # per field, which symbols the mask leaves
        self._touched: set[str] = set()  # fields that may have a selection
        self._locked: set[str] = set()
        # Back/Forward steps are recorded once `keep_history` is set (it reads the selections
        # after each change; sessions that never go back need not pay for that).
        self.keep_history = False
        self._back: list[SelectionState] = []
        self._forward: list[SelectionState] = []
        self._depth = 0  # nesting of step()
        self._before: SelectionState | None = None
        # Variables `$(name)` expands in this session's expressions (docs/hypercubes.md):
        # name -> text; any mapping (the QIX server gives the document's variables).
        self.variables: Mapping[str, Any] = {}

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

    # ---- section access ----------------------------------------------------------------

    @property
    def reduced(self) -> bool:
        """True when section access reduces the data this session sees."""
        r = self._reduction
        return r is not None and (bool(r.codes) or bool(r.omit))

    @property
    def reduction(self) -> Reduction | None:
        """What section access leaves this session's user (None: the app has no access
        table)."""
        return self._reduction

    def _field(self, field: str) -> str:
        if self._reduction is not None and field in self._reduction.omit:
            raise _core.Error(f"field not found: {field}")
        return field

    def _table(self, name: str) -> str:
        if self._reduction is not None and name in self._reduction.hidden:
            raise _core.Error(f"no table named {name!r}")
        return name

    def kept_codes(self, field: str, codes: np.ndarray) -> np.ndarray:
        """The symbol indexes (in their order) that section access leaves this session: the
        values on the rows it sees; all of them when nothing is reduced."""
        codes = np.asarray(codes, dtype=np.int64)
        mask = self._reduction.mask if self._reduction is not None else None
        if mask is None:
            return codes
        shown = self._shown.get(field)
        if shown is None:
            indices = mask.indices(field)
            shown = np.zeros(int(indices.max(initial=-1)) + 1, dtype=bool)
            shown[indices] = True
            self._shown[field] = shown
        inside = codes[(codes >= 0) & (codes < shown.size)]
        kept: np.ndarray = inside[shown[inside]]
        return kept

    def kept_rows(self, table: Any, fields: Sequence[str] = ()) -> np.ndarray | None:
        """The row positions of `table` (an assoc.Table) that section access leaves this
        session; None when it keeps every row."""
        mask = self._reduction.mask if self._reduction is not None else None
        return None if mask is None else mask.rows(table.name)

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

    # ---- selecting ---------------------------------------------------------------------

    def select(self, field: str, values: Iterable[Any], state: str = "$") -> bool:
        """Selects `values` in `field`, replacing its selection; values it lacks are ignored.
        False (and nothing changes) when the field is locked. Locks and history belong to
        the default state: a selection in an alternate state neither meets nor records them."""
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise _core.Error("values must be a list of values (int, float, str or assoc.Dual)")
        self._field(field)
        if state == "$" and field in self._locked:
            return False
        with self.step():
            self._impl.select(field, values, _state(state))
            if state == "$":
                self._touched.add(field)
        return True

    def select_indices(
        self, field: str, indices: Iterable[int], state: str = "$", search: str | None = None
    ) -> bool:
        """Replaces a field's selection by symbol indexes; indexes out of range are ignored.
        False (and nothing changes) when the field is locked. `search`: the search text that
        found these values, which GetFieldSelections and the current selections then show
        (until the field's selection changes otherwise)."""
        codes: np.ndarray | list[int]
        if isinstance(indices, np.ndarray) and indices.dtype.kind in "iu":
            # A selection of a million values goes to the engine as it is (an index past
            # int64 turns negative: out of range, so ignored, as any other).
            codes = indices.astype(np.int64, copy=False)
        else:
            codes = [int(i) for i in indices]
        if search is not None and not isinstance(search, str):
            raise _core.Error("search must be the search text (str) or None")
        self._field(field)
        if state == "$" and field in self._locked:
            return False
        with self.step():
            self._impl.select_indices(field, codes, _state(state))
            if search:
                self._impl.set_search(field, search, _state(state))
            if state == "$":
                self._touched.add(field)
        return True

    def search_text(self, field: str, state: str = "$") -> str | None:
        """The search text that made a field's selection; None when no search made it."""
        return self._impl.search(self._field(field), _state(state)) or None

    def _select_states(self, field: str, states: Sequence[str]) -> bool:
        if field in self._locked:
            return False
        parts = [self._impl.indices(field, state) for state in states]
        codes = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
        if not codes.size:
            return False
        return self.select_indices(field, codes.tolist())

    def select_all(self, field: str) -> bool:
        """Selects every value of a field. False when it is locked or has no values."""
        return self._select_states(
            field, ("selected", "possible", "alternative", "excluded", "selected_excluded")
        )

    def select_possible(self, field: str) -> bool:
        """Adds the field's possible values to its selection. False when it is locked or
        nothing would be selected."""
        return self._select_states(field, ("selected", "possible"))

    def select_alternative(self, field: str) -> bool:
        """Selects the field's alternative values instead of its selection. False when it is
        locked or has no alternatives."""
        return self._select_states(field, ("alternative",))

    def select_excluded(self, field: str) -> bool:
        """Selects the values that are neither selected nor possible (alternative and
        excluded): the inverse of the selection. False when it is locked or there are none."""
        return self._select_states(field, ("alternative", "excluded"))

    def clear(self, locked_also: bool = False, state: str = "$") -> None:
        """Clears every selection but those of locked fields; `locked_also` clears and unlocks
        those too. An alternate state (`state`) has no locks: all of its selections go."""
        if state != "$":
            self._impl.clear(_state(state))
            return
        with self.step():
            if locked_also or not self._locked:
                self._impl.clear()
                self._touched.clear()
                self._locked.clear()
                return
            for field in sorted(self._touched - self._locked):
                self._impl.clear_field(field)
            self._touched &= self._locked

    def clear_field(self, field: str, state: str = "$") -> bool:
        """Clears one field's selection. False (and nothing changes) when it is locked."""
        self._field(field)
        if state != "$":
            self._impl.clear_field(field, _state(state))
            return True
        if field in self._locked:
            return False
        with self.step():
            self._impl.clear_field(field)
            self._touched.discard(field)
        return True

    # ---- locks --------------------------------------------------------------------------

    def lock(self, field: str) -> bool:
        """Locks a field's selection: selecting or clearing it then does nothing until it is
        unlocked. False for a field without a selection (there is nothing to lock)."""
        if not self._impl.counts(field)["selected"]:  # an unknown field raises assoc.Error
            return False
        with self.step():
            self._locked.add(field)
        return True

    def unlock(self, field: str) -> bool:
        """Unlocks a field; False when it was not locked."""
        self._impl.counts(field)
        if field not in self._locked:
            return False
        with self.step():
            self._locked.discard(field)
        return True

    def lock_all(self) -> None:
        """Locks every field that has a selection."""
        with self.step():
            self._locked.update(self.selection_state().selected)

    def unlock_all(self) -> None:
        """Unlocks every field."""
        with self.step():
            self._locked.clear()

    def locked(self) -> list[str]:
        """The locked fields, sorted."""
        return sorted(self._locked)

    def is_locked(self, field: str) -> bool:
        """True when a field's selection is locked."""
        return field in self._locked

    # ---- history --------------------------------------------------------------------------

    @contextmanager
    def step(self) -> Iterator[None]:
        """Groups the changes made inside into one history step (nested steps join the
        outermost); a step that changes nothing is not recorded."""
        if self._depth == 0 and self.keep_history:
            self._before = self.selection_state()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                before, self._before = self._before, None
                if before is not None and before != self.selection_state():
                    self._back.append(before)
                    del self._back[:-HISTORY_STEPS]
                    self._forward.clear()

    def selection_state(self) -> SelectionState:
        """The current selections and locks as one value."""
        selected, searches = {}, {}
        for field in sorted(self._touched):
            codes = self._impl.selected(field)  # the selection as held: no inference
            if codes.size:
                selected[field] = _pack(codes)
                search = self._impl.search(field)
                if search:
                    searches[field] = search
        self._touched = set(selected)
        self._locked &= self._touched
        return SelectionState(selected, frozenset(self._locked), searches)

    def _apply(self, state: SelectionState) -> bool:
        """Makes `state` current (locks do not stop it); True when selections changed."""
        now = self.selection_state()
        changed = False
        for field in sorted(set(now.selected) | set(state.selected)):
            want = state.selected.get(field)
            search = state.searches.get(field, "")
            if want == now.selected.get(field):
                if search != now.searches.get(field, ""):
                    self._impl.set_search(field, search)
                continue
            if want is None:
                self._impl.clear_field(field)
            else:
                self._impl.select_indices(field, _unpack(want))
                self._impl.set_search(field, search)
            changed = True
        self._touched = set(state.selected)
        self._locked = set(state.locked)
        return changed

    @property
    def back_count(self) -> int:
        """How many steps `back()` can go."""
        return len(self._back)

    @property
    def forward_count(self) -> int:
        """How many steps `forward()` can go."""
        return len(self._forward)

    def back(self) -> bool:
        """Returns to the selections before the last step; False when there is none."""
        return self._step_through(self._back, self._forward)

    def forward(self) -> bool:
        """Redoes the step `back()` undid; False when there is none."""
        return self._step_through(self._forward, self._back)

    def _step_through(self, source: list[SelectionState], target: list[SelectionState]) -> bool:
        """Applies the newest state of `source`, keeping the current one on `target`."""
        if not source:
            return False
        target.append(self.selection_state())
        self._apply(source.pop())
        return True

    def checkpoint(self) -> Checkpoint:
        """The selections, locks and history now, to `rollback` to later."""
        return Checkpoint(self.selection_state(), tuple(self._back), tuple(self._forward))

    def rollback(self, checkpoint: Checkpoint) -> bool:
        """Restores a checkpoint's selections, locks and history; True when selections
        changed."""
        changed = self._apply(checkpoint.state)
        self._back, self._forward = list(checkpoint.back), list(checkpoint.forward)
        return changed

    def selections(self, state: str = "$") -> dict[str, list[Any]]:
        """The selected values of each field that has a selection, in symbol order."""
        found: dict[str, list[Any]] = self._impl.selections(_state(state))
        return found

    def state(self, field: str, state: str = "$") -> dict[str, list[Any]]:
        """A field's values by state: selected, possible, alternative, excluded (symbol order)."""
        found: dict[str, list[Any]] = self._impl.state(self._field(field), _state(state))
        return found

    def counts(self, field: str, state: str = "$") -> dict[str, int]:
        """How many of a field's values are selected, possible, alternative and excluded."""
        found: dict[str, int] = self._impl.counts(self._field(field), _state(state))
        return found

    def indices(self, field: str, state: str = "possible", in_state: str = "$") -> np.ndarray:
        """Symbol indexes of a field's values in one state (selected_excluded: S but excluded),
        in the selection state `in_state`."""
        if state not in STATES:
            raise _core.Error(f"unknown state {state!r}: use one of {', '.join(STATES)}")
        found: np.ndarray = self._impl.indices(self._field(field), state, _state(in_state))
        return found

    def state_codes(
        self, field: str, show_alternatives: bool = False, in_state: str = "$"
    ) -> np.ndarray:
        """Each of a field's values' state as a code (assoc.field_order: SELECTED, OPTION,
        ALTERNATIVE, SELECTED_EXCLUDED, EXCLUDED), in symbol order, in the selection state
        `in_state`; alternatives count as excluded unless `show_alternatives`."""
        found: np.ndarray = self._impl.state_codes(
            self._field(field), bool(show_alternatives), _state(in_state)
        )
        return found

    def possible_rows(self, table: str, state: str = "$") -> int:
        """How many rows of a table are possible."""
        return self._impl.possible_rows(self._table(table), _state(state))

    def table(self, name: str, duals: Duals = "number") -> ArrowExport:
        """A table's possible rows under the selections now, for Arrow consumers
        (pyarrow.table, polars.DataFrame, DuckDB); `duals` as in Table.to_arrow."""
        if self._reduction is not None:
            self._table(name)
            for field in self._reduction.tables.get(name, []):
                self._field(field)
        return self._impl.arrow_table(name, check_duals(duals))

    def list_page(
        self,
        field: str,
        top: int = 0,
        height: int | None = None,
        *,
        sort: Mapping[str, int] | None = None,
        show_alternatives: bool = False,
        state: str = "$",
        duals: Duals = "number",
    ) -> ListPage:
        """A list object's page: `height` of a field's values (all by default) from position
        `top`, in the order `sort` gives (directions of state, numeric, ascii, load: 1
        ascending, -1 descending; {"ascii": 1} by default), each with its state under the
        selections of `state`: S selected, O possible, A alternative (X unless
        `show_alternatives`), XS selected but excluded, X excluded. An Arrow producer; with
        section access, only the user's values."""
        if self._orders is None:
            raise _core.Error("this session has no app: open it with App.session()")
        directions = sort_keys(sort)
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise _core.Error("top must be an integer >= 0")
        if height is not None and (
            isinstance(height, bool) or not isinstance(height, int) or height < 0
        ):
            raise _core.Error("height must be an integer >= 0 or None")
        field = self._field(field)
        how = check_duals(duals)
        values = self._orders(field)
        states = value_states(self._state_of(state), field, show_alternatives)
        order = self.kept_codes(field, display_order(values, states, *directions))
        stop = len(order) if height is None else min(len(order), top + height)
        codes = order[top:stop]
        names = _page_columns(field)
        export = self._impl.arrow_list_page(
            field, codes.tolist(), states[codes].tolist(), list(STATE_NAMES), names, how
        )
        return ListPage(export, top, len(order))

    def _state_of(self, state: str) -> _InState:
        name = _state(state)
        if name not in self.states:
            raise _core.Error(f"no alternate state {name!r}")
        return _InState(self, name)

    def hypercube(
        self,
        dimensions: Sequence[str] = (),
        measures: Sequence[str] = (),
        sort: SortSpec | None = None,
        suppress_zero: bool = False,
        suppress_missing: bool = False,
        state: str = "$",
        variables: Mapping[str, Any] | None = None,
        pivot_top: Sequence[int] | None = None,
    ) -> Hypercube:
        """Dimension tuples associated under the selections, with measures (DESIGN.md §2b);
        `state` is the object's selection state (aggregations without a set identifier).
        `pivot_top` makes it a pivot table's cube: its dimensions on top, by position, outer
        first: the inter-record functions read its columns and rows (docs/hypercubes.md).
        `$(…)` in dimensions and measures is expanded first with `variables` (default: the
        session's `variables`); the cube's columns keep the names as given."""
        dims, meas = names(dimensions, "dimensions"), names(measures, "measures")
        pairs = sort_pairs(sort)
        state = _state(state)
        given_dims, given_meas = dims, meas
        if any("$(" in t for t in dims + meas):
            expander = self.expander(state, variables)
            dims, meas = [expander(t) for t in dims], [expander(t) for t in meas]
            renamed = dict(zip(given_dims + given_meas, dims + meas, strict=True))
            pairs = [(renamed.get(column, column), direction) for column, direction in pairs]
        self._check_reduced([*dims, *meas])
        top = None
        if pivot_top is not None:
            top = list(pivot_top)
            if not all(isinstance(t, int) and not isinstance(t, bool) for t in top) or any(
                not 0 <= t < len(dims) for t in top
            ):
                raise _core.Error(f"pivot_top: positions of the {len(dims)} dimensions, 0 first")
        impl = self._impl.hypercube(
            dims, meas, pairs, bool(suppress_zero), bool(suppress_missing), state, top
        )
        kept = self.kept_codes if self.reduced else None
        return Hypercube(impl, given_dims, given_meas, kept)

    def expander(self, state: str = "$", variables: Mapping[str, Any] | None = None) -> Expander:
        """Expands `$(…)` in expressions (assoc.expansion) with `variables` (default: the
        session's), each `$(=expr)` evaluated once under `state`."""
        state = _state(state)
        found = self.variables if variables is None else variables
        if not isinstance(found, Mapping):
            raise _core.Error("variables must be a mapping of names to texts")
        return Expander(found, lambda expression: self._value(expression, state))

    def _check_reduced(self, texts: list[str]) -> None:
        """Under section access an omitted field is unknown (set expressions are allowed: the
        engine keeps every set within the session's row mask)."""
        if self._reduction is None:
            return
        for text in texts:
            for omitted in self._reduction.omit:
                if re.search(rf"(?<![\w.$]){re.escape(omitted)}(?![\w.])", text):
                    self._field(omitted)

    def _value(self, expression: str, state: str) -> Any:
        self._check_reduced([expression])
        impl = self._impl.hypercube([], [expression], [], False, False, state)
        return impl.totals()[0]

    def expand(
        self, expression: str, state: str = "$", variables: Mapping[str, Any] | None = None
    ) -> str:
        """`expression` with every `$(…)` expanded (see `hypercube`)."""
        return self.expander(state, variables)(expression)

    def evaluate(
        self,
        expression: str,
        state: str = "$",
        variables: Mapping[str, Any] | None = None,
        expanded: bool = False,
    ) -> Any:
        """An expression's value as a measure with no dimensions (after `$(…)` expansion,
        unless `expanded` says the text is expanded already): a number, a text, a Dual or
        None for NULL. A leading `=` is allowed."""
        if not isinstance(expression, str):
            raise _core.Error("an expression must be a string")
        text = expression if expanded else self.expand(expression, state, variables)
        text = text.strip()
        if text.startswith("="):
            text = text[1:]
        return self._value(text, _state(state))

    def __repr__(self) -> str:
        status = "closed" if self.closed else f"{len(self.selections())} fields selected"
        return f"<assoc.Session user={self.user!r}: {status}>"


class _InState:
    """A session read in one of its states (what value_states reads)."""

    def __init__(self, session: Session, state: str) -> None:
        self._session, self._state = session, state

    def indices(self, field: str, state: str = "possible") -> np.ndarray:
        return self._session.indices(field, state, self._state)

    def state_codes(self, field: str, show_alternatives: bool) -> np.ndarray:
        return self._session.state_codes(field, show_alternatives, self._state)


def _page_columns(field: str) -> list[str]:
    """A list page's column names: the field's, then elem and state (prefixed with `_` while
    they would repeat the field's name)."""
    elem, state = "elem", "state"
    while field in (elem, state):
        elem, state = "_" + elem, "_" + state
    return [field, elem, state]


class ListPage:
    """A page of a list object (Session.list_page): the field's values, each one's symbol
    index (`elem`) and state; an Arrow producer (pyarrow.table, polars.DataFrame, DuckDB)."""

    def __init__(self, export: ArrowExport, top: int, size: int) -> None:
        self._export = export
        self.top = top  # the page's first position in the whole list
        self.size = size  # values in the whole list

    @property
    def num_rows(self) -> int:
        """Values on the page."""
        return self._export.num_rows

    @property
    def column_names(self) -> list[str]:
        """The field's name, then elem and state."""
        return self._export.column_names

    def __len__(self) -> int:
        return self._export.num_rows

    def __arrow_c_schema__(self) -> Any:
        """The schema as an arrow_schema capsule."""
        return self._export.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The page as an arrow_array_stream capsule (one batch)."""
        return self._export.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"<assoc.ListPage {self.top}..{self.top + len(self)} of {self.size}>"


def _state(name: object) -> str:
    if not isinstance(name, str):
        raise _core.Error("a state's name must be a string")
    return name
