"""Hostile or unlucky requests get the JSON error body with a 4xx/507 status, never a 500, and
leave the store as it was."""

from __future__ import annotations

import errno
import io
import json
import os
import random
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import assoc
from appfiles import ORDERS, needs_qvd_reader, package_bytes, qvd_bytes
from assoc.server import create_app
from assoc.server.settings import Settings
from assoc.server.store.versions import VersionDirs
from assoc.server.uploads import _SpoolFile

pytestmark = needs_qvd_reader
REGRESSIONS = Path(__file__).resolve().parents[2] / "fuzz" / "regressions"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A client of a service with a 1 MB memory budget."""
    kept = assoc.memory_blocks()["kept_limit"]  # the budget lowers it process-wide
    app = create_app(Settings(memory_budget_mb=1), tmp_path / "data")
    try:
        with TestClient(app, raise_server_exceptions=False) as c:
            yield c
    finally:
        assoc.set_memory_blocks_kept(kept)


def assert_error(response: object, status: int, code: str | None = None) -> dict[str, str]:
    """The response is the JSON error body with `status` (and `code`); returns its error."""
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    error = response.json()["errors"][0]  # type: ignore[attr-defined]
    assert error["status"] == str(status)
    if code is not None:
        assert error["code"] == code
    assert error["detail"]
    return error


def manifest_bytes(text: str) -> bytes:
    """A package whose app.json is `text`, with one valid table."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("app.json", text)
        archive.writestr("tables/Orders.qvd", qvd_bytes("Orders", ORDERS))
    return out.getvalue()


MANIFEST_HEAD = (
    '{"format": "assoc-app", "formatVersion": 1, '
    '"tables": [{"name": "Orders", "file": "tables/Orders.qvd"}]'
)


@pytest.mark.parametrize(
    ("manifest", "words"),
    [
        (
            MANIFEST_HEAD + ', "objects": [{"id": "n", "properties": {"x": ' + "9" * 5000 + "}}]}",
            "digit",
        ),
        (
            MANIFEST_HEAD
            + ', "objects": [{"id": "d", "properties": '
            + "[" * 1000
            + "]" * 1000
            + "}]}",
            "deep",
        ),
        (MANIFEST_HEAD + ', "attributes": {"name": "\\ud800"}}', "surrogate"),
        (MANIFEST_HEAD + ', "objects": [{"id": "s", "properties": {"\\udfff": 1}}]}', "surrogate"),
    ],
    ids=["5000-digit-number", "nested-1000-deep", "lone-surrogate-attribute", "lone-surrogate-key"],
)
def test_manifests_that_json_cannot_take(client: TestClient, manifest: str, words: str) -> None:
    error = assert_error(client.post("/v1/apps/import", content=manifest_bytes(manifest)), 422)
    assert words in error["detail"] or "JSON" in error["detail"]
    assert client.get("/v1/apps").json() == []


