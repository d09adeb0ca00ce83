"""Imports of QVD bodies parsed while they arrive: the same app as loading the file, stored as
durably, the reader's errors as 422, and nothing left behind by a bad body or a client that
goes away mid-body."""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

import assoc
from appfiles import ServerProcess
from assoc.server import create_app, uploads
from assoc.server.settings import Settings

pytestmark = pytest.mark.server


def sales_qvd(rows: int) -> bytes:
    """A QVD of one table with numbers, texts and NULLs, big enough to arrive in many chunks."""
    app = assoc.App.from_tables(
        {
            "Sales": {
                "OrderId": list(range(rows)),
                "Customer": [f"C{i % 997:04d}" for i in range(rows)],
                "Amount": [None if i % 11 == 0 else (i % 500) / 4 for i in range(rows)],
            }
        }
    )
    return bytes(app._impl.write_qvd("Sales"))


@pytest.fixture(scope="module")
def qvd() -> bytes:
    """A 40,000-row QVD (about half a megabyte)."""
    return sales_qvd(40_000)


def data_of(metadata: dict[str, Any]) -> dict[str, Any]:
    """The parts of metadata that describe the data (not when or how fast it loaded)."""
    return {"fields": metadata["fields"], "tables": metadata["tables"]}


def expected_data(data: bytes) -> dict[str, Any]:
    """What App.from_qvd makes of the bytes."""
    return data_of(assoc.App.from_qvd(data).metadata())


def leftovers(data_dir: Path) -> list[Path]:
    """Everything under tmp/ and apps/."""
    return sorted((data_dir / "tmp").iterdir()) + sorted((data_dir / "apps").iterdir())


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """The service's data dir."""
    return tmp_path / "data"


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    """The service with default settings."""
    with TestClient(create_app(Settings(), data_dir)) as client:
        yield client


def test_raw_qvd_body_imports_the_file_and_stores_it(
    client: TestClient, data_dir: Path, qvd: bytes
) -> None:
    response = client.post("/v1/apps/import", content=qvd)
    assert response.status_code == 200, response.text
    app_id = response.json()["attributes"]["id"]
    assert response.json()["attributes"]["name"] == "Sales"
    metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
    assert data_of(metadata) == expected_data(qvd)
    (stored,) = (data_dir / "apps" / app_id).glob("*/tables/table.qvd")
    assert stored.read_bytes() == qvd
    stored_attributes = stored_manifest(data_dir, app_id)["attributes"]
    assert stored_attributes.items() >= response.json()["attributes"].items()
    assert list((data_dir / "tmp").iterdir()) == []
    health = client.get("/healthcheck").json()
    assert health["apps"]["loaded_docs"] == [app_id]


def stored_manifest(data_dir: Path, app_id: str) -> dict[str, Any]:
    """The committed app.json of an app."""
    app_dir = data_dir / "apps" / app_id
    current = (app_dir / "CURRENT").read_text()
    return json.loads((app_dir / current / "app.json").read_bytes())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("header_name", "query", "app_name", "table_name"),
    [
        pytest.param(None, "", "Sales", "Sales", id="header-read-late"),
        pytest.param(None, "?name=Year", "Year", "Sales", id="header-read-late-named"),
        pytest.param("", "?name=Year", "Year", "Sales", id="named"),
        pytest.param("Other", "", "Sales", "Sales", id="header-name-differs"),
    ],
)
def test_app_json_names_the_app_and_table_however_early_the_header_was_read(
    client: TestClient,
    data_dir: Path,
    qvd: bytes,
    monkeypatch: pytest.MonkeyPatch,
    header_name: str | None,
    query: str,
    app_name: str,
    table_name: str,
) -> None:
    # app.json is written while the file is parsed once the stream has read the header: here
    # the header was not read in time, or (never in practice) named another table than the
    # load does. Either way the committed app.json holds the names the load gave.
    if header_name != "":
        monkeypatch.setattr(assoc.QvdStream, "table_name", property(lambda _: header_name))
    response = client.post(f"/v1/apps/import{query}", content=qvd)
    assert response.status_code == 200, response.text
    attributes = response.json()["attributes"]
    manifest = stored_manifest(data_dir, attributes["id"])
    assert manifest["attributes"]["id"] == attributes["id"]
    assert manifest["attributes"]["name"] == attributes["name"] == app_name
    assert manifest["tables"] == [{"name": table_name, "file": "tables/table.qvd"}]
    metadata = client.get(f"/v1/apps/{attributes['id']}/data/metadata").json()
    assert [t["name"] for t in metadata["tables"]] == [table_name]


