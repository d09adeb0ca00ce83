"""Metadata latency while big imports run: clients import a ~22 MB QVD back to back while one
client reads a loaded app's metadata; prints the metadata p50/p99 and the process's RSS.

    python stress/import_latency.py [--seconds 60] [--importers 4] [--budget-mb 200]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

import assoc

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from soak import csv_body, percentile, print_figures

    from server import Server
else:
    from .server import Server
    from .soak import csv_body, percentile, print_figures


def qvd_body(megabytes: float) -> bytes:
    """A QVD of about `megabytes` MB, written by the engine from the soak's CSV rows."""
    app = assoc.App.from_csv(csv_body(megabytes * 2, random.Random(3)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.qvd"
        app.write_qvd(app.tables[0], path)
        return path.read_bytes()


def measure(seconds: float, importers: int, budget_mb: int, qvd_mb: float) -> dict[str, float]:
    """Runs the importers and the metadata reader; returns the figures."""
    root = Path(tempfile.mkdtemp(prefix="assoc-latency-"))
    server = Server(root / "data", f"MemoryBudgetMB={budget_mb}", log=root / "serve.log").start()
    big = qvd_body(qvd_mb)
    stop = threading.Event()
    imports = [0]
    latencies: list[float] = []
    rss: list[float] = []

    def importer() -> None:
        with httpx.Client(base_url=server.url, timeout=300) as client:
            while not stop.is_set():
                response = client.post("/v1/apps/import", content=big)
                response.raise_for_status()
                imports[0] += 1
                client.delete(f"/v1/apps/{response.json()['attributes']['id']}")

    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            small = client.post("/v1/apps/import", content=csv_body(0.2, random.Random(1)))
            app_id = small.json()["attributes"]["id"]
            threads = [threading.Thread(target=importer) for _ in range(importers)]
            for thread in threads:
                thread.start()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                start = time.perf_counter()
                client.get(f"/v1/apps/{app_id}/data/metadata").raise_for_status()
                latencies.append((time.perf_counter() - start) * 1000)
                rss.append(server.rss_mb())
                time.sleep(0.05)
    finally:
        stop.set()
        server.stop()
    latencies.sort()
    return {
        "qvd_mb": len(big) / 1e6,
        "imports": imports[0],
        "metadata_requests": len(latencies),
        "metadata_p50_ms": percentile(latencies, 0.5),
        "metadata_p99_ms": percentile(latencies, 0.99),
        "rss_max_mb": max(rss),
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--importers", type=int, default=4)
    parser.add_argument("--budget-mb", type=int, default=200)
    parser.add_argument("--qvd-mb", type=float, default=22)
    args = parser.parse_args()
    figures = measure(args.seconds, args.importers, args.budget_mb, args.qvd_mb)
    print_figures(figures)


if __name__ == "__main__":
    main()
