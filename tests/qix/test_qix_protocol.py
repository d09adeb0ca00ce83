"""QIX protocol edges against a real `assoc serve`: URL forms, params forms, errors, limits,
many sockets, an app deleted under an open session, the healthcheck figures."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qixclient import QixClient, QixError
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.extensions.base import Extension
from websockets.extensions.permessage_deflate import (
    ClientPerMessageDeflateFactory,
    PerMessageDeflate,
)
from websockets.frames import Frame, Opcode
from websockets.sync.client import connect

from appfiles import ServerProcess, package_bytes
from conftest import MAX_MESSAGE_BYTES, MAX_OBJECTS, TABLES, QixServer, symbols

pytestmark = pytest.mark.server

CONNECTED_TEXT = (
    '{"jsonrpc":"2.0","method":"OnConnected","params":{"qSessionState":"SESSION_CREATED"}}'
)
SECRET = "a-secret-that-is-long-enough-for-sha256"

LIST_PROPS = {
    "qInfo": {"qType": "filterbox"},
    "qListObjectDef": {
        "qDef": {"qFieldDefs": ["Customer"], "qSortCriterias": [{"qSortByLoadOrder": 1}]},
        "qShowAlternatives": True,
        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 100}],
    },
}


@pytest.mark.parametrize(
    "path",
    [
        "/app/{app}",
        "/app/engineData",
        "/app",
        "/app/",
        "",
        "/",
        "/app/engineData/identity/someone",
        "/app/engineData/ttl/30",
        "/app/{app}/identity/x/ttl/60?reloadURI=http://example",
        "/doc/prefix/app/{app}",
        "/anything/app",
    ],
)
def test_every_url_form_connects_and_answers(qix_server: QixServer, app_id: str, path: str) -> None:
    with QixClient(qix_server.ws_base + path.format(app=app_id)) as qix:
        assert qix.connected == {
            "jsonrpc": "2.0",
            "method": "OnConnected",
            "params": {"qSessionState": "SESSION_CREATED"},
        }
        assert qix.result("EngineVersion") == {"qVersion": {"qComponentVersion": "12.792.0"}}
        with pytest.raises(QixError) as no_doc:
            qix.result("GetActiveDoc")
        assert no_doc.value.code == 1007
        doc = qix.open_doc(app_id)
        assert doc == 1
        assert qix.result("GetActiveDoc")["qReturn"]["qHandle"] == doc


def test_params_as_array_object_or_absent(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        assert "qVersion" in qix.result("EngineVersion")  # params absent
        assert "qVersion" in qix.result("EngineVersion", [])
        answer = qix.call("OpenDoc", {"qDocName": app_id, "qNoData": False})
        assert answer["result"]["qReturn"] == {
            "qType": "Doc",
            "qHandle": 1,
            "qGenericType": "",
            "qGenericId": app_id,
        }
        assert answer["change"] == [1]
        # Asked with "delta": true, as enigma.js asks: the first answer adds the whole value.
        assert qix.raw["delta"] is True
        assert qix.raw["result"] == {
            "qReturn": [{"op": "add", "path": "/", "value": answer["result"]["qReturn"]}]
        }
        by_name = qix.result("GetField", {"qFieldName": "Customer"}, handle=1)
        by_position = qix.result("GetField", ["Customer"], handle=1)
        assert by_name == by_position  # the same field keeps its handle
        assert by_name["qReturn"]["qType"] == "Field"
        assert qix.result("GetCardinal", None, by_name["qReturn"]["qHandle"]) == {
            "qReturn": len(symbols("Customer"))
        }


def test_errors_for_bad_requests(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        assert qix.send_raw("{not json")["error"]["code"] == -32700
        engine_version = '{"jsonrpc":"2.0","id":3,"method":"EngineVersion","handle":-1}'
        assert qix.send_raw(engine_version + ' {"id":4}')["error"]["code"] == -32700
        assert qix.send_raw(engine_version + "]")["error"]["code"] == -32700
        assert qix.send_raw("")["error"]["code"] == -32700
        # Whitespace around the object is JSON too.
        assert "qVersion" in qix.send_raw(f" \n{engine_version}\r\n ")["result"]
        assert qix.send_raw("[1, 2]")["error"]["code"] == -32600
        bad = qix.send_raw(json.dumps({"jsonrpc": "2.0", "id": 7, "method": 5}))
        assert bad["id"] == 7
        assert bad["error"]["code"] == -32600
        assert qix.call("NoSuchMethod")["error"] == {
            "code": -32601,
            "parameter": "NoSuchMethod",
            "message": "Method not found",
        }
        assert qix.call("CopyApp", ["x", "y"])["error"]["code"] == 20  # in the schema, not here
        assert qix.call("GetLayout", [], handle=42)["error"]["code"] == -32602
        assert qix.call("OpenDoc", [5])["error"]["code"] == -32602  # wrong type
        assert qix.call("OpenDoc", [app_id, "", "", "", False, "extra"])["error"]["code"] == -32602
        assert qix.call("OpenDoc", {"qDocName": app_id, "qBogus": 1})["error"]["code"] == -32602
        assert qix.call("OpenDoc", [])["error"]["code"] == -32602  # qDocName is required
        missing = qix.call("OpenDoc", ["no-such-app"])["error"]
        assert missing == {
            "code": 1003,
            "parameter": "Could not find app",
            "message": "App not found",
        }
        doc = qix.open_doc(app_id)
        assert qix.call("OpenDoc", [app_id])["error"]["code"] == 1002
        assert qix.call("GetField", ["NoSuchField"], doc)["error"]["code"] == 2
        assert qix.call("EngineVersion", [], doc)["error"]["code"] == -32601  # not a Doc method
        # in the schema, not implemented (Evaluate was the example before it was)
        assert qix.call("GetAssociationScores", ["A", "B"], doc)["error"]["code"] == 20
        obj = qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)
        pages = [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 10_001}]
        too_big = qix.call("GetListObjectData", ["/qListObjectDef", pages], obj)["error"]
        assert too_big["code"] == 7009
        negative = [{"qTop": -1, "qWidth": 1, "qHeight": 1}]
        assert (
            qix.call("GetListObjectData", ["/qListObjectDef", negative], obj)["error"]["code"] == 8
        )
        assert qix.call("GetHyperCubeData", ["/qHyperCubeDef", []], obj)["error"]["code"] == 2
        # The socket still works after every error.
        assert qix.result("GetActiveDoc")["qReturn"]["qHandle"] == doc


def test_binary_frames_are_read_as_utf8_json(qix_server: QixServer) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        request = {"jsonrpc": "2.0", "id": 1, "method": "EngineVersion", "handle": -1}
        assert "result" in qix.send_raw(json.dumps(request).encode())
        assert qix.send_raw(b"\xff\xfe")["error"]["code"] == -32700


class FramesSeen(ClientPerMessageDeflateFactory):
    """permessage-deflate that records each data frame's RSV1 bit (compressed) and size on the
    wire before decoding it."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[tuple[bool, int]] = []

    def process_response_params(
        self, params: Any, accepted_extensions: Sequence[Extension]
    ) -> PerMessageDeflate:
        extension = super().process_response_params(params, accepted_extensions)
        decode = extension.decode

        def recording(frame: Frame, *, max_size: int | None = None) -> Frame:
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                self.frames.append((frame.rsv1, len(frame.data)))
            return decode(frame, max_size=max_size)

        extension.decode = recording  # type: ignore[method-assign]
        return extension


