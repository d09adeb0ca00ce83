"""A small QIX client on the `websockets` library, for driving a real `assoc serve` in tests."""

from __future__ import annotations

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


class QixClient:
    """One socket: the OnConnected notice it got, requests with ids, pushed messages kept."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self._connection = connect(url, additional_headers=headers, max_size=None, open_timeout=10)
        self.ws: ClientConnection = self._connection.__enter__()
        self.connected = json.loads(self.ws.recv(timeout=10))
        self.pushed: list[dict[str, Any]] = []
        self._next_id = 0

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
            "delta": True,
        }
        if params is not None:
            request["params"] = params
        answer = self.send_raw(json.dumps(request))
        assert answer["id"] == self._next_id
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
