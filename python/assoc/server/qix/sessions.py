"""Engine sessions shared by sockets (`X-Qlik-Session`) and kept after their last socket for a
URL's `/ttl/N` seconds, so a client that reconnects finds them (`SESSION_ATTACHED`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from assoc.server.qix.ahead import LayoutsAhead
from assoc.server.qix.session import QixSession
from assoc.server.qix.urls import QixTarget

if TYPE_CHECKING:
    from assoc.server.qix.endpoint import QixConnection

SessionKey = tuple[str, str]
_log = logging.getLogger("assoc.qix")


def session_key(user: str, headers: Mapping[str, str], target: QixTarget) -> SessionKey | None:
    """Which engine session a socket joins: the `X-Qlik-Session` header's, else, on a URL with
    `/ttl/N`, the one of the user, URL identity and app; None for a session of its own."""
    chosen = headers.get("x-qlik-session", "")
    if chosen:
        return (user, "session:" + chosen)
    if target.ttl_seconds is not None:
        return (user, f"url:{target.identity}\n{target.app_id or ''}")
    return None


@dataclass(eq=False)
class KeptSession:
    """An engine session, the sockets on it, its request lock and its TTL timer."""

    key: SessionKey | None
    session: QixSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    peers: set[QixConnection] = field(default_factory=set)  # its open sockets
    expiry: asyncio.TimerHandle | None = None
    ahead: LayoutsAhead = field(default_factory=LayoutsAhead)  # its layouts made ahead


class SessionRegistry:
    """The shared and kept sessions; at most `max_kept` without a socket (the oldest kept one
    ends first)."""

    def __init__(self, max_kept: int) -> None:
        self.max_kept = max_kept
        self._sessions: dict[SessionKey, KeptSession] = {}
        self._kept: OrderedDict[SessionKey, KeptSession] = OrderedDict()  # no socket, by age
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(
        self,
        key: SessionKey | None,
        make: Callable[[], QixSession],
        connect: Callable[[KeptSession], QixConnection],
    ) -> tuple[QixConnection, bool]:
        """A new socket's connection (made by `connect`) on the session it works in, and
        whether that session existed (SESSION_ATTACHED)."""
        found = self._sessions.get(key) if key is not None else None
        attached = found is not None
        if found is not None:
            if found.expiry is not None:
                found.expiry.cancel()
                found.expiry = None
            self._kept.pop(key, None)  # type: ignore[arg-type]
            kept = found
        else:
            kept = KeptSession(key, make())
            if key is not None:
                self._sessions[key] = kept
        connection = connect(kept)
        kept.peers.add(connection)
        return connection, attached

    def detach(self, connection: QixConnection, ttl: int | None) -> bool:
        """A socket of the session closed: True when the session ends now (the caller closes
        it); else it stays for other sockets, or `ttl` seconds for a new one."""
        kept = connection.kept
        kept.peers.discard(connection)
        if kept.peers:
            return False
        if kept.key is None or not ttl or self.max_kept <= 0:
            self._forget(kept)
            return True
        loop = asyncio.get_running_loop()
        kept.expiry = loop.call_later(ttl, self._expire, kept)
        self._kept[kept.key] = kept
        while len(self._kept) > self.max_kept:
            _, oldest = self._kept.popitem(last=False)
            self._expire(oldest)
        return False

    def _forget(self, kept: KeptSession) -> None:
        if kept.key is not None and self._sessions.get(kept.key) is kept:
            del self._sessions[kept.key]
        if kept.key is not None:
            self._kept.pop(kept.key, None)

    def _expire(self, kept: KeptSession) -> None:
        """The session's time is up (or the kept ones are too many): it ends."""
        if kept.peers:
            return
        if kept.expiry is not None:
            kept.expiry.cancel()
            kept.expiry = None
        self._forget(kept)
        task = asyncio.get_running_loop().create_task(self._close(kept))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _close(kept: KeptSession) -> None:
        async with kept.lock:
            await kept.ahead.settle()
            try:
                await run_in_threadpool(kept.session.close)
            except Exception:
                _log.exception("QIX: a kept session did not close cleanly")

    def kept_sessions(self) -> list[KeptSession]:
        """The sessions kept without a socket."""
        return list(self._kept.values())

    def close_all(self) -> None:
        """Service shutdown: every kept session ends (their leases are released)."""
        for kept in list(self._kept.values()):
            if kept.expiry is not None:
                kept.expiry.cancel()
            with contextlib.suppress(Exception):
                kept.session.close()
        self._kept.clear()
        self._sessions.clear()
        for task in list(self._tasks):
            task.cancel()
