"""A client that sends half a body and stalls: its request times out (408), and SIGTERM still
stops the service within ShutdownTimeout, dropping the upload cleanly."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from appfiles import ServerProcess


def _stalled_upload(base_url: str) -> socket.socket:
    """A connection that sent the headers and 10 of 1,000,000 body bytes, then nothing."""
    url = urlsplit(base_url)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=30)
    sock.sendall(
        b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
        + b"a,b\n1,2\n12"
    )
    return sock


def _response(sock: socket.socket) -> tuple[int, dict[str, object]]:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_stalled_body_gets_408(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "BodyReadTimeout=1").start()
    try:
        with _stalled_upload(server.base_url) as sock:
            started = time.monotonic()
            status, body = _response(sock)
        assert status == 408
        assert body["errors"][0]["code"] == "RequestTimeout"  # type: ignore[index]
        assert time.monotonic() - started < 10
        with server.client() as client:
            assert client.get("/v1/apps").json() == []
        assert list((tmp_path / "data" / "tmp").iterdir()) == []  # the partial upload is gone
    finally:
        assert server.stopped_gracefully()


def test_sigterm_completes_with_a_stalled_upload(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "BodyReadTimeout=600", "ShutdownTimeout=1").start()
    with _stalled_upload(server.base_url):
        time.sleep(0.5)  # the request is in the app, waiting for its body
        started = time.monotonic()
        assert server.stopped_gracefully()
        assert time.monotonic() - started < 10
    assert list((tmp_path / "data" / "tmp").iterdir()) == []
