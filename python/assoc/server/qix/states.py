"""Alternate states over QIX: a session's selections seen from one state, the state an object
and its definitions compute in, and the alternate states' selections saved for selection mode."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

import assoc
from assoc.hypercube import Hypercube
from assoc.server.qix.rpc import GENERIC_NOT_FOUND, INVALID_PARAMETERS, RpcError

DEFAULT_STATE = "$"


def state_name(raw: Any, where: str = "qStateName") -> str:
    """A qStateName as given ("" = inherit), error 8 when it is not a string."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise RpcError(INVALID_PARAMETERS, where, "qStateName must be a string")
    return raw


def known_state(session: assoc.Session, name: str) -> str:
    """The state a method names ("" is the default state $); error 2 for an unknown state."""
    name = name or DEFAULT_STATE
    if name not in session.states:
        raise RpcError(GENERIC_NOT_FOUND, name, f"no alternate state {name!r}")
    return name


class InState:
    """A session's selections in one state, with the calls layouts and select methods make.
    Locks and Back/Forward belong to the default state: an alternate state has none."""

    def __init__(self, session: assoc.Session, state: str = DEFAULT_STATE) -> None:
        self.session = session
        self.state = state or DEFAULT_STATE

    @property
    def default(self) -> bool:
        """True for the default state $."""
        return self.state == DEFAULT_STATE

    def indices(self, field: str, kind: str = "possible") -> np.ndarray:
        """Symbol indexes of a field's values in one value state."""
        return self.session.indices(field, kind, in_state=self.state)

    def state_codes(self, field: str, show_alternatives: bool) -> np.ndarray:
        """Each of a field's values' state code (assoc.field_order), in symbol order."""
        return self.session.state_codes(field, show_alternatives, in_state=self.state)

    def counts(self, field: str) -> dict[str, int]:
        """How many of a field's values are in each value state."""
        return self.session.counts(field, state=self.state)

    def kept_codes(self, field: str, codes: np.ndarray) -> np.ndarray:
        """The symbol indexes (in their order) that section access leaves the session."""
        return self.session.kept_codes(field, codes)

    def selections(self) -> dict[str, list[Any]]:
        """The selected values of each field with a selection."""
        return self.session.selections(self.state)

    def hypercube(
        self,
        dimensions: Sequence[str] = (),
        measures: Sequence[str] = (),
        sort: Any = None,
        suppress_zero: bool = False,
        suppress_missing: bool = False,
        pivot_top: Sequence[int] | None = None,
    ) -> Hypercube:
        """The session's hypercube computed in this state."""
        return self.session.hypercube(
            dimensions,
            measures,
            sort,
            suppress_zero,
            suppress_missing,
            state=self.state,
            pivot_top=pivot_top,
        )

    def is_locked(self, field: str) -> bool:
        """True when the field is locked (only the default state has locks)."""
        return self.default and self.session.is_locked(field)

    @property
    def back_count(self) -> int:
        """Back steps (the default state's history)."""
        return self.session.back_count if self.default else 0

    @property
    def forward_count(self) -> int:
        """Forward steps (the default state's history)."""
        return self.session.forward_count if self.default else 0

    @contextmanager
    def step(self) -> Iterator[None]:
        """One history step (the default state's)."""
        with self.session.step():
            yield

    def select_indices(self, field: str, codes: list[int], search: str | None = None) -> bool:
        """Replaces a field's selection by symbol indexes (false when it is locked); `search`:
        the search text that found them."""
        return self.session.select_indices(field, codes, state=self.state, search=search)

    def search_text(self, field: str) -> str | None:
        """The search text that made a field's selection (None: no search made it)."""
        return self.session.search_text(field, state=self.state)

    def clear_field(self, field: str) -> bool:
        """Clears a field's selection (false when it is locked)."""
        return self.session.clear_field(field, state=self.state)

    def clear_all_but(self, field: str) -> bool:
        """Clears the selection of every field but `field` (locked ones keep theirs); true
        when a selection changed."""
        session = self.session
        others = [f for f in session.selections(self.state) if f != field]
        changed = False
        with session.step():  # one step of Back / Forward
            for other in others:
                changed = self.clear_field(other) or changed
        return changed

    def clear(self, locked_also: bool = False) -> None:
        """Clears every selection of the state (locked fields only with `locked_also`)."""
        self.session.clear(locked_also=locked_also, state=self.state)

    def lock(self, field: str) -> bool:
        """Locks a field's selection (the default state only)."""
        return self.default and self.session.lock(field)

    def unlock(self, field: str) -> bool:
        """Unlocks a field (the default state only)."""
        return self.default and self.session.unlock(field)

    def _select_states(self, field: str, kinds: Sequence[str]) -> bool:
        if self.is_locked(field):
            return False
        parts = [self.indices(field, kind) for kind in kinds]
        codes = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
        if not codes.size:
            return False
        return self.select_indices(field, codes.tolist())

    def select_all(self, field: str) -> bool:
        """Selects every value of a field."""
        return self._select_states(
            field, ("selected", "possible", "alternative", "excluded", "selected_excluded")
        )

    def select_possible(self, field: str) -> bool:
        """Adds the possible values to the selection."""
        return self._select_states(field, ("selected", "possible"))

    def select_alternative(self, field: str) -> bool:
        """Selects the alternative values instead of the selection."""
        return self._select_states(field, ("alternative",))

    def select_excluded(self, field: str) -> bool:
        """Selects the values neither selected nor possible."""
        return self._select_states(field, ("alternative", "excluded"))


Saved = dict[str, dict[str, list[int]]]


def save_alternates(session: assoc.Session) -> Saved:
    """Each alternate state's selections (symbol indexes per field), to restore later."""
    return {state: save_alternates_one(session, state) for state in session.states[1:]}


def restore_alternates(session: assoc.Session, saved: Saved) -> bool:
    """Puts saved alternate states' selections back (states removed since are skipped);
    true when a selection changed."""
    changed = False
    for state, fields in saved.items():
        if state not in session.states:
            continue
        if save_alternates_one(session, state) == fields:
            continue
        session.clear(state=state)
        for field, codes in fields.items():
            session.select_indices(field, codes, state=state)
        changed = True
    return changed


def save_alternates_one(session: assoc.Session, state: str) -> dict[str, list[int]]:
    """One alternate state's selections (symbol indexes per field)."""
    return {
        field: session.indices(field, "selected", in_state=state).tolist()
        for field in session.selections(state)
    }
