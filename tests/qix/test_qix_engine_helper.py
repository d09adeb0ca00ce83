"""An engine thread that shares its work with a second one (workload.Helper): the second takes
parts while it can, is called off when it never started, and hands its failure back."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from assoc.server.qix.workload import EngineWork, Helper
from assoc.server.store.admission import LoadGate


def _shared(parts: int, engine: EngineWork) -> tuple[list[str], list[str]]:
    """Two threads taking parts from one source; the threads' names that took each part."""
    left = iter(range(parts))
    lock = threading.Lock()
    taken: list[str] = []
    both = threading.Barrier(2, timeout=5)

    def take() -> None:
        first = True
        while True:
            with lock:
                part = next(left, None)
            if part is None:
                return
            if first:  # each thread takes a part before either goes on
                first = False
                both.wait()
            taken.append(threading.current_thread().name)

    def run() -> list[str]:
        helper = engine.helper(take)
        take()
        helper.finish()
        return taken

    with ThreadPoolExecutor(1, thread_name_prefix="first") as first:
        names = first.submit(run).result(timeout=10)
    return names, sorted(set(names))


def test_a_free_engine_thread_takes_parts_beside_the_first() -> None:
    engine = EngineWork(2, LoadGate(1 << 30))
    try:
        names, who = _shared(20, engine)
    finally:
        engine.shutdown()
    assert len(names) == 20
    assert len(who) == 2  # the first thread and an engine thread
    assert any(name.startswith("assoc-qix") for name in who)


def test_a_helper_that_never_started_is_called_off() -> None:
    ran = threading.Event()
    helper = Helper(ran.set, ())
    helper.finish()  # nobody ran it: called off, no wait
    helper.run()  # starting late does nothing
    helper.finish()
    assert not ran.is_set()


def test_a_running_helper_is_waited_for_and_its_failure_raised() -> None:
    started, go_on = threading.Event(), threading.Event()

    def fail() -> None:
        started.set()
        go_on.wait(5)
        raise ValueError("in the helper")

    helper = Helper(fail, ())
    thread = threading.Thread(target=helper.run)
    thread.start()
    assert started.wait(5)
    threading.Timer(0.05, go_on.set).start()
    with pytest.raises(ValueError, match="in the helper"):
        helper.finish()
    thread.join(5)


def test_with_one_engine_thread_nothing_is_handed_over() -> None:
    engine = EngineWork(1, LoadGate(1 << 30))
    try:
        ran = threading.Event()
        helper = engine.helper(ran.set)
        helper.finish()
        assert not ran.is_set()
    finally:
        engine.shutdown()


def test_after_shutdown_nothing_is_handed_over_and_nothing_waits() -> None:
    engine = EngineWork(2, LoadGate(1 << 30))
    engine.shutdown()
    ran = threading.Event()
    helper = engine.helper(ran.set)
    helper.finish()
    assert not ran.is_set()
