"""A session's handles: the open document, its fields and objects, numbered from 1."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import assoc
from assoc.server.qix.facts import AppFacts, app_facts
from assoc.server.qix.library import BOOKMARK, QIX_TYPES, DocVariables, Library, LibraryItem
from assoc.server.qix.objects import GenericObject, LayoutContext
from assoc.server.qix.rpc import GLOBAL_HANDLE, INVALID_PARAMETERS, INVALID_PARAMS, RpcError
from assoc.server.qix.scripts import DocScript
from assoc.server.qix.states import Saved, restore_alternates
from assoc.server.store import Lease
from assoc.session import Checkpoint

_log = logging.getLogger("assoc.qix")


@dataclass(eq=False)
class OpenDocument:
    """The app a session opened (a stored app's lease, or a session app of its own), its
    facts, script and connections, and the session's selections in it."""

    app_id: str
    attributes: dict[str, Any]
    lease: Lease | None  # None for a session app
    facts: AppFacts
    selections: assoc.Session
    script: DocScript = field(default_factory=DocScript)
    handle: int = 0
    objects: dict[str, GenericObject] = field(default_factory=dict)  # by qId
    fields: dict[tuple[str, str], int] = field(default_factory=dict)  # (field, state) -> handle
    modal: Modal | None = None  # the object in selection mode
    library: Library = field(default_factory=Library)  # master items, variables, bookmarks
    approved: dict[str, bool] = field(default_factory=dict)  # stored objects' approved flags
    app_states: list[str] = field(default_factory=list)  # AddAlternateState's, kept by DoSave
    properties: dict[str, Any] = field(default_factory=dict)  # SetAppProperties', kept by DoSave
    fetch_limit: int | None = None  # SetFetchLimit's: records a LOAD reads in a debug reload
    # The states that stand for bookmarks in set expressions ({BM01}), by name: their
    # selections, and the library (and its version) they were made from.
    bookmark_states: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    _bookmarks_of: tuple[int, int] = (0, -1)
    # A session app, which no lease holds (the facts hold their app only weakly).
    session_app: assoc.App | None = None

    def __post_init__(self) -> None:
        self.selections.keep_history = True  # for Back / Forward
        self.selections.variables = DocVariables(lambda: self.library)  # `$(name)`

    def sync_bookmark_states(self) -> None:
        """Makes each bookmark a set identifier: a hidden alternate state named by its id (and
        by its title, when no state or other bookmark has it) that holds its selections. Only
        when the library changed since the last call."""
        if self._bookmarks_of == (id(self.library), self.library.version):
            return
        wanted: dict[str, dict[str, list[Any]]] = {}
        for item in self.library.of_kind(BOOKMARK):
            wanted.setdefault(item.item_id, item.selections)
        for item in self.library.of_kind(BOOKMARK):
            meta = item.properties.get("qMetaDef")
            title = meta.get("title") if isinstance(meta, dict) else None
            if isinstance(title, str) and title and title != "$":
                wanted.setdefault(title, item.selections)
        session = self.selections
        for name in list(self.bookmark_states):
            if name not in wanted and name in session.states:
                session.remove_state(name)
        made: dict[str, dict[str, list[Any]]] = {}
        for name, selections in wanted.items():
            if name in session.states and name not in self.bookmark_states:
                continue  # an alternate state of that name comes first
            if name in self.bookmark_states and self.bookmark_states[name] == selections:
                made[name] = self.bookmark_states[name]
                continue
            try:
                if name not in session.states:
                    session.add_state(name)
                session.clear(state=name)
                for field_name, values in selections.items():
                    if field_name in self.facts.fields:
                        session.select(field_name, values, state=name)
            except assoc.Error as exc:  # a bookmark that no longer fits names no set
                _log.info("QIX: bookmark %r is no set identifier: %s", name, exc)
                if name in session.states:
                    session.remove_state(name)
                continue
            made[name] = {k: list(v) for k, v in selections.items()}
        self.bookmark_states = made
        self._bookmarks_of = (id(self.library), self.library.version)

    def user_states(self) -> list[str]:
        """The alternate states, without those that stand for bookmarks."""
        return [s for s in self.selections.states[1:] if s not in self.bookmark_states]

    def layout_context(self) -> LayoutContext:
        """What this document's layouts are computed for."""
        modal = self.modal
        return LayoutContext(
            self.facts,
            self.selections,
            modal.object_id if modal is not None else None,
            modal is not None and modal.made_selections,
            lambda: [(o.info, o.properties) for o in self.objects.values() if o.app_object],
            self.library,
        )

    @property
    def is_session_app(self) -> bool:
        """True for an app made by CreateSessionApp (it lives with its session)."""
        return self.lease is None

    def replace_app(
        self, app: assoc.App, lease: Lease | None, user: str, groups: Sequence[str] = ()
    ) -> None:
        """Serves a reloaded app: new facts and selections; the old ones are released."""
        selections = app.session(user, groups)
        facts = app_facts(app).for_session(selections)
        selections.keep_history = True
        selections.variables = DocVariables(lambda: self.library)
        for state in self.user_states():  # the states outlive the data they select in
            selections.add_state(state)
        self.bookmark_states, self._bookmarks_of = {}, (0, -1)  # made again on the new data
        old_selections, old_lease = self.selections, self.lease
        self.facts, self.selections, self.lease = facts, selections, lease
        self.session_app = app if lease is None else None
        self.modal = None
        try:
            old_selections.close()
        finally:
            if old_lease is not None:
                old_lease.release()

    def close(self) -> None:
        """Ends the selections and lets the store evict the app again."""
        try:
            self.selections.close()
        finally:
            if self.lease is not None:
                self.lease.release()


@dataclass(eq=False)
class Modal:
    """An object in selection mode: its id and the selections saved when it began (restored
    when the selections are cancelled)."""

    object_id: str
    checkpoint: Checkpoint
    made_selections: bool = False
    alternates: Saved = field(default_factory=dict)  # the alternate states' selections

    def rollback(self, session: assoc.Session) -> bool:
        """Puts back the selections saved when selection mode began (every state's)."""
        changed = session.rollback(self.checkpoint)
        return restore_alternates(session, self.alternates) or changed


class GlobalTarget:
    """Handle -1: the engine itself."""

    qix_type = "Global"


@dataclass(eq=False)
class DocTarget:
    """A Doc handle."""

    doc: OpenDocument
    qix_type = "Doc"


@dataclass(eq=False)
class FieldTarget:
    """A Field handle."""

    doc: OpenDocument
    name: str
    state: str = "$"  # the selection state its selections are made in
    qix_type = "Field"


@dataclass(eq=False)
class ObjectTarget:
    """A GenericObject handle."""

    doc: OpenDocument
    obj: GenericObject
    qix_type = "GenericObject"


@dataclass(eq=False)
class LibraryTarget:
    """A GenericDimension, GenericMeasure, GenericVariable or GenericBookmark handle."""

    doc: OpenDocument
    item: LibraryItem

    @property
    def qix_type(self) -> str:
        """The QIX type of the item's kind."""
        return QIX_TYPES[self.item.kind]


Target = GlobalTarget | DocTarget | FieldTarget | ObjectTarget | LibraryTarget


def object_interface(handle: int, target: Target) -> dict[str, Any]:
    """ObjectInterface {qType, qHandle, qGenericType, qGenericId} of a handle."""
    if isinstance(target, DocTarget):
        generic_type, generic_id = "", target.doc.app_id
    elif isinstance(target, FieldTarget):
        generic_type, generic_id = "", target.name
    elif isinstance(target, ObjectTarget):
        generic_type, generic_id = target.obj.object_type, target.obj.object_id
    elif isinstance(target, LibraryTarget):
        generic_type, generic_id = target.item.kind, target.item.item_id
    else:
        generic_type, generic_id = "", ""
    return {
        "qType": target.qix_type,
        "qHandle": handle,
        "qGenericType": generic_type,
        "qGenericId": generic_id,
    }


class HandleTable:
    """Handle numbers to targets; at most `limit` handles open besides Global."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._targets: dict[int, Target] = {}
        self._next = 1
        self._global = GlobalTarget()

    def get(self, handle: int) -> Target:
        """The target of a handle; -32602 for a handle this session does not have."""
        if handle == GLOBAL_HANDLE:
            return self._global
        found = self._targets.get(handle)
        if found is None:
            raise RpcError(INVALID_PARAMS, str(handle), "Invalid handle")
        return found

    def add(self, target: Target) -> int:
        """A new handle for `target` (error 8 past the session's object limit)."""
        if len(self._targets) >= self.limit:
            raise RpcError(
                INVALID_PARAMETERS,
                "qHandle",
                f"too many open objects in this session (at most {self.limit})",
            )
        handle = self._next
        self._next += 1
        self._targets[handle] = target
        return handle

    def remove(self, handle: int) -> None:
        """Forgets one handle."""
        self._targets.pop(handle, None)

    def open_handles(self) -> list[int]:
        """Every open handle, in the order they were given."""
        return list(self._targets)

    def clear(self) -> list[int]:
        """Forgets every handle; answers those it forgot."""
        closed = list(self._targets)
        self._targets.clear()
        return closed


def add_object(handles: HandleTable, doc: OpenDocument, obj: GenericObject) -> None:
    """Gives an object a handle and makes it one of the document's objects."""
    obj.handle = handles.add(ObjectTarget(doc, obj))
    doc.objects[obj.object_id] = obj


def remove_object(handles: HandleTable, doc: OpenDocument, obj: GenericObject) -> list[int]:
    """Removes an object and its descendants (a modal one's selections are kept); answers the
    handles closed."""
    if obj.parent is not None and obj in obj.parent.children:
        obj.parent.children.remove(obj)
    closed = []
    for gone in [obj, *obj.descendants()]:
        doc.objects.pop(gone.object_id, None)
        handles.remove(gone.handle)
        closed.append(gone.handle)
        if doc.modal is not None and doc.modal.object_id == gone.object_id:
            doc.modal = None
    return closed


def end_modal(doc: OpenDocument, accept: bool) -> bool:
    """Ends selection mode: accepted selections stay, cancelled ones return to the state saved
    when it began. True when that changed the selections."""
    modal, doc.modal = doc.modal, None
    if modal is None or accept:
        return False
    return modal.rollback(doc.selections)


def new_object_id(taken: dict[str, Any], wanted: Any) -> str:
    """`wanted` when it is a free id, else a new one."""
    if isinstance(wanted, str) and wanted and wanted not in taken:
        return wanted
    while True:
        made = uuid.uuid4().hex[:8]
        if made not in taken:
            return made