def with_version_needed(data: bytes, version: int) -> bytes:
    """The package with every central directory entry asking for `version` to extract."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        struct.pack_into("<H", out, at + 6, version)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_zip_needing_a_newer_unzip(client: TestClient) -> None:
    body = with_version_needed(package_bytes(), 64)  # 6.4: above what zipfile reads
    error = assert_error(client.post("/v1/apps/import", content=body), 422, "InvalidAppFile")
    assert "version" in error["detail"]


def test_zip_name_flagged_utf8_that_is_not(client: TestClient) -> None:
    body = (REGRESSIONS / "package" / "zip-name-not-utf8.zip").read_bytes()
    assert_error(client.post("/v1/apps/import", content=body), 422, "InvalidAppFile")


def test_trailing_bytes_after_a_qvd_are_refused(client: TestClient) -> None:
    qvd = qvd_bytes("Orders", ORDERS)
    assert client.post("/v1/apps/import", content=qvd).status_code == 200
    error = assert_error(client.post("/v1/apps/import", content=qvd + b"\0" * 4096), 422)
    assert "4096 bytes follow" in error["detail"]


def test_tables_over_the_memory_one_import_may_use(client: TestClient) -> None:
    rng = random.Random(7)
    # 2 MB of digits, compressed ~2:1 (far inside the ratio guard), over the 1 MB budget.
    csv = "N\n" + "\n".join(str(rng.getrandbits(60)) for _ in range(110_000)) + "\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "app.json",
            json.dumps(
                {
                    "format": "assoc-app",
                    "formatVersion": 1,
                    "tables": [{"name": "T", "file": "t.csv"}],
                }
            ),
        )
        archive.writestr("t.csv", csv)
    error = assert_error(
        client.post("/v1/apps/import", content=out.getvalue()), 413, "ImportTooLarge"
    )
    assert "one import may load" in error["detail"]
    assert client.get("/v1/apps").json() == []


def test_multipart_boundary_over_256_bytes(client: TestClient) -> None:
    boundary = "b" * 300
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="filedata"; filename="a.csv"\r\n\r\n'
        f"a\n1\n\r\n--{boundary}--\r\n"
    ).encode()
    response = client.post(
        "/v1/apps/import",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={boundary}"},
    )
    assert "boundary" in assert_error(response, 400, "BadRequest")["detail"]


def test_media_path_parts_longer_than_a_file_name(client: TestClient) -> None:
    app_id = client.post("/v1/apps/import", content=package_bytes()).json()["attributes"]["id"]
    for name in ("x" * 256, "é" * 128, "ok/" + "y" * 300 + "/z.png"):
        base = f"/v1/apps/{app_id}/media"
        assert_error(client.get(f"{base}/files/{name}"), 400, "BadMediaPath")
        assert_error(client.put(f"{base}/files/{name}", content=b"data"), 400, "BadMediaPath")
        assert_error(client.delete(f"{base}/files/{name}"), 400, "BadMediaPath")
        assert_error(client.get(f"{base}/list/{name}"), 400, "BadMediaPath")
    # 255 bytes is a valid name
    assert client.put(f"/v1/apps/{app_id}/media/files/{'x' * 255}", content=b"d").status_code == 200


def test_media_names_too_long_in_a_package_are_refused(client: TestClient) -> None:
    body = package_bytes(media={"z" * 300 + ".png": b"x"})
    assert_error(client.post("/v1/apps/import", content=body), 422, "InvalidAppFile")


def _no_space(*args: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("layer", ["upload", "commit", "media"])
def test_no_space_left_is_507_and_changes_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, layer: str
) -> None:
    app_id = client.post("/v1/apps/import", content=package_bytes()).json()["attributes"]["id"]
    before = client.get("/v1/apps").json()
    media_before = client.get(f"/v1/apps/{app_id}/media/list").json()
    if layer == "upload":
        monkeypatch.setattr(_SpoolFile, "_write", _no_space)
    elif layer == "commit":
        monkeypatch.setattr(VersionDirs, "commit", _no_space)
    else:
        monkeypatch.setattr(os, "replace", _no_space)
    imported = client.post("/v1/apps/import", content=package_bytes())
    put = client.put(f"/v1/apps/{app_id}/media/files/new.png", content=b"png")
    monkeypatch.undo()
    if layer == "media":
        assert imported.status_code == 200
        assert_error(put, 507, "InsufficientStorage")
        assert client.get("/v1/apps").json() != before  # the import went through
    else:
        assert_error(imported, 507, "InsufficientStorage")
        assert client.get("/v1/apps").json() == before
        if layer == "upload":
            assert_error(put, 507, "InsufficientStorage")
    if put.status_code == 507:
        assert client.get(f"/v1/apps/{app_id}/media/list").json() == media_before
    assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
    assert client.post("/v1/apps/import", content=package_bytes()).status_code == 200
