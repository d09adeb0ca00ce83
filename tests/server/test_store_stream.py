"""A QVD body imported on a node of an object store (a real SeaweedFS) is uploaded to the store
while it arrives, and whatever stops the import midway leaves nothing in the store: a client
that hangs up, a body that is not a valid QVD, the store failing mid multipart upload."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import assoc
from appfiles import ServerProcess, needs_qvd_reader
from assoc.server.store import AppStore, ObjectStore
from assoc.server.store.s3 import APPS, POINTERS
from seaweed import SeaweedFS, s3_env, start_seaweedfs

pytest.importorskip("obstore", reason="the S3 client is the extra assoc[s3]")
pytestmark = [needs_qvd_reader, pytest.mark.server]


@pytest.fixture(scope="module")
def weed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """A SeaweedFS of this module's own (its pending multipart uploads are these tests')."""
    with pytest.MonkeyPatch.context() as env:
        for name, value in s3_env().items():
            env.setenv(name, value)
        server = start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
        yield server
        server.stop()


def sales_qvd(rows: int) -> bytes:
    """A QVD of one table with numbers and texts."""
    app = assoc.App.from_tables(
        {
            "Sales": {
                "OrderId": list(range(rows)),
                "Customer": [f"C{i % 997:04d}" for i in range(rows)],
                "Amount": [(i % 500) / 4 for i in range(rows)],
            }
        }
    )
    return bytes(app._impl.write_qvd("Sales"))


def leftovers(data_dir: Path) -> list[Path]:
    """Everything in the node's cache: under tmp/ (staged imports, upload files) and apps/."""
    return sorted((data_dir / "tmp").iterdir()) + sorted((data_dir / "apps").iterdir())


@pytest.fixture(scope="module")
def big_qvd() -> bytes:
    """A QVD of about 12 MB: three parts of 5 MiB in a multipart upload."""
    return sales_qvd(1_200_000)


def _keys(weed: SeaweedFS, url: str, prefix: str) -> list[str]:
    objects = ObjectStore(url, weed.endpoint)
    try:
        return sorted(e["path"] for e in objects._list(prefix))
    finally:
        objects.close()


def _until(condition: Callable[[], object], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


@pytest.fixture
def node(tmp_path: Path, weed: SeaweedFS) -> Iterator[tuple[ServerProcess, str]]:
    """A node on a fresh prefix of the store, and that prefix's URL."""
    url = weed.url()
    server = ServerProcess(tmp_path / "data", f"AppStore={url}", f"S3Endpoint={weed.endpoint}")
    server.start(timeout=30)
    yield server, url
    server.stop()


def _nothing_left(weed: SeaweedFS, url: str, server: ServerProcess) -> bool:
    """No app, no version file, no multipart upload in the store, nothing in the node's tmp/."""
    return (
        weed.pending_uploads() == []
        and _keys(weed, url, APPS) == []
        and _keys(weed, url, POINTERS) == []
        and leftovers(server.data_dir) == []
    )


def _send_part(base_url: str, body: bytes, declared: int) -> socket.socket:
    """A raw import request with the first bytes of its body sent (the socket stays open)."""
    where = urlsplit(base_url)
    sock = socket.create_connection((where.hostname or "127.0.0.1", where.port or 80), 30)
    head = f"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def test_a_qvd_body_is_in_the_store_before_it_has_all_arrived(
    node: tuple[ServerProcess, str], weed: SeaweedFS, big_qvd: bytes, tmp_path: Path
) -> None:
    server, url = node
    half = len(big_qvd) - 200_000
    sock = _send_part(server.base_url, big_qvd[:half], len(big_qvd))
    try:
        # The body is not complete, yet its first part is in the store's multipart upload.
        _until(lambda: len(weed.pending_uploads()) == 1)
        assert _keys(weed, url, POINTERS) == []  # nothing committed before the answer
        sock.sendall(big_qvd[half:])
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, answer
            answer += chunk
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer
    (app_id,) = re.findall(rb'"id":"([0-9a-f-]{36})"', answer)
    app_id_text = app_id.decode()
    assert weed.pending_uploads() == []
    keys = _keys(weed, url, f"{APPS}{app_id_text}/")
    assert [k.rsplit("/", 2)[-2:] for k in keys if k.endswith(".qvd")] == [["tables", "table.qvd"]]
    with server.client() as client:
        metadata = client.get(f"/v1/apps/{app_id_text}/data/metadata")
        assert metadata.status_code == 200
        assert metadata.json()["tables"][0]["no_of_rows"] == 1_200_000
    # Another node fetches it: the table as ranges at once, put together byte for byte.
    other = AppStore(tmp_path / "other", objects=ObjectStore(url, weed.endpoint))
    try:
        with other.using(app_id_text) as app:
            assert app.tables == ["Sales"]
        (table,) = (tmp_path / "other" / "apps" / app_id_text).glob("*/tables/table.qvd")
        assert table.read_bytes() == big_qvd
        gets = other.shared.objects.stats.snapshot()["get"].count if other.shared else 0
        assert gets >= 1 + 1 + 4  # the pointer, app.json, the table's four ranges
    finally:
        other.close()