# A proxy's header: the client behind it is elsewhere, so its answers are compressed.
PROXIED = {"X-Forwarded-For": "203.0.113.7"}


def test_large_answers_are_deflated_and_small_ones_sent_plain(
    qix_server: QixServer, app_id: str
) -> None:
    seen = FramesSeen()
    url = qix_server.ws_base + "/app"
    with connect(url, extensions=[seen], additional_headers=PROXIED, max_size=None) as ws:
        assert "permessage-deflate" in ws.response.headers["Sec-WebSocket-Extensions"]
        assert json.loads(ws.recv(timeout=10))["method"] == "OnConnected"

        def answer(method: str, params: list[Any], handle: int) -> tuple[dict[str, Any], int]:
            request = {"jsonrpc": "2.0", "id": 1, "method": method, "handle": handle}
            ws.send(json.dumps({**request, "params": params}))
            text = str(ws.recv(timeout=10))
            return json.loads(text)["result"], len(text.encode())

        version, version_bytes = answer("EngineVersion", [], -1)
        assert version == {"qVersion": {"qComponentVersion": "12.792.0"}}
        doc = answer("OpenDoc", [app_id], -1)[0]["qReturn"]["qHandle"]
        listbox = answer("CreateSessionObject", [LIST_PROPS], doc)[0]["qReturn"]["qHandle"]
        first, layout_bytes = answer("GetLayout", [], listbox)
        again, _ = answer("GetLayout", [], listbox)
    cells = first["qLayout"]["qListObject"]["qDataPages"][0]["qMatrix"]
    assert [row[0]["qText"] for row in cells] == symbols("Customer")
    assert again == first
    assert layout_bytes > 512 > version_bytes
    # OnConnected, EngineVersion, OpenDoc and CreateSessionObject are small: sent as they are.
    assert [compressed for compressed, _ in seen.frames[:4]] == [False] * 4
    assert seen.frames[0][1] == len(CONNECTED_TEXT)
    # The layouts are deflated; the second, the same text again, mostly refers to the first.
    assert len(seen.frames) == 6, seen.frames
    (first_compressed, first_size), (again_compressed, again_size) = seen.frames[4:]
    assert first_compressed
    assert again_compressed
    assert first_size < layout_bytes
    assert again_size < first_size / 4


