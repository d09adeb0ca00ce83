"""The QIX WebSocket endpoint: one engine session per socket, requests answered in order, engine
work in worker threads, apps deleted or replaced under a session closing its handles."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from assoc.server.auth import refuse
from assoc.server.errors import ApiError
from assoc.server.health import HealthMonitor
from assoc.server.metrics import Metrics
from assoc.server.qix.delta import DeltaBases
from assoc.server.qix.handles import ObjectTarget, Target
from assoc.server.qix.methods import Method
from assoc.server.qix.rpc import (
    GLOBAL_HANDLE,
    InvalidRequest,
    Request,
    RpcError,
    error_message,
    notice_message,
    notification,
    parse_request,
)
from assoc.server.qix.session import QixSession
from assoc.server.qix.sessions import KeptSession, SessionRegistry, session_key
from assoc.server.qix.urls import parse_qix_path
from assoc.server.qix.workload import EngineWork, work_bytes
from assoc.server.settings import Settings
from assoc.server.store import AppStore

MESSAGE_TOO_BIG = 1009
GOING_AWAY = 1001
RELOAD_METHODS = frozenset({"DoReload", "DoReloadEx"})
# Global methods answered at once, without the session's lock, even while a reload of the
# session runs (they read its progress or stop it, and change nothing else).
BESIDE_RELOAD = frozenset({"GetProgress", "CancelReload", "CancelRequest"})
# Text every frame of those methods, and of a reload, holds: others skip the parse that
# tells them apart.
_MARKERS = ('"GetProgress"', '"CancelReload"', '"CancelRequest"', '"DoReload')
_log = logging.getLogger("assoc.qix")
_NOT_QIX = "not a QIX path: QIX is served on / and [/<prefix>]/app[/<id>][/identity/<x>][/ttl/<n>]"


class QixConnection:
    """One socket and its session; `lock` keeps requests and engine notices in order."""

    def __init__(
        self,
        websocket: WebSocket,
        send: Send,
        session: QixSession,
        monitor: HealthMonitor,
        metrics: Metrics,
        engine: EngineWork,
        kept: KeptSession,
    ) -> None:
        self.websocket = websocket
        self.session = session
        self.engine = engine
        self._work: asyncio.Future[Any] | None = None  # the engine request being answered
        self.kept = kept
        kept.ahead.counts = metrics.qix_ahead
        self.lock = kept.lock  # the session's: its sockets' requests are answered one at a time
        self.metrics = metrics
        self._send = send
        self._count_call = monitor.count_call
        # What this socket's client keeps of delta answers (each socket of a shared session
        # its own), and whether its latest GetLayout asked for one.
        self.bases = DeltaBases()
        self.delta_layouts = False

    async def send(self, text: str) -> None:
        """Sends one message; the transport's write limit bounds what waits for a slow client."""
        await self._send({"type": "websocket.send", "text": text})

    async def handle(self, text: str) -> None:
        """Answers one frame."""
        session = self.session
        try:
            request = parse_request(text)
        except InvalidRequest as exc:
            await self.send(error_message(exc.request_id, exc))
            return
        except RpcError as exc:
            await self.send(error_message(None, exc))
            return
        self._count_call()
        try:
            target, method = session.resolve(request)
        except RpcError as exc:
            await self.send(error_message(request.id, exc))
            return
        # Metrics: QIX requests per implemented method (a bounded set of label values).
        self.metrics.count_qix(method.name)
        ahead = self.kept.ahead
        if method.name == "GetLayout" and isinstance(target, ObjectTarget):
            ahead.asked(request.handle)
            self.delta_layouts = request.delta
        made = await ahead.serve(request, self.bases)
        if made is not None:
            await self.send(made)
            return
        if ahead.keeps(session, request, target, method):
            await self._keeping_layouts(request, target, method)
            return
        if method.keeps_layouts and ahead.making:
            # Answered beside the layouts made ahead (it changes nothing they show).
            if method.engine:
                answer = await self._beside_layouts(request, target, method)
            else:
                answer = session.answer(request, target, method, self.bases)
            await self.send(answer)
            return
        await ahead.settle()
        session.notice = None
        if not method.engine:
            answer = session.answer(request, target, method, self.bases)
        elif method.name not in RELOAD_METHODS:
            answer = await self._engine_answer(request, target, method)
        else:
            before = session.last_reload
            answer = await self._engine_answer(request, target, method)
            last = session.last_reload
            if last is not None and last is not before:
                self.metrics.observe_reload(last.progress.error is None, last.millis / 1000)
        if not method.engine and session.notice is not None and session.notice[0]:
            # The changed objects' layouts start being made while the answer is sent (an
            # engine method's thread went on to make them already).
            bases = self.bases if self.delta_layouts else None
            ahead.start(self.engine, session, session.notice[0], bases)
        try:
            await self.send(answer)
        finally:
            ahead.answer_sent()
        await self._tell_peers()

    def kind(self, text: str) -> tuple[str, Request | None]:
        """("beside", the request) for a frame of BESIDE_RELOAD on the Global handle,
        ("reload", the request) for a reload, else ("", None): every other frame, and frames
        that do not parse, are answered in turn."""
        if not any(marker in text for marker in _MARKERS):
            return "", None
        try:
            request = parse_request(text)
        except (InvalidRequest, RpcError):
            return "", None
        if request.method in BESIDE_RELOAD and request.handle == GLOBAL_HANDLE:
            return "beside", request
        return ("reload", request) if request.method in RELOAD_METHODS else ("", None)

    async def answer_beside(self, request: Request) -> None:
        """Answers a request of BESIDE_RELOAD at once, without the session's lock."""
        self._count_call()
        try:
            target, method = self.session.resolve(request)
        except RpcError as exc:
            await self.send(error_message(request.id, exc))
            return
        self.metrics.count_qix(method.name)
        await self.send(self.session.beside(request, target, method, self.bases))

    async def reload(self, text: str, request: Request) -> None:
        """Answers a reload frame (`request` its parse) under the session's lock, as its socket
        reads on: the session's CancelReload, or CancelRequest of its id, stop it before its
        next statement."""
        async with self.lock:
            session = self.session
            session.reload_cancel.clear()
            session.reload_request_id = request.id
            try:
                await self.handle(text)
            finally:
                session.reload_request_id = None
                session.reload_cancel.clear()

    async def _keeping_layouts(self, request: Request, target: Target, method: Method) -> None:
        """Answers a request that leaves the layouts made ahead as they are (LayoutsAhead.keeps:
        accepting a selection, which sets a flag), on the loop; the layouts it changed are
        made again first."""
        session = self.session
        session.notice = None
        answer = session.answer(request, target, method, self.bases)
        if session.notice is not None and session.notice[0]:
            bases = self.bases if self.delta_layouts else None
            self.kept.ahead.remake(self.engine, session, session.notice[0], bases)
        await self.send(answer)
        await self._tell_peers()

    async def _tell_peers(self) -> None:
        """The session's other sockets learn which of its handles the answer changed or closed
        (a message without an id, as Qlik's engine sends): their charts refresh too."""
        notice, self.session.notice = self.session.notice, None
        if notice is None:
            return
        peers = [peer for peer in self.kept.peers if peer is not self]
        if not peers:
            return
        text = notice_message(*notice)
        for peer in peers:
            peer.bases.forget(notice[1])
            if peer.websocket.application_state is WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):  # that socket is closing: its own loop ends
                    await peer.send(text)

    async def _engine_answer(self, request: Request, target: Target, method: Method) -> str:
        """The answer of an engine method; the thread that makes it goes on to make the
        layouts the answer changed (ahead.py)."""
        bases = self.bases if self.delta_layouts else None
        work = functools.partial(self._answer, request, target, method)
        job, answered = self.kept.ahead.answer_then_make(self.engine, self.session, work, bases)
        self._work = job
        try:
            return await answered
        finally:
            self._work = None

    async def _beside_layouts(self, request: Request, target: Target, method: Method) -> str:
        """The answer of an engine method that keeps the layouts made ahead, made in an engine
        thread beside them."""
        work = self.engine.submit(self._answer, request, target, method)
        self._work = work
        try:
            return await work
        finally:
            self._work = None

    def cancel_work(self) -> bool:
        """Stops waiting for the engine request in progress (CancelledError in `handle`);
        True when there was one."""
        work = self._work
        return work is not None and work.cancel()

    def _answer(self, request: Request, target: Target, method: Method) -> str:
        """The answer of an engine method, run once its working memory is admitted."""
        try:
            with self.engine.admitted(work_bytes(target, method.name), method.name):
                return self.session.answer(request, target, method, self.bases)
        except RpcError as exc:
            return error_message(request.id, exc)

    async def app_changed(self, app_id: str) -> None:
        """Closes the session's document if it is `app_id`; tells the client the closed handles."""
        async with self.lock:
            await self.kept.ahead.settle()
            doc = self.session.doc
            if doc is None or doc.app_id != app_id:
                return
            if doc.lease is not None and self.session.store.is_current(doc.lease):
                return  # this session's own reload committed the version it holds
            closed = await run_in_threadpool(self.session.close_document)
            self.bases.forget(closed)
            if closed and self.websocket.application_state is WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):
                    await self.send(notice_message(close=closed))


