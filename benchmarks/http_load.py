"""A small HTTP/1.1 keep-alive load generator, for machines without wrk.

    python benchmarks/http_load.py URL --connections 64 --duration 5

Prints one JSON object: requests, errors (non-200 answers), seconds, requests_per_s, p50_ms,
p99_ms. Every connection sends its next request as soon as the previous answer is read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from urllib.parse import urlsplit


async def _connection(
    host: str, port: int, request: bytes, deadline: float, latencies: list[float], errors: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            writer.write(request)
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - start)
            if status_line.split()[1:2] != [b"200"]:
                errors.append(1)
    finally:
        writer.close()


async def run(url: str, connections: int, duration: float) -> dict[str, float]:
    """Loads `url` with `connections` keep-alive connections for `duration` seconds."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    latencies: list[float] = []
    errors: list[int] = []
    start = time.perf_counter()
    deadline = start + duration
    await asyncio.gather(
        *(_connection(host, port, request, deadline, latencies, errors) for _ in range(connections))
    )
    seconds = time.perf_counter() - start
    latencies.sort()
    n = len(latencies)
    return {
        "requests": n,
        "errors": len(errors),
        "seconds": seconds,
        "requests_per_s": n / seconds,
        "p50_ms": 1000 * latencies[n // 2] if n else 0.0,
        "p99_ms": 1000 * latencies[min(n - 1, int(n * 0.99))] if n else 0.0,
    }


def main() -> None:
    """Command line: URL, --connections, --duration."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--duration", type=float, default=5.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.url, args.connections, args.duration))))


if __name__ == "__main__":
    main()
