"""The baseline for QIX round trips: a bare Starlette WebSocket endpoint that answers every
frame with fixed bytes (what assoc answers to the benchmark's EngineVersion request), run
under the same uvicorn settings as `assoc serve`.

python benchmarks/bare_qix_server.py ANSWER_FILE --port 0
"""

from __future__ import annotations

import argparse
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from assoc.cli import bind, server_config

CONNECTED = '{"jsonrpc":"2.0","method":"OnConnected","params":{"qSessionState":"SESSION_CREATED"}}'


def bare_app(answer: str) -> Starlette:
    """Every WebSocket path: OnConnected, then `answer` for each frame; GET /health: 200."""

    async def socket(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(CONNECTED)
        try:
            while True:
                await websocket.receive_text()
                await websocket.send_text(answer)
        except WebSocketDisconnect:
            pass

    async def health(request: object) -> Response:
        return Response("{}", media_type="application/json")

    return Starlette(routes=[Route("/health", health), WebSocketRoute("/{path:path}", socket)])


def main() -> None:
    """Command line: ANSWER_FILE, --host, --port."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("answer_file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    with open(args.answer_file, encoding="utf-8") as f:
        answer = f.read()
    with bind(args.host, args.port) as listener:
        host, port = listener.getsockname()[:2]
        # The line `assoc serve` prints, which the benchmarks read to learn the port.
        print(f"assoc serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
        server = uvicorn.Server(server_config(bare_app(answer), host, port, args.log_level))
        server.run(sockets=[listener])


if __name__ == "__main__":
    main()
