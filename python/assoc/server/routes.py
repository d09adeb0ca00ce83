"""The endpoints: parse the request, call the Python API off the event loop, serialise."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import assoc
from assoc.access import DENIED
from assoc.server.errors import ApiError, error_response
from assoc.server.health import HealthMonitor
from assoc.server.nxapp import nx_app
from assoc.server.openapi import openapi_document
from assoc.server.query import import_mode, list_form
from assoc.server.settings import Settings
from assoc.server.store import AppStore, ImportMode
from assoc.server.uploads import receive_upload

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")
OCTET_STREAM = "application/octet-stream"
_CHUNK = 1 << 20


def _store(request: Request) -> AppStore:
    store: AppStore = request.scope["state"]["store"]
    return store


def _settings(request: Request) -> Settings:
    settings: Settings = request.scope["state"]["settings"]
    return settings


async def _read(store: AppStore, fn: Callable[..., T], *args: object) -> T:
    """A store read: off the event loop when it asks an object store (AppStore=s3://…)."""
    if store.shared is None:
        return fn(*args)
    return await run_in_threadpool(fn, *args)


def _user(request: Request) -> str:
    return str(getattr(request.state, "user", ""))


# ---- health ---------------------------------------------------------------------------


async def health(request: Request) -> Response:
    """GET /health: 200 while healthy; 429 while saturated with EnableLameDuckHealthCheck=1."""
    settings = _settings(request)
    if settings.enable_lame_duck_health_check:
        monitor: HealthMonitor = request.state.monitor
        if await run_in_threadpool(monitor.saturated):
            return error_response(429, "Saturated", "the engine is too busy for new requests")
    return JSONResponse({})


async def healthcheck(request: Request) -> Response:
    """GET /healthcheck: HealthcheckStatus."""
    monitor: HealthMonitor = request.state.monitor
    return JSONResponse(await run_in_threadpool(monitor.status))


# ---- apps -----------------------------------------------------------------------------


async def import_app(request: Request) -> Response:
    """POST /v1/apps/import: a package, QVD or CSV body becomes an app."""
    settings = _settings(request)
    try:
        mode = import_mode(request.query_params.get("mode"))
    except ValueError:
        raise ApiError(400, "BadParameter", "mode must be NEW or AUTOREPLACE (any case)") from None
    if mode is ImportMode.AUTOREPLACE and not settings.efe_mode:
        raise ApiError(400, "ModeNotSupported", "mode AUTOREPLACE needs the setting EFEMode=1")
    name = request.path_params.get("name") or request.query_params.get("name") or None
    store = _store(request)
    # A QVD body is parsed and staged as it arrives (a NEW import: AUTOREPLACE takes only
    # packages).
    target = store if mode is ImportMode.NEW else None
    upload = await receive_upload(request, store.new_upload_path(), settings, target)
    with upload.admission:
        attributes = await run_in_threadpool(
            store.import_file,
            upload.path,
            name=name,
            mode=mode,
            owner=_user(request),
            source_name=upload.filename,
            qvd=upload.qvd,
            admission=upload.admission if upload.qvd is not None else None,
        )
    return JSONResponse(nx_app(attributes, settings.api_version))


async def list_apps(request: Request) -> Response:
    """GET /v1/apps (extension): NxApp of every app."""
    version = _settings(request).api_version
    store = _store(request)
    return JSONResponse([nx_app(a, version) for a in await _read(store, store.list_attributes)])


async def get_app(request: Request) -> Response:
    """GET /v1/apps/{appId} (extension): the app's NxApp."""
    store = _store(request)
    attributes = await _read(store, store.attributes, request.path_params["appId"])
    return JSONResponse(nx_app(attributes, _settings(request).api_version))


async def delete_app(request: Request) -> Response:
    """DELETE /v1/apps/{appId}: deletes the app."""
    await run_in_threadpool(_store(request).delete, request.path_params["appId"])
    return JSONResponse({})


async def app_metadata(request: Request) -> Response:
    """GET /v1/apps/{appId}/data/metadata: DataModelMetadata, serialised once per loaded app."""
    store = _store(request)
    app_id = request.path_params["appId"]
    data = store.cached_metadata_json(app_id)
    if data is None:
        groups = list(getattr(request.state, "groups", []))
        try:
            data = await run_in_threadpool(store.metadata_json, app_id, _user(request), groups)
        except assoc.Error as exc:
            if str(exc) != DENIED:
                raise
            raise ApiError(403, "Forbidden", DENIED) from None
    return Response(data, media_type="application/json")


async def export_app(request: Request) -> Response:
    """GET /v1/apps/{appId}/export (extension): the app as a package."""
    store = _store(request)
    app_id = request.path_params["appId"]
    path = store.new_upload_path()

    user, groups = _user(request), list(getattr(request.state, "groups", []))

    def write() -> None:
        try:
            with open(path, "xb") as out:
                store.export(app_id, out, user, groups)
        except BaseException:
            _unlink(path)
            raise

    try:
        await run_in_threadpool(write)
    except assoc.Error as exc:
        if str(exc) != DENIED:
            raise
        raise ApiError(403, "Forbidden", DENIED) from None
    return FileResponse(
        path,
        media_type="application/zip",
        filename=f"{app_id}.zip",
        background=BackgroundTask(_unlink, path),
    )


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# ---- media ----------------------------------------------------------------------------


def _file_response(f: BinaryIO) -> Response:
    """Streams an open file (read in worker threads) as application/octet-stream."""
    size = os.fstat(f.fileno()).st_size

    def chunks() -> Iterator[bytes]:
        with f:
            while data := f.read(_CHUNK):
                yield data

    return StreamingResponse(
        chunks(), media_type=OCTET_STREAM, headers={"content-length": str(size)}
    )


async def media_file(request: Request) -> Response:
    """GET /v1/apps/{appId}/media/files/{path}: the file's bytes."""
    f = await run_in_threadpool(
        _store(request).open_media_file, request.path_params["appId"], request.path_params["path"]
    )
    return _file_response(f)


async def media_list(request: Request) -> Response:
    """GET /v1/apps/{appId}/media/list/{path}: media names in the form `show` asks for."""
    form = list_form(request.query_params.get("show"))
    names = await run_in_threadpool(
        _store(request).media_list,
        request.path_params["appId"],
        request.path_params.get("path", ""),
        form,
    )
    return JSONResponse(names)


async def media_thumbnail(request: Request) -> Response:
    """GET /v1/apps/{appId}/media/thumbnail: the file attributes.thumbnail names."""
    f = await run_in_threadpool(_store(request).open_thumbnail, request.path_params["appId"])
    return _file_response(f)


async def put_media_file(request: Request) -> Response:
    """PUT /v1/apps/{appId}/media/files/{path} (extension): stores the body as the file."""
    store = _store(request)
    app_id, path = request.path_params["appId"], request.path_params["path"]
    await _read(store, store.attributes, app_id)  # 404 before reading a body for an unknown app
    upload = await receive_upload(request, store.new_upload_path(), _settings(request))
    await run_in_threadpool(store.put_media, app_id, path, upload.path)
    return JSONResponse({})


async def delete_media_file(request: Request) -> Response:
    """DELETE /v1/apps/{appId}/media/files/{path} (extension): deletes a file or folder."""
    await run_in_threadpool(
        _store(request).delete_media, request.path_params["appId"], request.path_params["path"]
    )
    return JSONResponse({})


async def openapi(request: Request) -> Response:
    """GET /openapi.json: the description of everything this service answers."""
    return JSONResponse(openapi_document(_settings(request), request.app.routes))


# ---- the route table ------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One method on one path, and the interface versions that have it."""

    method: str
    path: str
    handler: Handler
    versions: tuple[str, ...] = ("12.207.0", "12.171.0")


_NEW = ("12.207.0",)
_OLD = ("12.171.0",)

# Routes are tried in this order: the hot read comes first.
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/v1/apps/{appId}/data/metadata", app_metadata),
    Endpoint("GET", "/health", health),
    Endpoint("GET", "/healthcheck", healthcheck),
    Endpoint("POST", "/v1/apps/import", import_app),
    Endpoint("POST", "/v1/apps/import/{name}", import_app, _OLD),
    Endpoint("GET", "/v1/apps", list_apps, _NEW),
    Endpoint("GET", "/v1/apps/{appId}", get_app, _NEW),
    Endpoint("DELETE", "/v1/apps/{appId}", delete_app, _NEW),
    Endpoint("GET", "/v1/apps/{appId}/export", export_app, _NEW),
    Endpoint("GET", "/v1/apps/{appId}/media/files/{path:path}", media_file, _NEW),
    Endpoint("PUT", "/v1/apps/{appId}/media/files/{path:path}", put_media_file, _NEW),
    Endpoint("DELETE", "/v1/apps/{appId}/media/files/{path:path}", delete_media_file, _NEW),
    Endpoint("GET", "/v1/apps/{appId}/media/list", media_list, _NEW),
    Endpoint("GET", "/v1/apps/{appId}/media/list/{path:path}", media_list, _NEW),
    Endpoint("GET", "/v1/apps/{appId}/media/thumbnail", media_thumbnail, _NEW),
    Endpoint("GET", "/openapi.json", openapi),
)


def build_routes(api_version: str) -> list[Route]:
    """Routes of the endpoints that `api_version` has, one Route per path."""
    by_path: dict[str, dict[str, Handler]] = {}
    for endpoint in ENDPOINTS:
        if api_version in endpoint.versions:
            by_path.setdefault(endpoint.path, {})[endpoint.method] = endpoint.handler
    routes = []
    for path, handlers in by_path.items():
        if len(handlers) == 1:
            ((method, handler),) = handlers.items()
            routes.append(Route(path, handler, methods=[method]))
        else:
            routes.append(Route(path, _dispatch(handlers), methods=list(handlers)))
    return routes


def _dispatch(handlers: dict[str, Handler]) -> Handler:
    async def by_method(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)

    return by_method
