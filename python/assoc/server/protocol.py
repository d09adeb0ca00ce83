"""The HTTP/1.1 protocol `assoc serve` runs: uvicorn's httptools protocol with a larger
request-body buffer.

uvicorn stops reading the socket whenever more than 64 KiB of body wait for the app. Every
read of an upload is larger than that (256 KiB), so every read paused the socket until the
app had taken the body, and the client stalled on TCP's closed window in between. Here a
body may collect up to `BODY_BUFFER_BYTES` before reading pauses, so a connection still
holds at most that (plus one read) of body the app has not taken. A 15.6 MB upload to an
endpoint that only reads it: median 15-21 ms against 19-27 ms with uvicorn's protocol,
taking turns on this 2-core machine (docs/benchmarks-http.md).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["BODY_BUFFER_BYTES", "HttpProtocol"]

BODY_BUFFER_BYTES = 1 << 20


class HttpProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` that pauses reading only past `BODY_BUFFER_BYTES` of body."""

    def on_body(self, body: bytes) -> None:
        flow = self.flow
        paused_before = flow.read_paused  # e.g. by a pipelined request: leave that pause be
        super().on_body(body)
        if not paused_before and flow.read_paused and len(self.cycle.body) <= BODY_BUFFER_BYTES:
            flow.resume_reading()
