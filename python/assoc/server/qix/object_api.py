"""GenericObject methods: layouts, data pages, selections through list objects and cubes,
selection mode, properties and patches, child objects."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from assoc.server.qix.cubedef import HyperCubeDef
from assoc.server.qix.field_api import STATE_SELECTIONS, select_codes
from assoc.server.qix.handles import (
    Modal,
    ObjectTarget,
    OpenDocument,
    add_object,
    end_modal,
    new_object_id,
    remove_object,
)
from assoc.server.qix.hypercube import HyperCubeView
from assoc.server.qix.library import Library
from assoc.server.qix.listobject import ListObjectDef, ListObjectView
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.objects import CUBE_DEF, LIST_DEF, GenericObject, parse_properties
from assoc.server.qix.pages import parse_pages
from assoc.server.qix.rpc import (
    GENERIC_NOT_FOUND,
    HC_INVALID_OBJECT_STATE,
    HC_MODAL_OBJECT_ERROR,
    INVALID_PARAMETERS,
    INVALID_PARAMS,
    RpcError,
)
from assoc.server.qix.session_state import SessionState
from assoc.server.qix.states import InState, known_state, save_alternates

OBJECT_METHODS = MethodTable("GenericObject")


def _list_def(target: ObjectTarget, path: str) -> ListObjectDef:
    found: ListObjectDef = target.obj.definition(path, LIST_DEF)
    return found


def _cube_def(target: ObjectTarget, path: str) -> HyperCubeDef:
    found: HyperCubeDef = target.obj.definition(path, CUBE_DEF)
    return found


def _selections(target: ObjectTarget, definition: Any) -> InState:
    """The session's selections in the state of one of the object's definitions (error 2
    when the session has no such state)."""
    state = known_state(target.doc.selections, target.obj.state_of(definition))
    return InState(target.doc.selections, state)


@OBJECT_METHODS.method("GetLayout", keeps_layouts=True)
def get_layout(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """GenericObjectLayout for the session's current selections."""
    return Answer({"qLayout": target.obj.layout(target.doc.layout_context())})


