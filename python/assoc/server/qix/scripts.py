"""A document's load script and folder connections, and how reload results look over QIX."""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from typing import Any

from assoc.script import (
    FolderConfinement,
    FolderConnections,
    Progress,
    ScriptError,
    check_syntax,
)
from assoc.server.qix.rpc import RpcError

CONNECTION_ALREADY_EXISTS = 2000
CONNECTION_NOT_FOUND = 2001
CONNECTION_NAME_IS_INVALID = 2004
DATASOURCE_ACCESS_DENIED = 10000


def _now_stamp() -> str:
    """Now, as a connection's qModifiedDate."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"


def _check_folder(name: str, path: str, confinement: FolderConfinement) -> None:
    """10000 for a folder outside AllowedFolders, 2004 for a name a connection cannot have."""
    try:
        FolderConnections(None, confinement).add(name, path)
    except ScriptError as exc:
        code = DATASOURCE_ACCESS_DENIED if name and "/" not in name else CONNECTION_NAME_IS_INVALID
        raise RpcError(code, name, exc.message) from None


@dataclass
class FolderConnection:
    """One folder connection of a document."""

    name: str
    path: str
    connection_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    modified: str = field(default_factory=_now_stamp)

    def record(self) -> dict[str, Any]:
        """The Connection struct GetConnections answers."""
        return {
            "qId": self.connection_id,
            "qName": self.name,
            "qConnectionString": self.path,
            "qType": "folder",
            "qModifiedDate": self.modified,
            "qMeta": {"qName": self.name},
            "qLogOn": "LOG_ON_SERVICE_USER",
        }


@dataclass
class DocScript:
    """The script and connections of an open document (a session app's, or a stored app's)."""

    text: str = ""
    connections: list[FolderConnection] = field(default_factory=list)

    @classmethod
    def stored(cls, text: str, connections: list[dict[str, str]]) -> DocScript:
        """From a stored app's app.json "script" and "connections"."""
        return cls(text, [FolderConnection(c["name"], c["path"]) for c in connections])

    def stored_connections(self) -> list[dict[str, str]]:
        """The connections as app.json keeps them."""
        return [{"name": c.name, "path": c.path} for c in self.connections]

    def find(self, name: str) -> FolderConnection | None:
        """The connection of that name (any case)."""
        key = name.casefold()
        return next((c for c in self.connections if c.name.casefold() == key), None)

    def add(self, name: str, path: str, confinement: FolderConfinement) -> FolderConnection:
        """A new folder connection; 2000 when the name exists, 10000 outside AllowedFolders."""
        if self.find(name) is not None:
            raise RpcError(CONNECTION_ALREADY_EXISTS, name, "Connection already exists")
        _check_folder(name, path, confinement)
        connection = FolderConnection(name, path)
        self.connections.append(connection)
        return connection

    def get(self, connection_id: str) -> FolderConnection:
        """The connection with this id (2001 when there is none)."""
        for c in self.connections:
            if c.connection_id == connection_id:
                return c
        raise RpcError(CONNECTION_NOT_FOUND, connection_id, "Connection not found")

    def modify(
        self, connection_id: str, name: str, path: str, confinement: FolderConfinement
    ) -> FolderConnection:
        """Gives a connection a new name and folder, checked as `add` checks them (2000 when
        another connection has the name); its id stays."""
        connection = self.get(connection_id)
        other = self.find(name)
        if other is not None and other is not connection:
            raise RpcError(CONNECTION_ALREADY_EXISTS, name, "Connection already exists")
        _check_folder(name, path, confinement)
        connection.name, connection.path = name, path
        connection.modified = _now_stamp()
        return connection

    def remove(self, connection_id: str) -> None:
        """Deletes a connection by id (2001 when there is none)."""
        for i, c in enumerate(self.connections):
            if c.connection_id == connection_id:
                del self.connections[i]
                return
        raise RpcError(CONNECTION_NOT_FOUND, connection_id, "Connection not found")

    def folder_connections(self, confinement: FolderConfinement) -> FolderConnections:
        """The connections a reload resolves `lib://` through, checked against AllowedFolders."""
        return FolderConnections({c.name: c.path for c in self.connections}, confinement)


def text_position(text: str, line: int, column: int) -> int:
    """The offset in `text` of a 1-based line and column (0 when unknown)."""
    if line < 1:
        return 0
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: line - 1]) + max(column - 1, 0)


def _line_text(text: str, line: int) -> str:
    lines = text.split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


def error_data(error: ScriptError, text: str) -> dict[str, Any]:
    """ErrorData of a failed reload, with the line and column (from 1) it stopped at."""
    return {
        "qErrorString": str(error),
        "qLineEnd": "",
        "qLine": _line_text(text, error.line),
        "qErrorDataCode": "EDC_ERROR",
        "qMessage": {"qMessageCode": 0, "qMessageParameters": [error.message]},
        "qLineNumber": error.line,
        "qColumn": error.column,
    }


def progress_data(progress: Progress | None, text: str, millis: int) -> dict[str, Any]:
    """ProgressData of the session's last reload (all zero before the first)."""
    progress = progress or Progress()
    errors = [error_data(progress.error, text)] if progress.error is not None else []
    return {
        "qStarted": progress.statements_total > 0 or progress.finished,
        "qFinished": progress.finished,
        "qCompleted": progress.statements_done,
        "qTotal": progress.statements_total,
        "qKB": 0,
        "qMillisecs": millis,
        "qUserInteractionWanted": False,
        "qPersistentProgress": "\n".join(progress.log),
        "qTransientProgress": "",
        "qErrorData": errors,
        "qPersistentProgressMessages": [],
        "qTransientProgressMessage": {"qMessageCode": 0, "qMessageParameters": []},
    }


def syntax_errors(text: str) -> list[dict[str, Any]]:
    """CheckScriptSyntax's qErrors: each ScriptSyntaxError with its place in the script."""
    out = []
    for error in check_syntax(text):
        out.append(
            {
                "qErrorCode": 0,
                "qLineInTab": max(error.line - 1, 0),
                "qColInLine": max(error.column - 1, 0),
                "qTextPos": text_position(text, error.line, error.column),
                "qTextLength": 1,
                "qTabIx": 0,
                "qSecondaryFailure": False,
            }
        )
    return out
