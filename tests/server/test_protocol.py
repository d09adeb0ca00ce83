"""The service's HTTP protocol: request bodies collect up to a megabyte before the socket is
paused (uvicorn's own protocol pauses past 64 KiB), and never more than that."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from assoc.cli import server_config
from assoc.server.protocol import BODY_BUFFER_BYTES, HttpProtocol

READ = 256 << 10  # what one socket read delivers


class FakeTransport(asyncio.Transport):
    """Records what the protocol does to the socket."""

    def __init__(self) -> None:
        super().__init__()
        self.paused = False
        self.pauses = 0
        self.written = bytearray()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 9076), "peername": ("127.0.0.1", 40000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        self.paused = True
        self.pauses += 1

    def resume_reading(self) -> None:
        self.paused = False

    def is_reading(self) -> bool:
        return not self.paused

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True


async def counting_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers with the number of body bytes it received."""
    total = 0
    while True:
        message = await receive()
        total += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(total).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def connect(protocol_class: type[HttpToolsProtocol]) -> tuple[HttpToolsProtocol, FakeTransport]:
    config = uvicorn.Config(counting_app, http=protocol_class, lifespan="off", log_level="error")
    config.load()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, transport


def request_head(body_bytes: int) -> bytes:
    return (
        b"POST /v1/apps/import HTTP/1.1\r\nhost: localhost\r\n"
        b"content-type: application/octet-stream\r\n"
        b"content-length: " + str(body_bytes).encode() + b"\r\n\r\n"
    )


def test_serve_runs_this_protocol() -> None:
    config = server_config(counting_app, "127.0.0.1", 0)
    assert config.http is HttpProtocol


def test_uploads_keep_reading_up_to_the_buffer_then_pause() -> None:
    async def scenario() -> None:
        total = 6 * READ
        ours, transport = connect(HttpProtocol)
        stock, stock_transport = connect(HttpToolsProtocol)
        for protocol in (ours, stock):
            protocol.data_received(request_head(total))
        # Reads arrive faster than the app runs: uvicorn's protocol pauses at once ...
        stock.data_received(b"x" * READ)
        assert stock_transport.paused
        # ... this one keeps reading while the unread body fits the buffer ...
        sent = 0
        while sent + READ <= BODY_BUFFER_BYTES:
            ours.data_received(b"x" * READ)
            sent += READ
            assert not transport.paused, sent
        # ... and pauses past it, so a connection holds at most the buffer plus one read.
        ours.data_received(b"x" * READ)
        sent += READ
        assert transport.paused
        # Once the app has taken the body, reading resumes; the whole body arrives.
        for _ in range(5):
            await asyncio.sleep(0)
        assert not transport.paused
        ours.data_received(b"x" * (total - sent))
        for _ in range(20):
            await asyncio.sleep(0)
            if transport.written:
                break
        assert transport.written.startswith(b"HTTP/1.1 200 OK")
        assert transport.written.endswith(str(total).encode())
        for protocol in (ours, stock):
            protocol.connection_lost(None)

    asyncio.run(scenario())


def test_a_pause_made_elsewhere_is_left_alone() -> None:
    async def scenario() -> None:
        protocol, transport = connect(HttpProtocol)
        protocol.data_received(request_head(4 * READ))
        protocol.flow.pause_reading()  # as for a pipelined request waiting its turn
        protocol.data_received(b"x" * READ)
        assert transport.paused
        protocol.connection_lost(None)

    asyncio.run(scenario())