def src_tables(metadata: dict[str, Any]) -> dict[str, list[str]]:
    """The tables of each data field (system fields left out)."""
    return {f["name"]: f["src_tables"] for f in metadata["fields"] if not f["is_system"]}


def orders_qvd(rows: int) -> bytes:
    """A QVD whose header names its table Orders."""
    app = assoc.App.from_tables(
        {"Orders": {"OrderId": list(range(rows)), "Amount": [i / 4 for i in range(rows)]}}
    )
    return bytes(app._impl.write_qvd("Orders"))


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "loaded-whole"])
@pytest.mark.parametrize("multipart", [False, True], ids=["raw", "multipart"])
@pytest.mark.parametrize("name", [None, "Sales"], ids=["unnamed", "named"])
def test_a_bare_qvd_is_one_table_named_by_its_header_and_name_names_the_app(
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    streamed: bool,
    multipart: bool,
    name: str | None,
) -> None:
    # DESIGN.md section 4: the QVD header's TableName names the table; `name` names the app.
    finished: list[int] = []
    finish = assoc.QvdStream.finish

    def counted(self: assoc.QvdStream) -> Any:
        finished.append(self.received)
        return finish(self)

    monkeypatch.setattr(assoc.QvdStream, "finish", counted)
    # Parsed as it arrives when its first bytes tell a QVD of a known size; a body shorter
    # than those first bytes is loaded from its file once it has arrived.
    data = orders_qvd(2000 if streamed else 20)
    assert (len(data) > 4096) is streamed
    query = f"?name={name}" if name else ""
    if multipart:
        response = client.post(
            f"/v1/apps/import{query}", files={"filedata": ("Year 2025.qvd", data)}
        )
    else:
        response = client.post(f"/v1/apps/import{query}", content=data)
    assert response.status_code == 200, response.text
    assert finished == ([len(data)] if streamed else [])
    attributes = response.json()["attributes"]
    assert attributes["name"] == (name or ("Year 2025" if multipart else "Orders"))
    metadata = client.get(f"/v1/apps/{attributes['id']}/data/metadata").json()
    assert [t["name"] for t in metadata["tables"]] == ["Orders"]
    assert src_tables(metadata) == {"OrderId": ["Orders"], "Amount": ["Orders"]}
    listed = client.get(f"/v1/apps/{attributes['id']}").json()["attributes"]
    assert listed["name"] == attributes["name"]


@pytest.mark.parametrize("multipart", [False, True], ids=["raw", "multipart"])
@pytest.mark.parametrize(("name", "table"), [(None, "Table1"), ("Sales", "Sales")])
def test_a_csv_is_one_table_named_by_name_or_table1(
    client: TestClient, multipart: bool, name: str | None, table: str
) -> None:
    data = b"OrderId,Amount\n1,2.5\n2,3.5\n"
    query = f"?name={name}" if name else ""
    if multipart:
        response = client.post(f"/v1/apps/import{query}", files={"filedata": ("orders.csv", data)})
    else:
        response = client.post(f"/v1/apps/import{query}", content=data)
    assert response.status_code == 200, response.text
    app_id = response.json()["attributes"]["id"]
    metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
    assert [t["name"] for t in metadata["tables"]] == [table]
    assert src_tables(metadata) == {"OrderId": [table], "Amount": [table]}


def test_multipart_and_chunked_qvd_bodies_give_the_same_app(client: TestClient, qvd: bytes) -> None:
    expected = expected_data(qvd)
    multipart = client.post("/v1/apps/import", files={"filedata": ("Year 2025.qvd", qvd)})
    assert multipart.status_code == 200, multipart.text
    assert multipart.json()["attributes"]["name"] == "Year 2025"
    chunks = [qvd[i : i + 3000] for i in range(0, len(qvd), 3000)]
    chunked = client.post("/v1/apps/import", content=iter(chunks))
    assert chunked.status_code == 200, chunked.text
    for answer in (multipart, chunked):
        app_id = answer.json()["attributes"]["id"]
        assert data_of(client.get(f"/v1/apps/{app_id}/data/metadata").json()) == expected


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda q: q[:-1], id="truncated"),
        pytest.param(lambda q: q + b"\0\0", id="trailing-bytes"),
        pytest.param(
            lambda q: q.replace(b"<NoOfRecords>40000<", b"<NoOfRecords>40001<", 1),
            id="records-past-the-end",
        ),
        pytest.param(lambda q: q.replace(b"</TableName>", b"</TableNam>", 1), id="bad-header"),
        pytest.param(
            lambda q: q[: q.index(b"\0") + 1] + b"\x09" + q[q.index(b"\0") + 2 :],
            id="bad-symbol",
        ),
    ],
)
def test_an_invalid_qvd_is_422_with_the_readers_message_and_stores_nothing(
    client: TestClient, data_dir: Path, qvd: bytes, damage: Any
) -> None:
    broken = damage(qvd)
    with pytest.raises(assoc.Error) as expected:
        assoc.App.from_qvd(broken)
    response = client.post("/v1/apps/import", content=broken)
    assert response.status_code == 422, response.text
    (error,) = response.json()["errors"]
    assert error["code"] == "InvalidAppFile"
    assert error["detail"] == str(expected.value)
    assert leftovers(data_dir) == []
    assert client.get("/v1/apps").json() == []


