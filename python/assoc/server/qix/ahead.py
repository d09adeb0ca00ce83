"""Layouts made ahead. An answer that changes objects the client lays out (a selection, a patch)
is followed by their GetLayout requests, one round trip each (enigma.js asks on `change`). The
session starts making those layouts as soon as the answer is on its way (the engine thread that
made an engine method's answer goes on to make them: at once when the first starts with a cube,
else once the loop has sent the answer; after any other method an engine thread starts while the
answer is sent), while it travels and while the client reads the layouts before them; each
GetLayout that follows takes its layout as made. A request whose method `keeps_layouts` (it
changes nothing a layout shows: a getter, a GetLayout not made ahead) is answered beside that
work; any other request first waits for it to stop and drops what it made, so a layout made
ahead is always the one its own GetLayout would have made at that point: nothing can change
the session in between. The one change let through is EndSelections(true) of the object in
selection mode: a selection made in selection mode changes every chart at once (the client asks
their layouts then, or once the mode ends), and accepting it changes the modal object's layout
alone, which is made again first while the others made since the selection are kept.

When the socket whose answer started the work asks for its layouts as delta answers, each is
also diffed there against that socket's bases (delta.py); they become its bases only when the
answer is sent. Another socket, or bases that moved on meanwhile, get theirs made on serving."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assoc.server.metrics import LoopCounts
from assoc.server.qix.cubedef import HyperCubeDef
from assoc.server.qix.delta import DeltaBases, NotExpressible, Prepared
from assoc.server.qix.handles import ObjectTarget, Target
from assoc.server.qix.methods import Answer, Method
from assoc.server.qix.objects import GenericObject
from assoc.server.qix.rpc import Request, RpcError, bind_params, encode_json, result_message
from assoc.server.qix.session import QixSession
from assoc.server.qix.workload import EngineWork, work_bytes

# At most this many objects' layouts are made ahead after one change (the oldest asked first).
AHEAD_MAX = 16
# Seconds the engine thread that made an answer waits for the loop to send it before it makes
# the layouts that answer changed, when the first of them would hold the interpreter at once
# (a list object's page is built in Python): until then the loop needs the interpreter and a
# core, and the client can ask for no layout before the answer reaches it. A layout that
# starts with a cube starts at once: the cube is computed without the interpreter, and a
# thread that waited goes on only once the loop lets go of the interpreter (0.3-0.5 ms after
# the send, measured: docs/benchmarks-qix.md, nineteenth round).
SEND_WAIT = 0.002
# The start of an answer made with id null.
_NULL_ID = '{"jsonrpc":"2.0","id":null,'
_log = logging.getLogger("assoc.qix")


@dataclass
class Layout:
    """A layout made ahead: its answer, as text in full and / or as a delta answer prepared
    against one socket's bases (each with id null)."""

    session: QixSession
    method: Method
    answer: Answer
    text: str | None = None
    bases: DeltaBases | None = None
    prepared: Prepared | None = None
    delta_text: str | None = None

    def full(self, request: Request) -> str:
        """The answer in full."""
        if self.text is None:
            asked = _request(request.handle)
            self.text = self.session.message(asked, self.method, self.answer, None)
        return _with_id(self.text, request.id)

    def delta(self, request: Request, bases: DeltaBases) -> str:
        """The delta answer against `bases` (which then hold this layout)."""
        prepared = self.prepared
        if (
            prepared is not None
            and self.delta_text is not None
            and self.bases is bases
            and bases.still_fits(prepared)
        ):
            bases.commit(prepared)
            return _with_id(self.delta_text, request.id)
        asked = _request(request.handle, delta=True)
        return _with_id(self.session.message(asked, self.method, self.answer, bases), request.id)


Made = dict[int, "asyncio.Future[Layout | None]"]


def _request(handle: int, delta: bool = False) -> Request:
    return Request(None, handle, "GetLayout", None, delta)


def _with_id(text: str, request_id: int | str | None) -> str:
    """An answer made with id null, given the request's id."""
    if request_id is None:
        return text
    return '{"jsonrpc":"2.0","id":' + encode_json(request_id) + "," + text[len(_NULL_ID) :]


