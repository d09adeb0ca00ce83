"""The OpenAPI (Swagger 2.0) description of the routes this service answers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Route

import assoc
from assoc.attributes import BY_NAME
from assoc.server.nxapp import ATTRIBUTES
from assoc.server.settings import Settings

_LOCKED = ("/health", "/healthcheck")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


_S = {"type": "string"}
_B = {"type": "boolean"}
_I32 = {"type": "integer", "format": "int32"}
_I64 = {"type": "integer", "format": "int64"}
_D = {"type": "number", "format": "double"}
_STRINGS = {"type": "array", "items": _S}
# ISO 8601 UTC with milliseconds, or "" where unknown (so not Swagger's "date-time" format).
_DATE = {"type": "string", "pattern": r"^(|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z)$"}

DEFINITIONS: dict[str, Any] = {
    "HealthcheckStatus": _obj(
        version=_S,
        started=_S,
        mem=_ref("MemoryUsage"),
        cpu=_ref("CPUUsage"),
        session=_ref("SessionUsage"),
        apps=_ref("AppUsage"),
        users=_ref("UserUsage"),
        cache=_ref("CacheUsage"),
        saturated=_B,
    ),
    "MemoryUsage": _obj(committed=_D, allocated=_D, free=_D),
    "CPUUsage": _obj(total=_D),
    "SessionUsage": _obj(active=_I32, total=_I32),
    "AppUsage": _obj(
        active_docs=_STRINGS,
        loaded_docs=_STRINGS,
        in_memory_docs=_STRINGS,
        calls=_I32,
        selections=_I32,
    ),
    "UserUsage": _obj(active=_I32, total=_I32),
    "CacheUsage": _obj(hits=_I32, lookups=_I32, added=_I32, replaced=_I32, bytes_added=_I32),
    "FileData": {"type": "string", "format": "binary"},
    "JsonObject": {"type": "object"},
    "NxAppCreatePrivileges": _obj(resource=_S, canCreate=_B),
    "DataModelMetadata": _obj(
        reload_meta=_ref("LastReloadMetadata"),
        static_byte_size=_I64,
        fields={"type": "array", "items": _ref("FieldMetadata")},
        tables={"type": "array", "items": _ref("TableMetadata")},
    ),
    "LastReloadMetadata": _obj(cpu_time_spent_ms=_I64, hardware=_ref("HardwareMeta")),
    "HardwareMeta": _obj(logical_cores=_I32, total_memory=_I64),
    "FieldMetadata": _obj(
        name=_S,
        src_tables=_STRINGS,
        is_system=_B,
        is_hidden=_B,
        is_semantic=_B,
        distinct_only=_B,
        cardinal=_I32,
        total_count=_I64,
        is_locked=_B,
        always_one_selected=_B,
        is_numeric=_B,
        comment=_S,
        tags=_STRINGS,
        byte_size=_I64,
    ),
    "TableMetadata": _obj(
        name=_S,
        is_system=_B,
        is_semantic=_B,
        is_loose=_B,
        no_of_rows=_I64,
        no_of_fields=_I32,
        no_of_key_fields=_I32,
        comment=_S,
        byte_size=_I64,
    ),
    "Error": _obj(code=_S, title=_S, detail=_S, status=_S),
    "Errors": _obj(errors={"type": "array", "items": _ref("Error")}),
}

_NX_APP = {
    "12.207.0": {
        "NxApp": _obj(
            attributes=_ref("NxAttributes"),
            privileges=_STRINGS,
            create={"type": "array", "items": _ref("NxAppCreatePrivileges")},
        ),
    },
    "12.171.0": {
        "NxApp": _obj(appId=_S, attributes=_ref("NxAttributes"), meta=_ref("NxMeta")),
        "NxMeta": _obj(Name=_S),
    },
}


_KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": _S,
    "date": _DATE,
    "boolean": _B,
    "object": _ref("JsonObject"),
    "strings": _STRINGS,
}


def nx_attributes_schema(api_version: str) -> dict[str, Any]:
    """NxAttributes as `api_version` answers it, from the one attribute schema."""
    return _obj(**{name: _KIND_SCHEMAS[BY_NAME[name].kind] for name in ATTRIBUTES[api_version]})


def _param(name: str, where: str, description: str, required: bool = False) -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "in": where, "description": description, "type": "string"}
    if required or where == "path":
        p["required"] = True
    return p


_APP_ID = _param("appId", "path", "Identifier of the app.")
_MEDIA_PATH = _param("path", "path", "Path of the media file, relative to the media root.")
_BODY = {"name": "filedata", "in": "body", "required": True, "schema": _ref("FileData")}
_JSON = ["application/json"]
_BYTES = ["application/octet-stream"]
# A route that answers bytes answers its errors as JSON.
_BYTES_OR_ERRORS = [*_BYTES, "application/json"]


def _ok(schema: dict[str, Any] | None = None, *errors: int) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK"}}
    if schema is not None:
        responses["200"]["schema"] = schema
    for status in errors:
        responses[str(status)] = {"description": _ERROR_TEXT[status], "schema": _ref("Errors")}
    return responses


_ERROR_TEXT = {
    400: "Bad parameter",
    401: "Missing or invalid token",
    404: "Not found",
    408: "Body stalled for BodyReadTimeout seconds",
    413: "Body larger than MaxUploadBytes, or tables larger than one import may load",
    415: "Body is no kind of app file",
    422: "Body is not a valid app file",
    429: "Saturated (EnableLameDuckHealthCheck=1)",
    507: "No space left to store the body",
}

_IMPORT_PARAMS = [
    _BODY,
    _param("mode", "query", "NEW (default) or AUTOREPLACE (needs EFEMode=1); any case."),
]

OPERATIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/health"): {
        "description": "Checks if the engine is healthy (429 while saturated with "
        "EnableLameDuckHealthCheck=1).",
        "produces": _JSON,
        "responses": _ok(None, 429),
    },
    ("get", "/healthcheck"): {
        "description": "Basic status information about the running instance.",
        "produces": _JSON,
        "responses": _ok(_ref("HealthcheckStatus")),
    },
    ("post", "/v1/apps/import"): {
        "description": "Imports an app: an app package (ZIP), a QVD file or a CSV file, as the "
        "raw body or the multipart part 'filedata'.",
        "consumes": ["application/octet-stream", "multipart/form-data"],
        "produces": _JSON,
        "parameters": [*_IMPORT_PARAMS, _param("name", "query", "The name of the target app.")],
        "responses": _ok(_ref("NxApp"), 400, 408, 413, 415, 422, 507),
    },
    ("post", "/v1/apps/import/{name}"): {
        "description": "Imports an app under the name in the path.",
        "consumes": ["application/octet-stream", "multipart/form-data"],
        "produces": _JSON,
        "parameters": [*_IMPORT_PARAMS, _param("name", "path", "The name of the target app.")],
        "responses": _ok(_ref("NxApp"), 400, 408, 413, 415, 422, 507),
    },
    ("get", "/v1/apps"): {
        "description": "Lists every app (extension).",
        "produces": _JSON,
        "responses": _ok({"type": "array", "items": _ref("NxApp")}),
    },
    ("get", "/v1/apps/{appId}"): {
        "description": "The app's attributes and privileges (extension).",
        "produces": _JSON,
        "parameters": [_APP_ID],
        "responses": _ok(_ref("NxApp"), 404),
    },
    ("delete", "/v1/apps/{appId}"): {
        "description": "Deletes a specific app.",
        "produces": _JSON,
        "parameters": [_APP_ID],
        "responses": _ok(None, 404),
    },
    ("get", "/v1/apps/{appId}/data/metadata"): {
        "description": "The data model and reload statistics metadata of an app.",
        "produces": _JSON,
        "parameters": [_APP_ID],
        "responses": _ok(_ref("DataModelMetadata"), 404),
    },
    ("get", "/v1/apps/{appId}/export"): {
        "description": "The app as an app package that imports back to the same app (extension).",
        "produces": ["application/zip", "application/json"],
        "parameters": [_APP_ID],
        "responses": _ok({"type": "string", "format": "binary"}, 404),
    },
    ("get", "/v1/apps/{appId}/media/files/{path}"): {
        "description": "Media content from a file.",
        "produces": _BYTES_OR_ERRORS,
        "parameters": [_APP_ID, _MEDIA_PATH],
        "responses": _ok({"type": "string", "format": "binary"}, 400, 404),
    },
    ("put", "/v1/apps/{appId}/media/files/{path}"): {
        "description": "Stores the body as a media file (extension).",
        "consumes": _BYTES,
        "produces": _JSON,
        "parameters": [_APP_ID, _MEDIA_PATH, _BODY],
        "responses": _ok(None, 400, 404, 408, 413, 507),
    },
    ("delete", "/v1/apps/{appId}/media/files/{path}"): {
        "description": "Deletes a media file or a whole folder (extension).",
        "produces": _JSON,
        "parameters": [_APP_ID, _MEDIA_PATH],
        "responses": _ok(None, 400, 404),
    },
    ("get", "/v1/apps/{appId}/media/list"): {
        "description": "Lists the media root; see /v1/apps/{appId}/media/list/{path}.",
        "produces": _JSON,
        "parameters": [_APP_ID, _param("show", "query", "r/recursive, a/all, or flat.")],
        "responses": _ok(_STRINGS, 404),
    },
    ("get", "/v1/apps/{appId}/media/list/{path}"): {
        "description": "Lists media content under a folder, names relative to the media root, "
        "folders ending in '/'. show absent: files and empty folders of the folder; r or "
        "recursive: files of the whole tree; a or all: files and empty folders of the tree.",
        "produces": _JSON,
        "parameters": [
            _APP_ID,
            _param("path", "path", "Folder relative to the media root; empty for the root."),
            _param("show", "query", "r/recursive, a/all, or flat."),
        ],
        "responses": _ok(_STRINGS, 400, 404),
    },
    ("get", "/v1/apps/{appId}/media/thumbnail"): {
        "description": "Media content of the file currently used as the app thumbnail.",
        "produces": _BYTES_OR_ERRORS,
        "parameters": [_APP_ID],
        "responses": _ok({"type": "string", "format": "binary"}, 404),
    },
    ("get", "/openapi.json"): {
        "description": "This description.",
        "produces": _JSON,
        "responses": _ok({"type": "object"}),
    },
}


def route_operations(routes: Sequence[BaseRoute]) -> list[tuple[str, str]]:
    """(method, documented path) of every route in the schema, HEAD left out (routes outside
    the engine REST API, such as /metrics, are made with include_in_schema=False)."""
    out = []
    for route in routes:
        if isinstance(route, Route) and route.include_in_schema:
            path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path)
            out += [(m.lower(), path) for m in sorted(route.methods or ()) if m != "HEAD"]
    return out


def openapi_document(settings: Settings, routes: Sequence[BaseRoute]) -> dict[str, Any]:
    """Swagger 2.0 for exactly the given routes at the settings' ApiVersion."""
    paths: dict[str, dict[str, Any]] = {}
    for method, path in route_operations(routes):
        operation = dict(OPERATIONS[(method, path)])
        operation["x-qlik-stability"] = "locked" if path in _LOCKED else "experimental"
        paths.setdefault(path, {})[method] = operation
    security: dict[str, Any] = {}
    if settings.validate_json_web_tokens != "0":
        security = {
            "securityDefinitions": {
                "bearer": {"type": "apiKey", "name": "Authorization", "in": "header"}
            },
            "security": [{"bearer": []}],
        }
    return {
        "swagger": "2.0",
        "info": {
            "title": "assoc engine HTTP API",
            "version": settings.api_version,
            "x-assoc-version": assoc.__version__,
        },
        "schemes": ["http"],
        "paths": paths,
        "definitions": {
            **DEFINITIONS,
            **_NX_APP[settings.api_version],
            "NxAttributes": nx_attributes_schema(settings.api_version),
        },
        **security,
    }
