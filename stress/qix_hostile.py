"""The hostile QIX requests of docs/hardening.md, timed against a real `assoc serve`: each
line says what came back (an answer, or how the socket ended) and how long it took.

    PYTHONPATH=python python stress/qix_hostile.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from server import Server
else:
    from .server import Server

CSV = b"Customer,Amount\n" + b"".join(b"c%d,%d\n" % (i % 50, i) for i in range(1000))
EV = '{"jsonrpc":"2.0","id":1,"method":"EngineVersion","handle":-1,"params":%s}'


def call(ws: ClientConnection, method: str, params: Any, handle: int) -> dict[str, Any]:
    """One request with id 1; the whole answer."""
    ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "handle": handle,
                        "params": params}))  # fmt: skip
    return raw(ws)


def raw(ws: ClientConnection) -> dict[str, Any]:
    """The next message that has an id."""
    while True:
        message: dict[str, Any] = json.loads(ws.recv(timeout=120))
        if "id" in message:
            return message


def cube(ws: ClientConnection, app_id: str) -> int:
    """Opens the app and makes a one-dimension cube; its handle."""
    doc = call(ws, "OpenDoc", [app_id], -1)["result"]["qReturn"]["qHandle"]
    props = {"qInfo": {"qType": "t"}, "qHyperCubeDef": {
        "qDimensions": [{"qDef": {"qFieldDefs": ["Customer"]}}]}}  # fmt: skip
    handle: int = call(ws, "CreateSessionObject", [props], doc)["result"]["qReturn"]["qHandle"]
    return handle


def deep_props(ws: ClientConnection, app_id: str) -> dict[str, Any]:
    doc = call(ws, "OpenDoc", [app_id], -1)["result"]["qReturn"]["qHandle"]
    value: Any = {}
    for _ in range(600):
        value = {"a": value}
    return call(ws, "CreateSessionObject", [{"qInfo": {"qType": "x"}, "v": value}], doc)


def nan_props(ws: ClientConnection, app_id: str) -> dict[str, Any]:
    doc = call(ws, "OpenDoc", [app_id], -1)["result"]["qReturn"]["qHandle"]
    answer = call(ws, "CreateSessionObject", [{"qInfo": {"qType": "x"}, "v": float("nan")}], doc)
    if "error" in answer:
        return answer
    return call(ws, "GetLayout", [], answer["result"]["qReturn"]["qHandle"])


def big_element(ws: ClientConnection, app_id: str) -> dict[str, Any]:
    doc = call(ws, "OpenDoc", [app_id], -1)["result"]["qReturn"]["qHandle"]
    field = call(ws, "GetField", ["Customer"], doc)["result"]["qReturn"]["qHandle"]
    return call(ws, "LowLevelSelect", [[2**70]], field)


def empty_pages(count: int) -> Callable[[ClientConnection, str], dict[str, Any]]:
    def run(ws: ClientConnection, app_id: str) -> dict[str, Any]:
        pages = [{"qWidth": 0, "qHeight": 10**9}] * count
        return call(ws, "GetHyperCubeData", ["/qHyperCubeDef", pages], cube(ws, app_id))

    return run


def frame(text: str) -> Callable[[ClientConnection, str], dict[str, Any]]:
    def run(ws: ClientConnection, app_id: str) -> dict[str, Any]:
        ws.send(text)
        return raw(ws)

    return run


CASES: list[tuple[str, Callable[[ClientConnection, str], dict[str, Any]]]] = [
    ("frame nested 1,000", frame(EV % ("[" * 1000 + "]" * 1000))),
    ("frame nested 1,000,000", frame(EV % ("[" * 10**6 + "]" * 10**6))),
    ("frame nested 1,000,000, never closed", frame(EV % ("[" * 10**6))),
    ("id with a lone surrogate", frame('{"jsonrpc":"2.0","id":"\\ud800","method":"x"}')),
    ("NaN in properties, then GetLayout", nan_props),
    ("properties nested 600", deep_props),
    ("LowLevelSelect 2**70", big_element),
    ("GetHyperCubeData 20,000 empty pages", empty_pages(20_000)),
    ("GetHyperCubeData 1,000 empty pages", empty_pages(1_000)),
]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="assoc-qix-hostile-") as tmp:
        server = Server(Path(tmp) / "data", "QixMaxMessageBytes=16777216").start()
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                response = client.post("/v1/apps/import", content=CSV)
                response.raise_for_status()
                app_id = response.json()["attributes"]["id"]
            ws_url = "ws" + server.url.removeprefix("http") + "/app"
            print("| request | answer | seconds |\n|---|---|---:|")
            for name, run in CASES:
                started = time.perf_counter()
                try:
                    with connect(ws_url, max_size=None, open_timeout=10) as ws:
                        ws.recv(timeout=10)  # OnConnected
                        answer = run(ws, app_id)
                        outcome = json.dumps(answer.get("error") or "result")[:90]
                except ConnectionClosed as exc:
                    outcome = f"socket closed: {exc}"[:90]
                print(f"| {name} | {outcome} | {time.perf_counter() - started:.2f} |")
            healthy = httpx.get(server.url + "/health", timeout=10).status_code == 200
            print(f"/health after: {'200' if healthy else 'not 200'}")
            return 0 if healthy else 1
        finally:
            server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
