"""Health figures: CPU use sampled in the background, memory from /proc, engine counters."""

from __future__ import annotations

import collections
import datetime
import os
import resource
import threading
import time
from dataclasses import dataclass
from typing import Any

import assoc
from assoc.settings import Settings
from assoc.store import AppStore

_MB = 1024 * 1024


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


class CpuSampler:
    """Keeps CPU samples for the last `window` seconds; averages CPU use over that window."""

    def __init__(self, window: float, interval: float = 1.0) -> None:
        self.window = window
        self.interval = min(interval, window)
        self._use_proc = _read_cpu_ticks() is not None
        self._samples: collections.deque[tuple[float, float, float]] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._record()

    def _ticks(self) -> tuple[float, float]:
        ticks = _read_cpu_ticks() if self._use_proc else None
        return ticks if ticks is not None else _process_cpu_ticks()

    def _record(self) -> None:
        busy, total = self._ticks()
        now = time.monotonic()
        with self._lock:
            self._samples.append((now, busy, total))
            # Keep one sample at or beyond the window's start so averages span it whole.
            while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
                self._samples.popleft()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._record()

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


def _meminfo() -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                out[key] = float(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def _resident_bytes() -> float:
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def memory_figures(app_bytes: int) -> MemoryFigures:
    """committed = resident memory of the process, allocated = bytes of loaded apps, free =
    memory available to new work on the machine."""
    info = _meminfo()
    total = info.get("MemTotal", 0.0)
    available = info.get("MemAvailable", info.get("MemFree", 0.0))
    used_percent = 100.0 * (total - available) / total if total else 0.0
    return MemoryFigures(
        committed=round(_resident_bytes() / _MB, 6),
        allocated=round(app_bytes / _MB, 6),
        free=round(available / _MB, 6),
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
        self._service_calls = 0

    def count_call(self) -> None:
        """Counts one engine API request served by the service itself (a QIX request)."""
        self._service_calls += 1

    def start(self) -> None:
        """Starts CPU sampling."""
        self.cpu.start()

    def stop(self) -> None:
        """Stops CPU sampling."""
        self.cpu.stop()

    def saturated(self) -> bool:
        """True while CPU (averaged) or physical RAM in use is above its threshold."""
        return self._saturated(self.cpu.average_percent(), memory_figures(0).ram_used_percent)

    def _saturated(self, cpu_percent: float, ram_percent: float) -> bool:
        return (
            cpu_percent > self.settings.cpu_overload_threshold
            or ram_percent > self.settings.ram_overload_threshold
        )

    def status(self) -> dict[str, Any]:
        """HealthcheckStatus."""
        cpu_percent = self.cpu.average_percent()
        mem = memory_figures(self.store.loaded_bytes())
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
                "calls": counters["calls"] + self._service_calls,
                "selections": counters["selections"],
            },
            "users": counters["users"],
            "cache": counters["cache"],
            "saturated": self._saturated(cpu_percent, mem.ram_used_percent),
        }
