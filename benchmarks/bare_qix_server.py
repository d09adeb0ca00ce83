"""The baseline for QIX round trips: a bare Starlette WebSocket endpoint that answers every
frame with fixed bytes (what assoc answers to the benchmark's EngineVersion request), run
under the same uvicorn settings as `assoc serve`.

python benchmarks/bare_qix_server.py ANSWER_FILE --port 0
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bare_metadata_server import serve_bare

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
    serve_bare(lambda answer: bare_app(answer.decode()), "the answer every frame gets")


if __name__ == "__main__":
    main()