@OBJECT_METHODS.method("GetListObjectData", keeps_layouts=True)
def get_list_object_data(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Pages of a list object (at most 10,000 cells)."""
    definition = _list_def(target, args["qPath"])
    pages = parse_pages(args["qPages"], min_width=1)
    path = args["qPath"] if args["qPath"].startswith("/") else "/" + args["qPath"]
    search = target.obj.state.get(path)  # a running search shows its matches
    selections = target.obj.selections(definition, target.doc.selections)
    view = ListObjectView(definition, target.doc.facts, selections, search)
    return Answer({"qDataPages": [view.page(p) for p in pages]})


@OBJECT_METHODS.method("GetHyperCubeData", keeps_layouts=True)
def get_hypercube_data(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Pages of a straight hypercube (at most 10,000 cells)."""
    definition = _cube_def(target, args["qPath"])
    pages = parse_pages(args["qPages"])
    selections = target.obj.selections(definition, target.doc.selections)
    view = HyperCubeView(definition, target.doc.facts, selections)
    return Answer({"qDataPages": [view.page(p) for p in pages]})


@OBJECT_METHODS.method("SelectListObjectValues", optional=("qToggleMode",))
def select_list_object_values(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Selects a list object's values by element number."""
    definition = _list_def(target, args["qPath"])
    target.doc.facts.field(definition.field)
    selections = _selections(target, definition)
    done = select_codes(selections, definition.field, args["qValues"], args["qToggleMode"])
    return _selected(target, done)


@OBJECT_METHODS.method("SelectHyperCubeValues", optional=("qToggleMode",))
def select_hypercube_values(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Selects one dimension's values by element number."""
    definition = _cube_def(target, args["qPath"])
    number = args["qDimNo"]
    if not 0 <= number < len(definition.dimensions):
        raise RpcError(INVALID_PARAMETERS, "qDimNo", "no dimension with this number")
    field = definition.dimensions[number].field
    codes = args["qValues"]
    if field.startswith("="):
        field, codes = _calculated_source(target, args["qPath"], number, codes)
    target.doc.facts.field(field)
    selections = _selections(target, definition)
    done = select_codes(selections, field, codes, args["qToggleMode"])
    return _selected(target, done)


def _calculated_source(
    target: ObjectTarget, path: str, number: int, chosen: list[int]
) -> tuple[str, list[int]]:
    """A calculated dimension's chosen values as the values of the one field it reads (an
    Aggr: its dimension) whose results they are."""
    view = _cube_view(target, path)
    source = view.cube.calculated_source(number)
    if source is None:
        raise RpcError(
            INVALID_PARAMETERS,
            "qDimNo",
            "this calculated dimension reads several fields: select in those fields",
        )
    field, results = source
    picked = np.flatnonzero(np.isin(results, [c for c in chosen if c >= 0]))
    return field, picked.tolist()


@OBJECT_METHODS.method("ClearSelections")
def clear_selections(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Clears a list object's field, or a cube's dimensions (those qColIndices names, or all);
    locked fields keep their selections."""
    selections, fields = _fields_of(target, args["qPath"], args["qColIndices"])
    with selections.step():
        for field in fields:
            selections.clear_field(field)
    _mark_made(target, True)
    return Answer({}, selections_changed=True)


def _fields_of(target: ObjectTarget, path: str, columns: list[int]) -> tuple[InState, list[str]]:
    """The selections of the definition's state and the field of a list object, or the
    fields of a cube's dimensions (those `columns` names, or all), that the app has."""
    if path.rstrip("/").endswith(LIST_DEF):
        listed = _list_def(target, path)
        selections, fields = _selections(target, listed), [listed.field]
    else:
        cube = _cube_def(target, path)
        dimensions = cube.dimensions
        wanted = columns or range(len(dimensions))
        selections = _selections(target, cube)
        fields = [dimensions[c].field for c in wanted if 0 <= c < len(dimensions)]
    return selections, [f for f in fields if f in target.doc.facts.fields]


def _mark_made(target: ObjectTarget, done: bool) -> None:
    modal = target.doc.modal
    if done and modal is not None and modal.object_id == target.obj.object_id:
        modal.made_selections = True


def _selected(target: ObjectTarget, done: bool) -> Answer:
    """The answer of a select method: qSuccess, and every handle changed when it selected."""
    _mark_made(target, done)
    return Answer({"qSuccess": done}, selections_changed=done)


# ---- more selections ------------------------------------------------------------------


def _list_state_selection(name: str, method: str) -> None:
    @OBJECT_METHODS.method(
        f"SelectListObject{name}",
    )
    def run(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
        definition = _list_def(target, args["qPath"])
        target.doc.facts.field(definition.field)
        selections = _selections(target, definition)
        return _selected(target, getattr(selections, method)(definition.field))

    run.__doc__ = f"A list object's field: as Field.Select{name}."


for _name in ("All", "Possible", "Alternative", "Excluded"):
    _list_state_selection(_name, STATE_SELECTIONS[f"Select{_name}"])


def _cube_view(target: ObjectTarget, path: str) -> HyperCubeView:
    definition = _cube_def(target, path)
    view = HyperCubeView(definition, target.doc.facts, _selections(target, definition))
    if view.error is not None:
        raise RpcError(INVALID_PARAMETERS, path, "the hypercube has an error: nothing to select")
    return view


def _row_codes(view: HyperCubeView, column: int, rows: np.ndarray) -> list[int]:
    """The distinct element numbers a dimension column has in some rows of a cube (NULL not)."""
    index = view.rows[rows] if view.rows is not None else rows
    codes = np.unique(view.codes[column][index])
    found: list[int] = codes[codes >= 0].tolist()
    return found


def _select_fields(
    target: ObjectTarget,
    selections: InState,
    picks: list[tuple[str, list[int]]],
    deselect_one: bool,
) -> Answer:
    """Replaces each field's selection by its codes (in the state of `selections`), as one
    history step; nothing when there is nothing to select or a field is locked (qSuccess
    false). With `deselect_one`, a field whose only selected value is picked again is cleared
    instead."""
    picks = [(f, codes) for f, codes in picks if codes]
    if not picks or any(selections.is_locked(f) for f, _ in picks):
        return _selected(target, False)
    with selections.step():
        for field, codes in picks:
            current = selections.indices(field, "selected").tolist()
            if deselect_one and len(current) == 1 and current == codes:
                selections.clear_field(field)
            else:
                selections.select_indices(field, codes)
    return _selected(target, True)


@OBJECT_METHODS.method("SelectHyperCubeCells")
def select_hypercube_cells(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Selects, in each dimension column named, the values of the rows named (row numbers of
    the sorted cube, as pages show them). Rows past the cube are ignored, measure columns
    select nothing; a column outside the cube is error 8."""
    view = _cube_view(target, args["qPath"])
    n_dims = len(view.definition.dimensions)
    for column in args["qColIndices"]:
        if not 0 <= column < view.width:
            raise RpcError(INVALID_PARAMETERS, "qColIndices", f"no column {column} in the cube")
    rows = np.array(sorted({r for r in args["qRowIndices"] if 0 <= r < len(view)}), np.int64)
    picks = [
        (view.definition.dimensions[c].field, _row_codes(view, c, rows))
        for c in dict.fromkeys(args["qColIndices"])
        if c < n_dims
    ]
    return _select_fields(target, view.session, picks, args["qDeselectOnlyOneSelected"])


def _number(raw: dict[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RpcError(INVALID_PARAMS, key, "Invalid Params: must be a number")
    return value


def _range_rows(view: HyperCubeView, ranges: Any, or_mode: bool) -> np.ndarray:
    """The rows whose measures lie in the NxRangeSelectInfo ranges (all of them, or with
    `or_mode` any); a measure value that is NULL lies in no range."""
    if not isinstance(ranges, list) or not all(isinstance(r, dict) for r in ranges):
        raise RpcError(INVALID_PARAMS, "qRanges", "Invalid Params: must be a list of objects")
    n_rows = len(view)
    index = view.rows if view.rows is not None else np.arange(n_rows)
    mask = np.zeros(n_rows, dtype=bool) if or_mode else np.ones(n_rows, dtype=bool)
    for info in ranges:
        measure = _number(info, "qMeasureIx", 0)
        if not isinstance(measure, int) or not 0 <= measure < len(view.arrays):
            raise RpcError(INVALID_PARAMETERS, "qMeasureIx", f"no measure {measure} in the cube")
        bounds = info.get("qRange", {})
        if not isinstance(bounds, dict):
            raise RpcError(INVALID_PARAMS, "qRange", "Invalid Params: must be an object")
        low, high = _number(bounds, "qMin", 0), _number(bounds, "qMax", 0)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RpcError(INVALID_PARAMS, "qRange", "Invalid Params: bounds must be finite")
        values = view.arrays[measure][index]
        with np.errstate(invalid="ignore"):
            above = values >= low if bounds.get("qMinInclEq") else values > low
            below = values <= high if bounds.get("qMaxInclEq") else values < high
        inside = above & below
        mask = mask | inside if or_mode else mask & inside
    return np.flatnonzero(mask)


def _range_picks(
    view: HyperCubeView, rows: np.ndarray, columns: Any
) -> list[tuple[str, list[int]]]:
    n_dims = len(view.definition.dimensions)
    if not isinstance(columns, list) or not all(
        isinstance(c, int) and not isinstance(c, bool) for c in columns
    ):
        raise RpcError(INVALID_PARAMS, "qColumnsToSelect", "Invalid Params: expected ints")
    for column in columns:
        if not 0 <= column < n_dims:
            raise RpcError(INVALID_PARAMETERS, "qColumnsToSelect", f"no dimension {column}")
    chosen = list(dict.fromkeys(columns)) or list(range(n_dims))
    return [(view.definition.dimensions[c].field, _row_codes(view, c, rows)) for c in chosen]


@OBJECT_METHODS.method("RangeSelectHyperCubeValues")
def range_select_hypercube_values(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Selects the dimension values (qColumnsToSelect, or every dimension) of the rows whose
    measures lie in the ranges."""
    view = _cube_view(target, args["qPath"])
    rows = _range_rows(view, args["qRanges"], args["qOrMode"])
    picks = _range_picks(view, rows, args["qColumnsToSelect"])
    return _select_fields(target, view.session, picks, args["qDeselectOnlyOneSelected"])


@OBJECT_METHODS.method("MultiRangeSelectHyperCubeValues")
def multi_range_select_hypercube_values(
    s: SessionState, target: ObjectTarget, args: dict[str, Any]
) -> Answer:
    """Several range selections (each with its own columns) as one step."""
    view = _cube_view(target, args["qPath"])
    picks: dict[str, list[int]] = {}
    for item in args["qRanges"]:
        rows = _range_rows(view, item.get("qRanges", []), args["qOrMode"])
        for field, codes in _range_picks(view, rows, item.get("qColumnsToSelect", [])):
            picks[field] = sorted(set(picks.get(field, [])) | set(codes))
    return _select_fields(
        target, view.session, list(picks.items()), args["qDeselectOnlyOneSelected"]
    )


def _lock(target: ObjectTarget, args: dict[str, Any], locking: bool) -> Answer:
    selections, fields = _fields_of(target, args["qPath"], args["qColIndices"])
    with selections.step():
        for field in fields:
            if locking:
                selections.lock(field)
            else:
                selections.unlock(field)
    return Answer({}, selections_changed=True)


@OBJECT_METHODS.method("Lock")
def lock(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Locks a list object's field or a cube's dimensions (those with selections)."""
    return _lock(target, args, locking=True)


@OBJECT_METHODS.method("Unlock")
def unlock(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Unlocks a list object's field or a cube's dimensions."""
    return _lock(target, args, locking=False)


# ---- selection mode -------------------------------------------------------------------


@OBJECT_METHODS.method("BeginSelections", engine=False)
def begin_selections(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Puts the object in selection mode: the selections now are saved, to come back to with
    EndSelections(false) or ResetMadeSelections. Each path names a list object or hypercube of
    the object (error 2 otherwise); another object in selection mode is error 6003."""
    for path in args["qPaths"]:
        kind = LIST_DEF if path.rstrip("/").endswith(LIST_DEF) else CUBE_DEF
        target.obj.definition(path, kind)
    doc, obj = target.doc, target.obj
    if doc.modal is not None and doc.modal.object_id != obj.object_id:
        raise RpcError(HC_MODAL_OBJECT_ERROR, "qPaths", "another object is in selection mode")
    if doc.modal is None:
        session = doc.selections
        doc.modal = Modal(obj.object_id, session.checkpoint(), alternates=save_alternates(session))
    return Answer({}, change=[obj.handle])


@OBJECT_METHODS.method("EndSelections")
def end_selections(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Ends selection mode: accepted selections stay, cancelled ones go back to the state
    saved at BeginSelections. An object not in selection mode answers {} and changes
    nothing."""
    doc, obj = target.doc, target.obj
    if doc.modal is None or doc.modal.object_id != obj.object_id:
        return Answer({})
    changed = end_modal(doc, args["qAccept"])
    return Answer({}, selections_changed=changed, change=[obj.handle])


@OBJECT_METHODS.method("ResetMadeSelections")
def reset_made_selections(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """Undoes the selections made since BeginSelections; the object stays in selection mode
    (error 6002 when it is not in it)."""
    modal = target.doc.modal
    if modal is None or modal.object_id != target.obj.object_id:
        raise RpcError(HC_INVALID_OBJECT_STATE, "ResetMadeSelections", "not in selection mode")
    changed = modal.rollback(target.doc.selections)
    modal.made_selections = False
    return Answer({}, selections_changed=changed, change=[target.obj.handle])


# ---- properties -----------------------------------------------------------------------


def _changed(obj: GenericObject) -> list[int]:
    """Handles whose layout a change of the object's properties changes: it and its parent
    (the parent's child list shows its children's data)."""
    return [obj.handle] + ([obj.parent.handle] if obj.parent is not None else [])


@OBJECT_METHODS.method("GetInfo", engine=False, keeps_layouts=True)
def get_info(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """NxInfo {qId, qType}."""
    return Answer({"qInfo": target.obj.info})


@OBJECT_METHODS.method("GetProperties", engine=False, keeps_layouts=True)
def get_properties(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """The properties as set (without soft patches)."""
    return Answer({"qProp": target.obj.properties})


@OBJECT_METHODS.method("GetEffectiveProperties", engine=False, keeps_layouts=True)
def get_effective_properties(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """The properties with the soft patches applied."""
    return Answer({"qProp": target.obj.effective_properties()})


@OBJECT_METHODS.method("SetProperties")
def set_properties(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Replaces the properties (checked as at creation; the id stays) and drops soft
    patches."""
    target.obj.set_properties(args["qProp"])
    return Answer({}, change=_changed(target.obj))


@OBJECT_METHODS.method("ApplyPatches")
def apply_patches(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Applies NxPatches to the properties (hard) or over them (soft); all or none."""
    target.obj.apply_patches(args["qPatches"], args["qSoftPatch"])
    return Answer({}, change=_changed(target.obj))


@OBJECT_METHODS.method("ClearSoftPatches")
def clear_soft_patches(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """Drops the soft patches."""
    target.obj.clear_soft_patches()
    return Answer({}, change=_changed(target.obj))


@OBJECT_METHODS.method("GetFullPropertyTree", keeps_layouts=True)
def get_full_property_tree(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """GenericObjectEntry: the properties and every child's, recursively."""
    return Answer({"qPropEntry": target.obj.property_tree()})


def _check_entry(
    entry: Any, name: str, library: Library | None = None
) -> list[tuple[dict[str, Any], Any]]:
    """Checks a GenericObjectEntry tree before anything changes: each entry's properties
    as at creation; answers (entry, its children) pairs, depth first."""
    checked = []
    stack = [(entry, name)]
    while stack:
        item, where = stack.pop()
        if not isinstance(item, dict) or not isinstance(item.get("qProperty"), dict):
            raise RpcError(INVALID_PARAMS, where, "Invalid Params: qProperty must be an object")
        children = item.get("qChildren", [])
        if not isinstance(children, list):
            raise RpcError(INVALID_PARAMS, where, "Invalid Params: qChildren must be a list")
        parse_properties(item["qProperty"], f"{where}/qProperty", "", library=library)
        checked.append((item, children))
        stack.extend((c, f"{where}/qChildren/{i}") for i, c in enumerate(children))
    return checked


def _entry_id(entry: dict[str, Any]) -> Any:
    info = entry["qProperty"].get("qInfo")
    return info.get("qId") if isinstance(info, dict) else None


def _set_tree(
    s: SessionState, doc: OpenDocument, obj: GenericObject, entry: dict[str, Any], closed: list[int]
) -> None:
    obj.set_properties(entry["qProperty"], "qPropEntry")
    keep = {_entry_id(c) for c in entry.get("qChildren", [])}
    for child in [c for c in obj.children if c.object_id not in keep]:
        closed += remove_object(s.handles, doc, child)
    existing = {c.object_id: c for c in obj.children}
    children = []
    for child_entry in entry.get("qChildren", []):
        found = existing.get(_entry_id(child_entry))
        child = found or _new_child(s, doc, obj, child_entry["qProperty"], "qPropEntry")
        children.append(child)
        _set_tree(s, doc, child, child_entry, closed)
    obj.children = children


@OBJECT_METHODS.method("SetFullPropertyTree")
def set_full_property_tree(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Sets the properties of the object and of its children, recursively: children are
    matched by qInfo.qId; new ones are made (with that id when it is free), missing ones
    destroyed. The whole tree is checked before anything changes."""
    entry = args["qPropEntry"]
    _check_entry(entry, "qPropEntry", target.doc.library)
    closed: list[int] = []
    _set_tree(s, target.doc, target.obj, entry, closed)
    changed = [target.obj.handle, *(c.handle for c in target.obj.descendants())]
    return Answer({}, change=changed, close=closed)


# ---- children -------------------------------------------------------------------------


def _new_child(
    s: SessionState, doc: OpenDocument, parent: GenericObject, props: Any, name: str
) -> GenericObject:
    info = props.get("qInfo") if isinstance(props, dict) else None
    wanted = info.get("qId") if isinstance(info, dict) else None
    child = GenericObject.create(props, new_object_id(doc.objects, wanted), name, doc.library)
    child.parent = parent
    add_object(s.handles, doc, child)
    parent.children.append(child)
    return child


def _prop_for_this(args: dict[str, Any]) -> Any:
    props = args["qPropForThis"]
    if props is not None and not isinstance(props, dict):
        raise RpcError(INVALID_PARAMS, "qPropForThis", "Invalid Params: expected object")
    return props


@OBJECT_METHODS.method("CreateChild")
def create_child(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """A child object (its handle and qInfo); qPropForThis, when given, replaces this
    object's properties too (checked first: nothing is made when either does not fit)."""
    this = _prop_for_this(args)
    if this is not None:
        parse_properties(this, "qPropForThis", "", library=target.doc.library)
    child = _new_child(s, target.doc, target.obj, args["qProp"], "qProp")
    if this is not None:
        target.obj.set_properties(this, "qPropForThis")
    return Answer(
        {"qInfo": child.info, "qReturn": s.interface(child.handle)}, change=[target.obj.handle]
    )


def _child(target: ObjectTarget, object_id: str) -> GenericObject:
    for child in target.obj.children:
        if child.object_id == object_id:
            return child
    raise RpcError(GENERIC_NOT_FOUND, object_id, "Object not found")


@OBJECT_METHODS.method("DestroyChild")
def destroy_child(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Destroys a child and its children (their handles close); false for an id that is not a
    child of this object."""
    this = _prop_for_this(args)
    if this is not None:
        parse_properties(this, "qPropForThis", "", library=target.doc.library)
    found = [c for c in target.obj.children if c.object_id == args["qId"]]
    if not found:
        return Answer({"qSuccess": False})
    closed = remove_object(s.handles, target.doc, found[0])
    if this is not None:
        target.obj.set_properties(this, "qPropForThis")
    return Answer({"qSuccess": True}, change=[target.obj.handle], close=closed)


@OBJECT_METHODS.method("DestroyAllChildren")
def destroy_all_children(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Destroys every child (and their children)."""
    this = _prop_for_this(args)
    if this is not None:
        parse_properties(this, "qPropForThis", "", library=target.doc.library)
    closed: list[int] = []
    for child in list(target.obj.children):
        closed += remove_object(s.handles, target.doc, child)
    if this is not None:
        target.obj.set_properties(this, "qPropForThis")
    return Answer({}, change=[target.obj.handle], close=closed)


@OBJECT_METHODS.method("GetChildInfos", engine=False, keeps_layouts=True)
def get_child_infos(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """NxInfo of each child, in order."""
    return Answer({"qInfos": [c.info for c in target.obj.children]})


@OBJECT_METHODS.method("GetChild")
def get_child(s: SessionState, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """A child's handle; error 2 "Object not found" for an id that is not a child."""
    return Answer({"qReturn": s.interface(_child(target, args["qId"]).handle)})


@OBJECT_METHODS.method("GetParent")
def get_parent(s: SessionState, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """The parent's handle; error 2 "Object not found" for an object without a parent."""
    parent = target.obj.parent
    if parent is None:
        raise RpcError(GENERIC_NOT_FOUND, target.obj.object_id, "Object not found")
    return Answer({"qReturn": s.interface(parent.handle)})
