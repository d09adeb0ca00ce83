"""The JSON-RPC 2.0 envelope of QIX: requests, parameter binding, answers and error codes."""

from __future__ import annotations

import json
import json.scanner
import math
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

# JSON-RPC's own codes and the engine's LocalizedErrorCode values that v1 answers.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
GENERIC_NOT_FOUND = 2
INVALID_PARAMETERS = 8
NOT_IMPLEMENTED = 20
APP_ALREADY_OPEN = 1002
APP_NOT_FOUND = 1003
APP_INVALID = 1007
CALC_INVALID_DEF = 7000
PAGES_TOO_LARGE = 7009

GLOBAL_HANDLE = -1


class RpcError(Exception):
    """An error answer: the engine's code, the parameter it concerns and a message."""

    def __init__(self, code: int, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message} ({code})")
        self.code = code
        self.parameter = parameter
        self.message = message


class Request(NamedTuple):
    """One parsed request."""

    id: int | str | None
    handle: int
    method: str
    params: list[Any] | dict[str, Any] | None


_ID_TYPES = (int, str)
_PARAMS_TYPES = (list, dict)
_DECODER = json.JSONDecoder()
# The decoder's scanner: one JSON value from a position, without decode()'s two whitespace
# matches per message (clients send no whitespace around the object).
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]
_JSON_SPACE = " \t\n\r"


def _decode(text: str) -> Any:
    """The one JSON value `text` holds (ValueError when it holds anything else)."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return _DECODER.decode(text)  # leading whitespace, or no JSON at all: its own error
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        raise ValueError("extra data after the JSON value")
    return value


def parse_request(text: str | bytes) -> Request:
    """The request a frame holds; RpcError(-32700 / -32600) when it is not one."""
    try:
        message = _decode(text if isinstance(text, str) else text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RpcError(PARSE_ERROR, "", "Parse error") from None
    if type(message) is not dict:
        raise RpcError(INVALID_REQUEST, "", "Invalid Request")
    get = message.get
    request_id, method, handle, params = (
        get("id"),
        get("method"),
        get("handle", GLOBAL_HANDLE),
        get("params"),
    )
    # type() rather than isinstance(): a bool is not an id, a handle or a method.
    if (
        type(method) is not str
        or type(handle) is not int
        or (params is not None and type(params) not in _PARAMS_TYPES)
        or (request_id is not None and type(request_id) not in _ID_TYPES)
    ):
        raise InvalidRequest(request_id if type(request_id) in _ID_TYPES else None)
    return Request(request_id, handle, method, params)


class InvalidRequest(RpcError):
    """A JSON object that is not a request; keeps its id when it had a usable one."""

    def __init__(self, request_id: int | str | None) -> None:
        super().__init__(INVALID_REQUEST, "", "Invalid Request")
        self.request_id = request_id


class RawJson:
    """JSON text made already (data pages from per-value fragments), put into answers as is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


# Stands for a RawJson part while the rest of an answer is encoded; no data can hold it.
_RAW_TOKEN = f"\ue000raw-{uuid.uuid4().hex}-"


_RAW_PLACE = re.compile(f'"{re.escape(_RAW_TOKEN)}([0-9]+)"')
_raw_parts = threading.local()


def _placeholder(value: Any) -> str:
    if not isinstance(value, RawJson):
        raise TypeError(f"{type(value).__name__} is not JSON")
    parts: list[str] = _raw_parts.__dict__.setdefault("parts", [])
    parts.append(value.text)
    return f"{_RAW_TOKEN}{len(parts) - 1}"


# One encoder for every answer (json.dumps would build one per call).
_ENCODER = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_placeholder
)


