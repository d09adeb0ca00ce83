"""A QIX session's state: its handles, its open document, its latest reload. The method
modules work on it; `session.py` adds how a request becomes an answer."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assoc.script import Progress
from assoc.server.qix.handles import DocTarget, HandleTable, OpenDocument, object_interface
from assoc.server.settings import Settings
from assoc.server.store import AppStore


@dataclass
class LastReload:
    """The session's latest reload, for GetProgress."""

    progress: Progress
    script: str
    millis: int = 0


class SessionState:
    """The engine session of one or more sockets: selections live in its open document."""

    def __init__(
        self, store: AppStore, settings: Settings, user: str = "", groups: Sequence[str] = ()
    ) -> None:
        self.store = store
        self.settings = settings
        self.user = user
        self.groups = list(groups)  # the token's groups claim (section access GROUP rows)
        self.handles = HandleTable(settings.qix_max_objects_per_session)
        self.doc: OpenDocument | None = None
        self.last_reload: LastReload | None = None  # for GetProgress
        # The reload a socket of the session is running (its request id), and the flag that
        # stops it before its next statement (CancelReload, CancelRequest).
        self.reload_request_id: int | str | None = None
        self.reload_cancel = threading.Event()
        # The handles the last answer changed and closed, for the session's other sockets.
        self.notice: tuple[list[int], list[int]] | None = None

    def interface(self, handle: int) -> dict[str, Any]:
        """ObjectInterface of one of this session's handles."""
        return object_interface(handle, self.handles.get(handle))

    def open_document(self, doc: OpenDocument) -> None:
        """Makes `doc` the session's open document with a Doc handle (closed on failure)."""
        try:
            doc.handle = self.handles.add(DocTarget(doc))
        except BaseException:
            doc.close()
            raise
        self.doc = doc

    def close_document(self) -> list[int]:
        """Closes the open document and every handle in it; answers the handles closed."""
        doc, self.doc = self.doc, None
        if doc is None:
            return []
        closed = self.handles.clear()
        doc.close()
        return closed

    def close(self) -> None:
        """Ends the session (its document's selections and lease)."""
        self.close_document()