@pytest.mark.parametrize("header_read", [True, False])
def test_every_path_of_a_streamed_import_is_flushed_once_before_the_answer(
    client: TestClient,
    data_dir: Path,
    qvd: bytes,
    monkeypatch: pytest.MonkeyPatch,
    header_read: bool,
) -> None:
    # Read in time, the header lets app.json be written and flushed beside the parse's end;
    # else the commit flushes it with the rest.
    name = "Sales" if header_read else None
    monkeypatch.setattr(assoc.QvdStream, "table_name", property(lambda _: name))
    flushed: list[str] = []
    fsync = os.fsync

    def recorded(fd: int) -> None:
        fsync(fd)
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))

    monkeypatch.setattr(os, "fsync", recorded)
    response = client.post("/v1/apps/import", content=qvd)
    assert response.status_code == 200, response.text
    app_dir = data_dir / "apps" / response.json()["attributes"]["id"]
    # Flushed while staged in tmp/stage-*/, then renamed to apps/<id>/ and apps/ flushed.
    (stage,) = {Path(p).relative_to(data_dir / "tmp").parts[0] for p in flushed[:-1]}
    moved = [p.replace(str(data_dir / "tmp" / stage), str(app_dir)) for p in flushed[:-1]]
    assert flushed[-1] == str(data_dir / "apps")
    everything = {str(app_dir), *(str(p) for p in app_dir.rglob("*"))}
    table = next(p for p in everything if p.endswith("table.qvd"))
    # The table file is flushed by its stream (fdatasync in the engine), everything else here.
    assert sorted(moved) == sorted(everything - {table})


@pytest.mark.parametrize("when", ["start", "finish", "app.json"])
def test_no_space_for_a_streamed_file_is_507_and_leaves_nothing(
    data_dir: Path, qvd: bytes, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # The stream reserves the file's room when it starts and reports a failed write (or flush)
    # when it finishes: both as OSError, whose ENOSPC is 507. So is app.json's write, which
    # runs beside the end of the parse.
    def no_space(*args: object, **kwargs: object) -> Any:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "table.qvd")

    if when == "start":
        monkeypatch.setattr(uploads, "QvdStream", no_space)
    elif when == "finish":
        monkeypatch.setattr(assoc.QvdStream, "finish", no_space)
    else:
        write_bytes = Path.write_bytes

        def no_space_for_app_json(path: Path, data: Any) -> int:
            if path.name == "app.json":
                no_space()
            return write_bytes(path, data)

        monkeypatch.setattr(Path, "write_bytes", no_space_for_app_json)
    service = create_app(Settings(), data_dir)
    with TestClient(service, raise_server_exceptions=False) as client:
        response = client.post("/v1/apps/import", content=qvd)
        assert response.status_code == 507, response.text
        assert response.json()["errors"][0]["code"] == "InsufficientStorage"
        assert leftovers(data_dir) == []
        monkeypatch.undo()
        assert client.post("/v1/apps/import", content=qvd).status_code == 200


def test_a_stream_waits_for_room_in_the_load_gate_before_it_buffers(
    client: TestClient, data_dir: Path, qvd: bytes
) -> None:
    gate = client.app_state["store"].load_gate
    answers: list[int] = []
    with gate.admit(gate.capacity):  # every byte of the capacity held
        importing = threading.Thread(
            target=lambda: answers.append(client.post("/v1/apps/import", content=qvd).status_code)
        )
        importing.start()
        deadline = time.monotonic() + 10
        while gate.waited == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert gate.waited == 1
        assert answers == []
        # It waits with the body unread: no file of it is on disk yet.
        assert list((data_dir / "tmp").glob("upload-*")) == []
    importing.join(30)
    assert answers == [200]


def test_waiting_for_room_is_not_a_stalled_body(data_dir: Path, qvd: bytes) -> None:
    # BodyReadTimeout counts only the time spent waiting for the client's bytes.
    with TestClient(create_app(Settings(body_read_timeout=1), data_dir)) as client:
        gate = client.app_state["store"].load_gate
        answers: list[int] = []
        with gate.admit(gate.capacity):
            importing = threading.Thread(
                target=lambda: answers.append(
                    client.post("/v1/apps/import", content=qvd).status_code
                )
            )
            importing.start()
            time.sleep(2.0)  # the upload waits for room, its body unread, past the timeout
        importing.join(30)
        assert answers == [200]


