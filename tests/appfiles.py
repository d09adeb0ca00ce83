"""Files the service imports, made for tests: QVD (written by pyqvd), CSV and app packages."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

import assoc

# httpx makes a TLS context, reading the CA bundle into it, for every client it is not given
# one: ~50 ms a client. The tests speak plain HTTP; one context made once serves them all.
TLS = ssl.create_default_context()


def _reader_available() -> bool:
    try:
        assoc.App.from_qvd(b"")
    except AttributeError:
        return False
    except assoc.Error:
        return True
    return True


def _csv_reader_available() -> bool:
    try:
        assoc.App.from_csv(b"a\n1\n")
    except AttributeError:
        return False
    return True


def _writer_available() -> bool:
    app = assoc.App.from_tables({"T": {"F": [1]}})
    try:
        app._impl.write_qvd("T")
    except AttributeError:
        return False
    return True


HAS_QVD_READER = _reader_available()
HAS_QVD_WRITER = _writer_available()
HAS_CSV_READER = _csv_reader_available()
needs_qvd_reader = pytest.mark.skipif(not HAS_QVD_READER, reason="needs the QVD reader")
needs_csv_reader = pytest.mark.skipif(not HAS_CSV_READER, reason="needs the CSV reader")
needs_qvd_writer = pytest.mark.skipif(
    not (HAS_QVD_READER and HAS_QVD_WRITER), reason="needs the QVD reader and writer"
)


def qvd_bytes(table: str, columns: Mapping[str, Sequence[Any]]) -> bytes:
    """A QVD file holding one table, written by pyqvd (an independent QVD writer)."""
    from pyqvd import QvdTable
    from pyqvd.io.writer import QvdFileWriterOptions

    names = list(columns)
    rows = [list(row) for row in zip(*(columns[n] for n in names), strict=True)]
    out = io.BytesIO()
    QvdTable.from_dict({"columns": names, "data": rows}).to_stream(
        out, QvdFileWriterOptions(table_name=table)
    )
    return out.getvalue()


def split(data: bytes) -> tuple[str, bytes]:
    """A QVD file's XML header and the bytes after its NUL."""
    nul = data.index(b"\0")
    return data[:nul].decode(), data[nul + 1 :]


def with_header(data: bytes, old: str, new: str, count: int = 1) -> bytes:
    """The QVD file with `old` replaced by `new` in its header (the body unchanged)."""
    header, body = split(data)
    assert header.count(old) >= count, old
    return header.replace(old, new, count).encode() + b"\0" + body


ORDERS = {"OrderId": [1, 2, 3, 4], "Customer": ["a", "b", "a", "c"], "Amount": [10, 20, 5, 7]}
CUSTOMERS = {"Customer": ["a", "b", "c"], "Name": ["Ann", "Bob", "Cid"]}


