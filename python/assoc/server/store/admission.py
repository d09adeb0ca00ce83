"""Admission of loads (imports, and stored apps loading again after eviction) by the working
memory they will need: loads run together only while their estimates fit the capacity; the rest
wait their turn (first come, first served)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
import time
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from assoc.server.threads import name_os_thread

# Peak memory of a load above what it keeps, per byte of table file: the mapped file itself,
# the chunk parsers' local symbol tables and row arrays (a 20 MB CSV peaks ~50 MB above its
# start, measured with VmHWM), with a margin.
WORK_BYTES_PER_SOURCE_BYTE = 3


# Without a budget, concurrent loads may use this share of the physical memory.
NO_BUDGET_SHARE = 4
MIN_CAPACITY = 64 << 20


def load_capacity(memory_budget_bytes: int) -> int:
    """Working memory that concurrent loads may use together: half the budget (the apps hold
    the rest), or without one a quarter of the physical memory; 64 MiB at least."""
    if memory_budget_bytes > 0:
        return max(memory_budget_bytes // 2, MIN_CAPACITY)
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(physical // NO_BUDGET_SHARE, MIN_CAPACITY)


def load_work_bytes(sources: list[Path]) -> int:
    """The working memory a load of these files will need, by the bytes their tables unpack to
    (a package's entries as its directory declares them, else the file's size)."""
    size = 0
    for source in sources:
        with contextlib.suppress(OSError):
            size += source.stat().st_size
        with contextlib.suppress(Exception), zipfile.ZipFile(source) as archive:
            size += sum(info.file_size for info in archive.infolist()) - source.stat().st_size
    return size * WORK_BYTES_PER_SOURCE_BYTE


def _libc_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None on a C library without it."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
    return trim


_MALLOC_TRIM = _libc_malloc_trim()
TRIM_DELAY_S = 1.0  # idle time after which the gate hands free memory back


def release_free_memory() -> None:
    """Hands the allocator's free pages back to the system (glibc keeps them in its arenas
    otherwise, and a big import's working memory would stay in the process's RSS)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class LoadGate:
    """Lets loads run while the sum of their working-memory estimates fits `capacity`; a load
    larger than the capacity runs alone. Urgent loads (an app a request is waiting for) go
    before queued imports."""

    def __init__(self, capacity: int, trim_delay_s: float = TRIM_DELAY_S) -> None:
        self.capacity = capacity
        self._used = 0
        self._urgent: deque[object] = deque()
        self._queued: deque[object] = deque()
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)  # loads waiting for capacity
        self._idle = threading.Condition(self._lock)  # the trimmer waiting for a deadline
        self._trimmer_waits = False  # the trimmer waits without a deadline
        self.waited = 0  # loads that had to wait
        self.trims = 0  # times free memory was handed back
        self._trim_delay_s = trim_delay_s
        self._trim_at: float | None = None  # when free memory goes back, if still idle
        self._trimmer: threading.Thread | None = None

    def _next(self) -> object | None:
        return (self._urgent or self._queued or [None])[0]

    @contextlib.contextmanager
    def admit(self, need: int, *, urgent: bool = False) -> Iterator[None]:
        """Holds `need` bytes of the capacity for the block, waiting for them first."""
        need = min(max(need, 0), self.capacity)
        ticket = object()
        queue = self._urgent if urgent else self._queued
        with self._cond:
            queue.append(ticket)
            if self._next() is not ticket or self._used + need > self.capacity:
                self.waited += 1
            while self._next() is not ticket or self._used + need > self.capacity:
                self._cond.wait()
            queue.popleft()
            self._used += need
            self._trim_at = None  # work again: the pages it frees are about to be used
            self._cond.notify_all()  # the next in line may fit too
        try:
            yield
        finally:
            with self._cond:
                self._used -= need
                if self._used == 0:
                    self._trim_at = time.monotonic() + self._trim_delay_s
                    if self._trimmer is None:
                        self._trimmer = threading.Thread(
                            target=self._trim_when_idle, name="assoc-trim", daemon=True
                        )
                        self._trimmer.start()
                    elif self._trimmer_waits:
                        # It waits without a deadline: this is its new one. A trimmer that
                        # waits for an earlier one wakes then and finds this later one (a
                        # stream of requests wakes it once per delay, not once per request).
                        self._idle.notify()
                self._cond.notify_all()

    def _trim_when_idle(self) -> None:
        """Hands free memory back once the gate has stayed idle for the delay: after a big
        import, the process's RSS drops; a stream of requests keeps its pages (trimming after
        each made the next one fault its working memory in again)."""
        name_os_thread()
        while True:
            with self._lock:
                while True:
                    if self._trim_at is None:
                        self._trimmer_waits = True
                        self._idle.wait()
                        self._trimmer_waits = False
                        continue
                    wait = self._trim_at - time.monotonic()
                    if wait <= 0:
                        break
                    self._idle.wait(wait)
                self._trim_at = None
                if self._used:
                    continue
                self.trims += 1
            release_free_memory()
