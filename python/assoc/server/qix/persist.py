"""App objects and the library kept in the app: read at OpenDoc, stored by DoSave."""

from __future__ import annotations

import logging
from typing import Any

import assoc
from assoc.server.qix.handles import DocTarget, HandleTable, OpenDocument, add_object
from assoc.server.qix.library import Library
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.objects import GenericObject
from assoc.server.qix.rpc import INVALID_PARAMETERS, NOT_IMPLEMENTED, RpcError
from assoc.server.qix.session_state import SessionState

PERSIST_DOC_METHODS = MethodTable("Doc")
_log = logging.getLogger("assoc.qix")


def _stored_object(
    handles: HandleTable, doc: OpenDocument, record: dict[str, Any], parent: GenericObject | None
) -> None:
    """Makes a stored object (and its children) an object of the document with a handle.
    Properties that no longer fit the data (an unknown field, …) keep the object with no
    definitions: its layout shows the properties as they are."""
    if record["id"] in doc.objects:
        return
    props = dict(record["properties"])
    info = props.get("qInfo")
    props["qInfo"] = dict(info) if isinstance(info, dict) else {}
    props["qInfo"].setdefault("qType", record["type"])
    try:
        obj = GenericObject.create(props, record["id"], "properties", doc.library)
    except RpcError as exc:
        _log.info("QIX: stored object %s has no definitions: %s", record["id"], exc.message)
        props["qInfo"]["qId"] = record["id"]
        obj = GenericObject(record["id"], str(props["qInfo"].get("qType", "")), props)
    obj.app_object = True
    obj.parent = parent
    if parent is not None:
        parent.children.append(obj)
    add_object(handles, doc, obj)
    doc.approved[obj.object_id] = bool(record.get("approved", False))
    for child in record.get("children", []):
        _stored_object(handles, doc, child, obj)


def open_stored(s: SessionState, doc: OpenDocument) -> None:
    """Gives a stored app's document its library and objects (each with a handle)."""
    doc.library = Library.from_records(s.store.library(doc.app_id))
    doc.properties = s.store.app_properties(doc.app_id)
    for state in s.store.states(doc.app_id):
        if state not in doc.selections.states:
            doc.selections.add_state(state)
        doc.app_states.append(state)
    for record in s.store.objects(doc.app_id):
        _stored_object(s.handles, doc, record, None)


def _record(obj: GenericObject, doc: OpenDocument) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": obj.object_id,
        "type": obj.object_type,
        "approved": doc.approved.get(obj.object_id, False),
        "properties": obj.properties,
    }
    if obj.children:
        out["children"] = [_record(child, doc) for child in obj.children]
    return out


def object_records(doc: OpenDocument) -> list[dict[str, Any]]:
    """The app objects (CreateObject, stored ones) with their children, as app.json keeps
    them."""
    return [
        _record(obj, doc) for obj in doc.objects.values() if obj.app_object and obj.parent is None
    ]


@PERSIST_DOC_METHODS.method("DoSave")
def do_save(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Stores the app objects, master items, variables (not session ones), bookmarks and
    alternate states (not session ones) as the app's new version (as durable as an import);
    session apps answer 20."""
    doc = target.doc
    if doc.lease is None:
        raise RpcError(NOT_IMPLEMENTED, "DoSave", "a session app cannot be saved")
    if args["qFileName"]:
        raise RpcError(INVALID_PARAMETERS, "qFileName", "an app is saved in place (no file name)")
    try:
        doc.attributes = s.store.commit_save(
            doc.app_id,
            doc.lease.app,
            object_records(doc),
            doc.library.records(),
            list(doc.app_states),
            dict(doc.properties),
        )
        lease = s.store.lease(doc.app_id)
    except assoc.Error as exc:
        raise RpcError(INVALID_PARAMETERS, "DoSave", f"the app was not saved: {exc}") from None
    old, doc.lease = doc.lease, lease
    old.release()
    return Answer({})


@PERSIST_DOC_METHODS.method("SaveObjects")
def save_objects(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """What DoSave stores: the objects, the library, the states and the app properties (each
    reload commits the data already)."""
    return do_save(s, target, {"qFileName": ""})
