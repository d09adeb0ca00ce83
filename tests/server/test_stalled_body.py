"""A client that sends half a body and stalls: its request times out (408), and SIGTERM still
stops the service within ShutdownTimeout, dropping the upload cleanly."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import assoc
from appfiles import ServerProcess


def _qvd_start() -> bytes:
    """The first 8 KiB of a QVD file: enough for the service to stage it and start parsing."""
    app = assoc.App.from_tables({"T": {"Id": list(range(5000)), "Name": ["n"] * 5000}})
    data = bytes(app._impl.write_qvd("T"))
    assert len(data) > 8192
    return data[:8192]


# A CSV body is spooled to a file, a QVD body staged in the import's folders and parsed.
BODY_STARTS = [pytest.param(b"a,b\n1,2\n12", id="csv"), pytest.param(_qvd_start(), id="qvd")]


def _stalled_upload(base_url: str, start: bytes) -> socket.socket:
    """A connection that sent the headers and the start of a 1,000,000-byte body, then nothing."""
    url = urlsplit(base_url)
    sock = socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=30)
    sock.sendall(
        b"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + start
    )
    return sock


def _response(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, object]]:
    """Status, headers (lower-case names) and JSON body, read until the server closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.mark.parametrize("start", BODY_STARTS)
def test_stalled_body_gets_408(tmp_path: Path, start: bytes) -> None:
    server = ServerProcess(tmp_path / "data", "BodyReadTimeout=1").start()
    try:
        with _stalled_upload(server.base_url, start) as sock:
            started = time.monotonic()
            status, headers, body = _response(sock)
        assert status == 408
        assert body["errors"][0]["code"] == "RequestTimeout"  # type: ignore[index]
        # The answer closes the connection (the rest of the body may still come), at once
        # rather than after the server's 5 s keep-alive.
        assert headers["connection"] == "close"
        assert time.monotonic() - started < 4.5
        with server.client() as client:
            assert client.get("/v1/apps").json() == []
        assert list((tmp_path / "data" / "tmp").iterdir()) == []  # the partial upload is gone
    finally:
        assert server.stopped_gracefully()


@pytest.mark.parametrize("start", BODY_STARTS)
def test_sigterm_completes_with_a_stalled_upload(tmp_path: Path, start: bytes) -> None:
    server = ServerProcess(tmp_path / "data", "BodyReadTimeout=600", "ShutdownTimeout=1").start()
    with _stalled_upload(server.base_url, start):
        time.sleep(0.5)  # the request is in the app, waiting for its body
        if start.startswith(b"<"):  # a QVD: staged as it arrives
            assert list((tmp_path / "data" / "tmp").glob("stage-*/v-*/tables/table.qvd"))
        started = time.monotonic()
        assert server.stopped_gracefully()
        assert time.monotonic() - started < 10
    assert list((tmp_path / "data" / "tmp").iterdir()) == []