def _negotiated(url: str, headers: dict[str, str]) -> tuple[str | None, list[bool], int]:
    """A socket offering permessage-deflate: the extension the answer names, whether each data
    frame came compressed (none seen when none was negotiated), and a list layout's rows."""
    seen = FramesSeen()
    with connect(url, extensions=[seen], additional_headers=headers, max_size=None) as ws:
        ws.recv(timeout=10)  # OnConnected

        def result(method: str, params: list[Any], handle: int) -> Any:
            request = {"jsonrpc": "2.0", "id": 1, "method": method, "handle": handle}
            ws.send(json.dumps({**request, "params": params}))
            return json.loads(ws.recv(timeout=10))["result"]

        doc = result("OpenDoc", [url.rsplit("/", 1)[-1]], -1)["qReturn"]["qHandle"]
        listbox = result("CreateSessionObject", [LIST_PROPS], doc)["qReturn"]["qHandle"]
        layout = result("GetLayout", [], listbox)["qLayout"]
        extension = ws.response.headers.get("Sec-WebSocket-Extensions")
    rows = layout["qListObject"]["qDataPages"][0]["qMatrix"]
    return extension, [compressed for compressed, _ in seen.frames], len(rows)


def test_a_client_on_this_host_is_answered_uncompressed(qix_server: QixServer, app_id: str) -> None:
    """QixCompression=auto (the default): deflate only pays across a network. A direct client
    on loopback is declined; the same client behind a proxy's header gets it."""
    url = qix_server.ws_base + f"/app/{app_id}"
    extension, frames, rows = _negotiated(url, {})
    assert (extension, frames, rows) == (None, [], len(symbols("Customer")))
    extension, frames, rows = _negotiated(url, {"Forwarded": "for=203.0.113.7"})
    assert extension is not None
    assert "permessage-deflate" in extension
    assert frames[-1]
    assert rows == len(symbols("Customer"))
    extension, frames, _ = _negotiated(url, PROXIED)
    assert extension is not None
    assert frames[-1]


@pytest.mark.parametrize(("mode", "headers"), [("on", {}), ("off", PROXIED)])
def test_compression_setting_overrides_the_rule(tmp_path, mode: str, headers) -> None:
    server = ServerProcess(tmp_path / "data", f"QixCompression={mode}").start()
    try:
        with server.client() as client:
            answer = client.post("/v1/apps/import", content=package_bytes(TABLES))
            app_id = answer.json()["attributes"]["id"]
        url = "ws" + server.base_url.removeprefix("http") + f"/app/{app_id}"
        extension, frames, rows = _negotiated(url, headers)
        assert rows == len(symbols("Customer"))
        if mode == "on":
            assert extension is not None
            assert frames[-1]
        else:
            assert (extension, frames) == (None, [])
    finally:
        server.stop()


class _Transport:
    """A transport whose socket is of one address family (None: no socket)."""

    def __init__(self, family: int | None) -> None:
        self.family = family

    def get_extra_info(self, name: str) -> Any:
        assert name == "socket"
        return None if self.family is None else SimpleNamespace(family=self.family)


