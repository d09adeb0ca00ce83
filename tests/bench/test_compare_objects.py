"""benchmarks/compare_objects.py's `--cpu`: the CPU time of each page step, the server's by
thread role (the names the service gives its threads) and the client's."""

from __future__ import annotations

import re
import sys

import pytest
from benchscripts import script_output

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")


def test_the_page_steps_cpu_is_told_by_server_thread_role() -> None:
    output = script_output(
        "compare_objects.py", "--rows", "20000", "--runs", "1", "--steps", "6", "--only", "page",
        "--cpu",
    )  # fmt: skip
    line = next(s for s in output.splitlines() if s.startswith("CPU per page step"))
    found = re.search(
        r"of (\d+) steps, ms\): the server ([\d.]+) \(event loop ([\d.]+), QIX engine threads "
        r"([\d.]+), engine pool ([\d.]+), other threads ([\d.]+)\); the client ([\d.]+); "
        r"the embedded page ([\d.]+)",
        line,
    )
    assert found is not None, line
    steps, server, loop, engine, pool, other, client, embedded = map(float, found.groups())
    assert steps == 6
    # The loop receives and sends every frame; an engine thread makes every answer and layout.
    assert loop > 0
    assert engine > 0
    assert client > 0
    assert embedded > 0
    # Medians of the parts need not add up to the median of the sums, but come close.
    assert 0.5 * server <= loop + engine + pool + other <= 1.5 * server


def test_the_page_in_nebula_s_order_is_timed() -> None:
    # The layouts asked in selection mode, then the confirmation and the bar chart's layout:
    # the step asserts each layout's selection-mode flag, so a wrong answer fails the run.
    output = script_output(
        "compare_objects.py", "--rows", "20000", "--runs", "1", "--steps", "4", "--only", "page",
        "--nebula-order",
    )  # fmt: skip
    assert "six-chart page: selection → six layouts → confirmed → the bar chart's" in output
