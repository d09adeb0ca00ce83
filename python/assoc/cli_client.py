"""The `assoc` commands' client of a running service: REST calls with progress and one-line
errors taken from the service's JSON error body."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, urlsplit

import httpx

from assoc.cli_console import CommandFailed, progress_step

DEFAULT_SERVER = "http://127.0.0.1:9076"
TOKEN_VARIABLE = "ASSOC_TOKEN"
_CHUNK = 1 << 20
_TIMEOUT = httpx.Timeout(30.0, read=None)


def add_server_option(parser: argparse.ArgumentParser, default: str | None) -> None:
    """The --server option (ASSOC_TOKEN in the environment is sent as a bearer token)."""
    parser.add_argument(
        "--server",
        metavar="URL",
        default=default,
        help=f"the assoc service (default {default})" if default else "the service holding APPID",
    )


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """FILE|APPID and --server: a file for the embedded engine, or an app id on a service."""
    parser.add_argument("source", metavar="FILE|APPID")
    add_server_option(parser, None)


@contextlib.contextmanager
def replacing(target: Path, prefix: str) -> Iterator[BinaryIO]:
    """A new file beside `target` that replaces it only when the block succeeds."""
    folder = target.parent
    if not folder.is_dir():
        raise CommandFailed(f"folder {str(folder)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".zip", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def error_detail(response: httpx.Response) -> str:
    """The service's error as one line: `title: detail (status)`, or the status line."""
    try:
        first = response.json()["errors"][0]
        title, detail = first.get("title", ""), first.get("detail", "")
        text = f"{title}: {detail}" if title and detail else title or detail
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        text = response.reason_phrase
    return f"{text} (HTTP {response.status_code})"


class ServiceClient:
    """Calls one assoc service at `url`, with the bearer token from ASSOC_TOKEN when set."""

    def __init__(self, url: str, token: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise CommandFailed(f"--server {url!r} is not an http:// or https:// URL")
        self.url = url.rstrip("/")
        token = token if token is not None else os.environ.get(TOKEN_VARIABLE, "")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=_TIMEOUT)

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def websocket_url(self, app_id: str) -> str:
        """The QIX WebSocket URL for an app on this service."""
        scheme = "wss" if self.url.startswith("https") else "ws"
        return f"{scheme}://{self.url.split('://', 1)[1]}/app/{quote(app_id, safe='')}"

    @property
    def token(self) -> str:
        """The bearer token sent, or ''."""
        header: str = self._http.headers.get("Authorization", "")
        return header.removeprefix("Bearer ")

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CommandFailed(f"cannot reach {self.url}: {exc}") from None
        if response.status_code >= 400:
            raise CommandFailed(error_detail(response))
        return response

    def get_json(self, path: str) -> Any:
        """The JSON a GET answers."""
        return self._send("GET", path).json()

    def app(self, app_id: str) -> dict[str, Any]:
        """The NxApp of one app."""
        result: dict[str, Any] = self.get_json(f"/v1/apps/{quote(app_id, safe='')}")
        return result

    def metadata(self, app_id: str) -> dict[str, Any]:
        """The app's DataModelMetadata."""
        result: dict[str, Any] = self.get_json(f"/v1/apps/{quote(app_id, safe='')}/data/metadata")
        return result

    def import_file(self, path: Path, name: str | None, mode: str | None) -> dict[str, Any]:
        """Uploads a package, QVD or CSV file as a new app (progress on a terminal).

        The file goes as the multipart `filedata` part, so the service learns its name."""
        params = {k: v for k, v in (("name", name), ("mode", mode)) if v}
        size = path.stat().st_size
        boundary = uuid.uuid4().hex
        filename = "".join("_" if c in '\\"\r\n' else c for c in path.name)
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="filedata"; '
            f'filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        with path.open("rb") as f, progress_step(f"uploading {path.name}", size) as step:

            def body() -> Iterator[bytes]:
                yield head
                while chunk := f.read(_CHUNK):
                    step.advance(len(chunk))
                    yield chunk
                yield tail

            headers = {
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(len(head) + size + len(tail)),
            }
            response = self._send(
                "POST", "/v1/apps/import", params=params, content=body(), headers=headers
            )
        result: dict[str, Any] = response.json()
        return result

    def export(self, app_id: str, out: BinaryIO) -> int:
        """Writes the app's package to `out` (progress on a terminal); returns its bytes."""
        path = f"/v1/apps/{quote(app_id, safe='')}/export"
        try:
            with self._http.stream("GET", path) as response:
                if response.status_code >= 400:
                    response.read()
                    raise CommandFailed(error_detail(response))
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                written = 0
                with progress_step(f"exporting {app_id}", total) as step:
                    for chunk in response.iter_bytes(_CHUNK):
                        out.write(chunk)
                        written += len(chunk)
                        step.advance(len(chunk))
        except httpx.HTTPError as exc:
            raise CommandFailed(f"cannot reach {self.url}: {exc}") from None
        return written
