"""Doc methods: the app's layout, tables and fields, session objects, clearing selections."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from assoc.script import locale_info
from assoc.server.qix.facts import field_description, table_data, tables_and_keys
from assoc.server.qix.handles import DocTarget, FieldTarget, ObjectTarget
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.objects import GenericObject
from assoc.server.qix.pages import MAX_CELLS
from assoc.server.qix.rpc import (
    INVALID_PARAMETERS,
    NOT_IMPLEMENTED,
    PAGES_TOO_LARGE,
    Param,
    RpcError,
)

if TYPE_CHECKING:
    from assoc.server.qix.session import QixSession

DOC_METHODS = MethodTable()


def _default_state(state: str) -> None:
    if state not in ("", "$"):
        raise RpcError(NOT_IMPLEMENTED, state, "alternate states are not implemented")


@DOC_METHODS.method("GetAppLayout", engine=False)
def get_app_layout(s: QixSession, target: DocTarget, _: dict[str, Any]) -> Answer:
    """NxAppLayout from the app's attributes."""
    a = target.doc.attributes
    layout = {
        "qTitle": a.get("name", ""),
        "qFileName": target.doc.app_id,
        "qLastReloadTime": a.get("lastReloadTime", ""),
        "qModified": False,
        "qHasScript": bool(target.doc.script.text),
        "qStateNames": [],
        "qMeta": {},
        "qLocaleInfo": locale_info(),
        "qHasData": bool(target.doc.facts.app.tables),
        "qReadOnly": False,
        "qIsOpenedWithoutData": False,
        "qIsSessionApp": target.doc.is_session_app,
        "qThumbnail": {"qUrl": ""},
    }
    return Answer({"qLayout": layout})


@DOC_METHODS.method(
    "GetTablesAndKeys",
    Param("qWindowSize", "object", {}),
    Param("qNullSize", "object", {}),
    Param("qCellHeight", "int", 0),
    Param("qSyntheticMode", "bool", False),
    Param("qIncludeSysVars", "bool", False),
    Param("qIncludeProfiling", "bool", False),
)
def get_tables_and_keys(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """{qtr, qk}: the data tables with their fields, and the keys between them; with
    qSyntheticMode the model view (synthetic keys and their tables), else the source view."""
    return Answer(tables_and_keys(target.doc.facts, args["qSyntheticMode"]))


@DOC_METHODS.method(
    "GetField", Param("qFieldName", "str", required=True), Param("qStateName", "str", "")
)
def get_field(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A Field handle (the same one for the same field); error 2 for an unknown field."""
    _default_state(args["qStateName"])
    doc, name = target.doc, args["qFieldName"]
    doc.facts.field(name)
    handle = doc.fields.get(name)
    if handle is None:
        handle = doc.fields[name] = s.handles.add(FieldTarget(doc, name))
    return Answer({"qReturn": s.interface(handle)})


@DOC_METHODS.method("GetFieldDescription", Param("qFieldName", "str", required=True))
def get_field_description(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """FieldDescription of one field."""
    return Answer({"qReturn": field_description(target.doc.facts, args["qFieldName"])})


@DOC_METHODS.method("ClearAll", Param("qLockedAlso", "bool", False), Param("qStateName", "str", ""))
def clear_all(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Clears every selection of the session."""
    _default_state(args["qStateName"])
    target.doc.selections.clear()
    return Answer({}, selections_changed=True)


def _new_object_id(taken: dict[str, int], wanted: Any) -> str:
    if isinstance(wanted, str) and wanted and wanted not in taken:
        return wanted
    while True:
        made = uuid.uuid4().hex[:8]
        if made not in taken:
            return made


def _add_object(s: QixSession, target: DocTarget, props: dict[str, Any]) -> GenericObject:
    doc = target.doc
    info = props.get("qInfo")
    wanted = info.get("qId") if isinstance(info, dict) else None
    obj = GenericObject.create(props, _new_object_id(doc.objects, wanted))
    obj.handle = s.handles.add(ObjectTarget(doc, obj))
    doc.objects[obj.object_id] = obj.handle
    return obj


@DOC_METHODS.method("CreateSessionObject", Param("qProp", "object", required=True))
def create_session_object(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A session object from properties: list objects, hypercubes, field lists, any data."""
    obj = _add_object(s, target, args["qProp"])
    return Answer({"qReturn": s.interface(obj.handle)})


@DOC_METHODS.method("CreateObject", Param("qProp", "object", required=True))
def create_object(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """An object of a session app (it lives with the session); stored apps answer 20."""
    if not target.doc.is_session_app:
        raise RpcError(NOT_IMPLEMENTED, "CreateObject", "stored app objects are not implemented")
    obj = _add_object(s, target, args["qProp"])
    info = {"qId": obj.object_id, "qType": obj.object_type}
    return Answer({"qInfo": info, "qReturn": s.interface(obj.handle)})


@DOC_METHODS.method("DestroySessionObject", Param("qId", "str", required=True))
def destroy_session_object(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Removes a session object; its handle closes."""
    handle = target.doc.objects.pop(args["qId"], None)
    if handle is None:
        return Answer({"qSuccess": False})
    s.handles.remove(handle)
    return Answer({"qSuccess": True}, close=[handle])


@DOC_METHODS.method("GetObject", Param("qId", "str", required=True), engine=False)
def get_object(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A session object's handle; a null interface when there is none (as the engine does)."""
    handle = target.doc.objects.get(args["qId"])
    if handle is None:
        return Answer({"qReturn": {"qType": None, "qHandle": None}})
    return Answer({"qReturn": s.interface(handle)})


@DOC_METHODS.method(
    "GetTableData",
    Param("qOffset", "int", 0),
    Param("qRows", "int", 0),
    Param("qSyntheticMode", "bool", False),
    Param("qTableName", "str", required=True),
)
def get_table_data(s: QixSession, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Rows of one table, each value as {qText, qIsNumeric, qNumber}: the columns it was
    loaded with, or with qSyntheticMode its model columns."""
    offset, rows, name = args["qOffset"], args["qRows"], args["qTableName"]
    synthetic = args["qSyntheticMode"]
    if offset < 0 or rows < 0:
        raise RpcError(INVALID_PARAMETERS, "qOffset", "qOffset and qRows must be at least 0")
    facts = target.doc.facts
    if name in facts.table_names():
        table = facts.app.table(name)
        width = len(table.model_fields if synthetic else table.fields)
        if rows * width > MAX_CELLS:
            raise RpcError(PAGES_TOO_LARGE, "qRows", f"at most {MAX_CELLS} cells per call")
    return Answer({"qData": table_data(facts, name, offset, rows, synthetic)})