def test_qvd_bodies_are_parsed_once_as_they_arrive(
    client: TestClient, qvd: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished: list[int] = []
    finish = assoc.QvdStream.finish

    def counted(self: assoc.QvdStream) -> Any:
        finished.append(self.received)
        return finish(self)

    monkeypatch.setattr(assoc.QvdStream, "finish", counted)
    assert client.post("/v1/apps/import", content=qvd).status_code == 200
    assert client.post("/v1/apps/import", files={"filedata": ("a.qvd", qvd)}).status_code == 200
    assert finished == [len(qvd), len(qvd)]
    # A body too short to tell by its first bytes, or without a Content-Length, loads the file.
    small = sales_qvd(20)
    assert len(small) < 4096
    assert client.post("/v1/apps/import", content=small).status_code == 200
    assert client.post("/v1/apps/import", content=iter([qvd])).status_code == 200
    assert finished == [len(qvd), len(qvd)]


def test_a_file_part_before_other_parts_still_imports_the_file(
    client: TestClient, qvd: bytes
) -> None:
    # The stream expects the file to be the last part; here it is not, so it reads the file
    # whole at the end.
    response = client.post(
        "/v1/apps/import",
        files={"filedata": ("a.qvd", qvd), "zz-comment": ("note.txt", b"x" * 5000)},
    )
    assert response.status_code == 200, response.text
    app_id = response.json()["attributes"]["id"]
    assert data_of(client.get(f"/v1/apps/{app_id}/data/metadata").json()) == expected_data(qvd)


# ---- a real server process ------------------------------------------------------------


def test_served_import_survives_kill_9(tmp_path: Path) -> None:
    data = sales_qvd(200_000)
    server = ServerProcess(tmp_path / "data").start()
    try:
        with server.client() as client:
            response = client.post("/v1/apps/import", content=data)
            assert response.status_code == 200, response.text
            app_id = response.json()["attributes"]["id"]
            before = client.get(f"/v1/apps/{app_id}/data/metadata").json()
            assert data_of(before) == expected_data(data)
            assert client.get("/healthcheck").json()["apps"]["loaded_docs"] == [app_id]
        server.kill()
    finally:
        server.stop()
    server = ServerProcess(tmp_path / "data").start()
    try:
        with server.client() as client:
            after = client.get(f"/v1/apps/{app_id}/data/metadata").json()
            assert data_of(after) == data_of(before)
    finally:
        server.stop()


def _send_half_and_hang_up(base_url: str, body: bytes, declared: int) -> None:
    url = urlsplit(base_url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), 30) as sock:
        head = f"POST /v1/apps/import HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n\r\n"
        sock.sendall(head.encode() + body)
        time.sleep(0.3)  # the service reads the head, takes room in the gate, starts parsing


def test_a_client_that_hangs_up_mid_body_leaves_nothing_and_frees_the_gate(
    tmp_path: Path,
) -> None:
    data = sales_qvd(200_000)
    # The gate holds 64 MiB: a body declared at 30 MB asks for all of it, so an import after
    # the hang-up can only run if that room was given back.
    server = ServerProcess(tmp_path / "data", "MemoryBudgetMB=100").start()
    try:
        for _ in range(2):
            _send_half_and_hang_up(server.base_url, data[: len(data) // 2], 30_000_000)
        deadline = time.monotonic() + 10
        while leftovers(tmp_path / "data") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert leftovers(tmp_path / "data") == []
        with server.client() as client:
            response = client.post("/v1/apps/import", content=data)
            assert response.status_code == 200, response.text
            assert client.get("/v1/apps").json()[0]["attributes"]["name"] == "Sales"
    finally:
        server.stop()


def test_an_upload_cancelled_while_it_waits_for_room_never_keeps_it() -> None:
    import asyncio

    from assoc.server.store.admission import LoadGate
    from assoc.server.uploads import _in_thread

    gate = LoadGate(100)
    room = gate.admit(60)
    with gate.admit(100):  # all the room held: the upload's thread waits

        async def cancelled() -> None:
            task = asyncio.create_task(
                _in_thread(room.__enter__, lambda _: room.__exit__(None, None, None))
            )
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(cancelled())
    # The waiting thread gets the room once it is free, and gives it straight back.
    admitted = threading.Event()

    def take_all() -> None:
        with gate.admit(100):
            admitted.set()

    threading.Thread(target=take_all, daemon=True).start()
    assert admitted.wait(10)
    assert gate.waited >= 1
