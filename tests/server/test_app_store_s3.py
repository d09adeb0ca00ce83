"""Apps in an S3 object store (a real SeaweedFS): commits, lost races, deletes, the janitor,
the store down, and a second node that sees what the first committed."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from appfiles import CUSTOMERS, ORDERS, needs_qvd_reader, package_bytes, qvd_bytes
from assoc import Error
from assoc.server import create_app
from assoc.server.settings import Settings
from assoc.server.store import (
    AppNotFound,
    AppStore,
    ImportMode,
    ListForm,
    ObjectStore,
    VersionConflict,
)
from assoc.server.store.s3 import APPS, POINTERS
from seaweed import SeaweedFS, s3_env, start_seaweedfs

pytest.importorskip("obstore", reason="the S3 client is the extra assoc[s3]")
pytestmark = needs_qvd_reader


@pytest.fixture
def weed(shared_weed: SeaweedFS) -> SeaweedFS:
    """The tests' shared SeaweedFS: each test here works under a prefix of its own."""
    return shared_weed


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3_env().items():
        monkeypatch.setenv(name, value)


Node = Callable[[], AppStore]


def metric(text: str, name: str, **labels: str) -> float:
    """One sample of a /metrics exposition (KeyError when it is absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    raise KeyError((name, labels))


@pytest.fixture
def url(weed: SeaweedFS, aws_env: None) -> str:
    return weed.url()


@pytest.fixture
def node(tmp_path: Path, weed: SeaweedFS, url: str) -> Iterator[Node]:
    """Opens engine stores ("nodes"), each with a data dir of its own, on one object store."""
    opened: list[AppStore] = []

    def open_() -> AppStore:
        objects = ObjectStore(url, weed.endpoint)
        objects.probe()
        store = AppStore(tmp_path / f"node{len(opened)}", objects=objects)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def _import(store: AppStore, data: bytes, **kwargs: Any) -> dict[str, Any]:
    path = store.new_upload_path()
    path.write_bytes(data)
    return store.import_file(path, **kwargs)


def _keys(weed: SeaweedFS, url: str, prefix: str) -> list[str]:
    objects = ObjectStore(url, weed.endpoint)
    try:
        return sorted(e["path"] for e in objects._list(prefix))
    finally:
        objects.close()


def _replace(store: AppStore, app_id: str, table: str, name: str = "") -> dict[str, Any]:
    body = package_bytes({table: ORDERS}, attributes={"id": app_id, "name": name or table})
    return _import(store, body, mode=ImportMode.AUTOREPLACE)


def test_commit_puts_a_version_and_a_pointer_a_second_node_serves(
    node: Node, weed: SeaweedFS, url: str
) -> None:
    a, b = node(), node()
    app_id = _import(a, qvd_bytes("Orders", ORDERS), name="Sales")["id"]
    keys = _keys(weed, url, "")
    assert f"{POINTERS}{app_id}" in keys
    (version,) = {k.split("/")[3] for k in keys if k.startswith(f"{APPS}{app_id}/v/")}
    assert f"{APPS}{app_id}/v/{version}/app.json" in keys
    assert f"{APPS}{app_id}/v/{version}/tables/table.qvd" in keys

    # The second node has never seen it: it lists it and fetches it on first use.
    assert [x["name"] for x in b.list_attributes()] == ["Sales"]
    assert b.app_ids() == [app_id]
    with b.using(app_id) as app:
        assert app.tables == ["Orders"]  # a bare QVD's table keeps its header's name
    # A replacement on the first node is what the second serves next.
    _replace(a, app_id, "Customers", "Renamed")
    assert b.attributes(app_id)["name"] == "Renamed"
    with b.using(app_id) as app:
        assert app.tables == ["Customers"]
    assert [x["name"] for x in b.list_attributes()] == ["Renamed"]


def test_media_changes_commit_new_versions(node: Node) -> None:
    a, b = node(), node()
    app_id = _import(a, package_bytes(media={"logo.png": b"one"}))["id"]
    with a.using(app_id) as app:
        tables = app.tables
    source = a.new_upload_path()
    source.write_bytes(b"two")
    a.put_media(app_id, "img/new.png", source)
    assert b.media_list(app_id, "", ListForm.RECURSIVE) == ["img/new.png", "logo.png"]
    with b.open_media_file(app_id, "img/new.png") as f:
        assert f.read() == b"two"
    b.delete_media(app_id, "logo.png")
    assert a.media_list(app_id, "", ListForm.RECURSIVE) == ["img/new.png"]
    with a.using(app_id) as app:  # the tables came along to each new version
        assert app.tables == tables


def test_sixteen_writers_from_one_version_one_wins(node: Node, weed: SeaweedFS, url: str) -> None:
    first = node()
    app_id = _replace(first, "race-app", "Orders")["id"]
    nodes = [node() for _ in range(16)]
    leases = []
    for store in nodes:  # every node caches the same version
        leases.append(store.lease(app_id))
    barrier = threading.Barrier(16)
    results: list[str] = []

    def reload(store: AppStore, lease: Any) -> None:
        barrier.wait()
        try:
            store.commit_reload(app_id, lease.app, f"// node {id(store)}", [])
            results.append(f"won // node {id(store)}")
        except VersionConflict:
            results.append("409")

    threads = [
        threading.Thread(target=reload, args=(s, x)) for s, x in zip(nodes, leases, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for lease in leases:
        lease.release()
    assert results.count("409") == 15
    (won,) = [r for r in results if r.startswith("won")]
    # The winner's version is intact and served; the losers left no version behind.
    assert node().script(app_id)[0] == won.removeprefix("won ")
    versions = {k.split("/")[3] for k in _keys(weed, url, f"{APPS}{app_id}/v/")}
    assert len(versions) == 2  # the first import's and the winner's


def test_a_stale_node_gets_a_conflict_and_changes_nothing(node: Node) -> None:
    a, b = node(), node()
    app_id = _replace(a, "stale-app", "Orders")["id"]
    with b.lease(app_id) as app_b:
        _replace(a, app_id, "Customers")
        with pytest.raises(VersionConflict):
            b.commit_reload(app_id, app_b, "// stale", [])
    assert b.script(app_id)[0] == ""  # b serves a's replacement afterwards
    with b.using(app_id) as app:
        assert app.tables == ["Customers"]


def test_a_new_app_with_a_taken_id_conflicts(node: Node) -> None:
    a, b = node(), node()
    _replace(a, "taken", "Orders")
    objects = b.shared.objects if b.shared else None
    assert objects is not None
    with pytest.raises(VersionConflict):
        objects.swap_pointer("taken", "v-other", {"id": "taken"}, None)


def test_delete_removes_pointer_and_files_everywhere(node: Node, weed: SeaweedFS, url: str) -> None:
    a, b = node(), node()
    app_id = _import(a, package_bytes())["id"]
    with b.using(app_id):
        pass
    a.delete(app_id)
    assert _keys(weed, url, "") == []
    with pytest.raises(AppNotFound):
        b.attributes(app_id)
    assert b.list_attributes() == []
    assert not (b.data_dir / "apps" / app_id).exists()  # the cached copy went too
    with pytest.raises(AppNotFound):
        a.delete(app_id)


def test_janitor_removes_versions_no_pointer_names(node: Node, weed: SeaweedFS, url: str) -> None:
    a = node()
    app_id = _replace(a, "janitor-app", "Orders")["id"]
    _replace(a, app_id, "Customers")
    _replace(a, app_id, "Items")

    def versions() -> set[str]:
        return {k.split("/")[3] for k in _keys(weed, url, f"{APPS}{app_id}/v/")}

    assert len(versions()) == 3
    assert a.collect_garbage(3600) == []  # all younger than the grace period
    removed = a.collect_garbage(0)
    assert len(removed) == 2
    (current,) = versions()
    assert (a.data_dir / "apps" / app_id / current).is_dir()
    b = node()
    with b.using(app_id) as app:
        assert app.tables == ["Items"]


def test_janitor_without_botocore_warns_once_and_still_removes_versions(
    node: Node, weed: SeaweedFS, url: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    a = node()
    app_id = _replace(a, "janitor-no-boto", "Orders")["id"]
    _replace(a, app_id, "Customers")
    monkeypatch.setitem(sys.modules, "botocore", None)  # not installed: import fails
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    monkeypatch.setitem(sys.modules, "botocore.config", None)
    with caplog.at_level("WARNING", logger="assoc.server.store"):
        assert len(a.collect_garbage(0)) == 1
        assert a.collect_garbage(0) == []
    warnings = [r.getMessage() for r in caplog.records if "botocore" in r.getMessage()]
    assert len(warnings) == 1
    assert "assoc[s3]" in warnings[0]


def test_store_down_cached_apps_serve_reads_writes_get_503(tmp_path: Path, aws_env: None) -> None:
    weed = start_seaweedfs(tmp_path / "own-seaweedfs")
    try:
        settings = Settings(app_store=weed.url(), s3_endpoint=weed.endpoint)
        with TestClient(create_app(settings, tmp_path / "data")) as client:
            body = qvd_bytes("Orders", ORDERS)
            app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
            other = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
            assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
            before = client.get("/metrics").text
            weed.stop()
            # Cached: still served.
            metadata = client.get(f"/v1/apps/{app_id}/data/metadata")
            assert metadata.status_code == 200
            assert [t["name"] for t in metadata.json()["tables"]] == ["Orders"]
            assert client.get(f"/v1/apps/{other}").status_code == 200
            # Writes and apps not cached: 503 with the JSON error body.
            for response in (
                client.post("/v1/apps/import", content=body),
                client.delete(f"/v1/apps/{app_id}"),
                client.get("/v1/apps"),
                client.get("/v1/apps/not-cached-anywhere/data/metadata"),
            ):
                assert response.status_code == 503, response.text
                (error,) = response.json()["errors"]
                assert error["code"] == "StoreUnavailable"
                assert error["status"] == "503"
            # Nothing changed: the app is still there and whole.
            assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
            # /metrics counts the failed store requests by operation.
            after = client.get("/metrics").text
            for op in ("put", "delete", "list", "get"):
                failed = "assoc_store_request_errors_total"
                assert metric(after, failed, op=op) > metric(before, failed, op=op), op
    finally:
        weed.stop()


def test_http_service_on_the_store_lists_the_store(
    tmp_path: Path, weed: SeaweedFS, url: str
) -> None:
    settings = Settings(app_store=url, s3_endpoint=weed.endpoint, efe_mode=1)
    with (
        TestClient(create_app(settings, tmp_path / "one")) as one,
        TestClient(create_app(settings, tmp_path / "two")) as two,
    ):
        body = qvd_bytes("Orders", ORDERS)
        created = one.post("/v1/apps/import?name=First", content=body)
        assert created.status_code == 200
        app_id = created.json()["attributes"]["id"]
        assert [a["attributes"]["name"] for a in two.get("/v1/apps").json()] == ["First"]
        metadata = two.get(f"/v1/apps/{app_id}/data/metadata").json()
        assert [t["name"] for t in metadata["tables"]] == ["Orders"]
        package = package_bytes({"Customers": CUSTOMERS}, attributes={"id": app_id})
        replaced = two.post("/v1/apps/import?mode=AUTOREPLACE", content=package)
        assert replaced.status_code == 200
        metadata = one.get(f"/v1/apps/{app_id}/data/metadata").json()
        assert [t["name"] for t in metadata["tables"]] == ["Customers"]
        assert two.delete(f"/v1/apps/{app_id}").status_code == 200
        assert one.get(f"/v1/apps/{app_id}").status_code == 404
        assert one.get("/v1/apps").json() == []


def test_metrics_count_and_time_store_requests(tmp_path: Path, weed: SeaweedFS, url: str) -> None:
    settings = Settings(app_store=url, s3_endpoint=weed.endpoint)
    with TestClient(create_app(settings, tmp_path / "one")) as client:
        start = client.get("/metrics").text
        for op in ("get", "put", "copy", "list", "delete"):  # every operation, from the start
            assert metric(start, "assoc_store_request_errors_total", op=op) == 0
        body = qvd_bytes("Orders", ORDERS)
        app_id = client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
        assert client.get("/v1/apps").status_code == 200
        assert client.delete(f"/v1/apps/{app_id}").status_code == 200
        end = client.get("/metrics").text
    for op in ("put", "list", "delete"):
        requests = "assoc_store_requests_total"
        moved = metric(end, requests, op=op) - metric(start, requests, op=op)
        assert moved >= 1, op
        histogram = "assoc_store_request_duration_seconds"
        assert metric(end, histogram + "_count", op=op) == metric(end, requests, op=op)
        assert metric(end, histogram + "_bucket", op=op, le="+Inf") == metric(end, requests, op=op)
        assert metric(end, histogram + "_sum", op=op) > metric(start, histogram + "_sum", op=op)
        assert metric(end, "assoc_store_request_errors_total", op=op) == 0
    # A service without a store has no store figures.
    with TestClient(create_app(Settings(), tmp_path / "local")) as local:
        assert "assoc_store_requests" not in local.get("/metrics").text


def test_start_up_refuses_an_unreachable_store(tmp_path: Path, aws_env: None) -> None:
    settings = Settings(app_store="s3://assoc/x", s3_endpoint="http://127.0.0.1:9")
    with pytest.raises(Error, match="unavailable"):
        create_app(settings, tmp_path)


class _CarelessS3(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that stores nothing and ignores conditions: every PUT answers 200."""

    puts: ClassVar[list[tuple[str, str | None]]] = []

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.puts.append((self.path, self.headers.get("If-None-Match")))
        self.send_response(200)
        self.send_header("ETag", f'"{uuid.uuid4().hex}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_start_up_refuses_a_store_that_ignores_conditional_writes(
    tmp_path: Path, aws_env: None
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CarelessS3)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        settings = Settings(app_store="s3://assoc/x", s3_endpoint=endpoint)
        with pytest.raises(Error, match="does not honour conditional writes"):
            create_app(settings, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    # Two PUTs of one probe key, the second one conditional: the store answered 200 to it.
    (first, _), (second, condition) = _CarelessS3.puts
    assert first == second
    assert "/probes/" in first
    assert condition == "*"


def test_settings_check_the_store_url() -> None:
    with pytest.raises(Error, match=r"AppStore.*s3://bucket"):
        Settings.from_sources(["AppStore=http://bucket/x"])
    with pytest.raises(Error, match=r"S3Endpoint.*http"):
        Settings.from_sources(["AppStore=s3://b", "S3Endpoint=127.0.0.1:9000"])
    assert Settings.from_sources(["AppStore=s3://b/p/q"]).app_store == "s3://b/p/q"


def test_without_the_extra_the_error_names_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['obstore'] = None\n"
        "from assoc.server import create_app\n"
        "from assoc.server.settings import Settings\n"
        "try:\n"
        "    create_app(Settings(app_store='s3://b/p'), sys.argv[1])\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env
    )
    assert "assoc[s3]" in out.stdout, out.stderr
