"""The service's threads carry their names to the operating system (`top -H`, `ps -L`,
profilers): the engine threads that answer QIX requests, the engine's worker pool, the CPU
sampler; the main thread, which runs the event loop, keeps the process's name."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from qixclient import QixClient

from assoc import _core
from conftest import QixServer

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux thread names"),
]


def _thread_names(pid: int) -> dict[int, str]:
    names = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
    return names


def test_a_served_layout_runs_on_named_threads(qix_server: QixServer, qix: QixClient) -> None:
    cube = {
        "qInfo": {"qType": "table"},
        "qHyperCubeDef": {
            "qDimensions": [{"qDef": {"qFieldDefs": ["Region"]}}],
            "qMeasures": [{"qDef": {"qDef": "Sum(Amount)"}}],
            "qInitialDataFetch": [{"qHeight": 10, "qWidth": 2}],
        },
    }
    handle = qix.handle_of("CreateSessionObject", [cube], 1)
    layout = qix.result("GetLayout", [], handle)["qLayout"]
    assert layout["qHyperCube"]["qSize"]["qcy"] == 4  # three regions, and none (customer d)
    process = qix_server.process.proc
    assert process is not None
    names = _thread_names(process.pid)
    assert "assoc-qix_0" in names.values()  # the engine thread that made the layout
    assert "assoc-cpu-sampl" in names.values()  # 15 bytes at most: the name is cut
    assert not names[process.pid].startswith("assoc-")  # the main thread: the process's name
    if _core.logical_cores() > 1:  # a pool of one thread is the caller alone
        assert "assoc-pool-1" in names.values()


def test_the_engine_names_its_pool_and_a_caller_names_its_thread() -> None:
    _core.set_threads(3)
    try:
        assert _core.threads() == 3  # the pool is made: the caller and two workers
        names = set(_thread_names_of_this_process())
        assert {"assoc-pool-1", "assoc-pool-2"} <= names
    finally:
        _core.set_threads(0)
    seen: list[str] = []

    def named() -> None:
        _core.name_this_thread("a-name-longer-than-fifteen-bytes")
        seen.append(Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text())

    thread = threading.Thread(target=named)
    thread.start()
    thread.join()
    assert seen == ["a-name-longer-t\n"]


def _thread_names_of_this_process() -> list[str]:
    return list(_thread_names(os.getpid()).values())
