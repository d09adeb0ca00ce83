"""The QIX URL forms: `/` and `[/<prefix>]/app[/<id>][/identity/<x>][/ttl/<n>][?…]`."""

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


def _after_app(rest: list[str]) -> QixTarget | None:
    """The target named by the segments after an `app` segment, or None when they are no form."""
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
            return None
    if rest:
        return None
    if app_id == GLOBAL_ONLY_ID:
        app_id = None
    return QixTarget(app_id, identity, ttl)


def parse_qix_path(path: str) -> QixTarget | None:
    """The target of a WebSocket path (the query is not part of `path`); None for a path that
    is not a QIX URL form (the upgrade is refused)."""
    segments = [urllib.parse.unquote(s) for s in path.split("/") if s]
    if not segments:
        return QixTarget()  # bare `/`
    # The prefix is free: any `app` segment may start the form (`/app/app/x` is app `app`
    # then junk, or prefix `app` and app `x`).
    for at, segment in enumerate(segments):
        if segment == "app":
            target = _after_app(segments[at + 1 :])
            if target is not None:
                return target
    return None
