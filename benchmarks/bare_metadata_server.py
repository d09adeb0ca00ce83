"""The baseline: a bare Starlette endpoint that answers fixed bytes, run as `assoc serve` runs.

python benchmarks/bare_metadata_server.py BODY_FILE --port 0

Like `assoc serve`, it binds its socket itself and writes the address it bound to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from assoc.cli import bind, server_config


def bare_app(body: bytes) -> Starlette:
    """GET /v1/apps/{appId}/data/metadata answering `body` as JSON; POST /drain reading a body."""

    async def metadata(request: Request) -> Response:
        return Response(body, media_type="application/json")

    async def drain(request: Request) -> Response:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
        return Response(str(size), media_type="text/plain")

    return Starlette(
        routes=[
            Route("/v1/apps/{appId}/data/metadata", metadata),
            Route("/drain", drain, methods=["POST"]),
        ]
    )


def serve_bare(app: Callable[[bytes], Starlette], file_help: str) -> None:
    """Parses FILE, --host, --port, --log-level; serves `app(FILE's bytes)` under the settings
    `assoc serve` uses and reports the bound address as it does (benchmarks read that line)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("file", help=file_help)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        body = f.read()
    with bind(args.host, args.port) as listener:
        host, port = listener.getsockname()[:2]
        print(f"assoc serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
        server = uvicorn.Server(server_config(app(body), host, port, args.log_level))
        server.run(sockets=[listener])


def main() -> None:
    """Command line: BODY_FILE, --host, --port."""
    serve_bare(bare_app, "the metadata body every GET answers with")


if __name__ == "__main__":
    main()
