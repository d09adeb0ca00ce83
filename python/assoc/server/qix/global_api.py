"""Global methods (handle -1): versions, the apps (GetDocList, GetAppEntry, CreateApp,
DeleteApp), OpenDoc, GetActiveDoc."""

from __future__ import annotations

import datetime
import platform
from typing import Any

import assoc
from assoc.access import DENIED
from assoc.package import NAME_MAX_BYTES
from assoc.script import empty_script
from assoc.server.qix.facts import app_facts
from assoc.server.qix.handles import GlobalTarget, OpenDocument
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.persist import open_stored
from assoc.server.qix.rpc import (
    ACCESS_DENIED,
    APP_ALREADY_EXISTS,
    APP_ALREADY_OPEN,
    APP_INVALID,
    APP_INVALID_NAME,
    APP_NOT_FOUND,
    RpcError,
)
from assoc.server.qix.scripts import DocScript
from assoc.server.qix.session_state import SessionState
from assoc.server.store import AppExists, AppNotFound

GLOBAL_METHODS = MethodTable("Global")


@GLOBAL_METHODS.method("EngineVersion", engine=False, keeps_layouts=True)
def engine_version(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """{qVersion: {qComponentVersion}} from the EngineVersion setting."""
    return Answer({"qVersion": {"qComponentVersion": s.settings.component_version}})


def _constant(name: str, value: Any) -> None:
    @GLOBAL_METHODS.method(name, engine=False)
    def answer(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
        return Answer({"qReturn": value})


for _name, _value in (
    ("OSVersion", platform.release()),
    ("OSName", platform.system()),
    ("QTProduct", "Qlik Core"),
    ("IsDesktopMode", False),
    ("IsPersonalMode", False),
    ("AllowCreateApp", True),
):
    _constant(_name, _value)


@GLOBAL_METHODS.method("ProductVersion", engine=False)
@GLOBAL_METHODS.method("QvVersion", engine=False)
def product_version(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """The engine version as a string."""
    return Answer({"qReturn": s.settings.component_version})


def _no_app() -> RpcError:
    return RpcError(APP_NOT_FOUND, "Could not find app", "App not found")


def _find_app(s: SessionState, name: str) -> dict[str, Any]:
    """The attributes of the app OpenDoc's qDocName names: by id, else by name (1003 when
    neither)."""
    try:
        return s.store.attributes(name)
    except AppNotFound:
        pass
    for attributes in s.store.list_attributes():
        if attributes["name"] == name:
            try:
                return s.store.attributes(str(attributes["id"]))  # as current as an id's
            except AppNotFound:
                break  # deleted since the list was read
    raise _no_app()


def _serial_date(iso: str) -> float | None:
    """An ISO date-time as Qlik's serial number (days since 1899-12-30, UTC); None when it
    cannot be read."""
    try:
        moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return (moment - _SERIAL_EPOCH) / datetime.timedelta(days=1)


_SERIAL_EPOCH = datetime.datetime(1899, 12, 30, tzinfo=datetime.timezone.utc)


def _entry_members(attributes: dict[str, Any]) -> dict[str, Any]:
    """What DocListEntry and AppEntry both say of an app."""
    return {
        "qTitle": attributes["name"],
        "qLastReloadTime": attributes.get("lastReloadTime", ""),
        "qReadOnly": False,
        "qMeta": {},
        "qThumbnail": {"qUrl": attributes.get("thumbnail") or ""},
    }


def _doc_entry(attributes: dict[str, Any]) -> dict[str, Any]:
    """DocListEntry of an app: its id, name, last reload and modification times."""
    entry = {"qDocName": attributes["name"], "qDocId": attributes["id"]}
    entry.update(_entry_members(attributes))
    modified = _serial_date(str(attributes.get("modifiedDate") or ""))
    if modified is not None:
        entry["qFileTime"] = modified
    return entry


@GLOBAL_METHODS.method("GetDocList", keeps_layouts=True)
def get_doc_list(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """{qDocList}: every app of the store (as OpenDoc takes them), by name then id."""
    return Answer({"qDocList": [_doc_entry(a) for a in s.store.list_attributes()]})


@GLOBAL_METHODS.method("GetAppEntry", keeps_layouts=True)
def get_app_entry(s: SessionState, _: GlobalTarget, args: dict[str, Any]) -> Answer:
    """{qEntry}: AppEntry of an app by id or name (error 1003 when there is none)."""
    attributes = _find_app(s, args["qAppID"])
    entry = {"qID": attributes["id"], "qPath": attributes["id"]}
    entry.update(_entry_members(attributes))
    return Answer({"qEntry": entry})


@GLOBAL_METHODS.method("CreateApp", defaults={"qLocalizedScriptMainSection": "Main"})
def create_app(s: SessionState, _: GlobalTarget, args: dict[str, Any]) -> Answer:
    """{qSuccess, qAppId}: a new stored app named qAppName, with no data and the script a new
    app starts with (its first section named qLocalizedScriptMainSection); OpenDoc opens it by
    id or name. Error 1001 for a name that is empty, not one line or over 255 bytes, 1000
    when an app has that name already."""
    name = args["qAppName"]
    if (
        not name.strip()
        or any(c in name for c in "\r\n\x00")
        or len(name.encode("utf-8")) > NAME_MAX_BYTES
    ):
        raise RpcError(APP_INVALID_NAME, name[:80], "Invalid app name")
    section = args["qLocalizedScriptMainSection"].strip() or "Main"
    if any(c in section for c in "\r\n"):
        raise RpcError(APP_INVALID_NAME, section, "Invalid script section name")
    try:
        attributes = s.store.create(name, f"///$tab {section}\n{empty_script()}", s.user)
    except AppExists:
        raise RpcError(APP_ALREADY_EXISTS, name, "App already exists") from None
    return Answer({"qSuccess": True, "qAppId": attributes["id"]})


@GLOBAL_METHODS.method("DeleteApp")
def delete_app(s: SessionState, _: GlobalTarget, args: dict[str, Any]) -> Answer:
    """Deletes an app by id, as `DELETE /v1/apps/{appId}` does (sessions that have it open
    are told its handles closed); error 1003 when there is no such app."""
    try:
        s.store.delete(args["qAppId"])
    except AppNotFound:
        raise _no_app() from None
    return Answer({"qSuccess": True})


@GLOBAL_METHODS.method("OpenDoc")
def open_doc(s: SessionState, _: GlobalTarget, args: dict[str, Any]) -> Answer:
    """Opens an app in this session: a Doc handle, and selections of the session's own."""
    if s.doc is not None:
        raise RpcError(APP_ALREADY_OPEN, args["qDocName"], "App already open")
    attributes = _find_app(s, args["qDocName"])
    app_id = str(attributes["id"])
    try:
        script = DocScript.stored(*s.store.script(app_id))
        lease = s.store.lease(app_id)
    except AppNotFound:
        raise _no_app() from None
    try:
        selections = lease.app.session(s.user, s.groups)
        facts = app_facts(lease.app).for_session(selections)
    except assoc.Error as exc:
        lease.release()
        if str(exc) == DENIED:  # section access: the app's access table does not list them
            raise RpcError(ACCESS_DENIED, "", DENIED) from None
        raise
    except BaseException:
        lease.release()
        raise
    doc = OpenDocument(app_id, attributes, lease, facts, selections, script)
    s.open_document(doc)
    try:
        open_stored(s, doc)
    except BaseException:
        s.close_document()
        raise
    return Answer({"qReturn": s.interface(doc.handle)}, change=[doc.handle])


@GLOBAL_METHODS.method("GetActiveDoc", engine=False)
def get_active_doc(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """The open Doc's handle; 1007 when none is open."""
    if s.doc is None:
        raise RpcError(APP_INVALID, "No active document", "App invalid")
    return Answer({"qReturn": s.interface(s.doc.handle)})
