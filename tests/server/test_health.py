"""Health figures: CPU averaged over its window, memory, the start time format."""

from __future__ import annotations

import datetime
import os
import threading
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import assoc
from assoc.server import create_app
from assoc.server.health import CpuSampler, format_started, memory_figures
from assoc.server.settings import Settings


def test_started_format() -> None:
    moment = datetime.datetime(2026, 11, 22, 4, 35, 0, 123456, tzinfo=datetime.timezone.utc)
    assert format_started(moment) == "20261122T043500.123+0000"
    east = moment.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    assert format_started(east) == "20261122T043500.123+0000"


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat")
def test_cpu_average_sees_a_busy_core() -> None:
    sampler = CpuSampler(window=1.0, interval=0.2)
    sampler.start()
    stop = time.monotonic() + 1.2

    def burn() -> None:
        while time.monotonic() < stop:
            pass

    worker = threading.Thread(target=burn)
    worker.start()
    worker.join()
    busy = sampler.average_percent()
    sampler.stop()
    # One busy core of os.cpu_count(): at least most of its share, whatever else runs.
    assert busy >= 0.6 * 100 / (os.cpu_count() or 1)
    assert busy <= 100.0


def test_memory_figures_are_megabytes() -> None:
    figures = memory_figures(3 * 1024 * 1024)
    assert figures.allocated == 3.0
    assert figures.committed > 1.0
    assert figures.free > 0.0
    assert 0.0 < figures.ram_used_percent < 100.0


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
