"""Requests whose headers never finish arriving: each is answered 408 and closed after
HeaderReadTimeout, and one address holds at most MaxIncompleteRequestsPerAddress of them (the
oldest past it gets 429) while its complete requests are still served."""

from __future__ import annotations

import json
import select
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from appfiles import ServerProcess

pytestmark = pytest.mark.server

HALF_UPGRADE = b"GET /app/ HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"


def half_sent(base_url: str, data: bytes = HALF_UPGRADE) -> socket.socket:
    """A connection that sent part of a WebSocket upgrade's headers, then nothing."""
    url = urlsplit(base_url)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=30)
    sock.sendall(data)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def status_and_code(response: bytes) -> tuple[int, str]:
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["errors"][0]["code"]


def all_open(socks: list[socket.socket]) -> bool:
    """True while the server has neither answered nor closed any of the connections: none has
    anything to read within 0.2 s (an answer, or the end of the connection, would be)."""
    readable, _, _ = select.select(socks, [], [], 0.2)
    return not readable


def test_half_sent_headers_get_408_after_the_timeout(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "HeaderReadTimeout=1").start()
    try:
        with half_sent(server.base_url) as upgrade, half_sent(server.base_url, b"") as silent:
            assert status_and_code(read_all(upgrade)) == (408, "RequestTimeout")
            assert status_and_code(read_all(silent)) == (408, "RequestTimeout")
        with server.client() as client:
            assert client.get("/health").status_code == 200
    finally:
        server.stop()


def test_one_address_holds_at_most_the_bound_of_incomplete_requests(tmp_path: Path) -> None:
    bound = 5
    server = ServerProcess(
        tmp_path / "data", f"MaxIncompleteRequestsPerAddress={bound}", "HeaderReadTimeout=600"
    ).start()
    socks = []
    try:
        socks = [half_sent(server.base_url) for _ in range(bound)]
        assert all_open(socks)
        socks.append(half_sent(server.base_url))  # one more: the oldest goes
        assert status_and_code(read_all(socks[0])) == (429, "TooManyIncompleteRequests")
        assert all_open(socks[1:])
        # A complete request from the address is served (its connection, while its headers
        # arrive, counts too: the oldest incomplete one goes).
        with server.client() as client:
            assert client.get("/health").status_code == 200
        assert status_and_code(read_all(socks[1])) == (429, "TooManyIncompleteRequests")
        assert all_open(socks[2:])
        # A request whose headers complete no longer counts: its socket is upgraded, and two
        # more incomplete requests from the address reach the bound without closing any.
        socks[2].sendall(
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        assert socks[2].recv(65536).startswith(b"HTTP/1.1 101 ")
        socks += [half_sent(server.base_url) for _ in range(2)]
        assert all_open(socks[3:])
    finally:
        for s in socks:
            s.close()
        server.stop()
