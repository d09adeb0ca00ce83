"""Health figures: CPU use sampled in the background, memory from /proc, request and engine
counters."""

from __future__ import annotations

import collections
import datetime
import math
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import assoc
from assoc.server.settings import Settings
from assoc.server.store import AppStore
from assoc.server.threads import name_os_thread

_MB = 1024 * 1024
# Probes answer without credentials and are not counted as calls.
PROBE_PATHS = frozenset({"/health", "/healthcheck", "/metrics"})


def _read_cpu_ticks() -> tuple[float, float] | None:
    """(busy, total) CPU time of the whole machine from /proc/stat, or None without it."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [float(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)  # idle + iowait
    total = sum(ticks[:8])  # guest time is already counted in user
    return total - idle, total


def _process_cpu_ticks() -> tuple[float, float]:
    """(busy, total) CPU seconds of this process against all cores' wall time."""
    t = os.times()
    return t.user + t.system, time.monotonic() * (os.cpu_count() or 1)


def machine_cpu_ticks() -> tuple[float, float]:
    """(busy, total) CPU time of the machine, or of this process where /proc/stat is missing."""
    ticks = _read_cpu_ticks()
    return ticks if ticks is not None else _process_cpu_ticks()


class CpuSampler:
    """Keeps CPU samples for the last `window` seconds; averages CPU use over that window.

    `ticks` gives (busy, total) CPU time and `clock` the time now; both are arguments so that
    the average can be checked against known figures.
    """

    def __init__(
        self,
        window: float,
        interval: float = 1.0,
        ticks: Callable[[], tuple[float, float]] = machine_cpu_ticks,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window
        self.interval = min(interval, window)
        self._ticks = ticks
        self._clock = clock
        self._samples: collections.deque[tuple[float, float, float]] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.record()

    def record(self) -> None:
        """Takes one sample (the sampling thread does this every `interval` seconds)."""
        busy, total = self._ticks()
        now = self._clock()
        with self._lock:
            self._samples.append((now, busy, total))
            # Keep one sample at or beyond the window's start so averages span it whole.
            while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
                self._samples.popleft()

    def _run(self) -> None:
        name_os_thread()
        while not self._stop.wait(self.interval):
            self.record()

    def start(self) -> None:
        """Samples every `interval` seconds in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="assoc-cpu-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops the sampling thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def average_percent(self) -> float:
        """CPU use in percent averaged from the oldest kept sample until now."""
        busy, total = self._ticks()
        with self._lock:
            _, busy0, total0 = self._samples[0]
        if total <= total0:
            return 0.0
        return max(0.0, min(100.0, 100.0 * (busy - busy0) / (total - total0)))


@dataclass(frozen=True)
class MemoryFigures:
    """Process and machine memory in MB, and the share of physical RAM in use."""

    committed: float
    allocated: float
    free: float
    ram_used_percent: float


def _proc_table(path: str) -> dict[str, float]:
    """A /proc file of `Key:   value kB` lines as bytes by key (empty when unreadable)."""
    out: dict[str, float] = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    unit = 1024 if parts[1:2] == ["kB"] else 1
                    out[key] = float(parts[0]) * unit
    except OSError:
        pass
    return out


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _free_virtual_bytes(virtual: float, info: dict[str, float]) -> float:
    """Address space the process may still commit: its RLIMIT_AS, and the machine's commit
    limit when the kernel enforces one (vm.overcommit_memory=2); infinite when neither does."""
    free = math.inf
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        free = max(0.0, soft - virtual)
    if _read_int("/proc/sys/vm/overcommit_memory") == 2 and "CommitLimit" in info:
        free = min(free, max(0.0, info["CommitLimit"] - info.get("Committed_AS", 0.0)))
    return free


def memory_figures() -> MemoryFigures:
    """The engine's memory figures: committed = the process's resident memory, allocated = its
    virtual size (committed + reserved, never below committed), free = the smaller of free
    virtual and free physical memory."""
    info = _proc_table("/proc/meminfo")
    status = _proc_table("/proc/self/status")
    total = info.get("MemTotal", 0.0)
    available = info.get("MemAvailable", info.get("MemFree", 0.0))
    used_percent = 100.0 * (total - available) / total if total else 0.0
    resident = status.get("VmRSS")
    if resident is None:
        resident = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    virtual = max(status.get("VmSize", resident), resident)
    free = min(available, _free_virtual_bytes(virtual, info))
    return MemoryFigures(
        committed=round(resident / _MB, 6),
        allocated=round(virtual / _MB, 6),
        free=round(free / _MB, 6),
        ram_used_percent=used_percent,
    )


def format_started(moment: datetime.datetime) -> str:
    """A UTC time as the engine writes it: 20261122T043500.000+0000."""
    moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S.") + f"{moment.microsecond // 1000:03d}+0000"


class HealthMonitor:
    """Answers /health and /healthcheck from real figures of this process and machine."""

    def __init__(self, settings: Settings, store: AppStore) -> None:
        self.settings = settings
        self.store = store
        self.started = format_started(datetime.datetime.now(datetime.timezone.utc))
        self.cpu = CpuSampler(float(settings.cpu_overload_sample_time))
        self._calls = 0

    def count_call(self) -> None:
        """Counts one engine API request a client made (REST or QIX; not health probes). Called
        on the event loop only (the HTTP middleware, the QIX endpoint), so it takes no lock."""
        self._calls += 1

    @property
    def calls(self) -> int:
        """Engine API requests counted since start-up."""
        return self._calls

    def start(self) -> None:
        """Starts CPU sampling."""
        self.cpu.start()

    def stop(self) -> None:
        """Stops CPU sampling."""
        self.cpu.stop()

    def saturated(self) -> bool:
        """True while CPU (averaged) or physical RAM in use is above its threshold."""
        return self._saturated(self.cpu.average_percent(), memory_figures().ram_used_percent)

    def _saturated(self, cpu_percent: float, ram_percent: float) -> bool:
        return (
            cpu_percent > self.settings.cpu_overload_threshold
            or ram_percent > self.settings.ram_overload_threshold
        )

    def status(self) -> dict[str, Any]:
        """HealthcheckStatus."""
        cpu_percent = self.cpu.average_percent()
        mem = memory_figures()
        usage = self.store.usage()
        counters = assoc.engine_counters()
        return {
            "version": assoc.__version__,
            "started": self.started,
            "mem": {"committed": mem.committed, "allocated": mem.allocated, "free": mem.free},
            "cpu": {"total": round(cpu_percent, 3)},
            "session": counters["session"],
            "apps": {
                "active_docs": usage.active,
                "loaded_docs": usage.loaded,
                "in_memory_docs": usage.in_memory,
                "calls": self.calls,
                "selections": counters["selections"],
            },
            "users": counters["users"],
            "cache": counters["cache"],
            "saturated": self._saturated(cpu_percent, mem.ram_used_percent),
        }
