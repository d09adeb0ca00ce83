"""Where the time of one QIX step goes, on a 10,000,000-row app, as a timeline of the client's
and the server's hand-overs. The step is compare_objects.py's ApplyPatches + GetLayout (a bar
chart's measure patched to an expression not computed before, then its layout asked, with
delta answers as enigma.js asks), with `--step select` compare_qix.py's select + layouts (a
customer selected through a list object, then the list's and a cube's layouts), or with
`--step page` compare_objects.py's six-chart page (a confirmed selection on the bar chart, then
the six layouts).

    python benchmarks/qix_timeline.py [--rows 10000000] [--steps 60] [--step patch|select|page]

The server is `assoc serve` run by qix_timeline_serve.py, which stamps each hand-over inside the
service (frame received, engine thread taken, patch, cube, layout, delta diff, hand-over to the
loop, send); the client stamps its sends, its receipts and the end of its parse. Both read
CLOCK_MONOTONIC. Each row is an event with its median time from the step's start and the median
gap since the row before it, over the steps after the first five. The stamps cost a few
microseconds each: steps run slightly slower than in compare_objects.py.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import websockets

from compare_http import Server, import_qvd
from compare_objects import _page, page_step
from compare_qix import CUSTOMERS, QixSocket, big_app_qvd
from conftest import scaled

HERE = Path(__file__).resolve().parent
WARM_STEPS = 5  # steps left out of the medians


def method_of(text: str) -> str:
    """The method a QIX request names (as sent by these clients), for the stamps."""
    found = re.search(r'"method": ?"(\w+)"', text)
    return found.group(1) if found else "other"


def _stamped(ws: Any, stamps: list[tuple[int, str]]) -> Callable[[str], None]:
    """Wraps a socket's send and recv to stamp each request sent (by its method) and each
    answer received; the stamp function, for the steps."""

    def stamp(name: str) -> None:
        stamps.append((time.monotonic_ns(), name))

    send, recv = ws.send, ws.recv

    async def stamped_send(text: Any) -> None:
        stamp(f"client: {method_of(text)} sent")
        await send(text)

    async def stamped_recv() -> Any:
        message = await recv()
        stamp("client: answer received")
        return message

    ws.send, ws.recv = stamped_send, stamped_recv
    return stamp


async def _steps(url: str, app_id: str, steps: int, stamps: list[tuple[int, str]]) -> list[float]:
    """The patch steps, the client's stamps appended to `stamps`; each step's seconds."""
    async with _page(url, app_id) as (qix, _, handles):
        bar = handles[0]
        stamp = _stamped(qix.ws, stamps)
        times = []
        for k in range(steps):
            patch = {
                "qOp": "replace",
                "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef",
                "qValue": json.dumps(f"Sum(Amount)*{k + 3}"),
            }
            stamp("step")
            start = time.perf_counter()
            await qix.call("ApplyPatches", [[patch], False], bar)
            await qix.call("GetLayout", [], bar)
            times.append(time.perf_counter() - start)
            stamp("client: layout parsed")
        return times


async def _select_steps(
    url: str, app_id: str, steps: int, stamps: list[tuple[int, str]]
) -> list[float]:
    """compare_qix.py's select + layouts steps (a customer not selected before each), the
    client's stamps appended to `stamps`; each step's seconds."""
    async with websockets.connect(url, max_size=None) as ws:
        await ws.recv()
        qix = QixSocket(ws)
        listbox, cube = await qix.open_objects(app_id)
        return await _customer_steps(
            _stamped(ws, stamps), steps, lambda k: qix.step(listbox, cube, k)
        )


async def _page_steps(
    url: str, app_id: str, steps: int, stamps: list[tuple[int, str]]
) -> list[float]:
    """compare_objects.py's page steps (a customer not selected before confirmed on the bar
    chart in selection mode, then the six layouts), the client's stamps appended to
    `stamps`; each step's seconds. The untimed ClearAll and its layouts come after the stamp
    "client: layouts parsed"."""
    async with _page(url, app_id) as (qix, doc, handles):

        async def cleared() -> None:
            await qix.call("ClearAll", [], doc)
            await qix.calls([("GetLayout", [], h) for h in handles])

        return await _customer_steps(
            _stamped(qix.ws, stamps), steps, lambda k: page_step(qix, handles, k), cleared
        )


async def _customer_steps(
    stamp: Callable[[str], None],
    steps: int,
    step: Callable[[int], Awaitable[Any]],
    after: Callable[[], Awaitable[None]] | None = None,
) -> list[float]:
    """`steps` timed steps, each selecting a customer not selected before, stamped from
    "step" to "client: layouts parsed" (`after` runs untimed after each); each step's
    seconds."""
    order = list(range(CUSTOMERS))
    random.Random(3).shuffle(order)
    times = []
    for customer in order[:steps]:
        stamp("step")
        start = time.perf_counter()
        await step(customer)
        times.append(time.perf_counter() - start)
        stamp("client: layouts parsed")
        if after is not None:
            await after()
    return times


def timeline(stamps: list[tuple[int, str]]) -> list[tuple[str, float, float]]:
    """(event, median ms from the step's start, median ms since the event before) per event
    seen in most steps, in time order; an event seen twice in a step is numbered."""
    steps: list[list[tuple[int, str]]] = []
    for t, name in sorted(stamps):
        if name == "step":
            steps.append([(t, name)])
        elif steps:
            steps[-1].append((t, name))
    at: dict[str, list[float]] = collections.defaultdict(list)
    gaps: dict[str, list[float]] = collections.defaultdict(list)
    kept = steps[WARM_STEPS:]
    for step in kept:
        start, seen = step[0][0], collections.Counter[str]()
        before = start
        for t, name in step[1:]:
            seen[name] += 1
            label = name if seen[name] == 1 else f"{name} #{seen[name]}"
            at[label].append((t - start) / 1e6)
            gaps[label].append((t - before) / 1e6)
            before = t
    rows = [
        (label, statistics.median(v), statistics.median(gaps[label]))
        for label, v in at.items()
        if len(v) > len(kept) // 2
    ]
    return sorted(rows, key=lambda row: row[1])


def run(rows: int, steps: int, step: str = "patch") -> tuple[list[tuple[str, float, float]], float]:
    """The timeline and the median step (ms) of the patch or the select step."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        qvd = tmp_dir / "sales.qvd"
        big_app_qvd(rows, qvd)
        out = tmp_dir / "server-stamps.json"
        os.environ["ASSOC_TIMELINE_OUT"] = str(out)
        server = Server([str(HERE / "qix_timeline_serve.py"), "serve", "--data-dir",
                         str(tmp_dir / "data"), "--log-level", "warning"], "/health")  # fmt: skip
        stamps: list[tuple[int, str]] = []
        try:
            app_id = import_qvd(server, qvd)
            url = server.url.replace("http", "ws") + f"/app/{app_id}"
            steps_of = {"select": _select_steps, "page": _page_steps}.get(step, _steps)
            times = asyncio.run(steps_of(url, app_id, min(steps, CUSTOMERS), stamps))
        finally:
            server.close()
        stamps += [(t, name) for t, name in json.loads(out.read_text())]
    return timeline(stamps), statistics.median(times[WARM_STEPS:]) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--step", choices=("patch", "select", "page"), default="patch")
    args = parser.parse_args()
    rows, step_ms = run(args.rows, max(args.steps, WARM_STEPS + 1), args.step)
    what = {"patch": "ApplyPatches + GetLayout", "select": "select + layouts"}.get(
        args.step, "six-chart page: confirmed selection + six layouts"
    )
    print(f"{args.rows:,} rows, {what}, median step {step_ms:.2f} ms\n")
    print("| event | at (ms) | since the one before (ms) |")
    print("|---|---:|---:|")
    for label, at, gap in rows:
        print(f"| {label} | {at:.3f} | {gap:.3f} |")


if __name__ == "__main__":
    main()
