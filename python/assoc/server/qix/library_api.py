"""Doc methods of the library (master dimensions and measures, variables, bookmarks) and the
methods of GenericDimension, GenericMeasure, GenericVariable and GenericBookmark handles."""

from __future__ import annotations

import math
from typing import Any

from assoc.server.qix.handles import DocTarget, LibraryTarget, OpenDocument
from assoc.server.qix.library import (
    BOOKMARK,
    DIMENSION,
    MEASURE,
    VARIABLE,
    LibraryItem,
    apply_selections,
    capture_selections,
)
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.patches import patched
from assoc.server.qix.rpc import GENERIC_NOT_FOUND, INVALID_PARAMS, RpcError
from assoc.server.qix.session_state import SessionState

LIBRARY_DOC_METHODS = MethodTable("Doc")
DIMENSION_METHODS = MethodTable("GenericDimension")
MEASURE_METHODS = MethodTable("GenericMeasure")
VARIABLE_METHODS = MethodTable("GenericVariable")
BOOKMARK_METHODS = MethodTable("GenericBookmark")
ITEM_TABLES = (DIMENSION_METHODS, MEASURE_METHODS, VARIABLE_METHODS, BOOKMARK_METHODS)


def _handle(s: SessionState, doc: OpenDocument, item: LibraryItem) -> int:
    """The item's handle in this session (the same one each time it is asked for)."""
    if item.handle:
        try:
            found = s.handles.get(item.handle)
        except RpcError:
            found = None
        if isinstance(found, LibraryTarget) and found.item is item:
            return item.handle
    item.handle = s.handles.add(LibraryTarget(doc, item))
    return item.handle


def _destroyed(s: SessionState, item: LibraryItem) -> list[int]:
    """Closes the handle of a destroyed item; answers the handles closed."""
    if not item.handle:
        return []
    s.handles.remove(item.handle)
    return [item.handle]


def _library_changed(s: SessionState) -> list[int]:
    """Every open handle: objects that name master items, and lists of them, may change."""
    return s.handles.open_handles()


# ---- Doc: create, get, destroy ---------------------------------------------------------------


