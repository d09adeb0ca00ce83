"""WebSocket upgrades against a real `assoc serve` with ValidateJsonWebTokens on: every path goes
through the token check, and a path that is no QIX URL form is refused before any QIX traffic."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator

import jwt
import pytest
from qixclient import QixClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from appfiles import ServerProcess, package_bytes
from assoc.server import create_app
from conftest import QixServer

pytestmark = pytest.mark.server

SECRET = "a-secret-that-is-long-enough-for-sha256"


def _rest_paths() -> list[str]:
    """Every path a REST route owns, its parameters filled in."""
    paths = []
    for route in create_app().routes:
        path = getattr(route, "path", "")
        if route.__class__.__name__ == "WebSocketRoute" or not path:
            continue
        path = path.replace("{appId}", "some-app").replace("{path:path}", "a/b.png")
        paths.append(path or "/")
    return paths


REST_PATHS = _rest_paths()
QIX_PATHS = [
    "/",
    "/app",
    "/app/",
    "/app/engineData",
    "/app/{app}",
    "/app/{app}/identity/x/ttl/60",
    "/doc/prefix/app/{app}",
]
_rng = random.Random(19)
RANDOM_PATHS = [
    "/" + "/".join("".join(_rng.choices(string.ascii_letters, k=5)) for _ in range(n))
    for n in (1, 2, 3)
] + ["/app/x/y", "/app/x/ttl/soon", "/apps/x", "/v1/apps/x/app/y/z"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    """A server validating HS256 tokens, and an app imported with a token."""
    process = ServerProcess(
        tmp_path_factory.mktemp("tokens") / "data",
        "ValidateJsonWebTokens=2",
        f"JsonWebTokenSecret={SECRET}",
    ).start()
    try:
        with process.client() as rest:
            answer = rest.post(
                "/v1/apps/import",
                content=package_bytes({"T": {"X": [1, 2, 3]}}),
                headers=_auth(),
            )
            assert answer.status_code == 200, answer.text
            yield process, answer.json()["attributes"]["id"]
    finally:
        process.stop()


def _auth() -> dict[str, str]:
    token = jwt.encode({"sub": "ann"}, SECRET, algorithm="HS256")
    return {"Authorization": f"Bearer {token}"}


def _refusal(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    """The status and JSON error of an upgrade the server refuses (fails if it is accepted)."""
    with (
        pytest.raises(InvalidStatus) as refused,
        connect(url, additional_headers=headers, open_timeout=10) as ws,
    ):
        pytest.fail(f"upgrade accepted; first message {ws.recv(timeout=5)!r}")
    response = refused.value.response
    assert response.headers["content-type"] == "application/json"
    error = json.loads(response.body)["errors"][0]
    assert error["status"] == str(response.status_code)
    return response.status_code, error


@pytest.mark.parametrize("path", REST_PATHS + RANDOM_PATHS + QIX_PATHS)
def test_every_upgrade_without_a_token_is_refused(
    server: tuple[ServerProcess, str], path: str
) -> None:
    process, app_id = server
    url = "ws" + process.base_url.removeprefix("http") + path.format(app=app_id)
    status, error = _refusal(url)
    assert (status, error["code"]) == (401, "Unauthorized")
    # A token in the query is not read: only the Authorization header carries one.
    token = _auth()["Authorization"].removeprefix("Bearer ")
    status, _ = _refusal(f"{url}?token={token}&access_token={token}")
    assert status == 401


@pytest.mark.parametrize("path", REST_PATHS + RANDOM_PATHS)
def test_a_path_that_is_not_qix_is_refused_even_with_a_token(
    server: tuple[ServerProcess, str], path: str
) -> None:
    process, _ = server
    status, error = _refusal("ws" + process.base_url.removeprefix("http") + path, _auth())
    assert (status, error["code"]) == (404, "NotFound")
    assert "not a QIX path" in str(error["detail"])


@pytest.mark.parametrize("path", QIX_PATHS)
def test_qix_paths_with_a_token_serve_qix(server: tuple[ServerProcess, str], path: str) -> None:
    process, app_id = server
    url = "ws" + process.base_url.removeprefix("http") + path.format(app=app_id)
    with QixClient(url, _auth()) as qix:
        assert qix.connected["params"] == {"qSessionState": "SESSION_CREATED"}
        assert qix.open_doc(app_id) == 1


def test_probes_still_answer_http_without_a_token(server: tuple[ServerProcess, str]) -> None:
    process, _ = server
    with process.client() as rest:
        for path in ("/health", "/healthcheck", "/metrics"):
            assert rest.get(path).status_code == 200, path
        assert rest.get("/v1/apps").status_code == 401


def test_a_path_that_is_not_qix_is_refused_without_tokens(qix_server: QixServer) -> None:
    for path in ("/health", "/metrics", "/anything/else", "/app/x/y"):
        status, error = _refusal(qix_server.ws_base + path)
        assert (status, error["code"]) == (404, "NotFound"), path
