"""assoc: an open associative data engine with a C++ columnar core."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from assoc._core import Dual, Error, engine_counters, logical_cores, set_threads, threads
from assoc.app import App, Table

try:
    __version__ = version("assoc")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+source"

__all__ = [
    "App",
    "Dual",
    "Error",
    "Table",
    "__version__",
    "engine_counters",
    "logical_cores",
    "set_threads",
    "threads",
]
