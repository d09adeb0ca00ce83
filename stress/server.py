"""A real `assoc serve` process for the stress scripts: start, kill -9, stop."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx

import assoc

# httpx reads the CA bundle into a new TLS context for every client it is not given one (~50 ms);
# the waits below poll plain HTTP, so one context serves them all.
TLS = ssl.create_default_context()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """`python -m assoc.cli serve` on a loopback port with its own data directory."""

    def __init__(self, data_dir: Path, *settings: str, log: Path | None = None) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.log = log or data_dir.parent / "serve.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> Server:
        """Starts the process and waits until /health answers."""
        env = dict(os.environ)
        source = str(Path(assoc.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
        args = [sys.executable, "-m", "assoc.cli", "serve", "--port", str(self.port)]
        args += ["--data-dir", str(self.data_dir)]
        for setting in self.settings:
            args += ["-S", setting]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"assoc serve exited with {self.proc.returncode}; see {self.log}"
                )
            try:
                if httpx.get(self.url + "/health", timeout=1, verify=TLS).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("assoc serve did not answer /health in time")

    def kill(self) -> None:
        """SIGKILL: no shutdown work at all."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not finish."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.kill()

    def rss_mb(self) -> float:
        """The process's resident memory in MB (Linux)."""
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0
