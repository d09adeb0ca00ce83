"""assoc: an open associative data engine with a C++ columnar core."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from assoc._core import (
    Dual,
    Error,
    cache_info,
    engine_counters,
    logical_cores,
    memory_blocks,
    set_cache_limit,
    set_memory_blocks_kept,
    set_threads,
    threads,
)
from assoc.app import App, Table
from assoc.hypercube import Hypercube
from assoc.qvd_stream import QvdStream
from assoc.session import ListPage, Session

try:
    __version__ = version("assoc")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+source"

__all__ = [
    "App",
    "Dual",
    "Error",
    "Hypercube",
    "ListPage",
    "QvdStream",
    "Session",
    "Table",
    "__version__",
    "cache_info",
    "engine_counters",
    "logical_cores",
    "memory_blocks",
    "set_cache_limit",
    "set_memory_blocks_kept",
    "set_threads",
    "threads",
]
