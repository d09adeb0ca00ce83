"""A small QIX client on the `websockets` library, for driving a real `assoc serve` in tests.
Like enigma.js it asks for delta answers and applies their JSON-Patch operations to what it
kept per handle, method and result member (with its own applier, `apply_patch`)."""

from __future__ import annotations

import copy
import json
from typing import Any

from websockets.sync.client import ClientConnection, connect


class QixError(Exception):
    """An error answer."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('parameter')}: {error.get('message')} ({error.get('code')})")
        self.code = error["code"]
        self.parameter = error.get("parameter")
        self.message = error.get("message")


def _pointer(path: str) -> list[str]:
    assert path.startswith("/"), path
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(key: str, size: int, adding: bool) -> int:
    assert key.isdigit(), key
    assert key == "0" or not key.startswith("0"), key
    index = int(key)
    assert index < size or (adding and index == size), (key, size)
    return index


def apply_patch(value: Any, ops: list[dict[str, Any]]) -> Any:
    """`value` after JSON-Patch operations (RFC 6902 add / replace / remove; `/` is the whole
    value, as Qlik's engine and enigma.js use it). An operation that does not fit the value
    (a member or index that is not there to replace or remove) fails an assertion."""
    value = copy.deepcopy(value)
    for op in ops:
        kind, path = op["op"], op["path"]
        assert kind in ("add", "replace", "remove"), op
        assert set(op) == ({"op", "path"} if kind == "remove" else {"op", "path", "value"}), op
        if path == "/":
            assert kind != "remove", op
            value = copy.deepcopy(op["value"])
            continue
        *parents, last = _pointer(path)
        parent = value
        for part in parents:
            at = _index(part, len(parent), False) if type(parent) is list else part
            parent = parent[at]
        new = copy.deepcopy(op.get("value"))
        if type(parent) is list:
            index = _index(last, len(parent), kind == "add")
            if kind == "add":
                parent.insert(index, new)
            elif kind == "replace":
                parent[index] = new
            else:
                del parent[index]
        else:
            assert type(parent) is dict, (path, parent)
            assert kind == "add" or last in parent, (op, sorted(parent))
            if kind == "remove":
                del parent[last]
            else:
                parent[last] = new
    return value


class QixClient:
    """One socket: the OnConnected notice it got, requests with ids, pushed messages kept, and
    the values its delta answers patch (by handle, method and result member; dropped when the
    handle closes). `delta=False`: requests ask for full answers."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, delta: bool = True) -> None:
        self._connection = connect(url, additional_headers=headers, max_size=None, open_timeout=10)
        self.ws: ClientConnection = self._connection.__enter__()
        self.connected = json.loads(self.ws.recv(timeout=10))
        self.pushed: list[dict[str, Any]] = []
        self._next_id = 0
        self.delta = delta
        self.kept: dict[tuple[int, str, str], Any] = {}
        self.raw: dict[str, Any] = {}  # the latest answer as it came

    def __enter__(self) -> QixClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._connection.__exit__(None, None, None)

    def send_raw(self, text: str | bytes) -> dict[str, Any]:
        """Sends a frame as it is; answers the next message that has an `id` member."""
        self.ws.send(text)
        return self.receive_answer()

    def receive_answer(self) -> dict[str, Any]:
        """The next message that answers a request (pushed ones are kept in `pushed`)."""
        while True:
            message = json.loads(self.ws.recv(timeout=30))
            closed = set(message.get("close", []))
            self.kept = {k: v for k, v in self.kept.items() if k[0] not in closed}
            if "id" in message:
                return dict(message)
            self.pushed.append(message)

    def call(self, method: str, params: Any = None, handle: int = -1) -> dict[str, Any]:
        """The whole answer to one request (`params` None: the member is left out)."""
        self._next_id += 1
        request: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": method,
            "handle": handle,
            "delta": self.delta,
        }
        if params is not None:
            request["params"] = params
        answer = self.send_raw(json.dumps(request))
        assert answer["id"] == self._next_id
        self.raw = copy.deepcopy(answer)
        if answer.get("delta") is True:
            assert self.delta, answer
            assert "error" not in answer, answer
            result = {}
            for member, ops in answer["result"].items():
                assert type(ops) is list, answer
                key = (handle, method, member)
                self.kept[key] = result[member] = apply_patch(self.kept.get(key), ops)
            answer["result"] = copy.deepcopy(result)
        return answer

    def result(self, method: str, params: Any = None, handle: int = -1) -> dict[str, Any]:
        """The result of one request; QixError for an error answer."""
        answer = self.call(method, params, handle)
        if "error" in answer:
            raise QixError(answer["error"])
        result: dict[str, Any] = answer["result"]
        return result

    def handle_of(self, method: str, params: Any = None, handle: int = -1) -> int:
        """The qHandle a method answers."""
        found: int = self.result(method, params, handle)["qReturn"]["qHandle"]
        return found

    def open_doc(self, app_id: str) -> int:
        """OpenDoc; the Doc handle."""
        return self.handle_of("OpenDoc", [app_id])
