"""`assoc serve` with a time stamp at each hand-over of a QIX step, for qix_timeline.py.

    python benchmarks/qix_timeline_serve.py serve [assoc serve options]

The methods a request passes through (frame received, engine thread taken, patch applied or
selection made, cube, field states, layout, delta, hand-over to the loop, send) are wrapped to
stamp their start and end on CLOCK_MONOTONIC, the clock the client stamps with. The stamps go
to the JSON file named by ASSOC_TIMELINE_OUT when the server stops.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import assoc.session
from assoc.cli import main
from assoc.server.qix import ahead, delta, endpoint, hypercube, listobject, objects
from qix_timeline import method_of

STAMPS: list[tuple[int, str]] = []
_lock = threading.Lock()


def stamp(name: str) -> None:
    with _lock:
        STAMPS.append((time.monotonic_ns(), name))


def _stamped(owner: Any, attr: str, name: str, end: bool = True) -> None:
    """Wraps owner.attr to stamp `name` at its start (and `name` done at its end)."""
    original: Callable[..., Any] = getattr(owner, attr)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stamp(name)
        try:
            return original(*args, **kwargs)
        finally:
            if end:
                stamp(name + " done")

    setattr(owner, attr, wrapper)


def _install() -> None:
    handle = endpoint.QixConnection.handle

    async def handled(self: endpoint.QixConnection, text: str) -> None:
        stamp(f"server: {method_of(text)} frame received")
        await handle(self, text)

    endpoint.QixConnection.handle = handled  # type: ignore[method-assign]
    send = endpoint.QixConnection.send

    async def sent(self: endpoint.QixConnection, text: str) -> None:
        stamp("server: answer sending")
        await send(self, text)
        stamp("server: answer sent")

    endpoint.QixConnection.send = sent  # type: ignore[method-assign]
    _stamped(ahead.LayoutsAhead, "_answer_and_make", "engine thread: request taken", end=False)
    _stamped(objects.GenericObject, "apply_patches", "engine thread: patch")
    _stamped(ahead, "_layout", "engine thread: layout made ahead")
    _stamped(assoc.session.Session, "hypercube", "engine thread: cube")
    _stamped(assoc.session.Session, "select_indices", "engine thread: select")
    _stamped(assoc.session.Session, "state_codes", "engine thread: field states")
    _stamped(listobject.ListObjectView, "layout", "engine thread: qListObject layout")
    _stamped(hypercube.HyperCubeView, "layout", "engine thread: qHyperCube layout")
    _stamped(delta.DeltaBases, "prepare", "engine thread: delta diff")
    _stamped(ahead.LayoutsAhead, "_deliver", "loop: layout handed over", end=False)


def _dump() -> None:
    out = os.environ.get("ASSOC_TIMELINE_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(STAMPS, f)


if __name__ == "__main__":
    _install()
    atexit.register(_dump)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # atexit runs on the stop signal
    sys.argv = ["assoc", *sys.argv[1:]]
    main()
