"""The one error chain's last link: every failure becomes a JSON error body."""

from __future__ import annotations

import errno
import logging
from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import assoc
from assoc.server.store import (
    AppExists,
    AppIdRequired,
    AppNotFound,
    BadMediaPath,
    ImportTooLarge,
    InvalidAppFile,
    MediaNotFound,
    StoredAppUnreadable,
    StoreUnavailable,
    VersionConflict,
)
from assoc.sources import UnsupportedFile

log = logging.getLogger("assoc.server")


class ApiError(Exception):
    """A failure the service answers with a status, an error code and a detail."""

    def __init__(
        self, status: int, code: str, detail: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers


def error_response(
    status: int, code: str, detail: str, headers: dict[str, str] | None = None
) -> Response:
    """The JSON error body: {"errors": [{"code", "title", "detail", "status"}]}."""
    body = {
        "errors": [
            {
                "code": code,
                "title": HTTPStatus(status).phrase,
                "detail": detail,
                "status": str(status),
            }
        ]
    }
    return JSONResponse(body, status_code=status, headers=headers)


# The disk (or the data dir's quota) is full: the request fails, the store stays as it was.
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

_HTTP_CODES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "UnprocessableEntity",
    429: "TooManyRequests",
}


# The status and code of each failure the store reports. Any other assoc.Error reaching the
# service is a fault of the service (500): every expected failure has its class here.
STORE_ERRORS: dict[type[assoc.Error], tuple[int, str]] = {
    AppNotFound: (404, "AppNotFound"),
    MediaNotFound: (404, "FileNotFound"),
    BadMediaPath: (400, "BadMediaPath"),
    UnsupportedFile: (415, "UnsupportedAppFile"),
    InvalidAppFile: (422, "InvalidAppFile"),
    ImportTooLarge: (413, "ImportTooLarge"),
    AppIdRequired: (422, "AppIdRequired"),
    AppExists: (409, "AppExists"),
    StoredAppUnreadable: (500, "StoredAppUnreadable"),
    StoreUnavailable: (503, "StoreUnavailable"),
    VersionConflict: (409, "VersionConflict"),
}


def _as_api_error(request: Request, exc: Exception) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, HTTPException):
        status = exc.status_code
        detail = exc.detail if exc.detail != HTTPStatus(status).phrase else ""
        if status == 404 and not detail:
            detail = f"no resource at {request.url.path}"
        elif status == 405 and not detail:
            detail = f"{request.method} is not allowed on {request.url.path}"
        code = _HTTP_CODES.get(status, "HttpError")
        return ApiError(status, code, detail, dict(exc.headers or {}) or None)
    for kind, (status, code) in STORE_ERRORS.items():
        if isinstance(exc, kind):
            if status == 500:  # the detail stays in the log
                log.error("%s: %s", code, exc)
                return ApiError(status, code, "the engine could not load this app")
            return ApiError(status, code, str(exc))
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        log.error("storage full: %s", exc)
        return ApiError(507, "InsufficientStorage", "the server has no space left to store this")
    log.exception("unexpected error", exc_info=exc)
    return ApiError(500, "InternalError", "the engine could not answer this request")


async def handle_error(request: Request, exc: Exception) -> Response:
    """Answers any exception a route raises with the JSON error body and a fitting status."""
    error = _as_api_error(request, exc)
    return error_response(error.status, error.code, error.detail, error.headers)


# Expected failures go through ExceptionMiddleware; `Exception` (500) through
# ServerErrorMiddleware, which also logs the traceback.
EXCEPTION_HANDLERS = {
    ApiError: handle_error,
    assoc.Error: handle_error,
    HTTPException: handle_error,
    Exception: handle_error,
}
