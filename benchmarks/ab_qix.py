"""Two builds of the service side by side, one QIX step alternating between them, to tell a
change of a few percent from the machine's drift.

    python benchmarks/ab_qix.py BEFORE AFTER [--step page|select|patch] [--steps 100] [--rows N]

BEFORE and AFTER are folders that each hold an `assoc` package with its built `_core` (for the
Python of a revision: `mkdir -p /tmp/a && git archive REV python/assoc | tar -x -C /tmp/a
--strip-components=1 && cp python/assoc/_core*.so /tmp/a/assoc/`; a change to the C++ needs
that revision's own build). Each gets its own `assoc serve` with the same 10,000,000-row app
(compare_qix.py's). The steps then go to one server and the other in turn, the first of each
pair alternating, each step a customer not selected before:

- `page`: compare_objects.py's six-chart page (a confirmed selection on the bar chart, then the
  six layouts; ClearAll and its layouts untimed before each);
- `select`: compare_qix.py's select through a list object, then the list's and a cube's layouts;
- `patch`: compare_objects.py's ApplyPatches of the bar chart's measure, then its layout.

The machine's minute moves both servers alike, so the pairs' ratios say more than either
median. Prints each build's median, the median of the pairs' ratios (AFTER / BEFORE), how many
pairs AFTER won and the two-sided sign test's p-value of that count. Nothing here gates.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets

from compare_http import Server, import_qvd
from compare_objects import _page, page_step
from compare_qix import CUSTOMERS, QixSocket, big_app_qvd
from conftest import scaled


def package_server(package: Path, data_dir: Path) -> Server:
    """`assoc serve` importing `assoc` from `package` (ahead of anything on its path)."""
    if not (package / "assoc" / "__init__.py").is_file():
        raise SystemExit(f"{package} holds no assoc package")
    os.environ["ASSOC_AB_PACKAGE"] = str(package.resolve())
    return Server(["-c", _SERVE, "--data-dir", str(data_dir), "--log-level", "warning"], "/health")


# Run with `python -c`: the package's folder goes first on sys.path, ahead of the PYTHONPATH
# the benchmarks' Server hands its children (this process's own package).
_SERVE = (
    "import os, sys; sys.path.insert(0, os.environ['ASSOC_AB_PACKAGE']); "
    "sys.argv = ['assoc', 'serve', *sys.argv[1:]]; from assoc.cli import main; main()"
)


def sign_test(wins: int, n: int) -> float:
    """Two-sided p-value of `wins` of `n` under a fair coin."""
    if n == 0:
        return 1.0
    k = min(wins, n - wins)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


@contextlib.asynccontextmanager
async def _stepper(kind: str, url: str, app_id: str) -> Any:
    """A socket with the step's objects made; yields the step (a customer or factor each)."""
    if kind == "select":
        async with websockets.connect(url, max_size=None) as ws:
            await ws.recv()
            qix = QixSocket(ws)
            listbox, cube = await qix.open_objects(app_id)

            async def select(customer: int) -> None:
                await qix.step(listbox, cube, customer)

            yield select, None
        return
    async with _page(url, app_id) as (sock, doc, handles):

        async def page(customer: int) -> None:
            await page_step(sock, handles, customer)

        async def clear() -> None:
            await sock.call("ClearAll", [], doc)
            await sock.calls([("GetLayout", [], h) for h in handles])

        async def patch(factor: int) -> None:
            value = json.dumps(f"Sum(Amount)*{factor}")
            op = {"qOp": "replace", "qPath": "/qHyperCubeDef/qMeasures/0/qDef/qDef"}
            await sock.call("ApplyPatches", [[{**op, "qValue": value}], False], handles[0])
            await sock.call("GetLayout", [], handles[0])

        yield (page, clear) if kind == "page" else (patch, None)


# Pairs of steps the warm-up takes (their customers are not used again).
WARM_PAIRS = 5


async def paired(
    kind: str, urls: list[str], apps: list[str], steps: int, first: int = 0
) -> list[list[float]]:
    """Each server's step times, taken in pairs (the first of each pair alternating), from
    pair number `first` on: each pair's customers (factors) are its own."""
    order = list(range(CUSTOMERS))
    random.Random(11).shuffle(order)
    times: list[list[float]] = [[], []]
    async with contextlib.AsyncExitStack() as stack:
        steppers = [
            await stack.enter_async_context(_stepper(kind, url, app))
            for url, app in zip(urls, apps, strict=True)
        ]
        for i in range(first, first + steps):
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                step, before = steppers[side]
                if before is not None:
                    await before()
                # A customer (a factor) no step asked before: nothing from the result cache.
                arg = order[2 * i + side] if kind != "patch" else 10 + 2 * i + side
                start = time.perf_counter()
                await step(arg)
                times[side].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path, help="folder holding the first build's assoc")
    parser.add_argument("after", type=Path, help="folder holding the second build's assoc")
    parser.add_argument("--step", choices=["page", "select", "patch"], default="page")
    parser.add_argument("--steps", type=int, default=100, help="pairs of steps timed")
    parser.add_argument("--rows", type=int, default=scaled(10_000_000))
    args = parser.parse_args()
    most = CUSTOMERS // 2 - WARM_PAIRS  # a new customer for every step
    if args.step != "patch" and not 1 <= args.steps <= most:
        parser.error(f"--steps must be from 1 to {most} (a customer not selected before each)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        qvd = tmp_dir / "sales.qvd"
        big_app_qvd(args.rows, qvd)
        servers: list[Server] = []
        try:
            for name, package in (("a", args.before), ("b", args.after)):
                servers.append(package_server(package, tmp_dir / name))
            apps = [import_qvd(server, qvd) for server in servers]
            urls = [
                s.url.replace("http", "ws") + f"/app/{a}"
                for s, a in zip(servers, apps, strict=True)
            ]
            asyncio.run(paired(args.step, urls, apps, WARM_PAIRS))  # both warm
            before, after = asyncio.run(paired(args.step, urls, apps, args.steps, first=WARM_PAIRS))
        finally:
            for server in servers:
                server.close()
    ratios = [b / a for a, b in zip(before, after, strict=True)]
    wins = sum(r < 1 for r in ratios)
    print(f"{args.rows:,} rows, {args.step} step, {args.steps} pairs")
    print(
        f"before {statistics.median(before) * 1e3:.2f} ms, "
        f"after {statistics.median(after) * 1e3:.2f} ms (medians)"
    )
    print(
        f"after / before: {statistics.median(ratios):.3f} (median of the pairs); after faster in "
        f"{wins}/{len(ratios)} pairs, sign test p = {sign_test(wins, len(ratios)):.3f}"
    )


if __name__ == "__main__":
    sys.exit(main())