class QixConnections:
    """The open sockets: told of deleted and replaced apps, closed at shutdown."""

    def __init__(self, store: AppStore, settings: Settings) -> None:
        self.stopping = False
        self._loop = asyncio.get_running_loop()
        self.engine = EngineWork(settings.qix_engine_threads, store.load_gate)
        self.sessions = SessionRegistry(settings.qix_max_kept_sessions)
        self._connections: set[QixConnection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._unsubscribe = store.subscribe(self._app_event)

    def add(self, connection: QixConnection) -> None:
        """Registers an open socket."""
        self._connections.add(connection)

    def discard(self, connection: QixConnection) -> None:
        """Forgets a closed socket."""
        self._connections.discard(connection)

    def _app_event(self, app_id: str, event: str) -> None:
        # Called from the thread that committed the change.
        with contextlib.suppress(RuntimeError):  # the loop already closed: nothing is open
            self._loop.call_soon_threadsafe(self._close_documents, app_id)

    def _close_documents(self, app_id: str) -> None:
        for kept in self.sessions.kept_sessions():
            doc = kept.session.doc
            if doc is not None and doc.app_id == app_id:
                task = self._loop.create_task(_close_kept_document(kept, app_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        for connection in list(self._connections):
            doc = connection.session.doc
            if doc is not None and doc.app_id == app_id:
                task = self._loop.create_task(connection.app_changed(app_id))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def going_away(self) -> None:
        """The service is stopping: engine requests in progress are given up (their sockets
        end without answers; the server closes them with 1012), in one log line."""
        if self.stopping:
            return
        self.stopping = True
        cancelled = sum(connection.cancel_work() for connection in list(self._connections))
        _log.log(
            logging.WARNING if cancelled else logging.INFO,
            "QIX: stopping with %d sockets open, %d requests in progress given up",
            len(self._connections),
            cancelled,
        )

    async def close_all(self) -> None:
        """Closes every socket (service shutdown) and stops listening to the store."""
        self._unsubscribe()
        for connection in list(self._connections):
            with contextlib.suppress(Exception):
                await connection.websocket.close(GOING_AWAY)
        for task in list(self._tasks):
            task.cancel()
        self.sessions.close_all()
        self.engine.shutdown()


async def _close_kept_document(kept: KeptSession, app_id: str) -> None:
    """Closes a kept session's document when its app was deleted or replaced."""
    async with kept.lock:
        await kept.ahead.settle()
        doc = kept.session.doc
        if doc is None or doc.app_id != app_id:
            return
        if doc.lease is not None and kept.session.store.is_current(doc.lease):
            return
        await run_in_threadpool(kept.session.close_document)


def _text_of(message: Mapping[str, Any]) -> str | None:
    """A binary frame's text (a text frame's is read inline)."""
    data = message.get("bytes")
    if data is None:
        return None
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd"  # answered as a parse error


class QixEndpoint:
    """A QIX session over one WebSocket, on any URL form of the protocol.

    An ASGI app (a route gives a class instance the ASGI callables as they are): the handshake
    and closing go through Starlette's WebSocket, the frames through the ASGI receive and send
    themselves, without the two layers of calls per message that WebSocket.receive and
    send_text add.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serves one socket until it closes."""
        websocket = WebSocket(scope, receive, send)
        state = scope["state"]
        settings: Settings = state["settings"]
        connections: QixConnections = state["qix"]
        # The URL names no app to open (OpenDoc does), but a path that is no QIX URL form
        # (a REST route's, say) is refused before the upgrade.
        target = parse_qix_path(scope["path"])
        if target is None:
            await refuse(scope, receive, send, ApiError(404, "NotFound", _NOT_QIX))
            return
        user = str(state.get("user", ""))
        groups = list(state.get("groups", []))
        key = session_key(user, websocket.headers, target)
        await websocket.accept()
        connection, attached = connections.sessions.attach(
            key,
            lambda: QixSession(state["store"], settings, user, groups),
            lambda kept: QixConnection(
                websocket,
                send,
                kept.session,
                state["monitor"],
                websocket.app.state.metrics,
                connections.engine,
                kept,
            ),
        )
        session = connection.session
        connections.add(connection)
        limit = settings.qix_max_message_bytes
        state_name = "SESSION_ATTACHED" if attached else "SESSION_CREATED"
        # A reload of this socket in progress: the frames after it wait for it, but those of
        # BESIDE_RELOAD (its progress, cancelling it) are answered meanwhile.
        reloading: asyncio.Task[None] | None = None
        try:
            await connection.send(notification("OnConnected", {"qSessionState": state_name}))
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    break  # websocket.disconnect
                text = message.get("text")
                if text is None:
                    text = _text_of(message)
                    if text is None:
                        continue
                if len(text) > limit:
                    await websocket.close(MESSAGE_TOO_BIG, f"messages are limited to {limit} bytes")
                    break
                kind, request = connection.kind(text)
                if kind == "beside" and request is not None:
                    await connection.answer_beside(request)
                    continue
                if reloading is not None:
                    task, reloading = reloading, None
                    await task
                if kind == "reload" and request is not None:
                    reloading = asyncio.create_task(connection.reload(text, request))
                    continue
                async with connection.lock:
                    await connection.handle(text)
            if reloading is not None:
                task, reloading = reloading, None
                await task
        except (WebSocketDisconnect, RuntimeError, OSError) as exc:
            _log.debug("QIX socket ended: %s", exc)
        except asyncio.CancelledError:
            if not connections.stopping:
                raise
            # Stopping: going_away gave up this socket's request (logged there).
        finally:
            if reloading is not None:  # the socket ended while its reload ran: it ends first
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await reloading
            connections.discard(connection)
            # Stopping, the session ends with the process: a request given up may still use it.
            ends = connections.sessions.detach(connection, target.ttl_seconds)
            if not connections.stopping:
                async with connection.lock:
                    await connection.kept.ahead.settle()  # a session kept is used later
                    if ends:
                        await run_in_threadpool(session.close)


def qix_routes() -> list[WebSocketRoute]:
    """The WebSocket route that takes every path (the URL forms of docs/qix.md)."""
    return [WebSocketRoute("/{path:path}", QixEndpoint())]
