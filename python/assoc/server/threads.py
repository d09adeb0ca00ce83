"""The service's threads named for the operating system, so that `top -H`, `ps -L` and
profilers tell them apart (the engine names its own: `assoc-pool-N`, `assoc-qvd-parse`,
`assoc-file-write`); the main thread, which runs the event loop, keeps the process's name."""

from __future__ import annotations

import threading

from assoc import _core


def name_os_thread() -> None:
    """Gives the calling thread's Python name to the operating system (Linux: its first 15
    bytes). A thread's target or a pool's initializer calls it first."""
    _core.name_this_thread(threading.current_thread().name)