def package_bytes(
    tables: Mapping[str, Mapping[str, Sequence[Any]]] | None = None,
    *,
    attributes: dict[str, Any] | None = None,
    objects: list[dict[str, Any]] | None = None,
    media: Mapping[str, bytes] | None = None,
    manifest: dict[str, Any] | None = None,
) -> bytes:
    """An app package: app.json, one QVD per table under tables/, media under media/."""
    tables = {"Orders": ORDERS, "Customers": CUSTOMERS} if tables is None else tables
    doc = manifest or {
        "format": "assoc-app",
        "formatVersion": 1,
        "attributes": attributes or {},
        "tables": [{"name": name, "file": f"tables/{name}.qvd"} for name in tables],
        "objects": objects or [],
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("app.json", json.dumps(doc))
        for name, columns in tables.items():
            archive.writestr(f"tables/{name}.qvd", qvd_bytes(name, columns))
        for path, data in (media or {}).items():
            if path.endswith("/"):
                archive.writestr(zipfile.ZipInfo(f"media/{path}"), b"")
            else:
                archive.writestr(f"media/{path}", data)
    return out.getvalue()


def zip_with(entries: Mapping[str | zipfile.ZipInfo, bytes]) -> bytes:
    """A ZIP archive of raw entries (names are not checked: for hostile inputs)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


# ---- a real `assoc serve` process ------------------------------------------------------


def serve_env() -> dict[str, str]:
    """The environment for a child `assoc serve`: ours, with the source tree importable."""
    env = dict(os.environ)
    # The folder this test run imports assoc from: the source tree, or site-packages.
    package_parent = str(Path(assoc.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    return env


LISTENING = re.compile(r"assoc serve: listening on (http://\S+)")


class ServerProcess:
    """`python -m assoc.cli serve --port 0` on loopback, for one test: the port is the one the
    service reports it bound."""

    def __init__(self, data_dir: Path, *settings: str, port: int = 0) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.port = port  # 0: a free one, reported by the service (a restart picks another)
        self.base_url = f"http://127.0.0.1:{port}" if port else ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"serve-{data_dir.name}-{time.monotonic_ns()}.log"

    def _bound_url(self) -> str:
        match = LISTENING.search(self.read_log())
        return match.group(1) if match else ""

    def start(self, timeout: float = 20.0) -> ServerProcess:
        """Starts the process, reads the address it reports and waits until /health answers."""
        return self.launch().ready(timeout)

    def launch(self) -> ServerProcess:
        """Starts the process without waiting for it (`ready` waits): servers launched one
        after the other then import and start up at the same time."""
        args = [sys.executable, "-m", "assoc.cli", "serve", "--host", "127.0.0.1"]
        args += ["--port", str(self.port), "--data-dir", str(self.data_dir)]
        for setting in self.settings:
            args += ["-S", setting]
        # A file, not a pipe: a pipe nobody reads would block the server once full.
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, env=serve_env(), stdout=subprocess.DEVNULL, stderr=log
            )
        return self

    def ready(self, timeout: float = 20.0) -> ServerProcess:
        """Waits until the launched process answers /health; stops it when it does not."""
        assert self.proc is not None, "launch() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"assoc serve exited with {self.proc.returncode}: {self.read_log()}"
                )
            self.base_url = self.base_url or self._bound_url()
            try:
                health = self.base_url and httpx.get(
                    self.base_url + "/health", timeout=1, verify=TLS
                )
                if health and health.is_success:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("assoc serve did not answer /health in time")

    def client(self) -> httpx.Client:
        """An HTTP client for this server."""
        return httpx.Client(base_url=self.base_url, timeout=30, verify=TLS)

    def kill(self) -> None:
        """SIGKILL: no shutdown work at all."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> int | None:
        """SIGTERM and wait; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def read_log(self) -> str:
        """What the server wrote to stderr so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stopped_gracefully(self) -> bool:
        """SIGTERM, then True when the service finished its shutdown (lifespan included)."""
        code = self.stop()
        # uvicorn re-raises the signal it handled once shutdown is done: -15 is a clean exit.
        return code in (0, -15) and "Application shutdown complete" in self.read_log()


def run_node(script: Path, *args: str) -> Any:
    """Runs one of the tests' node programs with the pinned npm packages (the `node_packages`
    fixture installs them); the JSON it printed."""
    node = shutil.which("node")
    assert node is not None, "node is not installed"
    tests_dir = Path(__file__).resolve().parent
    run = subprocess.run(
        [node, str(script), *args], cwd=tests_dir, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


# The application part of the section access tests' scripts (their access tables differ):
# Sales by REGION, and Prices linked by Product.
SECURED_SALES = """
Section Application;
Sales:
LOAD * INLINE [
REGION, Product, AMOUNT
EAST, A, 10
EAST, B, 20
WEST, C, 5
NORTH, D, 7
];
Prices:
LOAD * INLINE [
Product, PRICE
A, 1
B, 2
C, 3
D, 4
];
"""
