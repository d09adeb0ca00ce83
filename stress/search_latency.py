"""/health latency while QIX field searches run: sockets `Select` wildcard patterns (runs of
`*`, `?`) on a field of long values back to back while one client polls /health; prints the
search times and the /health p50/p99.

    python stress/search_latency.py [--seconds 20] [--values 100000] [--searchers 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak import percentile, print_figures

    from server import Server
else:
    from .server import Server
    from .soak import percentile, print_figures

PATTERNS = ("******Z", "********Z", "*a" * 40 + "*Z", "*a?" * 20 + "*9", "*0000099999")


def _call(ws: object, request_id: int, method: str, params: list[object], handle: int) -> dict:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "handle": handle}
    ws.send(json.dumps({**message, "params": params}))  # type: ignore[attr-defined]
    while True:
        answer = json.loads(ws.recv(timeout=600))  # type: ignore[attr-defined]
        if answer.get("id") == request_id:
            return dict(answer)


def measure(seconds: float, values: int, searchers: int) -> dict[str, float]:
    """Runs the searchers and the /health poller; returns the figures."""
    root = Path(tempfile.mkdtemp(prefix="assoc-search-"))
    server = Server(root / "data", log=root / "serve.log").start()
    try:
        body = "Long\n" + "\n".join(f"{'a' * 70}{i:010d}" for i in range(values))
        imported = httpx.post(server.url + "/v1/apps/import", content=body.encode(), timeout=120)
        imported.raise_for_status()
        app_id = imported.json()["attributes"]["id"]
        stop = threading.Event()
        search_ms: list[float] = []
        health_ms: list[float] = []

        def searcher() -> None:
            with connect(server.url.replace("http", "ws") + "/app/", max_size=None) as ws:
                ws.recv(timeout=10)  # OnConnected
                ids = itertools.count(1)
                doc = _call(ws, next(ids), "OpenDoc", [app_id], -1)["result"]["qReturn"]
                field = _call(ws, next(ids), "GetField", ["Long"], doc["qHandle"])
                handle = field["result"]["qReturn"]["qHandle"]
                for pattern in itertools.cycle(PATTERNS):
                    if stop.is_set():
                        return
                    started = time.perf_counter()
                    answer = _call(ws, next(ids), "Select", [pattern], handle)
                    assert "result" in answer, answer
                    search_ms.append((time.perf_counter() - started) * 1000)

        threads = [threading.Thread(target=searcher) for _ in range(searchers)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + seconds
        with httpx.Client(base_url=server.url, timeout=60) as rest:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                rest.get("/health").raise_for_status()
                health_ms.append((time.perf_counter() - started) * 1000)
                time.sleep(0.02)
        stop.set()
        for t in threads:
            t.join()
        search_ms.sort()
        health_ms.sort()
        return {
            "values": values,
            "searches": len(search_ms),
            "search_p50_ms": round(percentile(search_ms, 0.5), 1),
            "search_max_ms": round(search_ms[-1] if search_ms else 0, 1),
            "health_requests": len(health_ms),
            "health_p50_ms": round(percentile(health_ms, 0.5), 1),
            "health_p99_ms": round(percentile(health_ms, 0.99), 1),
            "health_max_ms": round(health_ms[-1], 1),
        }
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--searchers", type=int, default=2)
    args = parser.parse_args()
    print_figures(measure(args.seconds, args.values, args.searchers))


if __name__ == "__main__":
    main()
