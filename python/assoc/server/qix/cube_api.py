"""GenericObject methods of list searches, continuous ranges and pivot cubes: searching a
list object (its layout shows the matches until the search is accepted or aborted), numeric
range selections, pivot pages, expanding and collapsing pivot nodes, selecting pivot cells."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from assoc.field_order import EXCLUDED, SELECTED_EXCLUDED, value_states
from assoc.server.qix.handles import ObjectTarget
from assoc.server.qix.hypercube import HyperCubeView
from assoc.server.qix.listobject import cube_by
from assoc.server.qix.listsearch import ListSearch
from assoc.server.qix.members import cell_limit
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.object_api import (
    _cube_def,
    _cube_view,
    _list_def,
    _number,
    _select_fields,
    _selected,
    _selections,
)
from assoc.server.qix.pages import parse_pages
from assoc.server.qix.pivot import PivotState
from assoc.server.qix.rpc import INVALID_PARAMETERS, INVALID_PARAMS, RpcError
from assoc.server.qix.session_state import SessionState
from assoc.server.qix.stacked import stack_page
from assoc.server.qix.states import InState

CUBE_METHODS = MethodTable("GenericObject")
# The measure cells of a GetHyperCubeStackData page unless its qMaxNbrCells says (Qlik's default).
MAX_STACK_CELLS = 10_000


def _key(path: str) -> str:
    """A definition path as objects key them."""
    return path if path.startswith("/") else "/" + path


# ---- list object search -------------------------------------------------------------------


@CUBE_METHODS.method("SearchListObjectFor")
def search_list_object_for(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Starts (or replaces) the list object's search: its layout and pages show the values
    the search matches until AcceptListObjectSearch or AbortListObjectSearch."""
    definition = _list_def(target, args["qPath"])
    search = ListSearch.parse(args["qMatch"])
    search.check(cube_by(_selections(target, definition), definition.field))
    target.obj.state[_key(args["qPath"])] = search
    return Answer({"qSuccess": True}, change=[target.obj.handle])


def _search_of(target: ObjectTarget, path: str) -> ListSearch | None:
    found = target.obj.state.get(_key(path))
    return found if isinstance(found, ListSearch) else None


