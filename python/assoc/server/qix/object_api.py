"""GenericObject methods: layouts, data pages, and selections through list objects and cubes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assoc.server.qix.field_api import select_codes
from assoc.server.qix.handles import ObjectTarget
from assoc.server.qix.hypercube import HyperCubeDef, HyperCubeView
from assoc.server.qix.listobject import ListObjectDef, ListObjectView
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.objects import CUBE_DEF, LIST_DEF
from assoc.server.qix.pages import parse_pages
from assoc.server.qix.rpc import INVALID_PARAMETERS, Param, RpcError

if TYPE_CHECKING:
    from assoc.server.qix.session import QixSession

OBJECT_METHODS = MethodTable()


def _list_def(target: ObjectTarget, path: str) -> ListObjectDef:
    found: ListObjectDef = target.obj.definition(path, LIST_DEF)
    return found


def _cube_def(target: ObjectTarget, path: str) -> HyperCubeDef:
    found: HyperCubeDef = target.obj.definition(path, CUBE_DEF)
    return found


@OBJECT_METHODS.method("GetLayout")
def get_layout(s: QixSession, target: ObjectTarget, _: dict[str, Any]) -> Answer:
    """GenericObjectLayout for the session's current selections."""
    doc = target.doc
    return Answer({"qLayout": target.obj.layout(doc.facts, doc.selections)})


_PAGES_PARAMS = (Param("qPath", "str", required=True), Param("qPages", "objects", required=True))


@OBJECT_METHODS.method("GetListObjectData", *_PAGES_PARAMS)
def get_list_object_data(s: QixSession, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Pages of a list object (at most 10,000 cells)."""
    definition = _list_def(target, args["qPath"])
    pages = parse_pages(args["qPages"], min_width=1)
    view = ListObjectView(definition, target.doc.facts, target.doc.selections)
    return Answer({"qDataPages": [view.page(p) for p in pages]})


@OBJECT_METHODS.method("GetHyperCubeData", *_PAGES_PARAMS)
def get_hypercube_data(s: QixSession, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Pages of a straight hypercube (at most 10,000 cells)."""
    definition = _cube_def(target, args["qPath"])
    pages = parse_pages(args["qPages"])
    view = HyperCubeView(definition, target.doc.facts, target.doc.selections)
    return Answer({"qDataPages": [view.page(p) for p in pages]})


@OBJECT_METHODS.method(
    "SelectListObjectValues",
    Param("qPath", "str", required=True),
    Param("qValues", "ints", required=True),
    Param("qToggleMode", "bool", False),
    Param("qSoftLock", "bool", False),
)
def select_list_object_values(s: QixSession, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Selects a list object's values by element number."""
    definition = _list_def(target, args["qPath"])
    target.doc.facts.field(definition.field)
    select_codes(target.doc, definition.field, args["qValues"], args["qToggleMode"])
    return Answer({"qSuccess": True}, selections_changed=True)


@OBJECT_METHODS.method(
    "SelectHyperCubeValues",
    Param("qPath", "str", required=True),
    Param("qDimNo", "int", required=True),
    Param("qValues", "ints", required=True),
    Param("qToggleMode", "bool", False),
)
def select_hypercube_values(s: QixSession, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Selects one dimension's values by element number."""
    definition = _cube_def(target, args["qPath"])
    number = args["qDimNo"]
    if not 0 <= number < len(definition.dimensions):
        raise RpcError(INVALID_PARAMETERS, "qDimNo", "no dimension with this number")
    field = definition.dimensions[number].field
    target.doc.facts.field(field)
    select_codes(target.doc, field, args["qValues"], args["qToggleMode"])
    return Answer({"qSuccess": True}, selections_changed=True)


@OBJECT_METHODS.method(
    "ClearSelections", Param("qPath", "str", required=True), Param("qColIndices", "ints", [])
)
def clear_selections(s: QixSession, target: ObjectTarget, args: dict[str, Any]) -> Answer:
    """Clears a list object's field, or a cube's dimensions (those qColIndices names, or all)."""
    path, selections = args["qPath"], target.doc.selections
    if path.rstrip("/").endswith(LIST_DEF):
        fields = [_list_def(target, path).field]
    else:
        dimensions = _cube_def(target, path).dimensions
        columns = args["qColIndices"] or range(len(dimensions))
        fields = [dimensions[c].field for c in columns if 0 <= c < len(dimensions)]
    for field in fields:
        if field in target.doc.facts.fields:
            selections.clear_field(field)
    return Answer({}, selections_changed=True)
