"""The load gate: concurrent loads stay within its capacity, queue in order, and urgent loads
(an app a request waits for) go before queued imports."""

from __future__ import annotations

import threading
import time

from assoc.server.store.admission import LoadGate, load_capacity


def test_loads_beyond_the_capacity_wait_their_turn() -> None:
    gate = LoadGate(100)
    order: list[str] = []
    running: list[int] = []
    peak = [0]
    lock = threading.Lock()
    first_in = threading.Event()
    release = threading.Event()

    def load(name: str, need: int, urgent: bool = False) -> None:
        with gate.admit(need, urgent=urgent):
            with lock:
                order.append(name)
                running.append(need)
                peak[0] = max(peak[0], sum(running))
            first_in.set()
            release.wait(10)
            with lock:
                running.remove(need)

    big = threading.Thread(target=load, args=("big", 80))
    big.start()
    assert first_in.wait(5)
    waiting = [
        threading.Thread(target=load, args=("import", 60)),
        threading.Thread(target=load, args=("reload", 30, True)),
    ]
    for thread in waiting:
        thread.start()
        time.sleep(0.1)  # queued in this order
    assert order == ["big"]
    release.set()
    for thread in [big, *waiting]:
        thread.join(10)
    assert order == ["big", "reload", "import"]  # the urgent reload went first
    assert peak[0] <= 100
    assert gate.waited == 2


def test_a_load_larger_than_the_capacity_runs_alone() -> None:
    gate = LoadGate(100)
    with gate.admit(10**9):
        pass
    with gate.admit(100), gate.admit(0):
        pass


def test_capacity_is_half_the_budget_with_a_floor() -> None:
    assert load_capacity(200 << 20) == 100 << 20
    assert load_capacity(1) == 64 << 20
    assert load_capacity(0) >= 64 << 20


def _wait_while_trims(gate: LoadGate, n: int) -> None:
    """Waits (5 s at most) while the gate has handed memory back `n` times."""
    deadline = time.monotonic() + 5
    while gate.trims == n and time.monotonic() < deadline:
        time.sleep(0.05)


def test_free_memory_goes_back_once_the_gate_stays_idle() -> None:
    gate = LoadGate(100, trim_delay_s=0.3)
    # A stream of work with short gaps: nothing is handed back in between.
    for _ in range(10):
        with gate.admit(10):
            pass
        time.sleep(0.02)
    assert gate.trims == 0
    # Idle for longer than the delay: handed back once.
    _wait_while_trims(gate, 0)
    assert gate.trims == 1
    time.sleep(0.5)
    assert gate.trims == 1  # once per idle period, not again and again
    # Work that is still running holds the trim back.
    with gate.admit(10):
        time.sleep(0.5)
        assert gate.trims == 1
    _wait_while_trims(gate, 1)
    assert gate.trims == 2