def test_a_client_that_hangs_up_mid_upload_leaves_nothing_in_the_store(
    node: tuple[ServerProcess, str], weed: SeaweedFS, big_qvd: bytes
) -> None:
    server, url = node
    sock = _send_part(server.base_url, big_qvd[: len(big_qvd) - 200_000], len(big_qvd))
    try:
        _until(lambda: len(weed.pending_uploads()) == 1)  # the upload to the store is under way
    finally:
        sock.close()
    # The multipart upload is aborted, the staged files removed, nothing listed.
    _until(lambda: _nothing_left(weed, url, server))
    with server.client() as client:
        assert client.get("/v1/apps").json() == []
        # The node goes on importing.
        assert client.post("/v1/apps/import", content=big_qvd).status_code == 200


def test_the_janitor_aborts_the_upload_of_a_node_killed_mid_import(
    node: tuple[ServerProcess, str], weed: SeaweedFS, big_qvd: bytes
) -> None:
    pytest.importorskip("botocore", reason="the janitor lists uploads through botocore")
    server, url = node
    sock = _send_part(server.base_url, big_qvd[: len(big_qvd) - 200_000], len(big_qvd))
    try:
        _until(lambda: len(weed.pending_uploads()) == 1)  # the upload to the store is under way
        server.kill()  # SIGKILL: nothing aborts the multipart upload
    finally:
        sock.close()
    server.port = urlsplit(server.base_url).port or 0  # restarted where it was
    server.start(timeout=30)
    assert len(weed.pending_uploads()) == 1  # left in the store, no object listed for it
    objects = ObjectStore(url, weed.endpoint)
    try:
        assert objects.collect_garbage(3600) == []
        assert len(weed.pending_uploads()) == 1  # younger than the grace period: kept
        time.sleep(1.0)
        objects.collect_garbage(0.5)
    finally:
        objects.close()
    assert _nothing_left(weed, url, server)
    with server.client() as client:
        assert client.get("/v1/apps").json() == []
        assert client.post("/v1/apps/import", content=big_qvd).status_code == 200


def test_a_body_that_is_no_valid_qvd_leaves_nothing_in_the_store(
    node: tuple[ServerProcess, str], weed: SeaweedFS, big_qvd: bytes
) -> None:
    # Every byte arrives (the upload to the store completes), then the reader rejects it.
    server, url = node
    with server.client() as client:
        response = client.post("/v1/apps/import", content=big_qvd + b"\0\0")
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["code"] == "InvalidAppFile"
        _until(lambda: _nothing_left(weed, url, server))
        assert client.get("/v1/apps").json() == []


class FailingParts:
    """A proxy in front of the store's S3 gateway that answers 500 to the upload of every part
    of a multipart upload from part `fail_from` on, while `failing` is set; it sends each
    request on a connection of its own (adding `Connection: close`) so that it sees each."""

    def __init__(self, target: str, fail_from: int = 2) -> None:
        where = urlsplit(target)
        self.target = (where.hostname or "127.0.0.1", where.port or 80)
        self.fail_from = fail_from
        self.failing = True
        self.failed = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.ExitStack() as stack:
            stack.enter_context(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            part = re.search(rb"[?&]partNumber=(\d+)", lines[0])
            if (
                self.failing
                and lines[0].startswith(b"PUT ")
                and part
                and int(part.group(1)) >= self.fail_from
            ):
                self.failed += 1
                conn.sendall(
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                    b"Connection: close\r\n\r\n"
                )
                conn.shutdown(socket.SHUT_WR)
                with contextlib.suppress(OSError):  # read what was sent, then close
                    while conn.recv(65536):
                        pass
                return
            kept = [line for line in lines if not line.lower().startswith(b"connection:")]
            upstream = stack.enter_context(socket.create_connection(self.target, 30))
            upstream.sendall(b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n" + rest)

            def forward() -> None:
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(65536):
                        upstream.sendall(chunk)

            threading.Thread(target=forward, daemon=True).start()
            with contextlib.suppress(OSError):
                while chunk := upstream.recv(65536):
                    conn.sendall(chunk)


def test_the_store_failing_mid_upload_is_503_and_leaves_nothing(
    tmp_path: Path, weed: SeaweedFS, big_qvd: bytes
) -> None:
    proxy = FailingParts(weed.endpoint)
    url = weed.url()
    server = ServerProcess(tmp_path / "data", f"AppStore={url}", f"S3Endpoint={proxy.endpoint}")
    try:
        server.start(timeout=30)
        with server.client() as client:
            response = client.post("/v1/apps/import", content=big_qvd)
            assert response.status_code == 503, response.text
            (error,) = response.json()["errors"]
            assert error["code"] == "StoreUnavailable"
            assert "unavailable" in error["detail"]
            assert proxy.failed >= 1  # the first part went through, the second did not
            # The multipart upload was aborted: nothing in the store, nothing listed.
            _until(lambda: _nothing_left(weed, url, server))
            assert client.get("/v1/apps").json() == []
            # The store back: the same body imports.
            proxy.failing = False
            again = client.post("/v1/apps/import", content=big_qvd)
            assert again.status_code == 200, again.text
            assert len(client.get("/v1/apps").json()) == 1
    finally:
        server.stop()
        proxy.close()