@pytest.mark.parametrize(
    ("family", "client", "local"),
    [
        (socket.AF_INET, ("127.0.0.1", 5000), True),
        (socket.AF_INET, ("127.8.9.10", 5000), True),
        (socket.AF_INET6, ("::1", 5000), True),
        (socket.AF_INET6, ("::ffff:127.0.0.1", 5000), True),
        (socket.AF_INET, ("10.1.2.3", 5000), False),
        (socket.AF_INET6, ("2001:db8::1", 5000), False),
        (socket.AF_INET6, ("::ffff:192.0.2.1", 5000), False),
        (socket.AF_UNIX, None, True),
        (None, None, False),  # nothing known of the peer: compressed as for any other
        (socket.AF_INET, ("not-an-address", 1), False),
    ],
)
def test_which_peers_are_on_this_host(family: int | None, client: Any, local: bool) -> None:
    from assoc.server.qix.wire import _local_peer

    assert _local_peer(_Transport(family), client) is local  # type: ignore[arg-type]


def test_a_bad_compression_setting_is_refused(tmp_path) -> None:
    from assoc import Error
    from assoc.server.settings import Settings

    with pytest.raises(Error, match="QixCompression"):
        Settings.from_sources(["QixCompression=maybe"])


def test_oversized_message_closes_the_socket_only(qix_server: QixServer) -> None:
    with (
        QixClient(qix_server.ws_base + "/app") as big,
        QixClient(qix_server.ws_base + "/app") as ok,
    ):
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "EngineVersion",
            "params": ["x" * MAX_MESSAGE_BYTES],
        }
        big.ws.send(json.dumps(request))
        with pytest.raises(ConnectionClosed) as closed:
            big.ws.recv(timeout=10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1009
        assert "qVersion" in ok.result("EngineVersion")


def test_objects_per_session_are_limited(qix_server: QixServer, app_id: str) -> None:
    with QixClient(qix_server.ws_base + "/app") as qix:
        doc = qix.open_doc(app_id)
        handles = [qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)]
        while len(handles) < MAX_OBJECTS - 1:  # the Doc holds a handle too
            handles.append(qix.handle_of("CreateSessionObject", [LIST_PROPS], doc))
        error = qix.call("CreateSessionObject", [LIST_PROPS], doc)["error"]
        assert error["code"] == 8
        assert len(set(handles)) == len(handles)
        first_id = qix.result("GetLayout", [], handles[0])["qLayout"]["qInfo"]["qId"]
        destroyed = qix.call("DestroySessionObject", [first_id], doc)
        assert destroyed["result"] == {"qSuccess": True}
        assert destroyed["close"] == [handles[0]]
        assert qix.call("GetLayout", [], handles[0])["error"]["code"] == -32602
        assert qix.call("GetObject", [first_id], doc)["error"] == {
            "code": 2,
            "parameter": first_id,
            "message": "Object not found",
        }
        assert qix.handle_of("CreateSessionObject", [LIST_PROPS], doc) > max(handles)


def _customer_states(qix: QixClient, obj: int) -> dict[object, str]:
    layout = qix.result("GetLayout", [], obj)["qLayout"]
    cells = [row[0] for row in layout["qListObject"]["qDataPages"][0]["qMatrix"]]
    return {symbols("Customer")[c["qElemNumber"]]: c["qState"] for c in cells}


def test_many_sockets_keep_their_own_selections(qix_server: QixServer, app_id: str) -> None:
    customers = symbols("Customer")
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def work(n: int) -> None:
        try:
            with QixClient(qix_server.ws_base + f"/app/{app_id}") as qix:
                doc = qix.open_doc(app_id)
                obj = qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)
                start.wait(timeout=30)
                mine = n % len(customers)
                for _ in range(5):
                    qix.result("SelectListObjectValues", ["/qListObjectDef", [mine], False], obj)
                    states = _customer_states(qix, obj)
                    assert states[customers[mine]] == "S"
                    assert [v for v, s in states.items() if s == "S"] == [customers[mine]]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def test_app_deleted_under_an_open_session(qix_server: QixServer) -> None:
    app_id = qix_server.import_app()
    with (
        QixClient(qix_server.ws_base + f"/app/{app_id}") as qix,
        qix_server.process.client() as rest,
    ):
        doc = qix.open_doc(app_id)
        field = qix.handle_of("GetField", ["Customer"], doc)
        obj = qix.handle_of("CreateSessionObject", [LIST_PROPS], doc)
        assert app_id in rest.get("/healthcheck").json()["apps"]["active_docs"]
        assert rest.delete(f"/v1/apps/{app_id}").status_code == 200
        closed = json.loads(qix.ws.recv(timeout=10))
        assert closed == {"jsonrpc": "2.0", "close": [doc, field, obj]}
        for handle in (doc, field, obj):
            assert qix.call("GetLayout", [], handle)["error"]["code"] == -32602
        assert qix.call("GetActiveDoc")["error"]["code"] == 1007
        assert qix.call("OpenDoc", [app_id])["error"]["code"] == 1003
        assert app_id not in rest.get("/healthcheck").json()["apps"]["active_docs"]


