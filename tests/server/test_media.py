"""Media over HTTP: files, listings, thumbnail, writes, and paths that try to get out."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from appfiles import needs_qvd_reader, package_bytes
from assoc.server import create_app
from assoc.server.settings import Settings

pytestmark = needs_qvd_reader

MEDIA = {
    "logo.png": b"\x89PNG-logo",
    "img/a.png": b"A",
    "img/deep/b.png": b"B",
    "empty/": b"",
    "img/none/": b"",
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    """A client and the id of an app with media and a thumbnail."""
    app = create_app(Settings(max_upload_bytes=10_000), tmp_path / "data")
    with TestClient(app) as client:
        data = package_bytes(media=MEDIA, attributes={"thumbnail": "media/logo.png"})
        response = client.post("/v1/apps/import", content=data)
        assert response.status_code == 200, response.text
        yield client, response.json()["attributes"]["id"]


def test_files_are_octet_streams(served: tuple[TestClient, str]) -> None:
    client, app_id = served
    response = client.get(f"/v1/apps/{app_id}/media/files/img/deep/b.png")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == b"B"
    for missing in ("nope.png", "img", "img/", ""):
        assert client.get(f"/v1/apps/{app_id}/media/files/{missing}").status_code == 404


def test_thumbnail(served: tuple[TestClient, str], tmp_path: Path) -> None:
    client, app_id = served
    response = client.get(f"/v1/apps/{app_id}/media/thumbnail")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == MEDIA["logo.png"]
    bare = client.post("/v1/apps/import", content=package_bytes()).json()["attributes"]["id"]
    assert client.get(f"/v1/apps/{bare}/media/thumbnail").status_code == 404


@pytest.mark.parametrize(
    ("path", "show", "expected"),
    [
        ("", None, ["empty/", "logo.png"]),
        ("", "bogus", ["empty/", "logo.png"]),
        ("", "r", ["img/a.png", "img/deep/b.png", "logo.png"]),
        ("", "recursive", ["img/a.png", "img/deep/b.png", "logo.png"]),
        ("", "a", ["empty/", "img/a.png", "img/deep/b.png", "img/none/", "logo.png"]),
        ("", "all", ["empty/", "img/a.png", "img/deep/b.png", "img/none/", "logo.png"]),
        ("img", None, ["img/a.png", "img/none/"]),
        ("img", "r", ["img/a.png", "img/deep/b.png"]),
        ("img/", "a", ["img/a.png", "img/deep/b.png", "img/none/"]),
        ("empty", None, []),
    ],
)
def test_list_forms(
    served: tuple[TestClient, str], path: str, show: str | None, expected: list[str]
) -> None:
    client, app_id = served
    params = {"show": show} if show else {}
    response = client.get(f"/v1/apps/{app_id}/media/list/{path}", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json() == expected


def test_list_root_without_slash_and_unknown_folder(served: tuple[TestClient, str]) -> None:
    client, app_id = served
    assert client.get(f"/v1/apps/{app_id}/media/list").json() == ["empty/", "logo.png"]
    response = client.get(f"/v1/apps/{app_id}/media/list/nope")
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "FileNotFound"


@pytest.mark.parametrize(
    "path",
    [
        "%2e%2e/%2e%2e/CURRENT",
        "img/%2e%2e/%2e%2e/app.json",
        "..%2f..%2fapp.json",
        "%2E%2E%2F%2E%2E%2Fapp.json",
        "%2Fetc%2Fpasswd",
        "/etc/passwd",
        "..%5c..%5capp.json",
        "img%00.png",
    ],
)
def test_paths_cannot_escape_the_media_folder(served: tuple[TestClient, str], path: str) -> None:
    client, app_id = served
    for kind in ("files", "list"):
        response = client.get(f"/v1/apps/{app_id}/media/{kind}/{path}")
        assert response.status_code in (400, 404), (kind, path, response.status_code)
        assert response.json()["errors"]
    response = client.put(f"/v1/apps/{app_id}/media/files/{path}", content=b"evil")
    assert response.status_code in (400, 404)
    response = client.delete(f"/v1/apps/{app_id}/media/files/{path}")
    assert response.status_code in (400, 404)


def test_symlinks_in_media_are_not_followed(served: tuple[TestClient, str], tmp_path: Path) -> None:
    client, app_id = served
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (media_root,) = (tmp_path / "data" / "apps" / app_id).glob("v-*/media")
    os.symlink(secret, media_root / "link.txt")
    os.symlink(tmp_path, media_root / "outside")
    assert client.get(f"/v1/apps/{app_id}/media/files/link.txt").status_code == 404
    assert client.get(f"/v1/apps/{app_id}/media/files/outside/secret.txt").status_code == 404
    assert client.get(f"/v1/apps/{app_id}/media/list/outside").status_code == 404
    listed = client.get(f"/v1/apps/{app_id}/media/list/", params={"show": "a"}).json()
    assert not any("link" in name or "outside" in name for name in listed)


def test_put_and_delete_media(served: tuple[TestClient, str]) -> None:
    client, app_id = served
    url = f"/v1/apps/{app_id}/media/files"
    assert client.put(f"{url}/new/pic.png", content=b"NEW").status_code == 200
    assert client.get(f"{url}/new/pic.png").content == b"NEW"
    assert client.put(f"{url}/logo.png", content=b"LOGO2").status_code == 200
    assert client.get(f"/v1/apps/{app_id}/media/thumbnail").content == b"LOGO2"
    assert client.put(f"{url}/logo.png/inside", content=b"x").status_code == 400
    assert client.put(f"{url}/big.bin", content=b"x" * 10_001).status_code == 413
    assert client.get(f"{url}/big.bin").status_code == 404
    assert client.delete(f"{url}/img").status_code == 200
    assert client.get(f"{url}/img/a.png").status_code == 404
    assert client.delete(f"{url}/img").status_code == 404
    assert client.delete(f"{url}/logo.png").status_code == 200
    assert client.get(f"/v1/apps/{app_id}/media/thumbnail").status_code == 404
    listed = client.get(f"/v1/apps/{app_id}/media/list/", params={"show": "a"}).json()
    assert listed == ["empty/", "new/pic.png"]


def test_large_uploads_arrive_whole_and_in_order(tmp_path: Path) -> None:
    """Bodies of many chunks are written while more arrive; the stored bytes are the sent ones."""
    payload = os.urandom(5 << 20)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(payload), 48 << 10):
            yield payload[start : start + (48 << 10)]

    app = create_app(Settings(max_upload_bytes=8 << 20), tmp_path / "data")
    with TestClient(app) as client:
        response = client.post("/v1/apps/import", content=package_bytes(media={}))
        assert response.status_code == 200, response.text
        url = f"/v1/apps/{response.json()['attributes']['id']}/media/files"
        assert client.put(f"{url}/raw.bin", content=chunks()).status_code == 200
        assert client.get(f"{url}/raw.bin").content == payload
        files = {"filedata": ("part.bin", payload, "application/octet-stream")}
        assert client.put(f"{url}/part.bin", files=files).status_code == 200
        assert client.get(f"{url}/part.bin").content == payload
        too_big = (b"x" * (1 << 20) for _ in range(9))
        assert client.put(f"{url}/big.bin", content=too_big).status_code == 413
        assert client.get(f"{url}/big.bin").status_code == 404
        assert not list((tmp_path / "data" / "tmp").glob("upload-*"))
