"""QIX engine work off the event loop: its own bounded threads (small REST requests never queue
behind it), each computing request admitted against the memory budget as loads are."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from assoc.server.qix.cubedef import HyperCubeDef
from assoc.server.qix.handles import ObjectTarget, Target
from assoc.server.qix.listobject import ListObjectDef
from assoc.server.qix.rpc import RpcError
from assoc.server.store.admission import LoadGate
from assoc.server.threads import name_os_thread

# Working memory of a hypercube per app row and column (the engine's row keys and codes, the
# cube's columns and their int64/float64 copies, a sort's scratch), and of a field's values
# the first time a layout shows them (texts, numbers and ranks in Python objects).
BYTES_PER_ROW_COLUMN = 32
BYTES_PER_FIELD_VALUE = 160
COMPUTING_METHODS = frozenset({"GetLayout", "GetHyperCubeData", "GetListObjectData"})
ENGINE_THREAD_NICE = 10
MEMORY_LIMIT_REACHED = 19  # LOCERR_GENERIC_MEMORY_LIMIT_REACHED
_MB = 1 << 20

T = TypeVar("T")


def work_bytes(target: Target, method: str) -> int:
    """The working memory `method` on `target` may need (0: too little to count)."""
    if method not in COMPUTING_METHODS or not isinstance(target, ObjectTarget):
        return 0
    facts = target.doc.facts
    rows = sum(int(t["no_of_rows"]) for t in facts.tables)
    need = 0
    for definition in target.obj.definitions.values():
        if isinstance(definition, HyperCubeDef):
            columns = len(definition.dimensions) + len(definition.measures)
            need += rows * max(columns, 1) * BYTES_PER_ROW_COLUMN
            fields = [d.field for d in definition.dimensions]
        elif isinstance(definition, ListObjectDef):
            fields = [definition.field]
        else:
            continue
        for name in fields:
            cardinal = int(facts.fields.get(name, {}).get("cardinal", 0))
            if not facts.has_values(name):
                need += cardinal * BYTES_PER_FIELD_VALUE
            need += cardinal * BYTES_PER_ROW_COLUMN
    return need


def _engine_thread() -> None:
    """An engine thread's start: named (`assoc-qix_N`), and given a lower CPU priority (Linux:
    nice is per thread), so the event loop answering probes and small requests is scheduled
    first on a busy machine. The engine's own worker threads keep theirs: the service starts
    them (see create_app)."""
    name_os_thread()
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), ENGINE_THREAD_NICE)


def default_threads() -> int:
    """Engine work threads by default: the logical cores, 2 at least."""
    return max(os.cpu_count() or 1, 2)


class Helper:
    """Work that an engine thread hands to a second one to share its own (the two take their
    parts from a common source). The helper may start late, when the engine threads are all
    busy: `finish()`, called by the engine thread once its own part is done, then calls it off
    if it has not started (the first thread has done everything meanwhile), else waits for it
    to end. So an engine thread never waits for work that has not started, and the pool cannot
    deadlock on helpers."""

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._func, self._args = func, args
        self._lock = threading.Lock()
        self._state = "queued"  # then "running" (until _ended is set) or "called off"
        self._ended = threading.Event()
        self._failed: BaseException | None = None

    def run(self) -> None:
        """In the helping thread."""
        with self._lock:
            if self._state != "queued":
                return
            self._state = "running"
        try:
            self._func(*self._args)
        except BaseException as exc:  # handed to the thread that waits for it
            self._failed = exc
        finally:
            self._ended.set()

    def finish(self) -> None:
        """Calls the helper off when it has not started, else waits for it to end; raises what
        it raised."""
        with self._lock:
            if self._state != "running":
                self._state = "called off"
                return
        self._ended.wait()
        if self._failed is not None:
            raise self._failed


class EngineWork:
    """Threads for QIX engine work, and the gate its working memory is admitted by."""

    def __init__(self, threads: int, gate: LoadGate) -> None:
        self.threads = threads or default_threads()
        self.gate = gate
        self._pool = ThreadPoolExecutor(
            self.threads, thread_name_prefix="assoc-qix", initializer=_engine_thread
        )

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """func(*args) in an engine thread. Cancelling the caller drops work not yet started;
        work that has started finishes in its thread (the engine cannot be interrupted)."""
        return await self.submit(func, *args)

    def submit(self, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """func(*args) handed to an engine thread now (not when the loop next runs a task);
        its future. Cancelling the future drops the work when it has not started."""
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._pool, functools.partial(func, *args))

    def helper(self, func: Callable[..., Any], *args: Any) -> Helper:
        """func(*args) in another engine thread when one is free, beside the calling engine
        thread's work; `finish()` of the answer ends it (see Helper)."""
        helper = Helper(func, args)
        if self.threads > 1:
            with contextlib.suppress(RuntimeError):  # shut down: nothing more is started
                self._pool.submit(helper.run)
        return helper

    @contextlib.contextmanager
    def admitted(self, need: int, method: str) -> Any:
        """Holds `need` bytes of the load gate's capacity for the block (the gate hands freed
        memory back to the system once it has stayed idle a moment); RpcError 19 when the
        work could never fit (the budget, not the moment, is too small)."""
        if need <= 0:
            yield
            return
        capacity = self.gate.capacity
        if need > capacity:
            raise RpcError(
                MEMORY_LIMIT_REACHED,
                method,
                f"this calculation needs about {need // _MB} MB of working memory; the memory "
                f"budget lets engine work use {capacity // _MB} MB (MemoryBudgetMB)",
            )
        with self.gate.admit(need, urgent=True):
            yield

    def shutdown(self) -> None:
        """Drops queued work; running work ends in its thread, unwaited."""
        self._pool.shutdown(wait=False, cancel_futures=True)
