"""The engine HTTP service: a Starlette app over the Python API (never over assoc._core)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware

import assoc
from assoc.server.auth import TokenMiddleware, TokenValidator
from assoc.server.calls import CallCounter
from assoc.server.errors import EXCEPTION_HANDLERS
from assoc.server.health import HealthMonitor
from assoc.server.metrics import Metrics, MetricsMiddleware, metrics_routes
from assoc.server.qix.endpoint import QixConnections, qix_routes
from assoc.server.routes import build_routes
from assoc.server.settings import Settings
from assoc.server.store import AppStore, ObjectStore
from assoc.server.store.shared import Janitor
from assoc.server.ui import ui_routes

__all__ = ["create_app", "going_away"]

BUDGET_SHARE_KEPT = 4  # with MemoryBudgetMB set, at most a quarter of it is kept
GIL_SWITCH_SECONDS = 0.001  # Python's default is 0.005


def create_app(
    settings: Settings | None = None, data_dir: str | os.PathLike[str] = "assoc-data"
) -> Starlette:
    """The service for `settings`, storing apps under `data_dir` (or, with AppStore, in an
    object store that must honour conditional writes, with `data_dir` as its cache)."""
    settings = settings or Settings()
    objects: ObjectStore | None = None
    if settings.app_store:
        objects = ObjectStore(settings.app_store, settings.s3_endpoint)
        try:
            objects.probe()
        except BaseException:
            objects.close()
            raise
    metrics = Metrics()
    middleware = [Middleware(MetricsMiddleware, metrics=metrics), Middleware(CallCounter)]
    if settings.validate_json_web_tokens != "0":
        middleware.append(Middleware(TokenMiddleware, validator=TokenValidator(settings)))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        assoc.set_threads(settings.threads)
        # Start the engine's worker threads here, at the service's priority: started by the
        # first QIX request they would inherit its thread's lower one.
        assoc.threads()
        # Engine threads run Python between their engine calls: a shorter turn with the GIL
        # lets the event loop (health probes, small requests) in sooner.
        sys.setswitchinterval(GIL_SWITCH_SECONDS)
        if settings.memory_budget_bytes > 0:
            # Freed arrays the engine keeps for reuse count against the budget too.
            kept = assoc.memory_blocks()["kept_limit"]
            assoc.set_memory_blocks_kept(
                min(kept, settings.memory_budget_bytes // BUDGET_SHARE_KEPT)
            )
        store = await run_in_threadpool(
            AppStore, data_dir, settings.memory_budget_bytes, None, objects
        )
        janitor = None
        if objects is not None:
            grace = settings.app_store_grace_seconds
            janitor = Janitor(store, grace, grace / 2)
            janitor.start()
        monitor = HealthMonitor(settings, store)
        monitor.start()
        metrics.bind(store, monitor)
        # Objects made at start-up live as long as the service: keep them out of the
        # collector's full passes so those stay short under load.
        gc.collect()
        gc.freeze()
        qix = QixConnections(store, settings)
        app.state.qix = qix
        try:
            yield {"settings": settings, "store": store, "monitor": monitor, "qix": qix}
        finally:
            await qix.close_all()
            if janitor is not None:
                janitor.stop()
            monitor.stop()
            await run_in_threadpool(store.discard_uploads)
            store.close()

    service = Starlette(
        routes=[
            *build_routes(settings.api_version),
            *metrics_routes(),
            *ui_routes(),
            *qix_routes(),
        ],
        middleware=middleware,
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    service.state.metrics = metrics
    return service


def going_away(app: Starlette) -> None:
    """Tells a running service that it is stopping (SIGTERM): QIX requests in progress are
    given up rather than waited for."""
    qix: QixConnections | None = getattr(app.state, "qix", None)
    if qix is not None:
        qix.going_away()
