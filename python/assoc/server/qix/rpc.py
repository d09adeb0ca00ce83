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

import numpy as np

# JSON-RPC's own codes and the engine's LocalizedErrorCode values that v1 answers.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
GENERIC_NOT_FOUND = 2
ACCESS_DENIED = 5
INVALID_PARAMETERS = 8
NOT_IMPLEMENTED = 20
APP_ALREADY_EXISTS = 1000
APP_INVALID_NAME = 1001
APP_ALREADY_OPEN = 1002
APP_NOT_FOUND = 1003
APP_INVALID = 1007
HC_INVALID_OBJECT_STATE = 6002
HC_MODAL_OBJECT_ERROR = 6003
CALC_INVALID_DEF = 7000
CALC_EVAL_CONDITION_FAILED = 7005
PAGES_TOO_LARGE = 7009

GLOBAL_HANDLE = -1
MAX_FRAME_DEPTH = 128
MAX_PROPERTY_DEPTH = 100


class RpcError(Exception):
    """An error answer: the engine's code, the parameter it concerns and a message."""

    def __init__(self, code: int, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message} ({code})")
        self.code = code
        self.parameter = parameter
        self.message = message


class Request(NamedTuple):
    """One parsed request; `delta` when it asks for a delta answer (JSON-Patch operations)."""

    id: int | str | None
    handle: int
    method: str
    params: list[Any] | dict[str, Any] | None
    delta: bool = False


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


def _cut_deep(text: str) -> str | None:
    """`text` with every array or object nested deeper than MAX_FRAME_DEPTH replaced by a
    marker string; None when nothing nests that deep. Brackets inside strings do not count.
    Vectorized: a frame of many megabytes is cut without a loop per character."""
    data = text.encode("utf-8", "surrogatepass")
    # Escape sequences (a backslash and the byte after it) are neither quotes nor brackets.
    plain = np.frombuffer(_ESCAPE.sub(b"__", data), dtype=np.uint8)
    inside = np.logical_xor.accumulate(plain == ord('"'))  # within a string (or its open quote)
    opens = ((plain == ord("[")) | (plain == ord("{"))) & ~inside
    closes = ((plain == ord("]")) | (plain == ord("}"))) & ~inside
    depth = np.cumsum(opens.view(np.int8) - closes.view(np.int8), dtype=np.int32)  # after each
    if not depth.size or int(depth.max()) <= MAX_FRAME_DEPTH:
        return None
    starts = np.flatnonzero(opens & (depth == MAX_FRAME_DEPTH + 1)).tolist()
    ends = np.flatnonzero(closes & (depth == MAX_FRAME_DEPTH)).tolist()
    pieces, position, e = [], 0, 0
    for start in starts:
        if start < position:
            continue
        while e < len(ends) and ends[e] < start:
            e += 1
        pieces += [data[position:start], _DEEP_MARK]
        position = ends[e] + 1 if e < len(ends) else len(data)
    pieces.append(data[position:])
    return b"".join(pieces).decode("utf-8", "surrogatepass")