def _create(kind: str) -> None:
    method = {DIMENSION: "CreateDimension", MEASURE: "CreateMeasure"}[kind]

    @LIBRARY_DOC_METHODS.method(method)
    def create(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
        item = target.doc.library.create(kind, args["qProp"])
        handle = _handle(s, target.doc, item)
        return Answer(
            {"qInfo": item.info, "qReturn": s.interface(handle)}, change=_library_changed(s)
        )


def _get(kind: str, method: str) -> None:
    @LIBRARY_DOC_METHODS.method(method, engine=False)
    def get(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
        item = target.doc.library.get(kind, args["qId"])
        if item is None:
            raise RpcError(GENERIC_NOT_FOUND, args["qId"], "Object not found")
        return Answer({"qReturn": s.interface(_handle(s, target.doc, item))})


def _destroy(kind: str, method: str) -> None:
    @LIBRARY_DOC_METHODS.method(method)
    def destroy(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
        item = target.doc.library.get(kind, args["qId"])
        if item is None:
            return Answer({"qSuccess": False})
        target.doc.library.destroy(item)
        closed = _destroyed(s, item)
        return Answer({"qSuccess": True}, close=closed, change=_library_changed(s))


for _kind in (DIMENSION, MEASURE):
    _create(_kind)
_get(DIMENSION, "GetDimension")
_get(MEASURE, "GetMeasure")
_get(VARIABLE, "GetVariableById")
_get(BOOKMARK, "GetBookmark")
_destroy(DIMENSION, "DestroyDimension")
_destroy(MEASURE, "DestroyMeasure")
_destroy(VARIABLE, "DestroyVariableById")
_destroy(BOOKMARK, "DestroyBookmark")


@LIBRARY_DOC_METHODS.method("CreateVariableEx")
def create_variable_ex(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A variable of the app (saved by DoSave): {qInfo, qReturn}; a name in use answers 8."""
    item = target.doc.library.create(VARIABLE, args["qProp"])
    handle = _handle(s, target.doc, item)
    return Answer({"qInfo": item.info, "qReturn": s.interface(handle)}, change=_library_changed(s))


@LIBRARY_DOC_METHODS.method("CreateSessionVariable")
def create_session_variable(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A variable that lives with the session (DoSave leaves it out)."""
    item = target.doc.library.create(VARIABLE, args["qProp"])
    item.session_only = True
    handle = _handle(s, target.doc, item)
    return Answer({"qReturn": s.interface(handle)}, change=_library_changed(s))


@LIBRARY_DOC_METHODS.method("GetVariableByName")
def get_variable_by_name(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """The handle of the variable of this name; error 2 when there is none."""
    item = target.doc.library.variable(args["qName"])
    if item is None:
        raise RpcError(GENERIC_NOT_FOUND, args["qName"], "Object not found")
    return Answer({"qReturn": s.interface(_handle(s, target.doc, item))})


@LIBRARY_DOC_METHODS.method("DestroyVariableByName")
def destroy_variable_by_name(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Removes the variable of this name; false when there is none."""
    item = target.doc.library.variable(args["qName"])
    if item is None:
        return Answer({"qSuccess": False})
    target.doc.library.destroy(item)
    return Answer({"qSuccess": True}, close=_destroyed(s, item), change=_library_changed(s))


@LIBRARY_DOC_METHODS.method("CreateBookmark")
def create_bookmark(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A bookmark of the session's current selections (the selected values of each field)."""
    item = target.doc.library.create(BOOKMARK, args["qProp"])
    item.selections = capture_selections(target.doc.selections)
    handle = _handle(s, target.doc, item)
    return Answer({"qInfo": item.info, "qReturn": s.interface(handle)}, change=_library_changed(s))


def _apply(s: SessionState, doc: OpenDocument, item: LibraryItem) -> Answer:
    facts = doc.facts
    ok = apply_selections(doc.selections, item.selections, lambda name: name in facts.fields)
    return Answer({"qSuccess": ok}, selections_changed=ok)


@LIBRARY_DOC_METHODS.method("ApplyBookmark")
def apply_bookmark(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Replaces the session's selections by the bookmark's (one history step); false for an
    unknown id or when a field is locked."""
    item = target.doc.library.get(BOOKMARK, args["qId"])
    if item is None:
        return Answer({"qSuccess": False})
    return _apply(s, target.doc, item)


@LIBRARY_DOC_METHODS.method("GetBookmarks", optional=("qOptions",))
def get_bookmarks(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """NxContainerEntry list of the bookmarks: {qInfo, qMeta, qData}."""
    spec = args["qOptions"].get("qData")
    layout = target.doc.library.list_layout(
        "qBookmarkListDef", {"qData": spec}, target.doc.selections
    )
    return Answer({"qList": layout["qItems"]})


# ---- the items' own methods ----------------------------------------------------------------


def _common(table: MethodTable) -> None:
    @table.method("GetLayout")
    def get_layout(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
        return Answer({"qLayout": target.item.layout(target.doc.selections)})

    @table.method("GetInfo", engine=False)
    def get_info(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
        return Answer({"qInfo": target.item.info})

    @table.method("GetProperties", engine=False)
    def get_properties(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
        return Answer({"qProp": target.item.properties})

    @table.method("SetProperties")
    def set_properties(s: SessionState, target: LibraryTarget, args: dict[str, Any]) -> Answer:
        target.doc.library.set_properties(target.item, args["qProp"])
        return Answer({}, change=_library_changed(s))

    @table.method("ApplyPatches")
    def apply_patches(s: SessionState, target: LibraryTarget, args: dict[str, Any]) -> Answer:
        props = patched(target.item.properties, list(args["qPatches"]))
        target.doc.library.set_properties(target.item, props, "qPatches")
        return Answer({}, change=_library_changed(s))


for _table in ITEM_TABLES:
    _common(_table)


def _linked_objects(s: SessionState, target: LibraryTarget) -> Answer:
    """NxLinkedObjectInfo of each object whose properties name this item's id."""
    doc, wanted = target.doc, target.item.item_id
    items = []
    for obj in doc.objects.values():
        if _names_library_id(obj.properties, wanted):
            items.append({"qRootId": _root(obj).object_id, "qInfo": obj.info})
    return Answer({"qItems": items})


def _root(obj: Any) -> Any:
    while obj.parent is not None:
        obj = obj.parent
    return obj


def _names_library_id(value: Any, wanted: str) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("qLibraryId") == wanted:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


@DIMENSION_METHODS.method("GetLinkedObjects")
def dimension_linked_objects(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
    """The objects that use this master dimension."""
    return _linked_objects(s, target)


@MEASURE_METHODS.method("GetLinkedObjects")
def measure_linked_objects(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
    """The objects that use this master measure."""
    return _linked_objects(s, target)


@DIMENSION_METHODS.method("GetDimension", engine=False)
def get_dimension(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
    """The dimension's qDim."""
    return Answer({"qDim": target.item.properties["qDim"]})


@MEASURE_METHODS.method("GetMeasure", engine=False)
def get_measure(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
    """The measure's qMeasure."""
    return Answer({"qMeasure": target.item.properties["qMeasure"]})


def _set_definition(s: SessionState, target: LibraryTarget, definition: str) -> Answer:
    props = dict(target.item.properties, qDefinition=definition)
    target.doc.library.set_properties(target.item, props)
    return Answer({}, change=_library_changed(s))


def _number_text(value: float) -> str:
    if not math.isfinite(value):
        raise RpcError(INVALID_PARAMS, "qVal", "Invalid Params: expected a finite number")
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


@VARIABLE_METHODS.method("SetStringValue")
def set_string_value(s: SessionState, target: LibraryTarget, args: dict[str, Any]) -> Answer:
    """The variable's definition becomes this text."""
    return _set_definition(s, target, args["qVal"])


@VARIABLE_METHODS.method("SetNumValue", kinds={"qVal": "number"})
def set_num_value(s: SessionState, target: LibraryTarget, args: dict[str, Any]) -> Answer:
    """The variable's definition becomes this number (written as the engine writes it)."""
    return _set_definition(s, target, _number_text(args["qVal"]))


@BOOKMARK_METHODS.method("Apply")
def bookmark_apply(s: SessionState, target: LibraryTarget, _: dict[str, Any]) -> Answer:
    """ApplyBookmark of this bookmark."""
    return _apply(s, target.doc, target.item)
