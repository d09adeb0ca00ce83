"""Load-script methods: session apps, folder connections, scripts, reloads and their progress."""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import assoc
from assoc.script import (
    FolderConfinement,
    Progress,
    ScriptError,
    ScriptRunner,
    empty_script,
    locale_info,
)
from assoc.server.qix.facts import app_facts
from assoc.server.qix.handles import DocTarget, GlobalTarget, OpenDocument
from assoc.server.qix.methods import Answer, MethodTable
from assoc.server.qix.rpc import (
    APP_ALREADY_OPEN,
    INVALID_PARAMETERS,
    NOT_IMPLEMENTED,
    RpcError,
)
from assoc.server.qix.scripts import (
    DocScript,
    progress_data,
    syntax_errors,
)
from assoc.server.qix.session_state import LastReload, SessionState
from assoc.server.store.imports import utc_now_iso

SCRIPT_GLOBAL_METHODS = MethodTable("Global")
SCRIPT_DOC_METHODS = MethodTable("Doc")


def _confinement(s: SessionState) -> FolderConfinement:
    """FolderConfinement over AllowedFolders; the default folder is made when missing."""
    allowed = s.settings.allowed_folder_list(s.store.data_dir)
    if not s.settings.allowed_folders:
        os.makedirs(allowed[0], exist_ok=True)
    return FolderConfinement(allowed)


# ---- Global ------------------------------------------------------------------------------


