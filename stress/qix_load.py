"""QIX engine load against the small requests: sockets each ask GetLayout of a different
hypercube on a big app while one client probes /health and another deletes small apps; prints
the /health p50/p99, the DELETE latencies and the process's RSS before, during and after.

    python stress/qix_load.py [--rows 2000000] [--sockets 8] [--rounds 2] [-S Name=Value ...]

--rounds: GetLayouts per socket, each under another selection (so none is a result-cache hit).
-S passes a setting to `assoc serve` (e.g. -S MemoryBudgetMB=2000).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
from websockets.sync.client import connect

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak import percentile

    from server import Server
else:
    from .server import Server
    from .soak import percentile

# Dimensions and measure of each socket's cube: from a few hundred rows to the whole app.
CUBES: list[tuple[list[str], str]] = [
    (["Customer"], "Sum(Amount)"),
    (["Product"], "Sum(Amount)"),
    (["Customer", "Region"], "Sum(Qty)"),
    (["Product", "Day"], "Sum(Amount)"),
    (["Id"], "Sum(Amount)"),
    (["Day"], "Avg(Amount)"),
    (["Customer", "Product"], "Sum(Qty)"),
    (["Region", "Day"], "Sum(Qty)"),
]
REGIONS = 50


def csv_body(rows: int, seed: int = 7) -> bytes:
    """A CSV of `rows` rows: a unique id, 100,000 customers, 5,000 products, 50 regions,
    1,000 days, an amount and a quantity."""
    rng = np.random.default_rng(seed)
    columns = [
        np.arange(rows).astype(str),
        np.char.add("c", rng.integers(0, 100_000, rows).astype(str)),
        np.char.add("p", rng.integers(0, 5_000, rows).astype(str)),
        np.char.add("r", (np.arange(rows) % REGIONS).astype(str)),
        np.char.add("d", rng.integers(0, 1_000, rows).astype(str)),
        np.round(rng.random(rows) * 1000, 2).astype(str),
        rng.integers(1, 100, rows).astype(str),
    ]
    lines = ["Id,Customer,Product,Region,Day,Amount,Qty"]
    for start in range(0, rows, 200_000):
        part = [c[start : start + 200_000] for c in columns]
        joined = part[0]
        for column in part[1:]:
            joined = np.char.add(np.char.add(joined, ","), column)
        lines.extend(joined.tolist())
    return ("\n".join(lines) + "\n").encode()


def cube_props(dimensions: list[str], measure: str) -> dict[str, Any]:
    """Session-object properties of a straight cube with a first page of 10 x 20 cells."""
    width = len(dimensions) + 1
    return {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": [d]}} for d in dimensions],
            "qMeasures": [{"qDef": {"qDef": measure}}],
            "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": width, "qHeight": 20}],
        },
    }


class Socket:
    """One QIX socket with numbered requests."""

    def __init__(self, url: str) -> None:
        self._connection = connect(url, max_size=None, open_timeout=30, close_timeout=5)
        self.ws = self._connection.__enter__()
        self.ws.recv(timeout=30)  # OnConnected
        self.next_id = 0

    def call(self, method: str, params: Any, handle: int = -1, timeout: float = 600) -> Any:
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "handle": handle}
        self.ws.send(json.dumps({**request, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=timeout))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


@dataclass
class Figures:
    """What the clients saw while the sockets worked."""

    health_ms: list[float] = field(default_factory=list)
    health_failures: int = 0
    delete_ms: list[float] = field(default_factory=list)
    layout_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def socket_work(url: str, app_id: str, cube: int, rounds: int, figures: Figures) -> None:
    """OpenDoc, one cube, then `rounds` GetLayouts each under another Region selection."""
    try:
        s = Socket(url)
        try:
            doc = s.call("OpenDoc", [app_id])["qReturn"]["qHandle"]
            obj = s.call("CreateSessionObject", [cube_props(*CUBES[cube % len(CUBES)])], doc)
            handle = obj["qReturn"]["qHandle"]
            region = s.call("GetField", ["Region"], doc)["qReturn"]["qHandle"]
            for r in range(rounds):
                if r:
                    s.call("LowLevelSelect", [[(cube * rounds + r) % REGIONS]], region)
                start = time.perf_counter()
                s.call("GetLayout", [], handle)
                with figures.lock:
                    figures.layout_s.append(time.perf_counter() - start)
        finally:
            s.close()
    except Exception as exc:
        with figures.lock:
            figures.errors.append(f"socket {cube}: {type(exc).__name__}: {exc}")


def probe_health(url: str, figures: Figures, stop: threading.Event) -> None:
    """GET /health every 20 ms, each on a new connection as a load balancer's probe (plain
    http.client: an httpx client per probe would add its own set-up to each figure)."""
    address = urlsplit(url)
    while not stop.is_set():
        start = time.perf_counter()
        connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=60)
        try:
            connection.request("GET", "/health")
            ok = connection.getresponse().status == 200
        except OSError:
            ok = False
        finally:
            connection.close()
        elapsed = (time.perf_counter() - start) * 1000
        with figures.lock:
            figures.health_ms.append(elapsed)
            figures.health_failures += not ok
        stop.wait(0.02)


def delete_apps(url: str, ids: list[str], figures: Figures, stop: threading.Event) -> None:
    """DELETEs one small app every 0.5 s."""
    with httpx.Client(base_url=url, timeout=120) as client:
        while ids and not stop.wait(0.5):
            start = time.perf_counter()
            response = client.delete(f"/v1/apps/{ids.pop()}")
            with figures.lock:
                figures.delete_ms.append((time.perf_counter() - start) * 1000)
                if response.status_code != 200:
                    figures.errors.append(f"DELETE: {response.status_code} {response.text}")


def sample_rss(server: Server, figures: Figures, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        figures.rss_mb.append(server.rss_mb())


def metric(url: str, name: str) -> float:
    """One unlabelled value from /metrics."""
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def measure(rows: int, sockets: int, rounds: int, settings: list[str]) -> dict[str, Any]:
    """Runs the load against a new service; its figures."""
    root = Path(tempfile.mkdtemp(prefix="assoc-qixload-"))
    server = Server(root / "data", *settings, log=root / "serve.log").start()
    try:
        with httpx.Client(base_url=server.url, timeout=600) as client:
            response = client.post("/v1/apps/import", content=csv_body(rows))
            response.raise_for_status()
            app_id = response.json()["attributes"]["id"]
            small = []
            for n in range(60):
                body = f"A,B\n{n},x\n".encode()
                small.append(
                    client.post("/v1/apps/import", content=body).json()["attributes"]["id"]
                )
        time.sleep(2)
        ws_url = "ws" + server.url.removeprefix("http") + "/app/"
        before = server.rss_mb()
        idle = Figures()  # the machine's own latency: /health with no engine work
        stop = threading.Event()
        probe = threading.Thread(target=probe_health, args=(server.url, idle, stop))
        probe.start()
        time.sleep(3)
        stop.set()
        probe.join()
        figures = Figures()
        stop = threading.Event()
        helpers = [
            threading.Thread(target=probe_health, args=(server.url, figures, stop)),
            threading.Thread(target=delete_apps, args=(server.url, small, figures, stop)),
            threading.Thread(target=sample_rss, args=(server, figures, stop)),
        ]
        workers = [
            threading.Thread(target=socket_work, args=(ws_url, app_id, i, rounds, figures))
            for i in range(sockets)
        ]
        started = time.perf_counter()
        for thread in helpers + workers:
            thread.start()
        for thread in workers:
            thread.join()
        seconds = time.perf_counter() - started
        stop.set()
        for thread in helpers:
            thread.join()
        time.sleep(3)
        return {
            "seconds": seconds,
            "figures": figures,
            "idle_health_ms": sorted(idle.health_ms),
            "rss_before": before,
            "rss_peak": max(figures.rss_mb, default=before),
            "rss_after": server.rss_mb(),
            "cache_mb": metric(server.url, "assoc_result_cache_bytes") / 2**20,
        }
    finally:
        server.stop()
        shutil.rmtree(root / "data", ignore_errors=True)
        print(f"service log: {root / 'serve.log'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--sockets", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("-S", dest="settings", action="append", default=[])
    args = parser.parse_args()
    out = measure(args.rows, args.sockets, args.rounds, args.settings)
    f: Figures = out["figures"]
    health, deletes = sorted(f.health_ms), sorted(f.delete_ms)
    print(
        f"{args.sockets} sockets x {args.rounds} GetLayouts on {args.rows:,} rows: "
        f"{out['seconds']:.1f} s; GetLayout p50 {percentile(sorted(f.layout_s), 0.5):.2f} s, "
        f"max {max(f.layout_s, default=0):.2f} s"
    )
    idle = out["idle_health_ms"]
    print(
        f"/health before the load (3 s): p50 {percentile(idle, 0.5):.0f} ms, "
        f"p99 {percentile(idle, 0.99):.0f} ms"
    )
    print(
        f"/health: {len(health)} probes, p50 {percentile(health, 0.5):.0f} ms, "
        f"p99 {percentile(health, 0.99):.0f} ms, max {max(health, default=0):.0f} ms, "
        f"{f.health_failures} failed"
    )
    print(
        f"DELETE: {len(deletes)}, p50 {percentile(deletes, 0.5):.0f} ms, "
        f"max {max(deletes, default=0):.0f} ms"
    )
    print(
        f"RSS: before {out['rss_before']:.0f} MB, peak {out['rss_peak']:.0f} MB, "
        f"3 s after the sockets closed {out['rss_after']:.0f} MB "
        f"(result cache {out['cache_mb']:.0f} MB)"
    )
    for error in f.errors:
        print("error:", error)
    return 1 if f.errors else 0


if __name__ == "__main__":
    sys.exit(main())