@CUBE_METHODS.method("AcceptListObjectSearch")
def accept_list_object_search(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Selects the values the search matches that are not excluded (with qToggleMode, as well
    as those selected already) and ends the search. No search: nothing changes."""
    definition = _list_def(target, args["qPath"])
    search = _search_of(target, args["qPath"])
    if search is None:
        return Answer({})
    del target.obj.state[_key(args["qPath"])]
    doc = target.doc
    doc.facts.field(definition.field)
    values = doc.facts.values(definition.field)
    selections = _selections(target, definition)
    states = value_states(selections, definition.field, True)
    matched = search.mask(values, cube_by(selections, definition.field))
    chosen = matched & (states != EXCLUDED) & (states != SELECTED_EXCLUDED)
    codes = set(np.flatnonzero(chosen).tolist())
    text: str | None = search.text  # a search selection shows its text (GetFieldSelections)
    if args["qToggleMode"]:
        codes |= set(selections.indices(definition.field, "selected").tolist())
        text = None
    done = bool(codes) and selections.select_indices(definition.field, sorted(codes), text)
    _selected(target, done)
    return Answer({}, selections_changed=done, change=[target.obj.handle])


@CUBE_METHODS.method("AbortListObjectSearch")
def abort_list_object_search(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Ends the list object's search, selecting nothing (no search: nothing to end)."""
    _list_def(target, args["qPath"])
    if target.obj.state.pop(_key(args["qPath"]), None) is None:
        return Answer({})
    return Answer({}, change=[target.obj.handle])


# ---- continuous ranges --------------------------------------------------------------------


def _in_ranges(numbers: np.ndarray, ranges: list[Any], name: str) -> np.ndarray:
    """True for each number inside any NxRange {qMin, qMax, qMinInclEq, qMaxInclEq}."""
    inside = np.zeros(numbers.size, dtype=bool)
    for bounds in ranges:
        if not isinstance(bounds, dict):
            raise RpcError(INVALID_PARAMS, name, "Invalid Params: a range must be an object")
        low, high = _number(bounds, "qMin", 0), _number(bounds, "qMax", 0)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RpcError(INVALID_PARAMS, name, "Invalid Params: bounds must be finite")
        if low > high:
            low, high = high, low
        with np.errstate(invalid="ignore"):
            above = numbers >= low if bounds.get("qMinInclEq") else numbers > low
            below = numbers <= high if bounds.get("qMaxInclEq") else numbers < high
        inside |= above & below
    return inside


def _range_codes(
    target: ObjectTarget, selections: InState, field: str, ranges: list[Any], name: str
) -> list[int]:
    """The values of a field (not excluded) whose numbers lie in the ranges."""
    doc = target.doc
    doc.facts.field(field)
    values = doc.facts.values(field)
    states = value_states(selections, field, True)
    chosen = _in_ranges(values.numbers, ranges, name) & (states != EXCLUDED)
    chosen &= states != SELECTED_EXCLUDED
    codes: list[int] = np.flatnonzero(chosen).tolist()
    return codes


@CUBE_METHODS.method("SelectListObjectContinuousRange")
def select_list_object_continuous_range(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Selects the list object's values whose numbers lie in any of the ranges (values that
    are excluded or not numbers are not); no such value: qSuccess false."""
    definition = _list_def(target, args["qPath"])
    field, selections = definition.field, _selections(target, definition)
    codes = _range_codes(target, selections, field, args["qRanges"], "qRanges")
    return _select_fields(target, selections, [(field, codes)], False)


@CUBE_METHODS.method("SelectHyperCubeContinuousRange")
def select_hypercube_continuous_range(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Selects, per NxContinuousRangeSelectInfo {qRange, qDimIx}, the dimension's values whose
    numbers lie in its ranges, as one step."""
    definition = _cube_def(target, args["qPath"])
    selections = _selections(target, definition)
    by_dim: dict[int, list[Any]] = {}
    for item in args["qRanges"]:
        dim = _number(item, "qDimIx", 0)
        if not isinstance(dim, int) or not 0 <= dim < len(definition.dimensions):
            raise RpcError(INVALID_PARAMETERS, "qDimIx", f"no dimension {dim} in the cube")
        by_dim.setdefault(dim, []).append(item.get("qRange", {}))
    picks = [
        (
            definition.dimensions[dim].field,
            _range_codes(target, selections, definition.dimensions[dim].field, ranges, "qRange"),
        )
        for dim, ranges in by_dim.items()
    ]
    return _select_fields(target, selections, picks, False)


# ---- pivot cubes --------------------------------------------------------------------------


def _pivot_view(target: ObjectTarget, path: str) -> HyperCubeView:
    definition = _cube_def(target, path)
    if definition.mode != "P":
        raise RpcError(INVALID_PARAMETERS, path, "not a pivot hypercube (qMode P)")
    state = target.obj.state.get(_key(path))
    if not isinstance(state, PivotState):
        state = target.obj.state[_key(path)] = PivotState()
    return HyperCubeView(definition, target.doc.facts, _selections(target, definition), state)


@CUBE_METHODS.method("GetHyperCubePivotData")
def get_hypercube_pivot_data(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """NxPivotPages of a pivot cube (at most 10,000 cells, 1,000 pages)."""
    pages = parse_pages(args["qPages"])
    view = _pivot_view(target, args["qPath"])
    return Answer({"qDataPages": [view.pivot_page(p) for p in pages]})


@CUBE_METHODS.method("GetHyperCubeStackData", defaults={"qMaxNbrCells": MAX_STACK_CELLS})
def get_hypercube_stack_data(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """NxStackPages of a stacked cube (qMode K): each page's first-dimension nodes
    (qTop, qHeight) with the nodes and measure leaves under them, as many nodes as hold at
    most qMaxNbrCells measure cells."""
    definition = _cube_def(target, args["qPath"])
    if definition.mode != "K":
        raise RpcError(INVALID_PARAMETERS, args["qPath"], "not a stacked hypercube (qMode K)")
    pages = parse_pages(args["qPages"])
    max_cells = cell_limit(args["qMaxNbrCells"], "qMaxNbrCells", MAX_STACK_CELLS)
    view = HyperCubeView(definition, target.doc.facts, _selections(target, definition))
    return Answer({"qDataPages": [stack_page(view, p, max_cells) for p in pages]})


def _expansion(side: str, expand: bool) -> None:
    name = ("Expand" if expand else "Collapse") + ("Left" if side == "L" else "Top")

    @CUBE_METHODS.method(name, optional=("qAll",))
    def run(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
        view = _pivot_view(target, args["qPath"])
        if view.error is not None:
            raise RpcError(INVALID_PARAMETERS, args["qPath"], "the hypercube has an error")
        pivot = view.pivot
        row, col = args["qRow"], args["qCol"]
        leaf, level = (row, col) if side == "L" else (col, row)
        node = pivot.find(side, leaf, level)
        able = node.can_expand if expand else node.can_collapse
        if node.kind != "N" or not (able or args["qAll"]):
            verb = "expanded" if expand else "collapsed"
            raise RpcError(INVALID_PARAMETERS, name, f"this node cannot be {verb}")
        state = pivot.state.left if side == "L" else pivot.state.top
        (state.expand if expand else state.collapse)(node.path, args["qAll"])
        return Answer({}, change=[target.obj.handle])

    run.__doc__ = (
        f"{'Expands' if expand else 'Collapses'} the {'left' if side == 'L' else 'top'} node "
        "at qRow, qCol (qAll: every node of its dimension)."
    )


for _side in ("L", "T"):
    for _expand in (True, False):
        _expansion(_side, _expand)


@CUBE_METHODS.method("SelectPivotCells")
def select_pivot_cells(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Selects the dimension values of NxSelectionCells {qType L (left: qRow the row, qCol the
    dimension) or T (top: qRow the dimension, qCol the column)}: per field, the values named
    replace its selection, as one step. Totals and measures select nothing."""
    view = _pivot_view(target, args["qPath"])
    _cube_view(target, args["qPath"])  # error 8 when the cube has an error
    pivot = view.pivot
    picks: dict[str, set[int]] = {}
    for cell in args["qSelections"]:
        side = cell.get("qType")
        if side not in ("L", "T"):
            raise RpcError(INVALID_PARAMETERS, "qType", "L (left) or T (top) cells only")
        row, col = _number(cell, "qRow", 0), _number(cell, "qCol", 0)
        if not isinstance(row, int) or not isinstance(col, int):
            raise RpcError(INVALID_PARAMS, "qSelections", "Invalid Params: whole numbers")
        leaf, level = (row, col) if side == "L" else (col, row)
        node = pivot.find(side, leaf, level)
        if node.kind == "N" and node.code >= 0:
            picks.setdefault(pivot.field_of(side, node), set()).add(node.code)
    chosen = [(f, sorted(codes)) for f, codes in picks.items()]
    return _select_fields(target, view.session, chosen, args["qDeselectOnlyOneSelected"])
