"""The QIX URL forms: `[/<prefix>]/app/<id>[/identity/<x>][/ttl/<n>][?…]`, anything else no id."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

GLOBAL_ONLY_ID = "engineData"


@dataclass(frozen=True)
class QixTarget:
    """What a socket's URL says: the app id (None for none or engineData), identity, TTL."""

    app_id: str | None = None
    identity: str = ""
    ttl_seconds: int | None = None


def parse_qix_path(path: str) -> QixTarget:
    """The target of a WebSocket path (the query is not part of `path`)."""
    segments = [urllib.parse.unquote(s) for s in path.split("/") if s]
    if "app" not in segments:
        return QixTarget()
    rest = segments[segments.index("app") + 1 :]
    app_id: str | None = None
    if rest and rest[0] not in ("identity", "ttl"):
        app_id = rest.pop(0)
    identity, ttl = "", None
    while len(rest) >= 2 and rest[0] in ("identity", "ttl"):
        key, value = rest[0], rest[1]
        rest = rest[2:]
        if key == "identity":
            identity = value
        elif value.isdigit():
            ttl = int(value)
        else:
            return QixTarget()
    if rest:
        return QixTarget()
    if app_id == GLOBAL_ONLY_ID:
        app_id = None
    return QixTarget(app_id, identity, ttl)