def test_app_replaced_under_an_open_session_closes_its_handles(tmp_path) -> None:
    server = ServerProcess(tmp_path / "data", "EFEMode=1").start()
    try:
        qix_server = QixServer(server)
        app_id = qix_server.import_app()
        with QixClient(qix_server.ws_base + "/app") as qix, server.client() as rest:
            doc = qix.open_doc(app_id)
            body = package_bytes({"T": {"X": [1, 2]}}, attributes={"id": app_id})
            replaced = rest.post("/v1/apps/import?mode=AUTOREPLACE", content=body)
            assert replaced.status_code == 200, replaced.text
            assert json.loads(qix.ws.recv(timeout=10)) == {"jsonrpc": "2.0", "close": [doc]}
            doc = qix.open_doc(app_id)  # the new version opens
            field = qix.handle_of("GetField", ["X"], doc)
            assert qix.result("GetCardinal", [], field) == {"qReturn": 2}
        assert server.stopped_gracefully()
    finally:
        server.stop()


def test_healthcheck_figures_move_with_qix_use(qix_server: QixServer, app_id: str) -> None:
    with qix_server.process.client() as rest:
        before = rest.get("/healthcheck").json()
        with QixClient(qix_server.ws_base + "/app") as qix:
            doc = qix.open_doc(app_id)
            field = qix.handle_of("GetField", ["Region"], doc)
            qix.result("SelectValues", [[{"qText": "North"}]], field)
            during = rest.get("/healthcheck").json()
        # The service sees the socket close a moment after the client has closed it.
        deadline = time.monotonic() + 10
        after = rest.get("/healthcheck").json()
        while after["session"]["active"] != before["session"]["active"]:
            assert time.monotonic() < deadline, after["session"]
            time.sleep(0.01)
            after = rest.get("/healthcheck").json()
        assert during["session"]["active"] == before["session"]["active"] + 1
        assert during["session"]["total"] == before["session"]["total"] + 1
        assert during["users"]["active"] >= 1
        assert after["session"]["active"] == before["session"]["active"]
        assert during["apps"]["calls"] >= before["apps"]["calls"] + 3
        assert during["apps"]["selections"] == before["apps"]["selections"] + 1
        assert during["cache"]["lookups"] > before["cache"]["lookups"]
        assert app_id in during["apps"]["active_docs"]


def test_tokens_are_required_on_upgrades_when_validated(tmp_path) -> None:
    server = ServerProcess(
        tmp_path / "data", "ValidateJsonWebTokens=2", f"JsonWebTokenSecret={SECRET}"
    ).start()
    try:
        url = "ws" + server.base_url.removeprefix("http") + "/app/engineData"
        with pytest.raises(InvalidStatus) as refused, connect(url, open_timeout=10):
            pass
        assert refused.value.response.status_code == 401
        assert json.loads(refused.value.response.body)["errors"][0]["status"] == "401"
        import jwt

        token = jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256")
        with QixClient(url, {"Authorization": f"Bearer {token}"}) as qix:
            assert "qVersion" in qix.result("EngineVersion")
        bad = jwt.encode({"sub": "ann"}, SECRET[::-1], algorithm="HS256")
        auth = {"Authorization": f"Bearer {bad}"}
        with pytest.raises(InvalidStatus), connect(url, additional_headers=auth, open_timeout=10):
            pass
    finally:
        server.stop()