class LayoutsAhead:
    """One session's layouts made ahead, and the objects its clients lay out."""

    def __init__(self) -> None:
        # Object handles by their latest GetLayout, oldest first: the order of making.
        self.laid_out: OrderedDict[int, None] = OrderedDict()
        # Handles an answer changed since their latest GetLayout: a change that made nothing
        # ahead (BeginSelections, or one while layouts were made) leaves its objects here for
        # the next plan.
        self.stale: set[int] = set()
        self._made: Made = {}
        self._jobs: list[asyncio.Future[None]] = []  # the work making layouts now
        self._stop = False  # read by the engine thread between layouts
        # The plan the engine threads take layouts from while they take them (a remade layout
        # joins it), its futures, and each handle's remakes: a layout made before its object
        # changed is not delivered.
        self._lock = threading.Lock()
        self._left: deque[int] | None = None
        self._left_made: Made = {}
        self._remade: dict[int, int] = {}
        self._sent = threading.Event()  # the answer that started the work was sent
        self.counts: LoopCounts | None = None  # the service's count of planned and served

    def asked(self, handle: int) -> None:
        """A GetLayout of an object handle was asked."""
        self.laid_out[handle] = None
        self.laid_out.move_to_end(handle)
        self.stale.discard(handle)

    def start(
        self,
        engine: EngineWork,
        session: QixSession,
        changed: Sequence[int],
        bases: DeltaBases | None = None,
    ) -> None:
        """Starts making the layouts of the objects laid out before that this answer or an
        earlier one changed since (`_plan`), as delta answers against `bases` when given. Call
        it with nothing made ahead (after `settle`)."""
        if self._jobs:
            self.stale.update(changed)
            return
        plan = self._plan(session, changed)
        if not plan:
            return
        loop = asyncio.get_running_loop()
        made: Made = {handle: loop.create_future() for handle in plan}
        self._install(plan, made)
        # In an engine thread from now on: before the answer that started it is sent.
        self._submit(engine, session, plan, made, bases)

    def _submit(
        self,
        engine: EngineWork,
        session: QixSession,
        plan: list[int],
        made: Made,
        bases: DeltaBases | None,
    ) -> None:
        """On the loop: `_make` of the plan in an engine thread, as one of the jobs `settle`
        waits for."""
        loop = asyncio.get_running_loop()
        job = engine.submit(self._make, engine, session, plan, made, loop, bases)
        job.add_done_callback(lambda done: _ended(done, made))
        self._jobs.append(job)

    @property
    def making(self) -> bool:
        """Whether layouts are being made ahead or kept for their GetLayout (until `settle`)."""
        return bool(self._jobs)

    def keeps(self, session: QixSession, request: Request, target: Target, method: Method) -> bool:
        """Whether a request leaves the layouts made ahead as they are: EndSelections(true) of
        the object in selection mode while layouts are made or kept (it changes that object's
        layout alone: `remake` it after the answer)."""
        if not self._jobs or method.name != "EndSelections":
            return False
        doc = session.doc
        if doc is None or doc.modal is None or not isinstance(target, ObjectTarget):
            return False
        if doc.modal.object_id != target.obj.object_id:
            return False
        try:
            return bool(bind_params(method.name, method.params, request.params)["qAccept"])
        except RpcError:
            return False

    def remake(
        self,
        engine: EngineWork,
        session: QixSession,
        changed: Sequence[int],
        bases: DeltaBases | None = None,
    ) -> None:
        """After a request `keeps` let through: the layouts it changed are made again, before
        those not made yet; the layouts made of them before are not answered."""
        again = [h for h in changed if h in self.laid_out]
        self.stale.update(again)
        if not again:
            return
        loop = asyncio.get_running_loop()
        fresh: Made = {handle: loop.create_future() for handle in again}
        self._count("planned", len(again))
        with self._lock:
            for handle in again:
                self._remade[handle] = self._remade.get(handle, 0) + 1
                self._made.pop(handle, None)
            self._made.update(fresh)
            left = self._left
            if left is not None:  # engine threads take layouts from it: these first
                for handle in again:
                    while handle in left:
                        left.remove(handle)
                self._left_made.update(fresh)
                left.extendleft(reversed(again))
                return
        self._submit(engine, session, again, fresh, bases)

    def answer_then_make(
        self,
        engine: EngineWork,
        session: QixSession,
        work: Callable[[], str],
        bases: DeltaBases | None = None,
    ) -> tuple[asyncio.Future[None], asyncio.Future[str]]:
        """Runs `work` (an engine request's answer) in an engine thread, which then goes on to
        make the layouts that answer changed, as `start` would, once `answer_sent` is called:
        the first cube starts without the event loop handing the work to a thread again. The
        whole work and the answer, as futures. Call it with nothing made ahead (after
        `settle`)."""
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[str] = loop.create_future()
        made: Made = {}
        self._made, self._stop = {}, False
        self._sent = sent = threading.Event()
        job = engine.submit(
            self._answer_and_make, engine, session, work, answered, made, loop, bases, sent
        )
        job.add_done_callback(lambda done: _ended(done, made, answered))
        answered.add_done_callback(lambda done: _given_up(done, sent))
        self._jobs = [job]
        return job, answered

    def answer_sent(self) -> None:
        """The answer of `answer_then_make` was sent (or will not be): the layouts it changed
        are made from now on."""
        sent = self._sent
        if not sent.is_set():  # set() takes the event's lock and wakes waiters even when set
            sent.set()

    def _plan(self, session: QixSession, changed: Sequence[int]) -> list[int]:
        """The objects to lay out ahead after `changed` (the session's lock held, by the loop
        or by the engine thread it waits for), oldest asked first; it forgets closed ones. In
        selection mode, a change of the modal object alone (BeginSelections) makes nothing
        ahead, since a selection follows at once; after a selection the modal object comes
        last, as accepting the selection changes its layout again."""
        self.stale.update(changed)
        doc = session.doc
        if doc is None:
            return []
        open_now = set(session.handles.open_handles())
        for handle in [h for h in self.laid_out if h not in open_now]:
            del self.laid_out[handle]  # closed
        self.stale &= open_now
        plan = [h for h in self.laid_out if h in self.stale]
        if doc.modal is not None:
            modal_id = doc.modal.object_id
            if all(_object_id(session, h) == modal_id for h in changed):
                return []
            modal = {h for h in plan if _object_id(session, h) == modal_id}
            plan = [h for h in plan if h not in modal] + [h for h in plan if h in modal]
        return plan[:AHEAD_MAX]

    def _install(self, plan: list[int], made: Made) -> None:
        """On the loop: the plan's futures, which its GetLayout requests take."""
        self._count("planned", len(plan))
        loop = asyncio.get_running_loop()
        for handle in plan:
            if handle not in made:
                made[handle] = loop.create_future()
        self._made, self._stop = dict(made), False  # served ones leave this copy only

    def _answer_and_make(
        self,
        engine: EngineWork,
        session: QixSession,
        work: Callable[[], str],
        answered: asyncio.Future[str],
        made: Made,
        loop: asyncio.AbstractEventLoop,
        bases: DeltaBases | None,
        sent: threading.Event,
    ) -> None:
        """In an engine thread: the answer, handed to the loop with the plan it leads to (its
        futures exist before any of its layouts is delivered), then the plan's layouts: at once
        when the first starts with a cube outside selection mode, else once the loop has sent
        the answer (SEND_WAIT at most)."""
        text = work()
        notice = session.notice
        plan = self._plan(session, notice[0]) if notice is not None and notice[0] else []
        loop.call_soon_threadsafe(_answered, self, plan, made, answered, text)
        if plan and (_in_selection_mode(session) or not _starts_with_a_cube(session, plan[0])):
            sent.wait(SEND_WAIT)
        self._make(engine, session, plan, made, loop, bases)

    def _make(
        self,
        engine: EngineWork,
        session: QixSession,
        plan: list[int],
        made: Made,
        loop: asyncio.AbstractEventLoop,
        bases: DeltaBases | None,
    ) -> None:
        """In an engine thread: each layout in turn, handed to the loop as soon as it is made.
        With a second engine thread free, it takes the next layout of the plan as this one
        works on one: one object's cube is computed without the interpreter while the other's
        layout is built in Python. It returns once both have stopped."""
        left = deque(plan)
        with self._lock:
            self._left, self._left_made = left, made
        helper = None
        if len(plan) > 1:
            helper = engine.helper(self._make_from, left, engine, session, made, loop, bases)
        try:
            self._make_from(left, engine, session, made, loop, bases)
        finally:
            if helper is not None:
                helper.finish()

    def _make_from(
        self,
        left: deque[int],
        engine: EngineWork,
        session: QixSession,
        made: Made,
        loop: asyncio.AbstractEventLoop,
        bases: DeltaBases | None,
    ) -> None:
        """In an engine thread: the plan's next layout while there is one left (once none is,
        a layout remade later is made by work of its own)."""
        while not self._stop:
            with self._lock:
                if not left:
                    if self._left is left:
                        self._left = None
                    return
                handle = left.popleft()
                remade = self._remade.get(handle, 0)
            layout = _layout(engine, session, handle, bases)
            loop.call_soon_threadsafe(self._deliver, made, handle, remade, layout)

    def _deliver(self, made: Made, handle: int, remade: int, layout: Layout | None) -> None:
        """On the loop: a layout made, unless its object was remade since it was begun."""
        future = made.get(handle)  # none when the request that planned it was given up
        if future is not None and self._remade.get(handle, 0) == remade:
            _deliver(future, layout)

    async def serve(self, request: Request, bases: DeltaBases | None = None) -> str | None:
        """The answer to a GetLayout whose layout is made ahead (waiting for it when it is being
        made), a delta answer against `bases` when the request asks for one; None for any
        other request, or when it could not be made (the request then runs as usual, after
        `settle`)."""
        if request.method != "GetLayout" or request.params:
            return None
        future = self._made.pop(request.handle, None)
        if future is None:
            return None
        layout = await future
        if layout is None:
            return None
        self._count("served")
        if request.delta and bases is not None:
            return layout.delta(request, bases)
        return layout.full(request)

    def _count(self, outcome: str, n: int = 1) -> None:
        if self.counts is not None and n:
            self.counts.count(outcome, n)

    async def settle(self) -> None:
        """Stops making layouts ahead (the one being made finishes) and drops those made: call
        it before anything else uses the session. Objects whose layouts were not asked after
        the change are made ahead no more until they are asked again."""
        jobs = self._jobs
        if not jobs:
            return
        self._stop = True
        for handle in self._made:
            self.laid_out.pop(handle, None)
        self._made = {}
        running = {job for job in jobs if not job.done()}
        if running:
            await asyncio.wait(running)
        self._jobs = []
        with self._lock:
            self._left, self._left_made = None, {}
            self._remade.clear()


