"""N engines behind HAProxy on one object store, all real processes on loopback: SeaweedFS,
three `assoc serve` nodes and HAProxy with deploy/haproxy/assoc.cfg."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from appfiles import CUSTOMERS, ORDERS, ServerProcess, needs_qvd_reader, package_bytes, qvd_bytes
from seaweed import SeaweedFS, free_ports, s3_env, start_seaweedfs

pytest.importorskip("obstore", reason="the S3 client is the extra assoc[s3]")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qix"))
from qixclient import QixClient

pytestmark = needs_qvd_reader
CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy" / "assoc.cfg"


@dataclass
class Cluster:
    weed: SeaweedFS
    nodes: list[ServerProcess]
    proxy: str

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.proxy, timeout=30)


def haproxy_config(port: int, nodes: list[str]) -> str:
    """deploy/haproxy/assoc.cfg with its listening port and its servers replaced."""
    text = CONFIG.read_text()
    text = text.replace("bind 127.0.0.1:9076", f"bind 127.0.0.1:{port}")
    text = re.sub(r"(?m)^    server node\d .*\n", "", text)
    servers = "".join(f"    server node{i + 1} {n}\n" for i, n in enumerate(nodes))
    return text.replace("    default-server check inter 2s fall 2 rise 2\n", "").replace(
        "    http-check expect status 200\n",
        "    http-check expect status 200\n    default-server check inter 500ms fall 1 rise 1\n"
        + servers,
    )


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        pytest.skip("no haproxy on PATH (apt-get install -y haproxy)")
    for name, value in s3_env().items():
        monkeypatch.setenv(name, value)
    weed = start_seaweedfs(tmp_path / "seaweedfs")
    url = weed.url()
    nodes: list[ServerProcess] = []
    proxy = None
    try:
        for i in range(3):
            settings = (f"AppStore={url}", f"S3Endpoint={weed.endpoint}", "EFEMode=1")
            nodes.append(ServerProcess(tmp_path / f"node{i}", *settings).start())
        (port,) = free_ports(1)
        config = tmp_path / "haproxy.cfg"
        config.write_text(haproxy_config(port, [n.base_url.split("//")[1] for n in nodes]))
        with open(tmp_path / "haproxy.log", "wb") as log:
            proxy = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=log, stderr=log)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proxy.poll() is not None:
                pytest.fail("haproxy exited: " + (tmp_path / "haproxy.log").read_text())
            try:
                if httpx.get(base + "/health", timeout=1).is_success:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield Cluster(weed, nodes, base)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(10)
        for node in nodes:
            node.stop()
        weed.stop()


def _tables(client: httpx.Client, app_id: str) -> list[str]:
    response = client.get(f"/v1/apps/{app_id}/data/metadata")
    assert response.status_code == 200, response.text
    return [t["name"] for t in response.json()["tables"]]


def test_import_through_haproxy_is_served_by_every_node(cluster: Cluster) -> None:
    with cluster.client() as proxy:
        created = proxy.post("/v1/apps/import?name=Orders", content=qvd_bytes("Orders", ORDERS))
        assert created.status_code == 200, created.text
        app_id = created.json()["attributes"]["id"]
        assert _tables(proxy, app_id) == ["Orders"]
        for node in cluster.nodes:
            with node.client() as direct:
                assert _tables(direct, app_id) == ["Orders"]
                assert [a["attributes"]["id"] for a in direct.get("/v1/apps").json()] == [app_id]

        # A replacement through the proxy is what every node serves next.
        package = package_bytes({"Customers": CUSTOMERS}, attributes={"id": app_id})
        replaced = proxy.post("/v1/apps/import?mode=AUTOREPLACE", content=package)
        assert replaced.status_code == 200, replaced.text
        for node in cluster.nodes:
            with node.client() as direct:
                assert _tables(direct, app_id) == ["Customers"]

        # QIX through the proxy: the WebSocket upgrade passes, the app opens.
        ws = cluster.proxy.replace("http://", "ws://") + f"/app/{app_id}"
        with QixClient(ws) as qix:
            opened = qix.call("OpenDoc", {"qDocName": app_id})
            assert opened["result"]["qReturn"]["qGenericId"] == app_id

        # A node killed: its apps are served by another node within seconds.
        cluster.nodes[0].kill()
        cluster.nodes[1].kill()
        deadline = time.monotonic() + 5
        while True:
            response = proxy.get(f"/v1/apps/{app_id}/data/metadata")
            if response.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert response.status_code == 200, response.text
        assert _tables(proxy, app_id) == ["Customers"]
