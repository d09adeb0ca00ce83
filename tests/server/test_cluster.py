"""N engines behind HAProxy on one object store, all real processes on loopback: SeaweedFS,
three `assoc serve` nodes and HAProxy with deploy/haproxy/assoc.cfg."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from appfiles import CUSTOMERS, ORDERS, needs_qvd_reader, package_bytes, qvd_bytes, serve_env
from s3cluster import Cluster, ClusterUnavailable, start_cluster
from seaweed import SeaweedFS, s3_env, weed_binary

pytest.importorskip("obstore", reason="the S3 client is the extra assoc[s3]")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "qix"))
from qixclient import QixClient

pytestmark = needs_qvd_reader


@pytest.fixture
def cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_weed: SeaweedFS
) -> Iterator[Cluster]:
    for name, value in s3_env().items():  # restored after the test
        monkeypatch.setenv(name, value)
    try:
        started = start_cluster(tmp_path, 3, "EFEMode=1", weed=shared_weed)
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield started
    finally:
        started.stop()


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


def test_stress_short_run_loses_nothing_when_nodes_die(tmp_path: Path) -> None:
    """stress/cluster.py, two trials: a node killed and restarted in each while clients write
    through HAProxy; nothing acknowledged is lost, nothing is half-visible, the apps are served
    again within 5 s, the QIX client re-opens its app when its node died, and one janitor
    pass leaves nothing the kills left in the store."""
    if shutil.which("haproxy") is None or weed_binary() is None:
        pytest.skip("needs haproxy and SeaweedFS's weed")
    script = Path(__file__).resolve().parents[2] / "stress" / "cluster.py"
    args = ["--trials", "2", "--apps", "4", "--seed", "3", "--max-seconds", "40"]
    args += ["--keep", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(script), *args],
        env=serve_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "trials: 2" in out, out
    assert "acknowledged writes lost: 0" in out, out
    assert "half-visible versions: 0" in out, out
    assert "stale reads (an acknowledged write not yet served): 0" in out, out
    assert "within 5 s: 2/2" in out, out
    assert "after one janitor pass: 0" in out, out
