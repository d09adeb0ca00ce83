"""The HTTP service through TestClient: every endpoint, its errors, versions and tokens."""

from __future__ import annotations

import io
import json
import re
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import assoc
from appfiles import (
    CUSTOMERS,
    ORDERS,
    needs_csv_reader,
    needs_qvd_reader,
    needs_qvd_writer,
    package_bytes,
    qvd_bytes,
)
from assoc.server import create_app
from assoc.server.settings import Settings

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
MakeClient = Callable[..., TestClient]
SECRET = "a-shared-secret-of-at-least-32-bytes!"
OTHER_SECRET = "a-different-secret-of-32-bytes-or-more"


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    """Builds a started TestClient for settings given as keyword arguments."""
    clients: list[TestClient] = []

    def make(raise_server_exceptions: bool = True, **settings: Any) -> TestClient:
        # One data dir per service: a data dir admits one store at a time.
        data_dir = tmp_path / ("data" if not clients else f"data-{len(clients)}")
        app = create_app(Settings().replace(**settings), data_dir)
        client = TestClient(app, raise_server_exceptions=raise_server_exceptions)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    """The service with default settings."""
    return make_client()


def _error(response: Any, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    (error,) = response.json()["errors"]
    assert error["status"] == str(status)
    assert error["code"]
    assert error["title"]
    return dict(error)


def _import(client: TestClient, data: bytes, **params: str) -> dict[str, Any]:
    response = client.post("/v1/apps/import", content=data, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


# ---- health ---------------------------------------------------------------------------


def test_health(client: TestClient) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"


def test_lame_duck_health_answers_429_while_saturated(make_client: MakeClient) -> None:
    # Thresholds of 0 % make any use of RAM count as saturation.
    saturated = {"cpu_overload_threshold": 0.0, "ram_overload_threshold": 0.0}
    lame = make_client(enable_lame_duck_health_check=1, **saturated)
    _error(lame.get("/health"), 429)
    assert lame.get("/healthcheck").json()["saturated"] is True
    plain = make_client(**saturated)
    assert plain.get("/health").status_code == 200
    relaxed = make_client(
        enable_lame_duck_health_check=1, cpu_overload_threshold=100.0, ram_overload_threshold=100.0
    )
    assert relaxed.get("/health").status_code == 200
    assert relaxed.get("/healthcheck").json()["saturated"] is False


def test_healthcheck_reports_real_figures(client: TestClient) -> None:
    status = client.get("/healthcheck").json()
    assert status["version"] == assoc.__version__
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}\+0000", status["started"])
    assert status["mem"]["committed"] > 1  # this process holds more than a megabyte
    assert status["mem"]["free"] > 0
    assert 0.0 <= status["cpu"]["total"] <= 100.0
    assert set(status["apps"]) == {
        "active_docs",
        "loaded_docs",
        "in_memory_docs",
        "calls",
        "selections",
    }
    counters = assoc.engine_counters()
    assert status["cache"] == counters["cache"]
    assert status["session"] == counters["session"]
    assert status["users"] == counters["users"]
    assert status["saturated"] in (True, False)


@needs_qvd_reader
def test_healthcheck_counters_and_docs_move_with_work(client: TestClient) -> None:
    before = client.get("/healthcheck").json()
    app_id = _import(client, package_bytes())["attributes"]["id"]
    after = client.get("/healthcheck").json()
    assert after["apps"]["calls"] > before["apps"]["calls"]
    assert app_id in after["apps"]["loaded_docs"]
    assert app_id in after["apps"]["in_memory_docs"]
    assert app_id not in before["apps"]["loaded_docs"]
    assert after["mem"]["allocated"] >= after["mem"]["committed"] > 1


# ---- import ---------------------------------------------------------------------------


@needs_qvd_reader
def test_import_new_answers_nxapp(client: TestClient) -> None:
    body = _import(
        client,
        package_bytes(attributes={"id": "ignored", "name": "Sales", "description": "d"}),
    )
    attrs = body["attributes"]
    assert attrs["id"] != "ignored"
    assert attrs["name"] == "Sales"
    assert attrs["description"] == "d"
    for key in ("createdDate", "modifiedDate", "lastReloadTime"):
        assert ISO_UTC.fullmatch(attrs[key]), attrs[key]
    assert attrs["published"] is False
    assert attrs["publishTime"] == ""
    assert attrs["custom"] == {}
    assert {"read", "update", "delete", "export", "approve"} <= set(body["privileges"])
    assert {"resource": "sheet", "canCreate": True} in body["create"]
    assert client.get(f"/v1/apps/{attrs['id']}").json() == body
    assert [a["attributes"]["id"] for a in client.get("/v1/apps").json()] == [attrs["id"]]


@needs_qvd_reader
def test_import_multipart_and_names(client: TestClient) -> None:
    response = client.post(
        "/v1/apps/import", files={"filedata": ("Orders 2024.qvd", qvd_bytes("Orders", ORDERS))}
    )
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["name"] == "Orders 2024"
    named = _import(client, qvd_bytes("Orders", ORDERS), name="Given")
    assert named["attributes"]["name"] == "Given"
    missing = client.post("/v1/apps/import", files={"other": ("a.qvd", b"x")})
    assert _error(missing, 400)["detail"] == "the multipart body has no 'filedata' part"


@needs_csv_reader
def test_import_csv_names_its_table(client: TestClient) -> None:
    csv_app = _import(client, b"x;y\n1;2\n", name="FromCsv")
    metadata = client.get(f"/v1/apps/{csv_app['attributes']['id']}/data/metadata").json()
    assert [t["name"] for t in metadata["tables"]] == ["FromCsv"]
    unnamed = _import(client, b"x,y\n1,2\n")
    assert unnamed["attributes"]["name"] == "Table1"


@needs_qvd_reader
def test_metadata_is_the_apps_metadata(client: TestClient) -> None:
    data = package_bytes({"Orders": ORDERS, "Customers": CUSTOMERS})
    app_id = _import(client, data)["attributes"]["id"]
    response = client.get(f"/v1/apps/{app_id}/data/metadata")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    expected = assoc.App.from_package(data).metadata()
    got = response.json()
    assert got["fields"] == expected["fields"]
    assert got["tables"] == expected["tables"]
    assert got["static_byte_size"] == expected["static_byte_size"]
    assert client.get(f"/v1/apps/{app_id}/data/metadata").content == response.content


@needs_qvd_reader
@pytest.mark.parametrize("mode", ["new", "NEW", "New"])
def test_mode_is_case_insensitive(client: TestClient, mode: str) -> None:
    assert _import(client, package_bytes(), mode=mode)["attributes"]["id"]


@needs_qvd_reader
def test_bad_mode_and_autoreplace_without_efe_store_nothing(client: TestClient) -> None:
    data = package_bytes(attributes={"id": "app-1"})
    assert "NEW" in _error(client.post("/v1/apps/import?mode=REPLACE", content=data), 400)["detail"]
    detail = _error(client.post("/v1/apps/import?mode=autoreplace", content=data), 400)["detail"]
    assert "EFEMode" in detail
    assert client.get("/v1/apps").json() == []
    _error(client.get("/v1/apps/app-1"), 404)


@needs_qvd_reader
def test_autoreplace_in_efe_mode(make_client: MakeClient) -> None:
    client = make_client(efe_mode=1)
    objects = [
        {"id": "gone", "type": "sheet", "approved": True},
        {"id": "kept", "type": "sheet", "approved": False},
    ]
    first = _import(
        client,
        package_bytes({"Orders": ORDERS}, attributes={"id": "app-1", "name": "A"}, objects=objects),
        mode="AUTOREPLACE",
    )
    assert first["attributes"]["id"] == "app-1"
    second = _import(
        client,
        package_bytes({"Customers": CUSTOMERS}, attributes={"id": "app-1", "name": "B"}),
        mode="autoreplace",
    )
    assert second["attributes"]["id"] == "app-1"
    assert second["attributes"]["name"] == "B"
    tables = client.get("/v1/apps/app-1/data/metadata").json()["tables"]
    assert [t["name"] for t in tables] == ["Customers"]
    assert len(client.get("/v1/apps").json()) == 1


def test_bodies_that_are_not_app_files(client: TestClient) -> None:
    assert _error(client.post("/v1/apps/import", content=b"PK\x03\x04garbage"), 422)["code"]
    _error(client.post("/v1/apps/import", content=b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0d"), 415)
    _error(client.post("/v1/apps/import", content=b""), 422)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("app.json", "{}")
        archive.writestr("media/zeros", bytes(32 << 20))
    assert "bomb" in _error(client.post("/v1/apps/import", content=bomb.getvalue()), 422)["detail"]
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../../escape.txt", "x")
    _error(client.post("/v1/apps/import", content=evil.getvalue()), 422)
    # A QVD whose header is damaged is answered as a bad QVD, not read as CSV text.
    damaged = b'<?xml version="1.0"?>\r\n<Thou></Thou>\r\n</QvdTableHeader>\r\n\x00'
    detail = _error(client.post("/v1/apps/import", content=damaged), 422)["detail"]
    assert "QVD" in detail
    assert client.get("/v1/apps").json() == []


def test_body_over_max_upload_bytes_is_413(make_client: MakeClient, tmp_path: Path) -> None:
    client = make_client(max_upload_bytes=1000)
    detail = _error(client.post("/v1/apps/import", content=b"x" * 1001), 413)["detail"]
    assert "1000" in detail

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming
        for _ in range(100):
            yield b"y" * 100

    _error(client.post("/v1/apps/import", content=chunks()), 413)
    files = {"filedata": ("a.csv", b"a\n" + b"1\n" * 1000)}
    _error(client.post("/v1/apps/import", files=files), 413)
    assert list((tmp_path / "data" / "tmp").iterdir()) == []
    assert client.get("/v1/apps").json() == []


# ---- delete, export, unknown apps -----------------------------------------------------


@needs_qvd_reader
def test_delete(client: TestClient) -> None:
    app_id = _import(client, package_bytes())["attributes"]["id"]
    response = client.delete(f"/v1/apps/{app_id}")
    assert response.status_code == 200
    _error(client.delete(f"/v1/apps/{app_id}"), 404)
    _error(client.get(f"/v1/apps/{app_id}/data/metadata"), 404)
    assert client.get("/v1/apps").json() == []


def test_unknown_apps_are_404(client: TestClient) -> None:
    for path in (
        "",
        "/data/metadata",
        "/export",
        "/media/thumbnail",
        "/media/list/",
        "/media/files/a",
    ):
        assert _error(client.get(f"/v1/apps/nope{path}"), 404)["code"] == "AppNotFound"
    _error(client.delete("/v1/apps/nope"), 404)
    _error(client.put("/v1/apps/nope/media/files/a.png", content=b"x"), 404)


@needs_qvd_writer
def test_export_imports_back_to_the_same_app(make_client: MakeClient) -> None:
    client = make_client(efe_mode=1)
    objects = [{"id": "s", "type": "sheet", "approved": True, "properties": {"title": "S"}}]
    source = package_bytes(
        attributes={"name": "Sales", "thumbnail": "logo.png", "custom": {"k": 1}},
        objects=objects,
        media={"logo.png": b"PNG", "docs/": b""},
    )
    attrs = _import(client, source)["attributes"]
    response = client.get(f"/v1/apps/{attrs['id']}/export")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    package = response.content
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        manifest = json.loads(archive.read("app.json"))
        assert manifest["attributes"] == {**attrs, "tags": []}
        assert manifest["objects"] == objects
        assert archive.read("media/logo.png") == b"PNG"
    client.delete(f"/v1/apps/{attrs['id']}")
    back = _import(client, package, mode="AUTOREPLACE")["attributes"]
    assert back["id"] == attrs["id"]
    assert back["createdDate"] == attrs["createdDate"]
    original = assoc.App.from_package(source).metadata()
    restored = client.get(f"/v1/apps/{back['id']}/data/metadata").json()
    assert restored["fields"] == original["fields"]
    assert restored["tables"] == original["tables"]
    assert client.get(f"/v1/apps/{back['id']}/media/thumbnail").content == b"PNG"
    assert client.get(f"/v1/apps/{back['id']}/media/list/?show=a").json() == ["docs/", "logo.png"]


def test_a_package_without_tables_is_an_app_without_data(client: TestClient) -> None:
    source = package_bytes({}, attributes={"name": "Empty"})
    attrs = _import(client, source)["attributes"]
    assert attrs["name"] == "Empty"
    metadata = client.get(f"/v1/apps/{attrs['id']}/data/metadata")
    assert metadata.status_code == 200
    assert metadata.json()["tables"] == []
    assert [f for f in metadata.json()["fields"] if not f["is_system"]] == []
    exported = client.get(f"/v1/apps/{attrs['id']}/export")
    assert exported.status_code == 200
    with zipfile.ZipFile(io.BytesIO(exported.content)) as archive:
        assert json.loads(archive.read("app.json"))["tables"] == []
    again = _import(client, exported.content)["attributes"]
    assert client.get(f"/v1/apps/{again['id']}/data/metadata").json() == metadata.json()


# ---- errors ---------------------------------------------------------------------------


def test_unknown_route_and_method(client: TestClient) -> None:
    assert _error(client.get("/v2/nothing"), 404)["code"] == "NotFound"
    response = client.post("/health")
    assert _error(response, 405)["code"] == "MethodNotAllowed"
    assert "GET" in response.headers["allow"]


@needs_qvd_reader
def test_internal_errors_do_not_leak(
    make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(raise_server_exceptions=False)
    app_id = _import(client, package_bytes())["attributes"]["id"]
    from assoc.server.store import AppStore

    def broken(self: AppStore, app_id: str) -> bytes:
        raise RuntimeError("secret internal path /var/lib/x")

    monkeypatch.setattr(AppStore, "cached_metadata_json", lambda self, app_id: None)
    monkeypatch.setattr(AppStore, "metadata_json", broken)
    error = _error(client.get(f"/v1/apps/{app_id}/data/metadata"), 500)
    assert "secret" not in json.dumps(error)
    assert error["code"] == "InternalError"


# ---- versions, description ------------------------------------------------------------


@needs_qvd_reader
def test_api_version_12_171_0(make_client: MakeClient) -> None:
    client = make_client(api_version="12.171.0")
    response = client.post("/v1/apps/import/Old%20Name", content=qvd_bytes("Orders", ORDERS))
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"appId", "attributes", "meta"}
    assert set(body["attributes"]) == {
        "name",
        "description",
        "thumbnail",
        "tags",
        "lastReloadTime",
        "createdDate",
    }
    assert body["attributes"]["name"] == "Old Name"
    app_id = body["appId"]
    assert _import(client, qvd_bytes("Orders", ORDERS), name="Q")["attributes"]["name"] == "Q"
    assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
    for method, path in [
        ("DELETE", f"/v1/apps/{app_id}"),
        ("GET", f"/v1/apps/{app_id}/media/files/a.png"),
        ("GET", f"/v1/apps/{app_id}/media/list/"),
        ("GET", f"/v1/apps/{app_id}/media/thumbnail"),
    ]:
        _error(client.request(method, path), 404)
    paths = client.get("/openapi.json").json()["paths"]
    assert set(paths) == {
        "/health",
        "/healthcheck",
        "/v1/apps/import",
        "/v1/apps/import/{name}",
        "/v1/apps/{appId}/data/metadata",
        "/openapi.json",
    }


@pytest.mark.parametrize("version", ["12.207.0", "12.171.0"])
def test_openapi_describes_exactly_the_routes(make_client: MakeClient, version: str) -> None:
    client = make_client(api_version=version)
    doc = client.get("/openapi.json").json()
    assert doc["swagger"] == "2.0"
    assert doc["info"]["version"] == version
    from assoc.server.openapi import route_operations

    described = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert described == set(route_operations(client.app.routes))  # type: ignore[attr-defined]
    for ops in doc["paths"].values():
        for op in ops.values():
            for response in op["responses"].values():
                ref = response.get("schema", {}).get("$ref", "")
                assert ref == "" or ref.split("/")[-1] in doc["definitions"]
    assert doc["paths"]["/health"]["get"]["x-qlik-stability"] == "locked"


# ---- tokens ---------------------------------------------------------------------------


def _token(claims: dict[str, Any], key: Any = SECRET, alg: str = "HS256") -> str:
    import jwt

    return str(jwt.encode(claims, key, algorithm=alg))


def test_tokens_signed_only(make_client: MakeClient) -> None:
    client = make_client(validate_json_web_tokens="2", json_web_token_secret=SECRET)
    assert client.get("/health").status_code == 200  # probes stay open
    response = client.get("/v1/apps")
    _error(response, 401)
    assert response.headers["www-authenticate"].startswith("Bearer")
    good = {"Authorization": f"Bearer {_token({'sub': 'ann'})}"}
    assert client.get("/v1/apps", headers=good).status_code == 200
    forged = {"Authorization": f"Bearer {_token({'sub': 'ann'}, key=OTHER_SECRET)}"}
    _error(client.get("/v1/apps", headers=forged), 401)
    unsigned = {"Authorization": f"Bearer {_token({'sub': 'ann'}, key=None, alg='none')}"}
    _error(client.get("/v1/apps", headers=unsigned), 401)
    expired = {"Authorization": f"Bearer {_token({'sub': 'a', 'exp': int(time.time()) - 60})}"}
    _error(client.get("/v1/apps", headers=expired), 401)
    _error(client.get("/v1/apps", headers={"Authorization": "Basic abc"}), 401)


def test_tokens_signed_or_unsigned(make_client: MakeClient) -> None:
    client = make_client(validate_json_web_tokens="1", json_web_token_secret=SECRET)
    unsigned = {"Authorization": f"Bearer {_token({'sub': 'ann'}, key=None, alg='none')}"}
    assert client.get("/v1/apps", headers=unsigned).status_code == 200
    forged = {"Authorization": f"Bearer {_token({'sub': 'ann'}, key=OTHER_SECRET)}"}
    _error(client.get("/v1/apps", headers=forged), 401)
    _error(client.get("/v1/apps"), 401)


@needs_qvd_reader
def test_tokens_with_a_public_key_file(make_client: MakeClient, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp_path / "public.pem"
    key_file.write_bytes(
        private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    client = make_client(validate_json_web_tokens="2", json_web_token_path=str(key_file))
    headers = {"Authorization": f"Bearer {_token({'sub': 'bob'}, private, 'RS256')}"}
    response = client.post("/v1/apps/import", content=package_bytes(), headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["attributes"]["owner"] == "bob"
    # An HMAC token cannot pass when only a public key is configured.
    hmac = {"Authorization": f"Bearer {_token({'sub': 'bob'})}"}
    _error(client.get("/v1/apps", headers=hmac), 401)


@needs_qvd_reader
def test_concurrent_reads_and_replacements_all_succeed(make_client: MakeClient) -> None:
    client = make_client(efe_mode=1)
    versions = {
        "Orders": package_bytes({"Orders": ORDERS}, attributes={"id": "busy"}, media={"a": b"1"}),
        "Customers": package_bytes(
            {"Customers": CUSTOMERS}, attributes={"id": "busy"}, media={"a": b"2"}
        ),
    }
    _import(client, versions["Orders"], mode="AUTOREPLACE")
    failures: list[str] = []
    seen_tables: set[str] = set()

    def replace(n: int) -> None:
        for i in range(4):
            table = "Orders" if (n + i) % 2 else "Customers"
            response = client.post("/v1/apps/import?mode=AUTOREPLACE", content=versions[table])
            if response.status_code != 200:
                failures.append(response.text)

    def read() -> None:
        for _ in range(12):
            response = client.get("/v1/apps/busy/data/metadata")
            media = client.get("/v1/apps/busy/media/files/a")
            if response.status_code != 200 or media.status_code != 200:
                failures.append(response.text + media.text)
                continue
            data_tables = [t["name"] for t in response.json()["tables"]]
            # Every answer is one whole version, never a mix.
            if data_tables not in (["Orders"], ["Customers"]) or media.content not in (b"1", b"2"):
                failures.append(f"{data_tables} {media.content!r}")
            seen_tables.update(data_tables)

    threads = [threading.Thread(target=replace, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert seen_tables  # the readers did read
    assert [a["attributes"]["id"] for a in client.get("/v1/apps").json()] == ["busy"]


@needs_qvd_reader
def test_concurrent_deletes_of_different_apps_all_succeed(client: TestClient) -> None:
    ids = [_import(client, qvd_bytes("Orders", ORDERS))["attributes"]["id"] for _ in range(6)]
    statuses: list[int] = []

    def delete(app_id: str) -> None:
        statuses.append(client.delete(f"/v1/apps/{app_id}").status_code)

    threads = [threading.Thread(target=delete, args=(i,)) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * len(ids)
    assert client.get("/v1/apps").json() == []


# ---- packages with synthetic keys, calls, error statuses ------------------------------

SHARED_FIELDS = {
    "Sales": {"Region": ["N", "S", "N"], "Year": [2024, 2024, 2025], "Amount": [1, 2, 3]},
    "Budget": {"Region": ["N", "S"], "Year": [2024, 2025], "Plan": [5, 6]},
}


@needs_qvd_reader
def test_import_of_a_package_whose_tables_share_two_fields(client: TestClient) -> None:
    data = package_bytes(SHARED_FIELDS)
    app_id = _import(client, data)["attributes"]["id"]
    metadata = client.get(f"/v1/apps/{app_id}/data/metadata").json()
    assert [t["name"] for t in metadata["tables"]] == ["Sales", "Budget", "$Syn 1 Table"]
    fields = {f["name"]: f for f in metadata["fields"]}
    assert fields["Region"]["src_tables"] == ["$Syn 1 Table"]
    assert {"$key", "$syn"} <= set(fields["$Syn 1"]["tags"])
    assert metadata["fields"] == assoc.App.from_package(data).metadata()["fields"]


@needs_qvd_reader
def test_calls_count_every_client_request_cached_or_not(client: TestClient) -> None:
    app_id = _import(client, package_bytes())["attributes"]["id"]

    def calls() -> int:
        return int(client.get("/healthcheck").json()["apps"]["calls"])

    start = calls()
    for _ in range(3):  # served from the serialised metadata after the first
        assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
    assert calls() == start + 3
    client.get("/health")
    client.get("/healthcheck")
    assert calls() == start + 3  # probes are not calls
    client.get(f"/v1/apps/{app_id}/media/list/")
    client.get("/v1/apps/nope/data/metadata")  # a request that fails is still a call
    assert calls() == start + 5


@needs_qvd_reader
def test_failures_that_are_not_about_the_file_have_their_own_status(
    make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(efe_mode=1, raise_server_exceptions=False)
    # AUTOREPLACE of a body that cannot name the app it replaces.
    error = _error(
        client.post("/v1/apps/import?mode=AUTOREPLACE", content=qvd_bytes("Orders", ORDERS)), 422
    )
    assert error["code"] == "AppIdRequired"
    error = _error(client.post("/v1/apps/import?mode=AUTOREPLACE", content=package_bytes()), 422)
    assert error["code"] == "AppIdRequired"
    # A valid file is never InvalidAppFile; an engine error elsewhere is the service's fault.
    app_id = _import(client, package_bytes())["attributes"]["id"]
    from assoc.server.store import AppStore

    def failing(self: AppStore, app_id: str) -> dict[str, Any]:
        raise assoc.Error("an engine failure that has nothing to do with any file")

    monkeypatch.setattr(AppStore, "attributes", failing)
    error = _error(client.get(f"/v1/apps/{app_id}"), 500)
    assert error["code"] == "InternalError"
    assert "engine failure" not in error["detail"]


@needs_qvd_reader
@pytest.mark.parametrize("version", ["12.207.0", "12.171.0"])
def test_nxapp_answers_match_the_described_attributes(
    make_client: MakeClient, version: str
) -> None:
    client = make_client(api_version=version)
    body = client.post("/v1/apps/import", content=package_bytes()).json()
    described = client.get("/openapi.json").json()["definitions"]["NxAttributes"]["properties"]
    assert list(body["attributes"]) == list(described)
    kinds = {"string": str, "boolean": bool, "object": dict, "array": list}
    for key, value in body["attributes"].items():
        assert isinstance(value, kinds[described[key].get("type", "object")]), key
