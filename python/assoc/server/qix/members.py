"""Members of the definitions clients send (qListObjectDef, qHyperCubeDef, …), type-checked:
a member of the wrong type answers error 8 naming it."""

from __future__ import annotations

from typing import Any

from assoc.server.qix.rpc import INVALID_PARAMETERS, RpcError


def flag(raw: dict[str, Any], name: str) -> bool:
    """A true/false member (absent: false)."""
    value = raw.get(name, False)
    if not isinstance(value, bool):
        raise RpcError(INVALID_PARAMETERS, name, "must be true or false")
    return value


def cell_limit(raw: Any, name: str, default: int) -> int:
    """A positive cell count (absent, 0 or below: `default`, as the .NET SDK's 0 means)."""
    if raw is None:
        return default
    if not isinstance(raw, int) or isinstance(raw, bool):
        raise RpcError(INVALID_PARAMETERS, name, "must be an integer")
    return raw if raw > 0 else default


def member_object(raw: Any, name: str) -> dict[str, Any]:
    """An object member (absent: empty)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RpcError(INVALID_PARAMETERS, name, "must be an object")
    return raw


def member_objects(raw: Any, name: str) -> list[dict[str, Any]]:
    """A list-of-objects member (absent: empty)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise RpcError(INVALID_PARAMETERS, name, "must be a list of objects")
    return raw


def string_list(raw: Any, name: str) -> list[str]:
    """A list-of-strings member (absent: empty)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise RpcError(INVALID_PARAMETERS, name, "must be a list of strings")
    return raw
