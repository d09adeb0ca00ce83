"""Prometheus metrics: `GET /metrics` (and `PrometheusPort`) in the text exposition format —
request counts and latencies per route, QIX requests per method, imports, and on each scrape
the healthcheck's figures, loaded apps, the result cache, evictions and (with AppStore) the
object-store requests by operation."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import assoc
from assoc.server.store.s3 import LATENCY_BUCKETS as STORE_BUCKETS

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from assoc.server.health import HealthMonitor
    from assoc.server.store import AppStore

METRICS_PATH = "/metrics"
IMPORT_PATHS = ("/v1/apps/import", "/v1/apps/import/{name}")
UNMATCHED_ROUTE = "<unmatched>"
MB = 1024 * 1024
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# The object-store requests /metrics reports, always all of them (a bounded label set).
STORE_OPS = ("get", "put", "copy", "list", "delete")
IMPORT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class EngineCollector(Collector):
    """Figures read at scrape time from the health monitor, the store and the engine."""

    def __init__(self) -> None:
        self.store: AppStore | None = None
        self.monitor: HealthMonitor | None = None

    def collect(self) -> Iterator[Metric]:
        """The current figures; none before the service has started."""
        if self.store is None or self.monitor is None:
            return
        status = self.monitor.status()
        mem, apps, cache = status["mem"], status["apps"], status["cache"]
        yield _gauge(
            "assoc_memory_committed_bytes",
            "memory the process has committed (resident)",
            mem["committed"] * MB,
        )
        yield _gauge(
            "assoc_memory_allocated_bytes",
            "memory committed and reserved from the OS",
            mem["allocated"] * MB,
        )
        yield _gauge(
            "assoc_memory_free_bytes",
            "the smaller of free virtual and free physical memory",
            mem["free"] * MB,
        )
        yield _gauge(
            "assoc_cpu_percent",
            "CPU use averaged over CpuOverloadSampleTime",
            status["cpu"]["total"],
        )
        yield _gauge(
            "assoc_saturated",
            "1 while the engine is saturated (CPU or RAM over threshold)",
            int(status["saturated"]),
        )
        yield _gauge("assoc_sessions_active", "open engine sessions", status["session"]["active"])
        yield _counter("assoc_sessions", "engine sessions opened", status["session"]["total"])
        yield _gauge(
            "assoc_users_active", "distinct users with open sessions", status["users"]["active"]
        )
        yield _counter("assoc_users", "distinct users seen", status["users"]["total"])
        yield _gauge(
            "assoc_apps_active", "apps held by open sessions or requests", len(apps["active_docs"])
        )
        yield _gauge(
            "assoc_apps_loaded", "apps the store holds in memory", len(apps["loaded_docs"])
        )
        yield _gauge(
            "assoc_apps_in_memory",
            "apps alive in memory (held or still referenced)",
            len(apps["in_memory_docs"]),
        )
        yield _gauge(
            "assoc_apps_loaded_bytes",
            "static bytes of the apps the store holds",
            self.store.loaded_bytes(),
        )
        yield _gauge("assoc_apps_stored", "apps in the store", len(self.store.app_ids()))
        yield _counter(
            "assoc_app_evictions", "loaded apps evicted over MemoryBudgetMB", self.store.evictions
        )
        loads, load_seconds, load_bytes = self.store.load_totals()
        yield _counter(
            "assoc_app_loads", "stored apps loaded (on first use, after eviction)", loads
        )
        yield _counter("assoc_app_load_seconds", "time spent loading stored apps", load_seconds)
        yield _counter("assoc_app_load_bytes", "static bytes of the stored apps loaded", load_bytes)
        yield _counter(
            "assoc_calls", "engine API requests (REST and QIX, not health checks)", apps["calls"]
        )
        yield _counter("assoc_selections", "selections made", apps["selections"])
        hits, lookups = cache["hits"], cache["lookups"]
        yield _counter(
            "assoc_result_cache_hits", "result-cache look-ups answered from the cache", hits
        )
        yield _counter(
            "assoc_result_cache_misses",
            "result-cache look-ups that computed the result",
            lookups - hits,
        )
        yield _counter(
            "assoc_result_cache_added", "results added to the result cache", cache["added"]
        )
        held = assoc.cache_info()
        yield _gauge(
            "assoc_result_cache_entries", "results held in the result cache", held["entries"]
        )
        yield _gauge(
            "assoc_result_cache_bytes",
            "bytes of the results held in the result cache",
            held["bytes"],
        )
        yield _gauge(
            "assoc_result_cache_limit_bytes", "the result cache's byte limit", held["limit"]
        )
        yield _gauge("assoc_threads", "engine worker threads", assoc.threads())
        yield from self._store_requests()

    def _store_requests(self) -> Iterator[Metric]:
        """Object-store requests by operation (AppStore set): counts, failures, latency."""
        shared = self.store.shared if self.store is not None else None
        if shared is None:
            return
        ops = shared.objects.stats.snapshot()
        requests = CounterMetricFamily(
            "assoc_store_requests", "object-store requests by operation", labels=["op"]
        )
        errors = CounterMetricFamily(
            "assoc_store_request_errors",
            "object-store requests that failed (unreachable, timed out, server error)",
            labels=["op"],
        )
        latency = HistogramMetricFamily(
            "assoc_store_request_duration_seconds",
            "time an object-store request took, retries included",
            labels=["op"],
        )
        for op in STORE_OPS:
            stats = ops.get(op)
            count = stats.count if stats else 0
            requests.add_metric([op], count)
            errors.add_metric([op], stats.errors if stats else 0)
            cumulative = stats.buckets if stats else [0] * len(STORE_BUCKETS)
            buckets = [(str(b), n) for b, n in zip(STORE_BUCKETS, cumulative, strict=True)]
            buckets.append(("+Inf", count))
            latency.add_metric([op], buckets, stats.seconds if stats else 0.0)
        yield requests
        yield errors
        yield latency


class LoopCounts(Collector):
    """A counter by one label, counted on the event loop (a dict update per event, no lock:
    only the loop's thread writes) and read at scrape time."""

    def __init__(self, name: str, documentation: str, label: str) -> None:
        self._name, self._documentation, self._label = name, documentation, label
        self._counts: dict[str, int] = {}

    def count(self, value: str, n: int = 1) -> None:
        """Counts `n` events of label `value`."""
        counts = self._counts
        counts[value] = counts.get(value, 0) + n

    def collect(self) -> Iterator[Metric]:
        """<name>_total by the label."""
        family = CounterMetricFamily(self._name, self._documentation, labels=[self._label])
        for value, n in sorted(self._counts.items()):  # items() copies under the GIL
            family.add_metric([value], n)
        yield family


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


class Metrics:
    """The service's metrics registry and the instruments the service updates."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.engine = EngineCollector()
        self.registry.register(self.engine)
        prometheus_client.ProcessCollector(registry=self.registry)
        prometheus_client.PlatformCollector(registry=self.registry)
        labels = ["route", "method", "status"]
        self.requests = Counter(
            "assoc_http_requests", "HTTP requests answered", labels, registry=self.registry
        )
        self.latency = Histogram(
            "assoc_http_request_duration_seconds",
            "time from a request's arrival to the end of its answer",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.qix_requests = LoopCounts("assoc_qix_requests", "QIX requests per method", "method")
        self.registry.register(self.qix_requests)
        self.qix_ahead = LoopCounts(
            "assoc_qix_layouts_ahead",
            "QIX layouts made ahead after a change, by outcome: planned (an object laid out "
            "before changed) and served (its GetLayout took the layout made)",
            "outcome",
        )
        self.registry.register(self.qix_ahead)
        self.import_duration = Histogram(
            "assoc_import_duration_seconds",
            "time an import request took (upload, load and commit), by status",
            ["status"],
            buckets=IMPORT_BUCKETS,
            registry=self.registry,
        )
        self.import_bytes = Counter(
            "assoc_import_bytes", "request body bytes received by imports", registry=self.registry
        )
        self.reload_duration = Histogram(
            "assoc_reload_duration_seconds",
            "time a load-script reload (QIX DoReload, DoReloadEx) took, by outcome",
            ["outcome"],
            buckets=IMPORT_BUCKETS,
            registry=self.registry,
        )
        self._server: WSGIServer | None = None
        self._request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def bind(self, store: AppStore, monitor: HealthMonitor) -> None:
        """Reads the figures of this store and monitor from now on (at start-up)."""
        self.engine.store, self.engine.monitor = store, monitor

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Counts and times one HTTP request (label children kept: no look-up per request)."""
        key = (route, method, status)
        children = self._request_children.get(key)
        if children is None:
            labels = (route, method, str(status))
            children = (self.requests.labels(*labels), self.latency.labels(*labels))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def count_qix(self, method: str) -> None:
        """Counts one QIX request by method name (an implemented one: the label set is bounded)."""
        self.qix_requests.count(method)

    def observe_reload(self, succeeded: bool, seconds: float) -> None:
        """Times one reload by its outcome (`ok` or `failed`)."""
        self.reload_duration.labels("ok" if succeeded else "failed").observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition of every metric."""
        return prometheus_client.generate_latest(self.registry)

    def serve_on(self, host: str, port: int) -> None:
        """Serves the exposition on a port of its own too (the PrometheusPort setting)."""
        self._server, _ = prometheus_client.start_http_server(port, host, self.registry)

    def stop(self) -> None:
        """Stops the PrometheusPort server, if any."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def route_of(scope: Scope) -> str:
    """The path template of the route a request matches, so labels stay few."""
    for route in scope["app"].router.routes:
        match, _ = route.matches(scope)
        if match is not Match.NONE:
            return str(getattr(route, "path", UNMATCHED_ROUTE))
    return UNMATCHED_ROUTE


def endpoint_paths(routes: list[Any]) -> dict[Any, str]:
    """Path template by endpoint: the router leaves the endpoint it chose in the scope."""
    return {getattr(r, "endpoint", None) or r.app: r.path for r in routes if hasattr(r, "path")}


class MetricsMiddleware:
    """Counts and times every HTTP request by route, method and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self._paths: dict[Any, str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            return message

        async def status_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, counting_receive, status_send)
        finally:
            elapsed = time.perf_counter() - started
            if self._paths is None:
                self._paths = endpoint_paths(scope["app"].router.routes)
            route = self._paths.get(scope.get("endpoint")) or route_of(scope)
            self.metrics.observe_request(route, scope["method"], status, elapsed)
            if route in IMPORT_PATHS and scope["method"] == "POST":
                self.metrics.import_duration.labels(str(status)).observe(elapsed)
                self.metrics.import_bytes.inc(received)


async def metrics_endpoint(request: Request) -> Response:
    """GET /metrics: the Prometheus text exposition."""
    metrics: Metrics = request.app.state.metrics
    body = await run_in_threadpool(metrics.exposition)
    return Response(body, media_type=prometheus_client.CONTENT_TYPE_LATEST)


def metrics_routes() -> list[Route]:
    """The /metrics route."""
    return [Route(METRICS_PATH, metrics_endpoint, methods=["GET"], include_in_schema=False)]


def metrics_of(app: Any) -> Metrics:
    """The Metrics object of a service made by create_app."""
    metrics: Metrics = app.state.metrics
    return metrics
