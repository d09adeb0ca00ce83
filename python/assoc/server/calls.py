"""The one place that counts client requests for the healthcheck's `calls`."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from assoc.server.health import PROBE_PATHS, HealthMonitor


class CallCounter:
    """Counts every HTTP request a client makes, health probes aside, in the lifespan's
    HealthMonitor (QIX requests are counted by the QIX layer through the same monitor)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in PROBE_PATHS:
            monitor: HealthMonitor = scope["state"]["monitor"]
            monitor.count_call()
        await self.app(scope, receive, send)
