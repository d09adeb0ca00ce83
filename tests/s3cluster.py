"""N engines behind HAProxy on one object store, all real processes on loopback: SeaweedFS,
`assoc serve` nodes on fixed ports (a killed node restarts where HAProxy expects it) and
HAProxy with deploy/haproxy/assoc.cfg. Used by tests/server/test_cluster.py, stress/cluster.py
and benchmarks/compare_store.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from appfiles import TLS, ServerProcess
from seaweed import SeaweedFS, free_ports, s3_env, start_seaweedfs

CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "haproxy" / "assoc.cfg"


def haproxy_config(port: int, nodes: list[str]) -> str:
    """deploy/haproxy/assoc.cfg with its listening port and its servers replaced (checked
    every 500 ms, down after one failed check, so a killed node leaves within a second)."""
    text = CONFIG.read_text()
    text = text.replace("bind 127.0.0.1:9076", f"bind 127.0.0.1:{port}")
    text = re.sub(r"(?m)^    server node\d .*\n", "", text)
    servers = "".join(f"    server node{i + 1} {n}\n" for i, n in enumerate(nodes))
    return text.replace("    default-server check inter 2s fall 2 rise 2\n", "").replace(
        "    http-check expect status 200\n",
        "    http-check expect status 200\n    default-server check inter 500ms fall 1 rise 1\n"
        + servers,
    )


class ClusterUnavailable(Exception):
    """HAProxy or SeaweedFS is missing here."""


@dataclass
class Cluster:
    """SeaweedFS, the nodes and HAProxy; `proxy` is HAProxy's base URL."""

    root: Path
    weed: SeaweedFS
    nodes: list[ServerProcess] = field(default_factory=list)
    proxy: str = ""
    haproxy: subprocess.Popen[bytes] | None = None
    owns_weed: bool = True  # False: SeaweedFS was started by the caller, who stops it

    def client(self) -> httpx.Client:
        """An HTTP client for HAProxy."""
        return httpx.Client(base_url=self.proxy, timeout=30, verify=TLS)

    def restart(self, index: int) -> None:
        """Starts node `index` again (after kill()), on its port, on its data dir."""
        node = self.nodes[index]
        node.stop()
        node.start(timeout=30)

    def stop(self) -> None:
        """Stops HAProxy, the nodes and SeaweedFS."""
        if self.haproxy is not None and self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(10)
        for node in self.nodes:
            node.stop()
        if self.owns_weed:
            self.weed.stop()


def start_cluster(
    root: Path, count: int = 3, *settings: str, weed: SeaweedFS | None = None
) -> Cluster:
    """Starts SeaweedFS (unless given a running `weed`), `count` nodes on one fresh store
    prefix and HAProxy in front; the AWS variables are set in this process's environment (the
    nodes inherit them)."""
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        raise ClusterUnavailable("no haproxy on PATH (apt-get install -y haproxy)")
    os.environ.update(s3_env())
    if weed is None:
        cluster = Cluster(root, start_seaweedfs(root / "seaweedfs"))
    else:
        cluster = Cluster(root, weed, owns_weed=False)
    try:
        url = cluster.weed.url()
        *ports, proxy_port = free_ports(count + 1)
        for i, port in enumerate(ports):
            node_settings = (f"AppStore={url}", f"S3Endpoint={cluster.weed.endpoint}", *settings)
            node = ServerProcess(root / f"node{i}", *node_settings, port=port)
            cluster.nodes.append(node.launch())
        for node in cluster.nodes:
            node.ready(timeout=30)
        config = root / "haproxy.cfg"
        config.write_text(haproxy_config(proxy_port, [f"127.0.0.1:{p}" for p in ports]))
        log_path = root / "haproxy.log"
        with open(log_path, "wb") as log:
            cluster.haproxy = subprocess.Popen(
                [haproxy, "-db", "-f", str(config)], stdout=log, stderr=log
            )
        cluster.proxy = f"http://127.0.0.1:{proxy_port}"
        deadline = time.monotonic() + 20
        while True:
            if cluster.haproxy.poll() is not None:
                raise RuntimeError("haproxy exited: " + log_path.read_text())
            try:
                if httpx.get(cluster.proxy + "/health", timeout=1, verify=TLS).is_success:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("haproxy did not answer /health within 20 s")
            time.sleep(0.1)
        return cluster
    except BaseException:
        cluster.stop()
        raise
