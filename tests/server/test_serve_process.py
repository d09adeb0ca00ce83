"""A real `assoc serve` process on a loopback port: restarts, kill -9, shutdown, start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from appfiles import (
    CUSTOMERS,
    ORDERS,
    ServerProcess,
    needs_qvd_reader,
    package_bytes,
    qvd_bytes,
    serve_env,
)

pytestmark = pytest.mark.server


@needs_qvd_reader
def test_restart_keeps_apps_and_loads_them_on_first_use(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        with server.client() as client:
            ids = []
            for tables in ({"Orders": ORDERS}, {"Customers": CUSTOMERS}):
                response = client.post("/v1/apps/import", content=package_bytes(tables))
                assert response.status_code == 200, response.text
                ids.append(response.json()["attributes"]["id"])
            before = {i: client.get(f"/v1/apps/{i}/data/metadata").json() for i in ids}
        assert server.stopped_gracefully()
    finally:
        server.stop()

    server = ServerProcess(tmp_path / "data").start()
    try:
        with server.client() as client:
            assert sorted(a["attributes"]["id"] for a in client.get("/v1/apps").json()) == sorted(
                ids
            )
            assert client.get("/healthcheck").json()["apps"]["loaded_docs"] == []
            for app_id in ids:
                after = client.get(f"/v1/apps/{app_id}/data/metadata").json()
                assert after["tables"] == before[app_id]["tables"]
                assert after["fields"] == before[app_id]["fields"]
            assert sorted(client.get("/healthcheck").json()["apps"]["loaded_docs"]) == sorted(ids)
    finally:
        server.stop()


@needs_qvd_reader
def test_kill_9_right_after_an_import_keeps_it(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "EFEMode=1").start()
    try:
        with server.client() as client:
            answered = []
            for n in range(3):
                response = client.post(
                    "/v1/apps/import",
                    content=qvd_bytes("Orders", ORDERS),
                    params={"name": f"App {n}"},
                )
                assert response.status_code == 200
                answered.append(response.json()["attributes"]["id"])
            response = client.post(
                "/v1/apps/import",
                content=package_bytes(attributes={"id": "fixed"}, media={"a.png": b"A"}),
                params={"mode": "AUTOREPLACE"},
            )
            assert response.status_code == 200
            answered.append("fixed")
        server.kill()  # no shutdown work at all, right after the answers
    finally:
        server.stop()

    server = ServerProcess(tmp_path / "data").start()
    try:
        with server.client() as client:
            listed = {a["attributes"]["id"]: a for a in client.get("/v1/apps").json()}
            assert set(listed) == set(answered)
            assert listed[answered[1]]["attributes"]["name"] == "App 1"
            for app_id in answered:
                assert client.get(f"/v1/apps/{app_id}/data/metadata").status_code == 200
            assert client.get("/v1/apps/fixed/media/files/a.png").content == b"A"
    finally:
        server.stop()
    assert list((tmp_path / "data" / "tmp").iterdir()) == []


def test_settings_come_from_the_environment_and_bad_ones_stop_start_up(tmp_path: Path) -> None:
    env = serve_env()
    env["ASSOC_EFEMode"] = "maybe"
    args = [sys.executable, "-m", "assoc.cli", "serve", "--data-dir", str(tmp_path), "--port", "0"]
    done = subprocess.run(args, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert b"ASSOC_EFEMode='maybe': must be 0 or 1" in done.stderr

    server = ServerProcess(tmp_path / "data", "ApiVersion=12.171.0").start()
    try:
        with server.client() as client:
            assert client.get("/openapi.json").json()["info"]["version"] == "12.171.0"
            assert client.delete("/v1/apps/x").status_code == 404
        # A second service on the same data dir would clean away the first one's uploads.
        args = [sys.executable, "-m", "assoc.cli", "serve", "--data-dir", str(tmp_path / "data")]
        second = subprocess.run(
            [*args, "--port", "0"], env=serve_env(), capture_output=True, timeout=60, check=False
        )
        assert second.returncode == 2
        assert b"in use by another assoc process" in second.stderr
    finally:
        assert server.stopped_gracefully()