@SCRIPT_GLOBAL_METHODS.method("CreateSessionApp")
def create_session_app(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """An empty app that lives with this session, open as its document."""
    if s.doc is not None:
        raise RpcError(APP_ALREADY_OPEN, "CreateSessionApp", "App already open")
    app_id = f"SessionApp_{uuid.uuid4()}"
    app = assoc.App(ScriptRunner("").run().model)
    selections = app.session(s.user)
    doc = OpenDocument(
        app_id, {"name": "", "lastReloadTime": ""}, None, app_facts(app), selections, DocScript()
    )
    doc.session_app = app
    s.open_document(doc)
    return Answer({"qSessionAppId": app_id, "qReturn": s.interface(doc.handle)})


@SCRIPT_GLOBAL_METHODS.method("GetProgress", engine=False, optional=("qRequestId",))
def get_progress(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """ProgressData of the session's latest reload, with its error (line, column, message)."""
    last = s.last_reload
    if last is None:
        return Answer({"qProgressData": progress_data(None, "", 0)})
    return Answer({"qProgressData": progress_data(last.progress, last.script, last.millis)})


@SCRIPT_GLOBAL_METHODS.method("CancelReload", engine=False, optional=("qReason",))
def cancel_reload(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """Stops the session's reload in progress before its next statement: its DoReload answers
    false, GetProgress says it was cancelled, and the app keeps what it had. Nothing when no
    reload runs."""
    if s.reload_request_id is not None:
        s.reload_cancel.set()
    return Answer({})


@SCRIPT_GLOBAL_METHODS.method("CancelRequest", engine=False)
def cancel_request(s: SessionState, _: GlobalTarget, args: dict[str, Any]) -> Answer:
    """Stops the request with this id when it is the session's reload in progress (as
    CancelReload); other requests are answered too soon to be stopped."""
    if s.reload_request_id is not None and args["qRequestId"] == s.reload_request_id:
        s.reload_cancel.set()
    return Answer({})


@SCRIPT_GLOBAL_METHODS.method(
    "ConfigureReload",
    engine=False,
    optional=("qCancelOnScriptError", "qUseErrorData", "qInteractOnError"),
)
def configure_reload(s: SessionState, _: GlobalTarget, __: dict[str, Any]) -> Answer:
    """Accepted: a reload always stops at its first error and reports it in GetProgress."""
    return Answer({})


# ---- Doc: locale, script --------------------------------------------------------------


@SCRIPT_DOC_METHODS.method("GetLocaleInfo", engine=False)
def get_locale_info(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """The app's locale: the interpretation variables its script left (en-US by default)."""
    return Answer({"qReturn": locale_info(target.doc.facts.app.interpretation)})


@SCRIPT_DOC_METHODS.method("GetEmptyScript", engine=False)
def get_empty_script(s: SessionState, _: DocTarget, __: dict[str, Any]) -> Answer:
    """The SET statements a new script starts with."""
    return Answer({"qReturn": empty_script()})


@SCRIPT_DOC_METHODS.method("SetScript", engine=False, optional=("qScript",))
def set_script(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Sets the document's script (a stored app keeps it when a reload commits)."""
    target.doc.script.text = args["qScript"]
    return Answer({})


@SCRIPT_DOC_METHODS.method("GetScript", engine=False)
def get_script(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """The document's script."""
    return Answer({"qScript": target.doc.script.text})


@SCRIPT_DOC_METHODS.method("CheckScriptSyntax")
def check_script_syntax(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """The script's syntax errors, each with its line, column and offset."""
    return Answer({"qErrors": syntax_errors(target.doc.script.text)})


# ---- Doc: connections ------------------------------------------------------------------


def _folder(raw: Any) -> tuple[str, str]:
    """A Connection struct's name and folder (8 unless strings; 20 unless a folder)."""
    if not isinstance(raw, dict):
        raise RpcError(INVALID_PARAMETERS, "qConnection", "must be an object")
    name, path, kind = raw.get("qName"), raw.get("qConnectionString"), raw.get("qType", "")
    if not isinstance(name, str) or not isinstance(path, str) or not isinstance(kind, str):
        message = "qName, qConnectionString and qType must be strings"
        raise RpcError(INVALID_PARAMETERS, "qConnection", message)
    if kind.lower() != "folder":
        raise RpcError(NOT_IMPLEMENTED, kind, "only folder connections are implemented")
    return name, path


@SCRIPT_DOC_METHODS.method("CreateConnection")
def create_connection(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A folder connection inside AllowedFolders (2000 when the name exists)."""
    name, path = _folder(args["qConnection"])
    connection = target.doc.script.add(name, path, _confinement(s))
    return Answer({"qConnectionId": connection.connection_id})


@SCRIPT_DOC_METHODS.method("GetConnection", engine=False)
def get_connection(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """One connection by id (2001 when there is none)."""
    return Answer({"qConnection": target.doc.script.get(args["qConnectionId"]).record()})


@SCRIPT_DOC_METHODS.method("ModifyConnection", optional=("qOverrideCredentials",))
def modify_connection(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """A connection's new name and folder, checked as CreateConnection checks them (folder
    connections hold no credentials: qOverrideCredentials changes nothing)."""
    name, path = _folder(args["qConnection"])
    target.doc.script.modify(args["qConnectionId"], name, path, _confinement(s))
    return Answer({})


@SCRIPT_DOC_METHODS.method("GetConnections", engine=False)
def get_connections(s: SessionState, target: DocTarget, _: dict[str, Any]) -> Answer:
    """The document's connections."""
    return Answer({"qConnections": [c.record() for c in target.doc.script.connections]})


@SCRIPT_DOC_METHODS.method("DeleteConnection")
def delete_connection(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Deletes a connection by id (2001 when there is none)."""
    target.doc.script.remove(args["qConnectionId"])
    return Answer({})


# ---- Doc: reloads ----------------------------------------------------------------------


def _failed(last: LastReload, error: ScriptError) -> bool:
    last.progress.error = error
    last.progress.finished = True
    return False


def _reload(s: SessionState, doc: OpenDocument, debug: bool = False) -> bool:
    """Runs the document's script (in `debug` mode each LOAD reads at most SetFetchLimit's
    records); on success serves (and, for a stored app, commits) the result. A failure keeps
    the app's data and leaves its error in GetProgress."""
    script = doc.script.text
    started = time.perf_counter()
    last = s.last_reload = LastReload(Progress(), script)
    try:
        try:
            connections = doc.script.folder_connections(_confinement(s))
            limit = doc.fetch_limit if debug else None
            runner = ScriptRunner(script, connections, fetch_limit=limit, cancelled=s.reload_cancel)
        except ScriptError as exc:
            return _failed(last, exc)
        last.progress = runner.progress
        try:
            result = runner.run()
        except ScriptError:
            return False
        app = assoc.App(result.model, result.annotations)
        # The variables the script left are the document's (GetVariableByName, lists).
        doc.library.set_script_variables(dict(runner.variables))
        if doc.lease is None:
            doc.replace_app(app, None, s.user, s.groups)
            doc.attributes = dict(doc.attributes, lastReloadTime=utc_now_iso())
            return True
        try:
            attributes = s.store.commit_reload(
                doc.app_id,
                app,
                script,
                doc.script.stored_connections(),
                doc.library.records()["variables"],
            )
            lease = s.store.lease(doc.app_id)
        except assoc.Error as exc:
            return _failed(last, ScriptError(f"the reload was not stored: {exc}"))
        doc.replace_app(lease.app, lease, s.user, s.groups)
        doc.attributes = attributes
        return True
    finally:
        last.millis = round((time.perf_counter() - started) * 1000)


def _reload_answer(s: SessionState, ok: bool, result: dict[str, Any]) -> Answer:
    """A reload's answer; after a good one every open handle of the session changed."""
    change = s.handles.open_handles() if ok else []
    return Answer(result, change=change)


@SCRIPT_DOC_METHODS.method("SetFetchLimit", engine=False)
def set_fetch_limit(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """How many records each LOAD reads in the document's debug reloads (DoReload with
    qDebug): a limited load, as if every LOAD had FIRST qLimit. Error 8 below 0."""
    limit = args["qLimit"]
    if limit < 0:
        raise RpcError(INVALID_PARAMETERS, "qLimit", "a number of records, 0 or more")
    target.doc.fetch_limit = limit
    return Answer({})


@SCRIPT_DOC_METHODS.method("DoReload")
def do_reload(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """Reloads the document from its script: true, or false with the error in GetProgress."""
    if args["qPartial"]:
        raise RpcError(NOT_IMPLEMENTED, "qPartial", "partial reloads are not implemented")
    ok = _reload(s, target.doc, bool(args["qDebug"]))
    return _reload_answer(s, ok, {"qReturn": ok})


@SCRIPT_DOC_METHODS.method("DoReloadEx")
def do_reload_ex(s: SessionState, target: DocTarget, args: dict[str, Any]) -> Answer:
    """DoReload answering {qResult: {qSuccess, qLogFile, qEndedWithMemoryConstraint}}."""
    if args["qParams"].get("qPartial"):
        raise RpcError(NOT_IMPLEMENTED, "qPartial", "partial reloads are not implemented")
    ok = _reload(s, target.doc, args["qParams"].get("qDebug") is True)
    result = {"qSuccess": ok, "qLogFile": "", "qEndedWithMemoryConstraint": False}
    return _reload_answer(s, ok, {"qResult": result})
