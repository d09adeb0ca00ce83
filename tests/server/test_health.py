"""Health figures: CPU averaged over its window, memory, calls, the start time format."""

from __future__ import annotations

import datetime
import os
import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import assoc
from assoc.server import create_app
from assoc.server.health import CpuSampler, HealthMonitor, format_started, memory_figures
from assoc.server.settings import Settings


def test_started_format() -> None:
    moment = datetime.datetime(2026, 11, 22, 4, 35, 0, 123456, tzinfo=datetime.timezone.utc)
    assert format_started(moment) == "20261122T043500.123+0000"
    east = moment.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    assert format_started(east) == "20261122T043500.123+0000"


class FakeMachine:
    """CPU counters and a clock the test sets: (busy, total) ticks and seconds."""

    def __init__(self) -> None:
        self.busy = 0.0
        self.total = 0.0
        self.now = 0.0

    def ticks(self) -> tuple[float, float]:
        return self.busy, self.total

    def clock(self) -> float:
        return self.now

    def run(self, seconds: float, busy_share: float, cores: int = 4) -> None:
        self.now += seconds
        self.total += seconds * cores
        self.busy += seconds * cores * busy_share


def test_cpu_average_spans_the_window_and_forgets_older_samples() -> None:
    machine = FakeMachine()
    sampler = CpuSampler(window=10.0, interval=1.0, ticks=machine.ticks, clock=machine.clock)
    for _ in range(10):
        machine.run(1.0, busy_share=1.0)
        sampler.record()
    assert sampler.average_percent() == pytest.approx(100.0)
    for _ in range(5):
        machine.run(1.0, busy_share=0.0)
        sampler.record()
    # Half of the last ten seconds were busy.
    assert sampler.average_percent() == pytest.approx(50.0)
    for _ in range(10):
        machine.run(1.0, busy_share=0.25)
        sampler.record()
    assert sampler.average_percent() == pytest.approx(25.0)


def test_cpu_average_before_time_moves_is_zero() -> None:
    machine = FakeMachine()
    sampler = CpuSampler(window=5.0, ticks=machine.ticks, clock=machine.clock)
    assert sampler.average_percent() == 0.0


def test_saturation_follows_the_sampled_cpu_average(tmp_path: Path) -> None:
    machine = FakeMachine()
    settings = Settings(cpu_overload_threshold=80.0, ram_overload_threshold=100.0)
    monitor = HealthMonitor(settings, None)  # type: ignore[arg-type]
    monitor.cpu = CpuSampler(window=3.0, ticks=machine.ticks, clock=machine.clock)
    machine.run(3.0, busy_share=0.9)
    monitor.cpu.record()
    assert monitor.saturated()
    machine.run(3.0, busy_share=0.1)
    monitor.cpu.record()
    assert not monitor.saturated()


def _proc_status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(key)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_memory_figures_mean_what_the_engine_documents() -> None:
    figures = memory_figures()
    # committed: resident memory of this process; allocated: its virtual size, never less.
    assert figures.committed == pytest.approx(_proc_status_mb("VmRSS"), rel=0.2)
    assert figures.allocated == pytest.approx(_proc_status_mb("VmSize"), rel=0.2)
    assert figures.allocated >= figures.committed
    # free: no more than the physical memory available.
    with open("/proc/meminfo") as f:
        meminfo = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in f}
    assert 0.0 < figures.free <= meminfo["MemAvailable"] * 1.2
    assert 0.0 < figures.ram_used_percent < 100.0


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_committed_memory_grows_with_memory_the_process_touches() -> None:
    before = memory_figures()
    block = b"\x01" * (64 << 20)  # every page written
    after = memory_figures()
    assert after.committed - before.committed > 48
    assert after.allocated - before.allocated > 48
    del block


def test_count_call_is_safe_from_many_threads() -> None:
    monitor = HealthMonitor(Settings(), None)  # type: ignore[arg-type]

    def count() -> None:
        for _ in range(1000):
            monitor.count_call()

    workers = [threading.Thread(target=count) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert monitor.calls == 4000


def test_memory_budget_bounds_the_arrays_kept_for_reuse(tmp_path: Path) -> None:
    before = assoc.memory_blocks()["kept_limit"]
    try:
        with TestClient(create_app(Settings(memory_budget_mb=40), tmp_path / "a")):
            assert assoc.memory_blocks()["kept_limit"] == 10 << 20
        assoc.set_memory_blocks_kept(before)
        with TestClient(create_app(Settings(), tmp_path / "b")):
            assert assoc.memory_blocks()["kept_limit"] == before  # no budget: left as it is
    finally:
        assoc.set_memory_blocks_kept(before)
