"""The one place that counts client requests for the healthcheck's `calls`."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from assoc.server.health import PROBE_PATHS, HealthMonitor
from assoc.server.ui import UI_PATH


def _is_page_file(path: str) -> bool:
    return path == UI_PATH or path.startswith(UI_PATH + "/")


class CallCounter:
    """Counts every HTTP request a client makes, health probes aside, in the lifespan's
    HealthMonitor (QIX requests are counted by the QIX layer through the same monitor)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Health probes, scrapes and the page's static files are not engine API requests.
        if (
            scope["type"] == "http"
            and scope["path"] not in PROBE_PATHS
            and not _is_page_file(scope["path"])
        ):
            monitor: HealthMonitor = scope["state"]["monitor"]
            monitor.count_call()
        await self.app(scope, receive, send)
