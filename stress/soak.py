"""Soak: many clients mixing big and small imports, metadata, media and exports against a service
with a memory budget; samples the process's RSS and the metadata latency.

    python stress/soak.py --minutes 10 [--clients 16] [--budget-mb 200] [--csv-mb 20]

Prints RSS (max, and the mean of the first and last fifth of the run, to show creep), the
metadata p50/p99 and every request that failed. Exits 1 when any request failed with a 5xx or a
transport error, or when the RSS went above budget + --headroom-mb (default 300).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from server import Server
else:
    from .server import Server


def csv_body(megabytes: float, rng: random.Random) -> bytes:
    """A CSV of about `megabytes` MB: an id, a text of 1,000 values, a number, a date."""
    lines = ["Id,Customer,Amount,Day"]
    size = 0
    row = 0
    target = int(megabytes * 1_000_000)
    while size < target:
        line = (
            f"{row},c{rng.randrange(1000)},{rng.randrange(100000) / 100},2026-{row % 12 + 1:02d}-01"
        )
        lines.append(line)
        size += len(line) + 1
        row += 1
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Figures:
    """What the clients saw."""

    metadata_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, what: str, response: httpx.Response | None, error: str = "") -> None:
        with self.lock:
            self.requests += 1
            if response is None or response.status_code >= 500:
                status = error or str(response.status_code if response else "")
                self.failures.append(f"{what}: {status}")


def client_loop(url: str, figures: Figures, stop: threading.Event, seed: int, big: bytes) -> None:
    """One client: a random mix of the service's requests until `stop`."""
    rng = random.Random(seed)
    mine: list[str] = []
    with httpx.Client(base_url=url, timeout=120) as client:
        while not stop.is_set():
            choice = rng.random()
            what = "?"
            try:
                if choice < 0.15 or not mine:
                    what = "big import"
                    response = client.post("/v1/apps/import", content=big)
                    if response.status_code == 200:
                        mine.append(response.json()["attributes"]["id"])
                elif choice < 0.35:
                    what = "small import"
                    response = client.post("/v1/apps/import", content=csv_body(0.05, rng))
                    if response.status_code == 200:
                        mine.append(response.json()["attributes"]["id"])
                elif choice < 0.75:
                    what = "metadata"
                    start = time.perf_counter()
                    response = client.get(f"/v1/apps/{rng.choice(mine)}/data/metadata")
                    with figures.lock:
                        figures.metadata_ms.append((time.perf_counter() - start) * 1000)
                elif choice < 0.85:
                    what = "media"
                    app_id = rng.choice(mine)
                    response = client.put(
                        f"/v1/apps/{app_id}/media/files/f{rng.randrange(5)}.bin",
                        content=rng.randbytes(rng.randrange(1, 200_000)),
                    )
                elif choice < 0.93:
                    what = "export"
                    response = client.get(f"/v1/apps/{rng.choice(mine)}/export")
                else:
                    what = "delete"
                    app_id = mine.pop(rng.randrange(len(mine)))
                    response = client.delete(f"/v1/apps/{app_id}")
                figures.record(what, response)
            except httpx.HTTPError as exc:
                figures.record(what, None, f"{type(exc).__name__}: {exc}")


def soak(
    minutes: float,
    clients: int,
    budget_mb: int,
    csv_mb: float,
    seed: int = 1,
    keep: Path | None = None,
) -> dict:
    """Runs the soak in a new folder (under `keep`, else the system's temporary folder) and
    returns its figures; the service's data dir is removed at the end, its log kept."""
    root = Path(tempfile.mkdtemp(prefix="assoc-soak-", dir=keep))
    server = Server(root / "data", f"MemoryBudgetMB={budget_mb}", log=root / "serve.log").start()
    big = csv_body(csv_mb, random.Random(seed))
    figures = Figures()
    stop = threading.Event()
    threads = [
        threading.Thread(target=client_loop, args=(server.url, figures, stop, seed + i, big))
        for i in range(clients)
    ]
    samples: list[float] = []
    try:
        for thread in threads:
            thread.start()
        end = time.monotonic() + minutes * 60
        while time.monotonic() < end:
            samples.append(server.rss_mb())
            time.sleep(1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(180)
        server.stop()
        shutil.rmtree(root / "data", ignore_errors=True)
    fifth = max(1, len(samples) // 5)
    latencies = sorted(figures.metadata_ms) or [0.0]
    return {
        "requests": figures.requests,
        "failures": figures.failures,
        "rss_max_mb": max(samples),
        "rss_first_fifth_mb": statistics.fmean(samples[:fifth]),
        "rss_last_fifth_mb": statistics.fmean(samples[-fifth:]),
        "metadata_p50_ms": percentile(latencies, 0.5),
        "metadata_p99_ms": percentile(latencies, 0.99),
        "log": str(root / "serve.log"),
    }


def percentile(sorted_values: list[float], share: float) -> float:
    """The value below which `share` of the sorted values lie."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


def print_figures(figures: dict) -> None:
    """One `name: value` line per figure (lists left out)."""
    for key, value in figures.items():
        if not isinstance(value, list):
            print(f"{key}: {value:.1f}" if isinstance(value, float) else f"{key}: {value}")


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--budget-mb", type=int, default=200)
    parser.add_argument("--csv-mb", type=float, default=20)
    parser.add_argument("--headroom-mb", type=int, default=300)
    args = parser.parse_args()
    result = soak(args.minutes, args.clients, args.budget_mb, args.csv_mb)
    print_figures(result)
    for failure in result["failures"][:20]:
        print(f"failed: {failure}")
    over = result["rss_max_mb"] > args.budget_mb + args.headroom_mb
    sys.exit(1 if result["failures"] or over else 0)


if __name__ == "__main__":
    main()