_PLAIN_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _compiled(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """encoder.encode, with its C encoder made once rather than per call (it keeps no state
    between calls: no circular-reference markers, and answers are trees)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    try:
        chunks = make(
            None, encoder.default, json.encoder.encode_basestring,
            None, ":", ",", False, False, False,
        )  # fmt: skip
    except TypeError:  # another interpreter's signature
        return encoder.encode
    return lambda value: "".join(chunks(value, 0))


_encode_plain = _compiled(_PLAIN_ENCODER)
_encode = _compiled(_ENCODER)
_encode_text: Callable[[str], str] = json.encoder.encode_basestring


def _dumps(message: dict[str, Any]) -> str:
    try:
        return _encode_plain(message)
    except TypeError:
        pass  # it holds RawJson parts
    _raw_parts.parts = []
    text = _encode(message)
    parts: list[str] = _raw_parts.parts
    _raw_parts.parts = []
    if len(parts) == 1:
        return text.replace(f'"{_RAW_TOKEN}0"', parts[0], 1)
    # One pass for every part (a replace per part would read the text once per page).
    return _RAW_PLACE.sub(lambda found: parts[int(found.group(1))], text)


def encode_json(value: Any) -> str:
    """Compact JSON of a value (NaN refused), as answers carry it."""
    if type(value) is str:  # what JSONEncoder.encode does first, without the C encoder's call
        return _encode_text(value)
    return _encode(value)


def result_message(
    request_id: int | str | None,
    result: dict[str, Any],
    change: Sequence[int] = (),
    close: Sequence[int] = (),
) -> str:
    """A success answer, with the handles that changed or closed."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
    if change:
        message["change"] = list(change)
    if close:
        message["close"] = list(close)
    return _dumps(message)


def error_message(request_id: int | str | None, error: RpcError) -> str:
    """An error answer."""
    body = {"code": error.code, "parameter": error.parameter, "message": error.message}
    return _dumps({"jsonrpc": "2.0", "id": request_id, "error": body})


def notification(method: str, params: dict[str, Any]) -> str:
    """A message from the engine that answers no request."""
    return _dumps({"jsonrpc": "2.0", "method": method, "params": params})


def close_message(close: Sequence[int]) -> str:
    """Handles closed by the engine on its own (an app deleted under the session)."""
    return _dumps({"jsonrpc": "2.0", "close": list(close)})


def json_number(value: float) -> float | str:
    """A number as QIX carries it: NaN and infinities as strings."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


# ---- parameters ------------------------------------------------------------------------

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return _is_int(v) or isinstance(v, float)


CHECKS: dict[str, Check] = {
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": _is_int,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "ints": lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
    "objects": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "any": lambda v: True,
}


@dataclass(frozen=True)
class Param:
    """One in-parameter: its name, JSON type, and default (required when `required`)."""

    name: str
    kind: str
    default: Any = None
    required: bool = False


def bind_params(
    method: str, specs: Sequence[Param], raw: list[Any] | dict[str, Any] | None
) -> dict[str, Any]:
    """Parameter values by name from positional, named or absent params (-32602 on misfit)."""
    if not raw:
        raw = []
        if not specs:
            return {}
    if isinstance(raw, list):
        if len(raw) > len(specs):
            raise RpcError(INVALID_PARAMS, method, f"Invalid Params: at most {len(specs)} expected")
        given = {spec.name: value for spec, value in zip(specs, raw, strict=False)}
    else:
        names = {spec.name for spec in specs}
        unknown = sorted(set(raw) - names)
        if unknown:
            raise RpcError(INVALID_PARAMS, unknown[0], "Invalid Params: unknown parameter")
        given = raw
    bound: dict[str, Any] = {}
    for spec in specs:
        if spec.name in given:
            value = given[spec.name]
            if not CHECKS[spec.kind](value):
                raise RpcError(INVALID_PARAMS, spec.name, f"Invalid Params: expected {spec.kind}")
            bound[spec.name] = value
        elif spec.required:
            raise RpcError(INVALID_PARAMS, spec.name, "Invalid Params: missing parameter")
        else:
            bound[spec.name] = spec.default
    return bound
