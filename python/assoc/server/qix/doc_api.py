"""Doc methods: the app's layout, tables and fields, session objects, clearing selections."""

from __future__ import annotations

from typing import Any

from assoc.package import NAME_MAX_BYTES, saved_title
from assoc.script import locale_info
from assoc.server.qix.facts import field_description, table_data, tables_and_keys
from assoc.server.qix.handles import (
    DocTarget,
    FieldTarget,
    add_object,
    end_modal,
    new_object_id,
    remove_object,
)
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.objects import GenericObject
from assoc.server.qix.pages import MAX_CELLS
from assoc.server.qix.rpc import (
    GENERIC_NOT_FOUND,
    INVALID_PARAMETERS,
    PAGES_TOO_LARGE,
    RpcError,
)
from assoc.server.qix.session_state import SessionState
from assoc.server.qix.states import DEFAULT_STATE, InState, known_state

DOC_METHODS = MethodTable("Doc")


def _in_state(target: DocTarget, state: str) -> InState:
    """The session's selections in a state a method names ("" = $; error 2 when unknown)."""
    session = target.doc.selections
    return InState(session, known_state(session, state))


@DOC_METHODS.method("GetAppLayout", engine=False, keeps_layouts=True)
def get_app_layout(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """NxAppLayout from the app's attributes."""
    a = target.doc.attributes
    layout = {
        "qTitle": _title(target),
        "qFileName": target.doc.app_id,
        "qLastReloadTime": a.get("lastReloadTime", ""),
        "qModified": False,
        "qHasScript": bool(target.doc.script.text),
        "qStateNames": target.doc.user_states(),
        "qMeta": {},
        "qLocaleInfo": locale_info(target.doc.facts.app.interpretation),
        "qHasData": bool(target.doc.facts.app.tables),
        "qReadOnly": False,
        "qIsOpenedWithoutData": False,
        "qIsSessionApp": target.doc.is_session_app,
        "qThumbnail": {"qUrl": ""},
    }
    return Answer({"qLayout": layout})


@DOC_METHODS.method("GetAppProperties", engine=False, keeps_layouts=True)
def get_app_properties(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """NxAppProperties: title, last reload, the version answering, thumbnail and whether a
    section access table guards the app."""
    a, app = target.doc.attributes, target.doc.facts.app
    props = {"qThumbnail": {"qUrl": a.get("thumbnail") or ""}, **target.doc.properties}
    props.update(
        qTitle=_title(target),
        qLastReloadTime=a.get("lastReloadTime", ""),
        qMigrationHash="",
        qSavedInProductVersion=s.settings.component_version,
        qHasSectionAccess=app.access is not None,
    )
    return Answer({"qProp": props})


# What GetAppProperties computes: SetAppProperties does not keep them.
_COMPUTED_PROPERTIES = frozenset(
    {"qLastReloadTime", "qMigrationHash", "qSavedInProductVersion", "qHasSectionAccess"}
)


def _title(target: DocTarget) -> str:
    """The app's title: the one SetAppProperties gave (stored by DoSave as the app's name),
    else its name."""
    return saved_title(target.doc.properties) or str(target.doc.attributes["name"])


@DOC_METHODS.method("SetAppProperties", engine=False)
def set_app_properties(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Sets the app's properties (NxAppProperties and a client's own members, such as a
    theme); DoSave stores them, a non-empty qTitle as the app's name. The members the engine
    computes are not kept. Error 8 when qTitle is not a name."""
    props = {k: v for k, v in args["qProp"].items() if k not in _COMPUTED_PROPERTIES}
    title = props.get("qTitle", "")
    if not isinstance(title, str) or len(title.encode("utf-8")) > NAME_MAX_BYTES:
        raise RpcError(INVALID_PARAMETERS, "qTitle", f"a name of at most {NAME_MAX_BYTES} bytes")
    if any(c in title for c in "\r\n\x00"):
        raise RpcError(INVALID_PARAMETERS, "qTitle", "a name of one line")
    target.doc.properties = props
    return Answer({}, change=[target.doc.handle])


@DOC_METHODS.method("GetAllInfos", engine=False, keeps_layouts=True)
def get_all_infos(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """{qInfos}: NxInfo {qId, qType} of every object of the app: its objects and their
    children, master dimensions and measures, bookmarks and variables. Session objects and
    session variables are the session's, not the app's."""
    doc = target.doc
    infos = [obj.info for obj in doc.objects.values() if _root(obj).app_object]
    infos += [item.info for item in doc.library.items.values() if not item.session_only]
    return Answer({"qInfos": infos})


def _root(obj: GenericObject) -> GenericObject:
    while obj.parent is not None:
        obj = obj.parent
    return obj


@DOC_METHODS.method(
    "GetTablesAndKeys",
    optional=("qWindowSize", "qNullSize", "qCellHeight", "qSyntheticMode", "qIncludeSysVars"),
)
def get_tables_and_keys(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """{qtr, qk}: the data tables with their fields, and the keys between them; with
    qSyntheticMode the model view (synthetic keys and their tables), else the source view."""
    return Answer(tables_and_keys(target.doc.facts, args["qSyntheticMode"]))


@DOC_METHODS.method("GetField", keeps_layouts=True)
def get_field(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A Field handle (the same one for the same field); error 2 for an unknown field."""
    state = _in_state(target, args["qStateName"]).state
    doc, name = target.doc, args["qFieldName"]
    doc.facts.field(name)
    handle = doc.fields.get((name, state))
    if handle is None:
        handle = doc.fields[name, state] = s.handles.add(FieldTarget(doc, name, state))
    return Answer({"qReturn": s.interface(handle)})


@DOC_METHODS.method("GetFieldDescription")
def get_field_description(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """FieldDescription of one field."""
    return Answer({"qReturn": field_description(target.doc.facts, args["qFieldName"])})


@DOC_METHODS.method("ClearAll")
def clear_all(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Clears every selection of a state (locked fields only with qLockedAlso)."""
    _in_state(target, args["qStateName"]).clear(locked_also=args["qLockedAlso"])
    return Answer({}, selections_changed=True)


@DOC_METHODS.method("LockAll")
def lock_all(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Locks every field that has a selection (an alternate state has no locks)."""
    if _in_state(target, args["qStateName"]).default:
        target.doc.selections.lock_all()
    return Answer({}, selections_changed=True)


@DOC_METHODS.method("UnlockAll")
def unlock_all(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Unlocks every field."""
    if _in_state(target, args["qStateName"]).default:
        target.doc.selections.unlock_all()
    return Answer({}, selections_changed=True)


@DOC_METHODS.method("Back")
def back(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """Goes one step back in the session's selection history (nothing when there is none)."""
    return Answer({}, selections_changed=target.doc.selections.back())


@DOC_METHODS.method("Forward")
def forward(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """Redoes the step Back undid (nothing when there is none)."""
    return Answer({}, selections_changed=target.doc.selections.forward())


@DOC_METHODS.method("AbortModal")
def abort_modal(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Ends the selection mode of whichever object is in it: accepting keeps its selections,
    else they return to the state saved when it began."""
    modal = target.doc.modal
    if modal is None:
        return Answer({})
    changed = end_modal(target.doc, args["qAccept"])
    obj = target.doc.objects.get(modal.object_id)
    return Answer({}, selections_changed=changed, change=[obj.handle] if obj else [])


def new_object(
    s: SessionState, target: DocTarget, props: Any, name: str = "qProp"
) -> GenericObject:
    """A new object of the document from properties, with its own handle (its qInfo.qId
    when that is free, else a new id)."""
    doc = target.doc
    info = props.get("qInfo") if isinstance(props, dict) else None
    wanted = info.get("qId") if isinstance(info, dict) else None
    obj = GenericObject.create(props, new_object_id(doc.objects, wanted), name, doc.library)
    add_object(s.handles, doc, obj)
    return obj


@DOC_METHODS.method("CreateSessionObject")
def create_session_object(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A session object from properties: list objects, hypercubes, field lists, any data."""
    obj = new_object(s, target, args["qProp"])
    return Answer({"qReturn": s.interface(obj.handle)})


@DOC_METHODS.method("CreateObject")
def create_object(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """An object of the app: listed by qAppObjectListDef and, for a stored app, stored by
    DoSave (a session app's lives with the session)."""
    obj = new_object(s, target, args["qProp"])
    obj.app_object = True
    return Answer({"qInfo": obj.info, "qReturn": s.interface(obj.handle)})


@DOC_METHODS.method("DestroyObject")
def destroy_object(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Removes an app object and its children (their handles close; DoSave stores that);
    false for an id that is no app object."""
    obj = target.doc.objects.get(args["qId"])
    if obj is None or not obj.app_object:
        return Answer({"qSuccess": False})
    parent = obj.parent
    closed = remove_object(s.handles, target.doc, obj)
    return Answer({"qSuccess": True}, close=closed, change=[parent.handle] if parent else [])


@DOC_METHODS.method("DestroySessionObject")
def destroy_session_object(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Removes a session object and its children; their handles close."""
    obj = target.doc.objects.get(args["qId"])
    if obj is None:
        return Answer({"qSuccess": False})
    parent = obj.parent
    closed = remove_object(s.handles, target.doc, obj)
    return Answer({"qSuccess": True}, close=closed, change=[parent.handle] if parent else [])


@DOC_METHODS.method("GetObject", engine=False, keeps_layouts=True)
def get_object(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """An object's handle (children too); error 2 "Object not found" when there is none."""
    obj = target.doc.objects.get(args["qId"])
    if obj is None:
        raise RpcError(GENERIC_NOT_FOUND, args["qId"], "Object not found")
    return Answer({"qReturn": s.interface(obj.handle)})


@DOC_METHODS.method("GetTableData", optional=("qOffset", "qRows", "qSyntheticMode"))
def get_table_data(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
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
    data = table_data(facts, name, offset, rows, synthetic, target.doc.selections)
    return Answer({"qData": data})


# ---- alternate states ---------------------------------------------------------------------

GENERIC_ALREADY_EXISTS = 3


def _new_state(target: DocTarget, name: str) -> None:
    session = target.doc.selections
    if not name or name == DEFAULT_STATE:
        raise RpcError(INVALID_PARAMETERS, "qStateName", "an alternate state needs a name")
    if name in target.doc.bookmark_states:  # an alternate state's name comes before a bookmark's
        session.remove_state(name)
        del target.doc.bookmark_states[name]
    if name in session.states:
        raise RpcError(GENERIC_ALREADY_EXISTS, name, f"alternate state {name!r} exists")
    session.add_state(name)


@DOC_METHODS.method("AddAlternateState")
def add_alternate_state(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Adds an alternate state (no selections yet): objects and fields name it by
    qStateName; error 3 when it exists, 8 for "" or "$". DoSave stores it with the app."""
    _new_state(target, args["qStateName"])
    target.doc.app_states.append(args["qStateName"])
    return Answer({}, selections_changed=True)


@DOC_METHODS.method("AddSessionAlternateState")
def add_session_alternate_state(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Adds an alternate state with the selections of qSourceStateName (when given)."""
    session = target.doc.selections
    source = known_state(session, args["qSourceStateName"]) if args["qSourceStateName"] else ""
    _new_state(target, args["qStateName"])
    if source:
        for field in session.selections(source):
            codes = session.indices(field, "selected", in_state=source).tolist()
            session.select_indices(field, codes, state=args["qStateName"])
    return Answer({}, selections_changed=True)


def _drop_state(target: DocTarget, name: str) -> None:
    session = target.doc.selections
    if name in ("", DEFAULT_STATE):
        raise RpcError(INVALID_PARAMETERS, "qStateName", "the default state $ stays")
    known_state(session, name)
    session.remove_state(name)
    if name in target.doc.app_states:
        target.doc.app_states.remove(name)


@DOC_METHODS.method("RemoveAlternateState")
def remove_alternate_state(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Removes an alternate state and its selections (error 2 when there is none); objects
    still naming it show a qError until it is added again."""
    _drop_state(target, args["qStateName"])
    return Answer({}, selections_changed=True)


@DOC_METHODS.method("RemoveSessionAlternateState")
def remove_session_alternate_state(
    s: SessionState, target: DocTarget, args: dict[str, Any]
) -> Answer:
    """As RemoveAlternateState, answering qSuccess (false for an unknown state)."""
    if args["qStateName"] not in target.doc.selections.states[1:]:
        return Answer({"qSuccess": False})
    _drop_state(target, args["qStateName"])
    return Answer({"qSuccess": True}, selections_changed=True)
