"""QIX engine work against a real `assoc serve`: small requests are answered while it runs, work
over the memory budget gets an error, and SIGTERM ends sockets mid-request quietly."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from appfiles import ServerProcess

pytestmark = pytest.mark.server

ROWS = 300_000
REGIONS = 50


def big_csv(rows: int = ROWS) -> bytes:
    """Rows with a unique id: a cube by Id is as long as the app, and slow to lay out."""
    lines = ["Id,Region,Amount"]
    lines += [f"{i},r{i % REGIONS},{i % 997}.5" for i in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def cube_props(dimension: str = "Id", measure: str = "Sum(Amount)") -> dict[str, Any]:
    return {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": [dimension]}}],
            "qMeasures": [{"qDef": {"qDef": measure}}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 2, "qHeight": 10}],
        },
    }


class Socket:
    """One QIX socket; `call` waits for its answer, `send` does not."""

    def __init__(self, url: str) -> None:
        self._connection = connect(url, max_size=None, open_timeout=30, close_timeout=5)
        self.ws: ClientConnection = self._connection.__enter__()
        self.ws.recv(timeout=30)  # OnConnected
        self.next_id = 0

    def send(self, method: str, params: Any, handle: int = -1) -> int:
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "handle": handle}
        self.ws.send(json.dumps({**request, "params": params}))
        return self.next_id

    def answer(self, request_id: int, timeout: float = 120) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(self.ws.recv(timeout=timeout))
            if message.get("id") == request_id:
                return message

    def call(self, method: str, params: Any, handle: int = -1) -> dict[str, Any]:
        answer = self.answer(self.send(method, params, handle))
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def open_cube(self, app_id: str, n: int = 0) -> int:
        """OpenDoc and a session cube by Id, its measure another for each `n` (no two sockets
        share a result): the cube's handle."""
        doc = self.call("OpenDoc", [app_id])["qReturn"]["qHandle"]
        props = cube_props(measure=f"Sum(Amount) * {n + 1}")
        handle: int = self.call("CreateSessionObject", [props], doc)["qReturn"]["qHandle"]
        return handle

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def close_code(s: Socket) -> int | None:
    """The code of the close frame that ends the socket (None: it ended without one)."""
    try:
        while True:
            s.ws.recv(timeout=60)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    finally:
        s.close()


def import_app(server: ServerProcess, body: bytes) -> str:
    with server.client() as client:
        response = client.post("/v1/apps/import", content=body, timeout=300)
        assert response.status_code == 200, response.text
        app_id: str = response.json()["attributes"]["id"]
        return app_id


def ws_url(server: ServerProcess) -> str:
    return "ws" + server.base_url.removeprefix("http") + "/app/"


def requests_counted(server: ServerProcess, method: str) -> int:
    """QIX requests of `method` the service has taken (they count before they are worked on)."""
    with server.client() as client:
        for line in client.get("/metrics").text.splitlines():
            if line.startswith(f'assoc_qix_requests_total{{method="{method}"}}'):
                return int(float(line.split()[-1]))
    return 0


def wait_counted(server: ServerProcess, method: str, count: int) -> None:
    while requests_counted(server, method) < count:
        threading.Event().wait(0.01)


@pytest.mark.parametrize("shutdown_timeout", [0, 20])
def test_sigterm_mid_getlayout_closes_sockets_quietly(
    tmp_path: Path, shutdown_timeout: int
) -> None:
    server = ServerProcess(tmp_path / "data", f"ShutdownTimeout={shutdown_timeout}").start()
    try:
        app_id = import_app(server, big_csv())
        idle = [Socket(ws_url(server)) for _ in range(20)]
        busy = [Socket(ws_url(server)) for _ in range(5)]
        cubes = [s.open_cube(app_id, n) for n, s in enumerate(busy)]
        for s, cube in zip(busy, cubes, strict=True):
            s.send("GetLayout", [], cube)
        wait_counted(server, "GetLayout", len(busy))
        assert server.proc is not None
        server.proc.terminate()
        codes = [close_code(s) for s in idle + busy]
        assert server.proc.wait(30) in (0, -15)
        log = server.read_log()
        assert set(codes) <= {1001, 1012}, codes
        assert "Traceback" not in log, log
        assert "CancelledError" not in log, log
        assert "requests in progress given up" in log
        assert "Application shutdown complete" in log
    finally:
        server.stop()


def test_small_requests_are_answered_while_getlayouts_are_in_flight(tmp_path: Path) -> None:
    # More GetLayouts than the worker threads small requests use (40), each computing its own
    # cube: while engine work ran in those threads, a DELETE or a /healthcheck waited for the
    # GetLayouts queued before it (8 here) and one more to finish.
    sockets, small_request_threads = 48, 40
    server = ServerProcess(tmp_path / "data").start()
    busy: list[Socket] = []
    try:
        app_id = import_app(server, big_csv())
        other = import_app(server, b"A,B\n1,x\n")
        busy = [Socket(ws_url(server)) for _ in range(sockets)]
        cubes = [s.open_cube(app_id, n) for n, s in enumerate(busy)]
        sent = [s.send("GetLayout", [], cube) for s, cube in zip(busy, cubes, strict=True)]
        wait_counted(server, "GetLayout", sockets)
        with server.client() as client:
            assert client.delete(f"/v1/apps/{other}").status_code == 200
            assert client.get("/healthcheck").status_code == 200
            assert client.get("/health").status_code == 200
        early: dict[int, dict[str, Any]] = {}
        for n, s in enumerate(busy):
            with contextlib.suppress(TimeoutError):
                early[n] = json.loads(s.ws.recv(timeout=0))
        assert len(early) < sockets - small_request_threads, len(early)
        for n, (s, request_id) in enumerate(zip(busy, sent, strict=True)):
            answer = early.get(n) or s.answer(request_id)
            assert answer["result"]["qLayout"]["qHyperCube"]["qSize"]["qcy"] == ROWS
        with server.client() as client:
            assert client.get(f"/v1/apps/{other}").status_code == 404
    finally:
        for s in busy:
            s.close()
        server.stop()


def test_engine_work_over_the_memory_budget_gets_an_error(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "MemoryBudgetMB=1").start()
    try:
        app_id = import_app(server, big_csv())
        s = Socket(ws_url(server))
        try:
            # A cube by Id: 300,000 rows and values to lay out, more than the budget allows.
            cube = s.open_cube(app_id)
            answer = s.answer(s.send("GetLayout", [], cube))
            assert answer["error"]["code"] == 19, answer  # LOCERR_GENERIC_MEMORY_LIMIT_REACHED
            assert "MemoryBudgetMB" in answer["error"]["message"]
            # The socket goes on; a cube by Region fits.
            doc = s.call("GetActiveDoc", [])["qReturn"]["qHandle"]
            small = s.call("CreateSessionObject", [cube_props("Region")], doc)
            layout = s.call("GetLayout", [], small["qReturn"]["qHandle"])
            assert layout["qLayout"]["qHyperCube"]["qSize"]["qcy"] == REGIONS
        finally:
            s.close()
        with server.client() as client:
            assert client.get("/health").status_code == 200
    finally:
        server.stop()