_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_DEEP_TOKEN = f"\ue000deep-{uuid.uuid4().hex}"
_DEEP_MARK = json.dumps(_DEEP_TOKEN).encode()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _is_text(value: str) -> bool:
    """False for a string holding a lone surrogate (a \\uD800 escape JSON lets through)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _all_text(value: Any) -> bool:
    """False when any string or key in a parsed value holds a lone surrogate."""
    try:
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_request(text: str | bytes) -> Request:
    """The request a frame holds; RpcError(-32700 / -32600) when it is not one, and
    InvalidRequest(-32602) for a request whose params nest too deep or hold a lone surrogate."""
    try:
        if not isinstance(text, str):
            text = text.decode("utf-8")
        too_deep = False
        # A frame with fewer brackets than the limit cannot nest deeper: only others are measured.
        if len(text) > MAX_FRAME_DEPTH and text.count("[") + text.count("{") > MAX_FRAME_DEPTH:
            cut = _cut_deep(text)
            if cut is not None:
                text, too_deep = cut, True
        message = _decode(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise RpcError(PARSE_ERROR, "", "Parse error") from None
    if type(message) is not dict:
        raise InvalidRequest(None)
    get = message.get
    request_id, method, handle, params = (
        get("id"),
        get("method"),
        get("handle", GLOBAL_HANDLE),
        get("params"),
    )
    # A lone surrogate can only come from a \\uD8xx escape: frames without one skip the checks.
    surrogates = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
    if type(request_id) not in _ID_TYPES or request_id == _DEEP_TOKEN:
        usable_id = None  # answered with id null
    elif surrogates and type(request_id) is str and not _is_text(request_id):
        usable_id = None
    else:
        usable_id = request_id
    # type() rather than isinstance(): a bool is not an id, a handle or a method.
    if (
        type(method) is not str
        or method == _DEEP_TOKEN
        or type(handle) is not int
        or (params is not None and type(params) not in _PARAMS_TYPES)
        or (request_id is not None and usable_id is None)
        or (surrogates and not _is_text(method))
    ):
        raise InvalidRequest(usable_id)
    if too_deep:
        message_text = f"Invalid Params: JSON nested deeper than {MAX_FRAME_DEPTH} levels"
        raise InvalidRequest(request_id, INVALID_PARAMS, "params", message_text)
    if surrogates and params is not None and not _all_text(params):
        message_text = "Invalid Params: a string holds a lone surrogate (not Unicode text)"
        raise InvalidRequest(request_id, INVALID_PARAMS, "params", message_text)
    return Request(request_id, handle, method, params, get("delta") is True)


class InvalidRequest(RpcError):
    """An error answered before the request runs (-32600 by default); keeps the request's id
    when it had one that can be echoed (else the answer's id is null)."""

    def __init__(
        self,
        request_id: int | str | None,
        code: int = INVALID_REQUEST,
        parameter: str = "",
        message: str = "Invalid Request",
    ) -> None:
        super().__init__(code, parameter, message)
        self.request_id = request_id


class RawJson:
    """JSON text made already (data pages from per-value fragments), put into answers as is;
    for an array, `items` may hold its items' texts (delta answers change it by item)."""

    __slots__ = ("items", "text")

    def __init__(self, text: str, items: Sequence[str] | None = None) -> None:
        self.text = text
        self.items = items


# Stands for a RawJson part while the rest of an answer is encoded; no data can hold it (a
# random value of this process). ASCII, as answers mostly are: a character beyond Latin-1 would
# make the encoded text, and every replace in it, two bytes a character (60x slower for a page).
_RAW_TOKEN = f"assoc-raw-{uuid.uuid4().hex}-"


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


_encode = _compiled(_ENCODER)
_encode_text: Callable[[str], str] = json.encoder.encode_basestring


def _dumps(message: dict[str, Any]) -> str:
    # One pass whether or not the message holds RawJson parts (layouts mostly do).
    _raw_parts.parts = []
    text = _encode(message)
    parts: list[str] = _raw_parts.parts
    _raw_parts.parts = []
    if not parts:
        return text
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
    delta: bool = False,
) -> str:
    """A success answer, with the handles that changed or closed; with `delta`, each member of
    `result` is a list of JSON-Patch operations (delta.py)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if delta:
        message["delta"] = True
    message["result"] = result
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


def notice_message(change: Sequence[int] = (), close: Sequence[int] = ()) -> str:
    """Handles changed or closed without a request of this socket: an app deleted under the
    session, or a request on another socket of a shared session."""
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if change:
        message["change"] = list(change)
    if close:
        message["close"] = list(close)
    return _dumps(message)


# Below this magnitude every integral double is exactly an integer JSON number.
_EXACT_INTEGERS = 2.0**53


def json_number(value: float) -> float | str:
    """A number as QIX carries it: a whole one as an integer (`"qNum":400`, as Qlik's engine
    writes it: shorter, and parsed faster than `400.0`), NaN and infinities as strings."""
    if math.isfinite(value):
        if value.is_integer() and -_EXACT_INTEGERS < value < _EXACT_INTEGERS:
            return int(value)
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def check_tree(value: Any, name: str, max_depth: int) -> None:
    """-32602 when a parameter's value nests deeper than `max_depth` (the value itself is level
    1) or holds a number JSON cannot carry (NaN, infinities: `NaN` or `1e400` in the frame).
    Walks without recursion, so any depth is answered; the path of what it refuses is made
    only then."""
    if _tree_fits(value, max_depth):
        return
    stack: list[tuple[Any, int, str]] = [(value, 1, name)]
    while stack:
        item, depth, path = stack.pop()
        if type(item) is float:
            if not math.isfinite(item):
                raise RpcError(INVALID_PARAMS, path, "Invalid Params: numbers must be finite")
            continue
        if type(item) is dict:
            children: Any = item.items()
        elif type(item) is list:
            children = enumerate(item)
        else:
            continue
        if depth > max_depth:
            message = f"Invalid Params: nested deeper than {max_depth} levels"
            raise RpcError(INVALID_PARAMS, name, message)
        stack.extend((child, depth + 1, f"{path}/{key}") for key, child in children)


def _tree_fits(value: Any, max_depth: int) -> bool:
    """check_tree's test, without the paths: no container deeper than `max_depth`, no float
    that is not finite."""
    if type(value) is float:
        return math.isfinite(value)
    stack: list[tuple[Any, int]] = [(value, 1)]
    isfinite = math.isfinite
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            children: Any = item.values()
        elif kind is list:
            children = item
        else:
            continue
        if depth > max_depth:
            return False
        below = depth + 1
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, below))
            elif kind is float and not isfinite(child):
                return False
    return True


# ---- parameters ------------------------------------------------------------------------

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return _is_int(v) or (isinstance(v, float) and math.isfinite(v))


CHECKS: dict[str, Check] = {
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "int": _is_int,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "ints": lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
    "objects": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "strs": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
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