def _in_selection_mode(session: QixSession) -> bool:
    """Whether an object of the session's document is in selection mode: the client's next
    request then ends it (or selects again), and the layouts wait for the answer's send."""
    doc = session.doc
    return doc is not None and doc.modal is not None


def _object(session: QixSession, handle: int) -> GenericObject | None:
    """The object an open handle names (None for any other handle)."""
    try:
        target = session.handles.get(handle)
    except RpcError:
        return None
    return target.obj if isinstance(target, ObjectTarget) else None


def _object_id(session: QixSession, handle: int) -> str | None:
    obj = _object(session, handle)
    return obj.object_id if obj is not None else None


def _starts_with_a_cube(session: QixSession, handle: int) -> bool:
    """Whether an object's layout starts with engine work done without the interpreter: every
    definition in it is a hypercube (a chart, not a list object or properties alone)."""
    obj = _object(session, handle)
    if obj is None:
        return False
    definitions = obj.definitions.values()
    return bool(definitions) and all(isinstance(d, HyperCubeDef) for d in definitions)


def _layout(
    engine: EngineWork, session: QixSession, handle: int, bases: DeltaBases | None
) -> Layout | None:
    """GetLayout's answer for an object handle, made as the request would make it (admitted
    against the memory budget): as a delta answer against `bases` when given and it can be
    one, else in full; None when it would answer an error."""
    try:
        target = session.handles.get(handle)
        if not isinstance(target, ObjectTarget):
            return None
        method = session.method_of(target, "GetLayout")
        with engine.admitted(work_bytes(target, "GetLayout"), "GetLayout"):
            answer = session.outcome(_request(handle), target, method)
    except RpcError:
        return None
    if isinstance(answer, str):
        return None
    layout = Layout(session, method, answer)
    try:
        if bases is not None:
            try:
                layout.prepared = bases.prepare(handle, method.name, answer.result)
            except NotExpressible:
                pass
            else:
                layout.bases = bases
                layout.delta_text = result_message(None, layout.prepared.result, delta=True)
                return layout
        layout.text = result_message(None, answer.result)
    except ValueError:  # a number JSON cannot carry: the request answers its error
        return None
    return layout


def _deliver(future: asyncio.Future[Layout | None], layout: Layout | None) -> None:
    if not future.done():
        future.set_result(layout)


def _answered(
    ahead: LayoutsAhead, plan: list[int], made: Made, answered: asyncio.Future[str], text: str
) -> None:
    """On the loop, before any layout of the plan is delivered: the plan's futures, then the
    answer (none when the request was given up meanwhile: its layouts are never asked)."""
    if answered.done():
        return
    ahead._install(plan, made)
    answered.set_result(text)


def _given_up(answered: asyncio.Future[str], sent: threading.Event) -> None:
    """A request given up has no answer to send: its layouts are made at once."""
    if answered.cancelled():
        sent.set()


def _ended(
    job: asyncio.Future[None], made: Made, answered: asyncio.Future[str] | None = None
) -> None:
    """The work ended: the layouts it did not make are not made; an answer it did not give
    ends as the work did (cancelled, or its exception)."""
    for future in made.values():
        _deliver(future, None)
    failed = None if job.cancelled() else job.exception()
    if answered is not None and not answered.done():
        if failed is None:
            answered.cancel()
        else:
            answered.set_exception(failed)
    elif failed is not None:
        _log.error("QIX: making layouts ahead failed", exc_info=failed)