def test_shutdown_closes_open_sockets(tmp_path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        with QixClient("ws" + server.base_url.removeprefix("http") + "/app") as qix:
            assert server.stopped_gracefully()
            with pytest.raises(ConnectionClosed):
                qix.ws.recv(timeout=10)
    finally:
        server.stop()


def _big_csv(seed: int, rows: int = 150_000) -> bytes:
    """A CSV whose symbol tables take well over 1 MB (distinct numbers in every row)."""
    lines = ["Key,Value"] + [f"{seed * rows + i},{(seed * rows + i) * 7}" for i in range(rows)]
    return "\n".join(lines).encode()


def test_apps_held_by_sessions_are_not_evicted(tmp_path) -> None:
    server = ServerProcess(tmp_path / "data", "MemoryBudgetMB=2").start()
    try:
        with server.client() as rest:

            def import_csv(seed: int) -> str:
                answer = rest.post("/v1/apps/import", content=_big_csv(seed))
                assert answer.status_code == 200, answer.text
                return str(answer.json()["attributes"]["id"])

            held, other = import_csv(1), import_csv(2)
            with QixClient("ws" + server.base_url.removeprefix("http") + "/app") as qix:
                qix.open_doc(held)
                assert rest.get(f"/v1/apps/{other}/data/metadata").status_code == 200
                import_csv(3)
                loaded = rest.get("/healthcheck").json()["apps"]["loaded_docs"]
                assert held in loaded
                assert other not in loaded  # evicted: nothing holds it
                field = qix.handle_of("GetField", ["Key"], 1)
                assert qix.result("GetCardinal", [], field) == {"qReturn": 150_000}
            import_csv(4)
            loaded = rest.get("/healthcheck").json()["apps"]["loaded_docs"]
            assert held not in loaded  # released with the socket, then evicted
    finally:
        server.stop()


def test_whole_numbers_go_on_the_wire_as_integers() -> None:
    """A whole qNum is written `400`, as Qlik's engine writes it, not `400.0`; other numbers
    keep every digit, NaN and infinities are strings: in measure and field value cells alike."""
    from assoc.server.qix.facts import FieldValues
    from assoc.server.qix.hypercube import measure_cells_json
    from assoc.server.qix.rpc import encode_json, json_number

    assert encode_json({"qNum": json_number(400.0)}) == '{"qNum":400}'
    assert encode_json(json_number(-0.0)) == "0"
    assert encode_json(json_number(-12.0)) == "-12"
    assert encode_json(json_number(2.5)) == "2.5"
    assert encode_json(json_number(0.1 + 0.2)) == "0.30000000000000004"
    assert encode_json(json_number(2.0**60)) == "1.152921504606847e+18"  # beyond exact integers
    assert (json_number(float("nan")), json_number(float("-inf"))) == ("NaN", "-Infinity")
    whole, part, null = measure_cells_json([400.0, 2.5, float("nan")])
    assert '"qText":"400","qNum":400,' in whole
    assert '"qNum":2.5,' in part
    assert '"qNum":"NaN"' in null
    seven, half, text = FieldValues([7, 2.5, "a"]).cells_json([0, 1, 2], np.ones(3, np.int8))
    assert '"qNum":7,' in seven
    assert '"qNum":2.5,' in half
    assert '"qNum":"NaN",' in text


_EDGE_NUMBERS = [0.0, -0.0, 1e15 - 1, 1e15, -1e15, 2.0**53 - 1, 2.0**53, 2.0**53 + 2, 1e16, 1.5e16]
_EDGE_NUMBERS += [9999999999999998.0, 1e-4, 1e-5, 123456.789, 5e-324, 1.7976931348623157e308]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.floats() | st.sampled_from(_EDGE_NUMBERS) | st.integers(-(2**60), 2**60).map(float))
)
def test_measure_cells_are_written_as_their_cell_objects_encode(values: list[float]) -> None:
    """A data page's measure cells, written by the engine in one call, are exactly the JSON of
    each cell's object: the text as lists show numbers (integers below 1e15, else 15
    significant digits), qNum an integer below 2^53 or the float's repr, NULL and infinities."""
    from assoc.server.qix.hypercube import measure_cell, measure_cells_json
    from assoc.server.qix.rpc import encode_json

    assert measure_cells_json(values) == [encode_json(measure_cell(v)) for v in values]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False), min_size=1),
    st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 4)), max_size=60),
    st.booleans(),
)
def test_value_cells_are_each_symbols_cell_in_its_state(
    symbols: list[Any], rows: list[tuple[int, int]], wrap: bool
) -> None:
    """A page's value cells, written by the engine in one call: each row's symbol's NxCell
    (its text escaped, its number, its index; NULL for a negative code) in the row's state,
    alike for a field whose cells are kept and one whose cells are made for the page."""
    from assoc.field_order import STATE_NAMES
    from assoc.server.qix import facts
    from assoc.server.qix.facts import NULL_CELL_PREFIX, FieldValues

    distinct = list(dict.fromkeys(symbols))
    values = FieldValues(distinct)
    codes = [min(code, len(distinct) - 1) for code, _ in rows]
    states = np.array([state for _, state in rows], dtype=np.int8)
    before, after = ("[", '"}]') if wrap else ("", '"}')
    expected = [
        before + (values._prefix(c) if c >= 0 else NULL_CELL_PREFIX) + STATE_NAMES[s] + after
        for c, s in zip(codes, states.tolist(), strict=True)
    ]
    assert values.cells_json(np.array(codes, dtype=np.int64), states, wrap) == expected
    kept, facts.CACHED_PREFIXES_MAX = facts.CACHED_PREFIXES_MAX, 0  # cells made per page
    try:
        fresh = FieldValues(distinct)
        assert fresh.cells_json(np.array(codes, dtype=np.int64), states, wrap) == expected
    finally:
        facts.CACHED_PREFIXES_MAX = kept
    for cell in expected:
        json.loads(cell)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text() | st.integers(-(10**6), 10**6), min_size=1, max_size=30),
    st.lists(
        st.tuples(st.integers(-2, 40), st.floats() | st.sampled_from(_EDGE_NUMBERS)),
        min_size=1,
        max_size=40,
    ),
    st.lists(st.integers(0, 4), min_size=30, max_size=30),
    st.lists(st.integers(0, 39), max_size=50),
)
def test_page_rows_are_their_cells_in_column_order(
    symbols: list[Any],
    cube: list[tuple[int, float]],
    symbol_states: list[int],
    asked: list[int],
) -> None:
    """A data page's rows, written by the engine in one call, are the rows asked in the order
    asked: each the dimension's cell (NULL in state O), then the measure's, as each is written
    alone; a row or a code out of range is refused."""
    import assoc
    from assoc import _core
    from assoc.field_order import OPTION, STATE_NAMES
    from assoc.server.qix.facts import NULL_CELL_PREFIX, FieldValues
    from assoc.server.qix.hypercube import measure_cells_json

    distinct = list(dict.fromkeys(symbols))
    values = FieldValues(distinct)
    codes = np.array([min(code, len(distinct) - 1) for code, _ in cube], dtype=np.int64)
    numbers = np.array([number for _, number in cube])
    states = np.array(symbol_states[: len(distinct)], dtype=np.int8)
    index = np.array([row % len(cube) for row in asked], dtype=np.int64)
    columns = [(codes, states, values.cell_prefixes()), numbers]
    rows = _core.page_rows_json(index, columns, NULL_CELL_PREFIX, STATE_NAMES, OPTION)
    page_codes = codes[index]
    page_states = np.full(len(index), OPTION, dtype=np.int8)
    valued = page_codes >= 0
    page_states[valued] = states[page_codes[valued]]
    dims = values.cells_json(page_codes, page_states)
    measures = measure_cells_json(numbers[index])
    assert rows == [f"[{d},{m}]" for d, m in zip(dims, measures, strict=True)]
    for row in rows:
        json.loads(row)
    with pytest.raises(assoc.Error, match="row out of range"):
        _core.page_rows_json([len(cube)], columns, NULL_CELL_PREFIX, STATE_NAMES, OPTION)
    past = np.array([len(distinct)], dtype=np.int64)
    with pytest.raises(assoc.Error, match="code out of range"):
        _core.page_rows_json([0], [(past, states, [])], NULL_CELL_PREFIX, STATE_NAMES, OPTION)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats() | st.sampled_from(_EDGE_NUMBERS) | st.integers(-(10**17), 10**17).map(float)
    ),
    st.integers(0, 5),
)
def test_measure_facts_are_counted_over_the_values_not_null(
    values: list[float], first: int
) -> None:
    """A measure's info (qMin, qMax, qApprMaxGlyphCount) reads, of its values that are not
    NULL: how many, the least, the greatest, and the longest text of the first ones."""
    from assoc import _core
    from assoc.field_order import value_text

    present = [v for v in values if not math.isnan(v)]
    count, low, high, glyphs = _core.number_facts(np.array(values, dtype=np.float64), first)
    assert count == len(present)
    assert glyphs == max((len(value_text(v)) for v in present[:first]), default=0)
    if present:
        assert (low, high) == (min(present), max(present))
    else:
        assert math.isnan(low)
        assert math.isnan(high)
