"""Field methods: selecting a field's values by value, search string or element number."""

from __future__ import annotations

from typing import Any

import numpy as np

import assoc
from assoc.server.qix.handles import FieldTarget
from assoc.server.qix.listsearch import whole_values
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError
from assoc.server.qix.session_state import SessionState
from assoc.server.qix.states import InState, known_state

FIELD_METHODS = MethodTable("Field")


# Element numbers are symbol indexes: 64-bit at most. Larger ones name no value, and are
# ignored as other unknown numbers are.
_INT64 = range(-(2**63), 2**63)


def select_codes(
    selections: assoc.Session | InState, field: str, codes: list[int], toggle: bool
) -> bool:
    """Replaces (or with `toggle`, flips) a field's selection by symbol indexes; numbers that
    name no value are ignored. False (nothing changes) when the field is locked."""
    if any(code not in _INT64 for code in codes):
        codes = [code for code in codes if code in _INT64]
    if toggle:
        current = set(selections.indices(field, "selected").tolist())
        current.symmetric_difference_update(codes)
        codes = sorted(current)
    return selections.select_indices(field, codes)


def _in_state(target: FieldTarget) -> InState:
    """The session's selections in the field handle's state (error 2 once it is removed)."""
    session = target.doc.selections
    return InState(session, known_state(session, target.state))


def _matching(target: FieldTarget, match: str) -> list[int]:
    """The values a search string matches (the field's search index: listsearch.py)."""
    values = target.doc.facts.values(target.name)
    return np.flatnonzero(whole_values(values, match)).tolist()


@FIELD_METHODS.method("SelectValues")
def select_values(s: SessionState, target: FieldTarget, args: dict[str, Any]) -> Answer:
    """Selects values given as {qText, qIsNumeric, qNumber}; unknown ones are ignored."""
    values = target.doc.facts.values(target.name)
    codes = []
    for item in args["qFieldValues"]:
        if item.get("qIsNumeric"):
            number = item.get("qNumber")
            if not isinstance(number, int | float) or isinstance(number, bool):
                raise RpcError(INVALID_PARAMETERS, "qNumber", "must be a number")
            try:
                code = values.find_number(float(number))
            except OverflowError:  # an integer beyond any double: no value has it
                code = None
        else:
            text = item.get("qText", "")
            if not isinstance(text, str):
                raise RpcError(INVALID_PARAMETERS, "qText", "must be a string")
            code = values.find_text(text)
        if code is not None:
            codes.append(code)
    done = select_codes(_in_state(target), target.name, codes, args["qToggleMode"])
    return Answer({"qReturn": done}, selections_changed=done)


def _select_match(target: FieldTarget, match: str, toggle: bool) -> Answer:
    codes = _matching(target, match)
    if not codes:
        return Answer({"qReturn": False})
    if toggle:
        done = select_codes(_in_state(target), target.name, codes, toggle)
    else:  # a wildcard search shows as its text (GetFieldSelections, current selections)
        search = match if "*" in match or "?" in match else None
        done = _in_state(target).select_indices(target.name, codes, search)
    return Answer({"qReturn": done}, selections_changed=done)


@FIELD_METHODS.method("Select")
def select(s: SessionState, target: FieldTarget, args: dict[str, Any]) -> Answer:
    """Selects the values a search string matches (whole value, any case, * and ?)."""
    return _select_match(target, args["qMatch"], toggle=False)


@FIELD_METHODS.method("ToggleSelect")
def toggle_select(s: SessionState, target: FieldTarget, args: dict[str, Any]) -> Answer:
    """Flips the selection of the values a search string matches."""
    return _select_match(target, args["qMatch"], toggle=True)


@FIELD_METHODS.method("LowLevelSelect", optional=("qToggleMode",))
def low_level_select(s: SessionState, target: FieldTarget, args: dict[str, Any]) -> Answer:
    """Selects values by element number (symbol index)."""
    done = select_codes(_in_state(target), target.name, args["qValues"], args["qToggleMode"])
    return Answer({"qReturn": done}, selections_changed=done)


@FIELD_METHODS.method("Clear")
def clear(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """Clears the field's selection (false when it is locked)."""
    done = _in_state(target).clear_field(target.name)
    return Answer({"qReturn": done}, selections_changed=done)


def _state_selection(name: str, doc: str) -> None:
    @FIELD_METHODS.method(name)
    def run(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
        done = getattr(_in_state(target), STATE_SELECTIONS[name])(target.name)
        return Answer({"qReturn": done}, selections_changed=done)

    run.__doc__ = doc


# Field method -> Session method; the same selections serve SelectListObject*.
STATE_SELECTIONS = {
    "SelectAll": "select_all",
    "SelectPossible": "select_possible",
    "SelectAlternative": "select_alternative",
    "SelectExcluded": "select_excluded",
}
_state_selection("SelectAll", "Selects every value (false when the field is locked).")
_state_selection("SelectPossible", "Adds the possible values to the selection.")
_state_selection("SelectAlternative", "Selects the alternative values instead.")
_state_selection("SelectExcluded", "Selects the values neither selected nor possible.")


@FIELD_METHODS.method("Lock")
def lock(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """Locks the field's selection (false when it has none)."""
    done = _in_state(target).lock(target.name)
    return Answer({"qReturn": done}, selections_changed=done)


@FIELD_METHODS.method("Unlock")
def unlock(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """Unlocks the field (false when it was not locked)."""
    done = _in_state(target).unlock(target.name)
    return Answer({"qReturn": done}, selections_changed=done)


@FIELD_METHODS.method("ClearAllButThis")
def clear_all_but_this(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """Clears the selections of every other field in the handle's state (locked fields keep
    theirs, as with Clear; qSoftLock as elsewhere); true."""
    changed = _in_state(target).clear_all_but(target.name)
    return Answer({"qReturn": True}, selections_changed=changed)


@FIELD_METHODS.method("GetNxProperties", engine=False, keeps_layouts=True)
def get_nx_properties(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """NxFieldProperties: qOneAndOnlyOne is false (no field of an app is set to always one
    selected value)."""
    return Answer({"qProperties": {"qOneAndOnlyOne": False}})


@FIELD_METHODS.method("GetCardinal", engine=False, keeps_layouts=True)
def get_cardinal(s: SessionState, target: FieldTarget, _: dict[str, Any]) -> Answer:
    """The number of distinct values of the field."""
    return Answer({"qReturn": int(target.doc.facts.field(target.name)["cardinal"])})
