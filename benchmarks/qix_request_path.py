"""CPU time of the QIX request path without sockets: assoc's ASGI app and the bare endpoint of
`bare_qix_server.py`, each driven in this process by an in-memory receive and send with
`EngineVersion` frames.

    python benchmarks/qix_request_path.py [--messages 100000] [--runs 3]

It isolates what the service adds per message (parsing, dispatch, counting, encoding) from
the socket and protocol work both sides share; `compare_qix.py` measures the whole round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

from assoc.server import create_app
from assoc.server.settings import Settings
from bare_qix_server import bare_app
from compare_qix import ENGINE_VERSION

ANSWER = '{"jsonrpc":"2.0","id":1,"result":{"qVersion":{"qComponentVersion":"12.207.0"}}}'


async def drive(app: Any, state: dict[str, Any], messages: int) -> float:
    """CPU microseconds per message while `app` answers `messages` frames on one socket."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    answered = 0

    async def receive() -> dict[str, Any]:
        return await queue.get()

    async def send(message: dict[str, Any]) -> None:
        nonlocal answered
        if message["type"] != "websocket.send":
            return
        answered += 1  # the first is OnConnected
        if answered <= messages:
            queue.put_nowait({"type": "websocket.receive", "text": ENGINE_VERSION})
        else:
            queue.put_nowait({"type": "websocket.disconnect", "code": 1000})

    scope = {
        "type": "websocket",
        "asgi": {"version": "3.0"},
        "scheme": "ws",
        "path": "/app",
        "raw_path": b"/app",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "server": ("127.0.0.1", 0),
        "client": ("127.0.0.1", 0),
        "subprotocols": [],
        "state": dict(state),
    }
    queue.put_nowait({"type": "websocket.connect"})
    start = time.process_time()
    await app(scope, receive, send)
    if answered != messages + 1:
        raise RuntimeError(f"{answered} answers to {messages} frames")
    return (time.process_time() - start) / messages * 1e6


async def measure(messages: int, runs: int) -> tuple[list[float], list[float]]:
    """Alternating runs of the bare endpoint and assoc's app."""
    bare, ours = [], []
    service = create_app(Settings(), tempfile.mkdtemp(prefix="assoc-bench-"))
    async with service.router.lifespan_context(service) as state:
        for _ in range(runs):
            bare.append(await drive(bare_app(ANSWER), {}, messages))
            ours.append(await drive(service, state, messages))
    return bare, ours


def main() -> None:
    """Prints µs of CPU per message for both apps."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bare, ours = asyncio.run(measure(args.messages, args.runs))
    print("| app | CPU µs per message (median) | runs |")
    print("|---|---:|---|")
    print(f"| bare Starlette endpoint | {statistics.median(bare):.2f} | "
          f"{' / '.join(f'{x:.2f}' for x in bare)} |")  # fmt: skip
    print(f"| assoc QIX endpoint | {statistics.median(ours):.2f} | "
          f"{' / '.join(f'{x:.2f}' for x in ours)} |")  # fmt: skip


if __name__ == "__main__":
    main()
