"""Requests whose HTTP framing is broken are answered by the HTTP server (uvicorn) before the
service sees them: a 400 with a plain-text body, the connection closed (docs/http.md lists the
cases); the service keeps serving."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from appfiles import ServerProcess

FRAMING_ERRORS = {
    "content-length-not-a-number": b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: abc\r\n\r\n",
    "content-length-negative": b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: -1\r\n\r\n",
    "content-length-twice": b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: 4\r\nContent-Length: 5\r\n\r\na,b\n",
    "content-length-and-chunked": b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\na,b\n\r\n0\r\n\r\n",
    "chunk-size-not-hex": b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\na,b\n\r\n0\r\n\r\n",
    "raw-non-ascii-path": "GET /v1/apps/é HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
    "path-of-100-kb": b"GET /v1/apps/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One service for the module's requests."""
    process = ServerProcess(tmp_path_factory.mktemp("framing") / "data").start()
    yield process
    assert process.stopped_gracefully()


def _exchange(base_url: str, request: bytes) -> bytes:
    url = urlsplit(base_url)
    with socket.create_connection((url.hostname or "", url.port or 80), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):  # the server closes the connection
            answer += chunk
    return answer


@pytest.mark.parametrize("request_bytes", FRAMING_ERRORS.values(), ids=FRAMING_ERRORS.keys())
def test_broken_framing_gets_400_and_the_service_goes_on(
    server: ServerProcess, request_bytes: bytes
) -> None:
    head, _, body = _exchange(server.base_url, request_bytes).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in head.lower()
    assert body == b"Invalid HTTP request received."
    with server.client() as client:
        assert client.get("/v1/apps").json() == []
